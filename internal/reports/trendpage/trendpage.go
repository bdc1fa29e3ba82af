// Package trendpage writes the run history's trend page: one chart per series.
//
// The page is one self-contained HTML file (inline SVG and CSS, no script,
// nothing fetched), so it can be attached to a CI run or committed beside
// the history. Each chart draws a figure over runs, the gate's threshold
// and the committed baseline as lines, and the change points as marks; a
// point's commit shows on hover, and a table under the chart lists every
// run with its commit.
package trendpage

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strconv"

	"github.com/scalegate/scalegate/internal/judge/changepoint"
	"github.com/scalegate/scalegate/internal/judge/history"
	"github.com/scalegate/scalegate/internal/reports/report"
)

//go:embed page.html.tmpl
var pageText string

var page = template.Must(template.New("trend").Parse(pageText))

// The chart's drawing area in SVG units.
const (
	width, height        = 720.0, 220.0
	left, right          = 64.0, 16.0
	top, bottom          = 16.0, 44.0
	plotW, plotH         = width - left - right, height - top - bottom
	maxTableRows         = 200
	changeLabelMaxLength = 10
)

// Write renders the analyses to path, atomically.
func Write(path string, as []history.Analysis) error {
	b, err := Render(as)
	if err != nil {
		return err
	}
	return report.WriteFileAtomic(path, b)
}

// Render returns the page for the analyses.
func Render(as []history.Analysis) ([]byte, error) {
	charts := make([]chart, len(as))
	for i, a := range as {
		charts[i] = newChart(a)
	}
	var b bytes.Buffer
	if err := page.Execute(&b, struct{ Charts []chart }{charts}); err != nil {
		return nil, fmt.Errorf("trend page: %w", err)
	}
	return b.Bytes(), nil
}

type chart struct {
	Title, Subtitle string
	W, H            float64
	// L, R, T, B bound the plot area (left and right x, top and bottom y).
	L, R, T, B float64
	Path       string
	Points     []point
	Lines      []hline
	Changes    []mark
	YTicks     []tick
	XTicks     []tick
	Levels     []level
	Rows       []row
	Omitted    int
}

type point struct {
	X, Y      float64
	Tip       string
	AtChange  bool
	Worse     bool
	NotPassed bool
}

type hline struct {
	Y     float64
	Label string
	Class string
}

type mark struct {
	X     float64
	Label string
	Worse bool
}

// level is a segment's mean, drawn from its first run to its last.
type level struct{ X1, X2, Y float64 }

type tick struct {
	X, Y  float64
	Label string
}

type row struct {
	Run                  int
	Commit, Time, Value  string
	Verdict, Change      string
	Worse, ProfileChange bool
}

func newChart(a history.Analysis) chart {
	s := a.Series
	c := chart{Title: s.Leg + " · " + s.Figure, W: width, H: height, L: left, R: width - right, T: top, B: top + plotH,
		Subtitle: fmt.Sprintf("%s, %s is better · runner class %s (%s) · %d run(s), %d change point(s)",
			unitOr(s.Unit), s.Better, history.ClassID(s.RunnerClass), s.RunnerClass, len(s.Points), len(a.Changes))}
	lo, hi := yRange(s)
	x := func(i int) float64 {
		if len(s.Points) < 2 {
			return left + plotW/2
		}
		return left + plotW*float64(i)/float64(len(s.Points)-1)
	}
	y := func(v float64) float64 { return top + plotH*(1-(v-lo)/(hi-lo)) }
	changeAt := map[int]history.Change{}
	for _, ch := range a.Changes {
		changeAt[ch.Index] = ch
		c.Changes = append(c.Changes, mark{X: x(ch.Index), Label: fmt.Sprintf("%+.1f %% at %s", ch.ChangePct, short(ch.Commit)), Worse: ch.Worse})
	}
	var path bytes.Buffer
	for i, p := range s.Points {
		ch, at := changeAt[i]
		fmt.Fprintf(&path, "%s%.1f,%.1f ", map[bool]string{true: "M", false: "L"}[i == 0], x(i), y(p.Value))
		c.Points = append(c.Points, point{X: x(i), Y: y(p.Value), AtChange: at, Worse: at && ch.Worse, NotPassed: p.Verdict != "passed",
			Tip: fmt.Sprintf("run %d · %s · %s · %s %s (%s)", i+1, short(p.Commit), p.Time, num(p.Value), s.Unit, p.Verdict)})
	}
	c.Path = path.String()
	c.Lines = refLines(s, y, lo, hi)
	for k := 0; k <= 4; k++ {
		v := lo + (hi-lo)*float64(k)/4
		c.YTicks = append(c.YTicks, tick{Y: y(v), Label: num(v)})
	}
	c.Levels = levels(a, x, y)
	for _, i := range []int{0, len(s.Points) / 2, len(s.Points) - 1} {
		if i >= 0 && i < len(s.Points) {
			c.XTicks = append(c.XTicks, tick{X: x(i), Label: fmt.Sprintf("run %d", i+1)})
		}
	}
	c.Rows, c.Omitted = rows(a, changeAt)
	return c
}

func levels(a history.Analysis, x func(int) float64, y func(float64) float64) []level {
	cps := make([]changepoint.ChangePoint, len(a.Changes))
	for i, c := range a.Changes {
		cps[i] = c.ChangePoint
	}
	n := len(a.Series.Points)
	starts, means := changepoint.Segments(a.Series.Values(), cps)
	out := make([]level, len(starts))
	for i, st := range starts {
		end := n - 1
		if i+1 < len(starts) {
			end = starts[i+1] - 1
		}
		out[i] = level{X1: x(st), X2: x(end), Y: y(means[i])}
	}
	return out
}

// yRange spans the values, the newest threshold and baseline, with a
// margin, so every line drawn is inside the chart.
func yRange(s history.Series) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	see := func(v float64) { lo, hi = math.Min(lo, v), math.Max(hi, v) }
	for _, p := range s.Points {
		see(p.Value)
	}
	if n := len(s.Points); n > 0 {
		for _, v := range []*float64{s.Points[n-1].Threshold, s.Points[n-1].Baseline} {
			if v != nil {
				see(*v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	pad := (hi - lo) * 0.08
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.05, 1e-9)
	}
	return lo - pad, hi + pad
}

func refLines(s history.Series, y func(float64) float64, lo, hi float64) []hline {
	n := len(s.Points)
	if n == 0 {
		return nil
	}
	var out []hline
	last := s.Points[n-1]
	if t := last.Threshold; t != nil {
		out = append(out, hline{Y: y(*t), Label: "threshold " + num(*t), Class: "threshold"})
	}
	if b := last.Baseline; b != nil {
		out = append(out, hline{Y: y(*b), Label: "baseline " + num(*b), Class: "baseline"})
	}
	return out
}

// rows lists the runs newest first, at most maxTableRows of them.
func rows(a history.Analysis, changeAt map[int]history.Change) ([]row, int) {
	s := a.Series
	profileAt := map[int]bool{}
	for _, k := range a.ProfileChanges {
		profileAt[k] = true
	}
	var out []row
	for i := len(s.Points) - 1; i >= 0 && len(out) < maxTableRows; i-- {
		p := s.Points[i]
		r := row{Run: i + 1, Commit: p.Commit, Time: p.Time, Value: num(p.Value) + " " + s.Unit, Verdict: p.Verdict, ProfileChange: profileAt[i]}
		if ch, ok := changeAt[i]; ok {
			r.Change = fmt.Sprintf("%+.1f %% [%+.1f, %+.1f], p %.1g", ch.ChangePct, ch.LowPct, ch.HighPct, ch.PValue)
			r.Worse = ch.Worse
		}
		out = append(out, r)
	}
	return out, len(s.Points) - len(out)
}

func short(commit string) string {
	if len(commit) > changeLabelMaxLength {
		return commit[:changeLabelMaxLength]
	}
	return commit
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func unitOr(u string) string {
	if u == "" {
		return "count"
	}
	return u
}
