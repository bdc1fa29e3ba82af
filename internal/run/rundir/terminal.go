package rundir

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// TermWidth is the widest line WriteTerminal prints, in runes: a terminal
// (or a CI log) of 100 columns shows the result without wrapping or
// scrolling sideways. The full table is summary.md's and report.html's
// (and WriteTable's, `--wide`).
const TermWidth = 100

// The terminal layout's indents: a leg's check lines under its verdict, a
// check's reasons 4 deeper under it, a long line's continuation.
const (
	checkIndent  = "  "
	reasonIndent = "      "
	contIndent   = "    "
)

// maxReasonLines bounds the lines of one check's reasons: a detail that
// lists a whole schema's errors would push the verdict off the screen.
// The rest is in summary.md and summary.json.
const maxReasonLines = 6

// WriteTerminal prints the run's result for a terminal: per leg its
// verdict, then one status-first line per check, with the reasons of a
// check that did not pass indented under it; then the run's checks across
// legs, the capacity curves and the run's verdict. Every line fits
// TermWidth: names and values are abbreviated, reasons wrapped, and what
// is cut (marked …, and a last line says so) is whole in summary.md,
// summary.json and report.html. Outside text (a server's words, a leg
// name) is escaped (safetext).
func WriteTerminal(w io.Writer, r *RunResult) error {
	t := &terminal{cols: columnsOf(r)}
	for _, l := range r.Legs {
		t.leg(l)
	}
	if len(r.Checks) > 0 {
		t.add("run checks (across legs):")
		t.checks(r.Checks, anyNotPassed(r.Checks))
	}
	for _, c := range r.Capacity {
		t.wrap(fmt.Sprintf("capacity %s: %s", safetext.Terminal(c.Group), safetext.Terminal(c.Verdict)), "", contIndent)
	}
	t.add(wrapPath(fmt.Sprintf("scalegate: profile %s (%s tier): %s; artifacts in %s",
		safetext.Terminal(r.Profile.Name), r.Tier, strings.ToUpper(string(r.Verdict)), safetext.Terminal(r.Dir)))...)
	if r.HistoryNote != "" {
		t.add(wrapPath("scalegate: history: " + safetext.Terminal(r.HistoryNote))...)
	}
	if r.BaselineNote != "" {
		t.add(wrapPath("scalegate: " + safetext.Terminal(r.BaselineNote))...)
	}
	if t.cut {
		t.add("scalegate: … marks text cut to fit: summary.md and report.html have it whole (--wide: the table)")
	}
	_, err := io.WriteString(w, strings.Join(t.lines, "\n")+"\n")
	return err
}

// terminal collects WriteTerminal's lines; cut records that some text was
// abbreviated to fit.
type terminal struct {
	cols  columns
	lines []string
	cut   bool
}

func (t *terminal) add(lines ...string) { t.lines = append(t.lines, lines...) }

// wrap adds s word-wrapped (wrapText), noting a cut.
func (t *terminal) wrap(s, first, rest string) {
	lines, cut := wrapText(s, first, rest)
	t.cut = t.cut || cut
	t.add(lines...)
}

// columns are the widths of the status and name columns, the same for
// every check of the run so the lines of all legs align.
type columns struct{ status, name int }

// maxNameCol caps the name column: a custom gate's long name takes its own
// room on its line rather than pushing every other value right.
const maxNameCol = 30

func columnsOf(r *RunResult) columns {
	cols := columns{status: 4}
	each := func(cs []Check) {
		for _, c := range cs {
			cols.status = max(cols.status, utf8.RuneCountInString(string(c.Status)))
			cols.name = max(cols.name, min(maxNameCol, utf8.RuneCountInString(checkName(c))))
		}
	}
	each(r.Checks)
	for _, l := range r.Legs {
		each(l.Checks)
	}
	return cols
}

// leg adds one leg: its verdict line (shards, early end, error), its
// notes (the early end's reason, a capped server.log), then its checks.
func (t *terminal) leg(l LegResult) {
	head := fmt.Sprintf("leg %s: %s", safetext.Terminal(l.Leg.ID), strings.ToUpper(string(l.Verdict)))
	if l.Shards > 1 {
		head += fmt.Sprintf(" (%d swarm shards, merged)", l.Shards)
	}
	if l.AbortedAtS != nil {
		head += fmt.Sprintf(" (ended early at %.1f s)", *l.AbortedAtS)
	}
	if l.Error != "" {
		head += " — " + safetext.Terminal(l.Error)
	}
	t.wrap(head, "", contIndent)
	if l.AbortedAtS != nil {
		t.wrap(fmt.Sprintf("ended early at %.1f s: %s", *l.AbortedAtS, safetext.Terminal(l.AbortReason)), checkIndent, reasonIndent)
	}
	if s := l.ServerLog; s != nil && s.Truncated {
		t.wrap(fmt.Sprintf("server.log capped at %s: the server wrote %s (%s lines/s); %s left out",
			byteSize(float64(s.CapBytes)), byteSize(float64(s.Bytes)), gatetable.FormatNumber(math.Round(s.LinesPerS)), byteSize(float64(s.Bytes-s.KeptBytes))),
			checkIndent, reasonIndent)
	}
	t.checks(l.Checks, l.Verdict != VerdictPassed || anyNotPassed(l.Checks))
}

// anyNotPassed: a check of cs failed, could not be evaluated or was left
// undecided (at any level).
func anyNotPassed(cs []Check) bool {
	for _, c := range cs {
		if c.Status != StatusPass && c.Status != StatusRecorded {
			return true
		}
	}
	return false
}

// checks adds one status-first line per check, each with its reasons
// under it when it has some to give: every check that failed, could not
// be evaluated or was left undecided; a recorded check (the host's load,
// a figure --update-baseline records) only when something beside it did
// not pass (notes: then it is context for that, else noise on every run).
func (t *terminal) checks(cs []Check, notes bool) {
	for _, c := range cs {
		head := checkIndent + pad(strings.ToUpper(string(c.Status)), t.cols.status) + "  " +
			pad(safetext.Terminal(checkName(c)), t.cols.name) + "  "
		full := safetext.Terminal(checkValue(c))
		value := shorten(full, TermWidth-utf8.RuneCountInString(head))
		t.cut = t.cut || value != full
		t.add(t.fit(head + value))
		if c.Detail == "" || c.Status == StatusPass || c.Status == StatusRecorded && !notes {
			continue
		}
		reasons, cut := wrapText(safetext.Terminal(c.Detail), reasonIndent, reasonIndent)
		t.cut = t.cut || cut
		if len(reasons) > maxReasonLines {
			reasons, t.cut = reasons[:maxReasonLines], true
			reasons[maxReasonLines-1] = fit(reasons[maxReasonLines-1]+" …", TermWidth)
		}
		t.add(reasons...)
	}
}

// shorten abbreviates a check's value to room runes: parenthesised
// asides first ("slowest 59.77 updates/s (99.62 % of 60 Hz, announced by
// the server), mean 59.80" reads "slowest 59.77 updates/s (…), mean
// 59.80"), left to right until it fits, then the clauses at its end
// ("64/64 admitted, 0 lost, 73908 snapshots; …").
func shorten(v string, room int) string {
	v = dropAsides(v, room)
	if utf8.RuneCountInString(v) <= room {
		return v
	}
	r := []rune(v)
	head := string(r[:max(0, room-1)])
	for _, sep := range []string{"; ", ", ", " "} {
		if i := strings.LastIndex(head, sep); i >= len(head)/2 {
			return head[:i+len(sep)] + "…"
		}
	}
	return head + "…"
}

// dropAsides replaces parenthesised asides of v with "(…)", left to
// right, until v fits room runes or none is left.
func dropAsides(v string, room int) string {
	for utf8.RuneCountInString(v) > room {
		open := strings.Index(v, " (")
		for open >= 0 && strings.HasPrefix(v[open:], " (…)") {
			next := strings.Index(v[open+1:], " (")
			if next < 0 {
				return v
			}
			open += 1 + next
		}
		if open < 0 {
			return v
		}
		end := closing(v, open+1)
		if end < 0 {
			return v
		}
		v = v[:open] + " (…)" + v[end+1:]
	}
	return v
}

// closing is the index of the parenthesis closing the one at i, or -1.
func closing(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// fit cuts a line to TermWidth, noting the cut.
func (t *terminal) fit(s string) string {
	f := fit(s, TermWidth)
	t.cut = t.cut || f != s
	return f
}

// checkName is the check's ID (summary.json's gate, the profile's gates
// key), with the qualifier its title carries (a phase, a run check's load
// or leg: "tick_hz_min [after]", "history [pr/weave]"); a swarm's own
// assert is named by its flag.
func checkName(c Check) string {
	if c.Gate == gatetable.CheckSwarmAssert || c.Gate == "" {
		return c.Title
	}
	if leg, ok := strings.CutPrefix(c.Title, c.Gate+": "); ok {
		return c.Gate + " [" + leg + "]"
	}
	if strings.HasSuffix(c.Title, "]") {
		if i := strings.LastIndex(c.Title, " ["); i >= 0 {
			return c.Gate + c.Title[i:]
		}
	}
	return c.Gate
}

// checkValue is what the check measured, then the bound it is held to as
// a true statement ("59.77 Hz ≥ 30 Hz", "80.10 KB/s > 75 KB/s") when the
// threshold is one number, and the baseline and its delta; an advisory
// check that did not pass says so first (it does not fail the leg). A
// threshold that is a sentence (admission's, the load's) is left to
// summary.md: the measured text and the reasons say what happened.
func checkValue(c Check) string {
	v := c.MeasuredText
	if v == "" {
		v = "—"
	}
	if cmp := comparison(c); cmp != "" {
		v += " " + cmp
	}
	if c.Baseline != "" {
		v += ", baseline " + shortBaseline(c.Baseline)
	}
	if c.Level == LevelAdvisory && (c.Status == StatusFail || c.Status == StatusUnevaluable) {
		v = "advisory: " + v
	}
	return v
}

// flipped is each comparison's negation.
var flipped = map[string]string{"≤": ">", "≥": "<", "<": "≥", ">": "≤", "=": "≠"}

// comparison states the measured value against a one-number threshold
// ("≤ 150 KB/s", "≤ 79.80 (median …)"): the operator that is true of the
// value as shown, or "(want …)" when no value was measured or the shown
// value is rounded onto the bound. "" for any other threshold.
func comparison(c Check) string {
	op, bound, thr, ok := parseBound(c.Threshold)
	if !ok {
		return ""
	}
	if c.Measured == nil {
		return "(want " + op + " " + bound + ")"
	}
	holds := compare(*c.Measured, op, thr)
	shown, err := strconv.ParseFloat(strings.Fields(c.MeasuredText + " x")[0], 64)
	if err != nil || compare(shown, op, thr) != holds {
		return "(want " + op + " " + bound + ")"
	}
	if !holds {
		op = flipped[op]
	}
	return op + " " + bound
}

// parseBound reads "OP NUMBER [UNIT]" with an optional explanation in
// parentheses after it; a threshold of several clauses is not one bound.
func parseBound(t string) (op, bound string, v float64, ok bool) {
	op, rest, found := strings.Cut(t, " ")
	if _, known := flipped[op]; !found || !known {
		return "", "", 0, false
	}
	if i := strings.Index(rest, " ("); i >= 0 {
		rest = rest[:i]
	}
	f := strings.Fields(rest)
	if len(f) == 0 || len(f) > 2 || strings.ContainsAny(rest, ",;") {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return "", "", 0, false
	}
	return op, rest, v, true
}

func compare(m float64, op string, thr float64) bool {
	switch op {
	case "≤":
		return m <= thr
	case "≥":
		return m >= thr
	case "<":
		return m < thr
	case ">":
		return m > thr
	}
	return m == thr
}

// shortBaseline keeps a baseline cell's value and first delta:
// "72.55 (-0.3%, -84.0 σ̂; median of 5 runs)" reads "72.55 (-0.3%)".
func shortBaseline(b string) string {
	i := strings.Index(b, " (")
	if i < 0 {
		return b
	}
	inner := b[i+2:]
	if j := strings.IndexAny(inner, ",;)"); j >= 0 {
		inner = inner[:j]
	}
	return b[:i] + " (" + inner + ")"
}

// pad right-pads s with spaces to n runes.
func pad(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

// fit cuts s to width runes, its last one an ellipsis when anything was
// cut.
func fit(s string, width int) string {
	if utf8.RuneCountInString(s) <= width {
		return s
	}
	r := []rune(s)
	return string(r[:width-1]) + "…"
}

// wrapPath wraps a top-level line (the run's verdict and notes), whose
// tokens are a path to open and must stay whole: a token longer than the
// width gets a line of its own rather than an ellipsis (the one way a line
// can exceed TermWidth: a run directory of more than 96 runes).
func wrapPath(s string) []string {
	lines, _ := wrap(s, "", contIndent, false)
	return lines
}

// WrapNote word-wraps one note of a run (the runner's "scalegate: …"
// lines on stderr) to TermWidth, continuation lines indented, paths whole
// (wrapPath); the result ends in a newline.
func WrapNote(s string) string {
	return strings.Join(wrapPath(s), "\n") + "\n"
}

// wrapText word-wraps s to TermWidth: the first line after first, the
// others after rest. A word longer than a line is cut (…, and cut is
// true); the text is whole in summary.md.
func wrapText(s, first, rest string) (lines []string, cut bool) {
	return wrap(s, first, rest, true)
}

// wrap is wrapText, cutting a long word only with cutLong.
func wrap(s, first, rest string, cutLong bool) (lines []string, cut bool) {
	line, indent := first, first
	for _, word := range strings.Fields(s) {
		room := TermWidth - utf8.RuneCountInString(line)
		if line != indent {
			room--
		}
		n := utf8.RuneCountInString(word)
		if n > room && line != indent {
			lines = append(lines, line)
			line, indent = rest, rest
			room = TermWidth - utf8.RuneCountInString(line)
		}
		if cutLong && n > room {
			word, cut = fit(word, room), true
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	return append(lines, line), cut
}
