package calibrate

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// WriteMarkdown writes calibration.md: the method, one summary row per
// gate, then per gate its claim and its runs.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	writeMethod(&b, r)
	writeGateTable(&b, r)
	for _, g := range r.Gates {
		writeGateSection(&b, g)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMethod writes the title and how the figures were computed, with the
// assumption the suggested bound rests on, before any figure is read.
func writeMethod(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "# calibrate: profile %s, %d runs", r.Profile, r.Runs)
	if r.Host != "" {
		fmt.Fprintf(b, " on %s", r.Host)
	}
	b.WriteString("\n\n")
	fmt.Fprintf(b, "The same profile, unchanged, ran %d times. Per gate: the observed distribution, how many runs the current threshold "+
		"would have failed (this runner's false-alarm rate, with its exact Clopper–Pearson %s interval; a run that could not evaluate the "+
		"gate counts as failed), and the tightest threshold a run of unchanged code fails with probability ≤ %s at %s confidence "+
		"(one-sided normal tolerance bound on the values and on their logarithms, the looser of the two, never tighter than the worst run). "+
		"That bound assumes a normal or log-normal shape, which %d runs cannot check; each gate's section says what the runs claim without it.\n\n",
		r.Runs, pct(r.Confidence), pct(r.Target), pct(r.Confidence), r.Runs)
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
}

// writeGateTable writes the summary: one row per gate, comparable at a
// glance.
func writeGateTable(b *strings.Builder, r *Report) {
	fmt.Fprintf(b, "| gate | level | better | threshold | runs | median | σ̂ (MAD) | min – max | failed | false alarm (%s CI) | suggested (≤ %s) |\n",
		pct(r.Confidence), pct(r.Target))
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range r.Gates {
		d := g.Distribution
		med, sig, rng := "—", "—", "—"
		if d != nil {
			med, sig, rng = num(d.Median), num(d.SigmaMAD), num(d.Min)+" – "+num(d.Max)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s |\n",
			name(g), orDash(string(g.Level)), g.Better, threshold(g), evaluable(g), med, sig, rng, failed(g), falseAlarm(g), suggested(g))
	}
}

// writeGateSection writes one gate's claim and every run's value, so a
// reader can check the suggestion against the runs it came from.
func writeGateSection(b *strings.Builder, g GateResult) {
	fmt.Fprintf(b, "\n## %s\n\n", name(g))
	if g.Timing {
		b.WriteString("A timing figure: it shares the CPU with the swarm and whatever else runs on the machine.\n\n")
	}
	if g.Note != "" {
		fmt.Fprintf(b, "%s.\n\n", capitalize(g.Note))
	}
	if g.Suggested != nil {
		s := g.Suggested
		ln := "—"
		if s.LogNormalBound != nil {
			ln = num(*s.LogNormalBound)
		}
		fmt.Fprintf(b, "%s\n\n| bound | value |\n|---|---|\n| normal (mean %s k·sd, k = %.3f) | %s |\n| log-normal | %s |\n| worst run | %s |\n| **suggested** (%s) | **%s** |\n\n",
			s.Claim, sign(g), s.Factor, num(s.NormalBound), ln, num(s.Worst), s.By, num(s.Threshold))
	}
	if d := g.Distribution; d != nil {
		cv := "—"
		if d.CVPct != nil {
			cv = fmt.Sprintf("%.1f %%", *d.CVPct)
		}
		fmt.Fprintf(b, "Mean %s, sd %s (CV %s), MAD %s.\n\n", num(d.Mean), num(d.SD), cv, num(d.MAD))
	}
	b.WriteString("| run | value | current threshold |\n|---|---|---|\n")
	for i, v := range g.Values {
		fmt.Fprintf(b, "| %d | %s | %s |\n", i+1, num(v), holds(g, v))
	}
}

func name(g GateResult) string {
	if g.Unit == "" {
		return g.Title
	}
	return g.Title + " (" + g.Unit + ")"
}

func threshold(g GateResult) string {
	if g.Threshold == nil {
		return "—"
	}
	return symbol(g) + " " + num(*g.Threshold)
}

// dir is the gate table's direction the result was computed with (Better
// carries it through calibration.json).
func dir(g GateResult) gatetable.Direction {
	if g.Better == "higher" {
		return gatetable.AtLeast
	}
	return gatetable.AtMost
}

func symbol(g GateResult) string { return dir(g).Symbol() }

func sign(g GateResult) string {
	if g.Better == "higher" {
		return "−"
	}
	return "+"
}

func evaluable(g GateResult) int {
	if g.Distribution == nil {
		return 0
	}
	return g.Distribution.N
}

func failed(g GateResult) string {
	if g.Threshold == nil {
		return "—"
	}
	s := fmt.Sprintf("%d / %d", g.Failed+g.Unevaluable, len(g.Values))
	if g.Unevaluable > 0 {
		s += fmt.Sprintf(" (%d unevaluable)", g.Unevaluable)
	}
	return s
}

func falseAlarm(g GateResult) string {
	f := g.FalseAlarm
	if f == nil {
		return "—"
	}
	return fmt.Sprintf("%s (%s – %s)", pct(f.Rate), pct(f.Lo), pct(f.Hi))
}

func suggested(g GateResult) string {
	if g.Suggested == nil {
		return "—"
	}
	return symbol(g) + " " + num(g.Suggested.Threshold)
}

func holds(g GateResult, v float64) string {
	switch {
	case g.Threshold == nil:
		return "—"
	case math.IsNaN(v):
		return "**fails** (unevaluable)"
	case dir(g).Holds(v, *g.Threshold):
		return "holds"
	}
	return "**fails**"
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "missing"
	}
	return gatetable.FormatNumber(v)
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
