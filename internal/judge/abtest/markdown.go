package abtest

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// WriteMarkdown writes ab.md: what ran, the verdict, one row per figure,
// then each figure's legs round by round so a reader can see the pairs the
// interval came from.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	writeSetup(&b, r)
	writeVerdict(&b, r)
	writeFigureTable(&b, r)
	for _, res := range r.Results {
		writeRounds(&b, r.Order, res)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSetup writes the title and what ran: the two builds, where, how
// many rounds, and the confidence each interval is held to.
func writeSetup(b *strings.Builder, r *Report) {
	b.WriteString("# ab: B against A\n\n")
	fmt.Fprintf(b, "- A: %s\n- B: %s\n", build(r.A), build(r.B))
	where := ""
	if r.Profile != "" {
		where = fmt.Sprintf("profile %s, ", r.Profile)
	}
	if r.Host != "" {
		where += fmt.Sprintf("host %s, ", r.Host)
	}
	fmt.Fprintf(b, "- %s%d rounds (%d legs, order %s)\n", where, r.Rounds, 2*r.Rounds, orderText(r.Order))
	fmt.Fprintf(b, "- %s; confidence %s simultaneous over %d figure(s), so each interval is at %s\n\n",
		r.Method, fmtPct(100*r.Confidence), r.Figures, fmtPct(100*r.PerFigure))
}

// writeVerdict writes the one-line answer, then the notes that qualify it;
// an unevaluable figure keeps "no regression" from reading as a pass.
func writeVerdict(b *strings.Builder, r *Report) {
	switch {
	case r.Regressions > 0:
		fmt.Fprintf(b, "**%d regression(s)** beyond tolerance", r.Regressions)
	case r.Unevaluable > 0:
		b.WriteString("**No regression found, but not every figure could be judged**")
	default:
		b.WriteString("**No regression** beyond tolerance")
	}
	if r.Unevaluable > 0 {
		fmt.Fprintf(b, "; %d figure(s) unevaluable (a failure, like an unevaluable gate)", r.Unevaluable)
	}
	fmt.Fprintf(b, ". Answer: **%s**%s.\n\n", strings.ToUpper(string(r.Answer)), answerWhy(r))
	for _, n := range r.Notes {
		fmt.Fprintf(b, "- %s\n", n)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n")
	}
}

func answerWhy(r *Report) string {
	switch r.Answer {
	case Different:
		return " (a figure's interval lies wholly beyond the tolerance)"
	case Same:
		return " (every figure's interval lies wholly inside the tolerance)"
	}
	if r.Results != nil && r.Results[0].TolerancePct == 0 {
		return " (with --tolerance-pct 0 no interval can show the builds the same)"
	}
	return " (an interval straddles the tolerance's edge, or a figure was not judged: more rounds would decide; --until-decided adds them)"
}

// writeFigureTable writes one row per figure, prefaced by how to read a
// change and what "detectable" bounds.
func writeFigureTable(b *strings.Builder, r *Report) {
	b.WriteString("A change is B against A, + meaning B is higher. \"detectable\" is the change this run's noise lets it find 4 times in 5; a \"no change\" says nothing about changes smaller than that.\n\n")
	b.WriteString("| figure | better | A median | B median | change | interval | detectable | tolerance | verdict |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, res := range r.Results {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			figureName(res), res.Better, optNum(res.MedianA), optNum(res.MedianB),
			changeText(res), intervalText(res), optPct(res.DetectablePct, ""), fmtPct(res.TolerancePct), verdictText(res))
	}
}

// writeRounds writes one figure's legs round by round, with the pair each
// round contributes, on the scale the interval was computed on.
func writeRounds(b *strings.Builder, order []string, res Result) {
	fmt.Fprintf(b, "\n## %s\n\n", figureName(res))
	if res.Detail != "" {
		fmt.Fprintf(b, "%s.\n\n", res.Detail)
	}
	col := "B/A"
	if res.Scale == ScaleDifference {
		col = "B − A"
	}
	fmt.Fprintf(b, "| round | order | A | B | %s |\n|---|---|---|---|---|\n", col)
	for i := range res.A {
		o := ""
		if i < len(order) {
			o = order[i]
		}
		a, bv := res.A[i], res.B[i]
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s |\n", i+1, o, num(a), num(bv), pairText(a, bv, res.Scale))
	}
}

func build(b Build) string {
	s := b.Label
	if s == "" {
		s = "(unnamed)"
	}
	if b.Command != "" {
		s += " (`" + b.Command + "`)"
	}
	return s
}

func orderText(order []string) string {
	if len(order) <= 4 {
		return strings.Join(order, " ")
	}
	return strings.Join(order[:4], " ") + " …"
}

func figureName(r Result) string {
	if r.Unit == "" {
		return r.Title
	}
	return r.Title + " (" + r.Unit + ")"
}

func verdictText(r Result) string {
	switch r.Verdict {
	case Regression:
		return "**regression**"
	case Improvement:
		return "improvement"
	case NoChange:
		if r.Answer == Same {
			return "no change (same)"
		}
		return "no change (unknown)"
	}
	return "**unevaluable**"
}

func changeText(r Result) string {
	if r.Change == nil {
		return "—"
	}
	if r.Change.Pct != nil {
		s := signedPct(*r.Change.Pct)
		if r.Change.Diff != nil {
			s += " (" + signedNum(*r.Change.Diff) + ")"
		}
		return s
	}
	if r.Change.Diff != nil {
		return signedNum(*r.Change.Diff)
	}
	return "—"
}

func intervalText(r Result) string {
	c := r.Change
	if c == nil {
		return "—"
	}
	if c.LoPct != nil && c.HiPct != nil {
		return signedPct(*c.LoPct) + " … " + signedPct(*c.HiPct)
	}
	if c.Lo != nil && c.Hi != nil {
		return signedNum(*c.Lo) + " … " + signedNum(*c.Hi)
	}
	return "—"
}

func pairText(a, b float64, scale string) string {
	if math.IsNaN(a) || math.IsNaN(b) {
		return "—"
	}
	if scale == ScaleDifference {
		return signedNum(b - a)
	}
	if a == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f", b/a)
}

func optNum(p *float64) string {
	if p == nil {
		return "missing"
	}
	return gatetable.FormatNumber(*p)
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "missing"
	}
	return gatetable.FormatNumber(v)
}

func optPct(p *float64, none string) string {
	if p == nil {
		if none == "" {
			return "—"
		}
		return none
	}
	return fmt.Sprintf("%.1f %%", *p)
}

func signedPct(v float64) string { return fmt.Sprintf("%+.1f %%", v) }

func signedNum(v float64) string {
	if v >= 0 {
		return "+" + gatetable.FormatNumber(v)
	}
	return gatetable.FormatNumber(v)
}
