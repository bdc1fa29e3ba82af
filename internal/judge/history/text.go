package history

import (
	"fmt"
	"io"
	"strings"
)

// Analysis is one series and its change points, as `scalegate history`
// reports it.
type Analysis struct {
	Series  Series
	Changes []Change
	// ProfileChanges are the indices where the profile's hash differs
	// from the run before: a change point there may be the profile's
	// doing, not the code's.
	ProfileChanges []int
}

// AnalyzeAll analyses every series at p-value p (0: the default).
func AnalyzeAll(series []Series, p float64) []Analysis {
	out := make([]Analysis, len(series))
	for i, s := range series {
		a := Analysis{Series: s, Changes: Analyze(s, p)}
		for k := 1; k < len(s.Points); k++ {
			if s.Points[k].ProfileHash != s.Points[k-1].ProfileHash {
				a.ProfileChanges = append(a.ProfileChanges, k)
			}
		}
		out[i] = a
	}
	return out
}

// WriteText writes the analyses for a terminal: per series a header line
// and one line per change point, naming the first commit after it.
func WriteText(w io.Writer, as []Analysis) error {
	var b strings.Builder
	for _, a := range as {
		s := a.Series
		fmt.Fprintf(&b, "%s · %s (%s, %s is better) · class %s · %d run(s)", s.Leg, s.Figure, unitOr(s.Unit), s.Better, ClassID(s.RunnerClass), len(s.Points))
		if s.Skipped > 0 {
			fmt.Fprintf(&b, " (+%d inconclusive, not judged)", s.Skipped)
		}
		if len(a.Changes) == 0 {
			b.WriteString(": no change point\n")
			continue
		}
		b.WriteString("\n")
		for _, c := range a.Changes {
			dir := "better"
			if c.Worse {
				dir = "worse"
			}
			fmt.Fprintf(&b, "  run %d, commit %s (after %s, %s): %s → %s, %+.1f %% [%+.1f, %+.1f] (p %.1g), %s%s\n",
				c.Index+1, short(c.Commit), short(c.PrevCommit), c.Time, num(c.Before), num(c.After), c.ChangePct, c.LowPct, c.HighPct, c.PValue, dir, a.profileNote(c.Index))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a Analysis) profileNote(i int) string {
	for _, k := range a.ProfileChanges {
		if k == i {
			return "; the profile changed in this run"
		}
	}
	return ""
}

func unitOr(u string) string {
	if u == "" {
		return "count"
	}
	return u
}
