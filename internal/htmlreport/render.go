package htmlreport

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"path/filepath"
	"strings"

	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/rundir"
)

// FileName is the page's name in the run directory.
const FileName = "report.html"

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"verdictClass": verdictClass,
	"statusClass":  statusClass,
	"upper":        func(v rundir.Verdict) string { return strings.ToUpper(string(v)) },
	"num": func(v *float64) string {
		if v == nil {
			return "missing"
		}
		return fmt.Sprintf("%.2f", *v)
	},
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
	Legs     []legView
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
	v := view{Run: run, Capacity: capacityViews(run.Summary.Capacity)}
	for i := range run.Legs {
		l := &run.Legs[i]
		lv := legView{Leg: l, Charts: legCharts(l)}
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
