package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// FileName is the page's name in the run directory.
const FileName = "report.html"

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"verdictClass": verdictClass,
	"statusClass":  statusClass,
	"upper":        func(v rundir.Verdict) string { return strings.ToUpper(string(v)) },
	"num":          numText,
	"deref64":      func(v *float64) float64 { return *v },
	"deref": func(b *bool) string {
		if b == nil {
			return "unknown"
		}
		return fmt.Sprint(*b)
	},
}).Parse(pageTemplate))

// view is what the template reads.
type view struct {
	Run      *Run
	Capacity []capacityView
	Matrix   *matrixView
	Legs     []legView
}

// matrixView is summary.json's sweep matrix as table cells.
type matrixView struct {
	Head []string
	Rows []matrixRowView
}

type matrixRowView struct {
	LegID   string
	Cells   []string
	Verdict rundir.Verdict
}

func newMatrixView(m *rundir.SweepMatrix) *matrixView {
	if m == nil || len(m.Rows) == 0 {
		return nil
	}
	v := &matrixView{Head: append([]string{"leg"}, m.Axes...)}
	for _, c := range m.Columns {
		h := c.Title
		if c.Unit != "" && !strings.Contains(h, c.Unit) {
			h += " " + c.Unit
		}
		v.Head = append(v.Head, h)
	}
	v.Head = append(v.Head, "verdict")
	for _, r := range m.Rows {
		rv := matrixRowView{LegID: r.LegID, Cells: append([]string{}, r.Point...), Verdict: r.Verdict}
		for _, x := range r.Values {
			rv.Cells = append(rv.Cells, numText(x))
		}
		v.Rows = append(v.Rows, rv)
	}
	return v
}

// numText is a figure as the page shows it, "missing" when nil.
func numText(v *float64) string {
	if v == nil {
		return "missing"
	}
	return fmt.Sprintf("%.2f", *v)
}

type legView struct {
	*Leg
	Charts  []Chart
	Players playerCounts
}

// playerCounts summarises players.csv for the leg header.
type playerCounts struct {
	Total     int
	ByOutcome map[string]int
}

// Write loads dir and writes dir/report.html.
func Write(dir string) error {
	run, err := Load(dir)
	if err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	var buf bytes.Buffer
	if err := Render(&buf, run); err != nil {
		return fmt.Errorf("report.html: %w", err)
	}
	return report.WriteFileAtomic(filepath.Join(dir, FileName), buf.Bytes())
}

// Render writes the page of run to w.
func Render(w io.Writer, run *Run) error {
	v := view{Run: run, Capacity: capacityViews(run.Summary.Capacity), Matrix: newMatrixView(run.Summary.Matrix)}
	for i := range run.Legs {
		l := &run.Legs[i]
		lv := legView{Leg: l, Charts: legCharts(run, l)}
		if l.Report != nil {
			lv.Players = countPlayers(l.Report.Players)
		}
		v.Legs = append(v.Legs, lv)
	}
	return page.Execute(w, v)
}

func countPlayers(ps []report.Player) playerCounts {
	c := playerCounts{Total: len(ps), ByOutcome: map[string]int{}}
	for _, p := range ps {
		c.ByOutcome[p.Outcome]++
	}
	return c
}

// statusClass is a check row's colour class. An advisory check that
// failed gets its own (amber): it is worth reading but failed nothing.
func statusClass(c rundir.Check) string {
	if c.Level == rundir.LevelAdvisory && c.Status == rundir.StatusFail {
		return "st-advisory-fail"
	}
	return "st-" + string(c.Status)
}

// verdictClass maps a verdict to its colour class: green passed, red
// failed or not launched, amber inconclusive, grey interrupted.
func verdictClass(v rundir.Verdict) string {
	switch v {
	case rundir.VerdictPassed:
		return "v-pass"
	case rundir.VerdictInconclusive:
		return "v-inconclusive"
	case rundir.VerdictInterrupted:
		return "v-interrupted"
	}
	return "v-fail"
}
