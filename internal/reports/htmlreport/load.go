// Package htmlreport renders a run directory as report.html.
//
// The report is one self-contained page (inline SVG charts and CSS, nothing
// fetched, no script) with the verdict first, each leg's gate table and
// timeline charts, and the run's metadata. It reads only the artifacts a
// run leaves behind (summary.json, metadata.json and each leg's
// report.json, server_metrics.json and timeline.csv), so `scalegate report
// DIR` rebuilds the same page from a downloaded artifact long after the
// run.
package htmlreport

import (
	"fmt"
	"path/filepath"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Phase is a named interval of a leg during which the network was impaired
// (a lossy proxy's loss or latency step). A report lists them as
// `phases: [{name, start_s, end_s}]`; the charts shade them.
type Phase struct {
	Name   string  `json:"name"`
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// Run is everything the page is built from.
type Run struct {
	Dir     string
	Summary *rundir.RunResult
	// Meta is nil when metadata.json could not be read; MetaErr says why.
	Meta    *rundir.Metadata
	MetaErr error
	Legs    []Leg
}

// Leg is one leg's artifacts. A missing or unreadable artifact leaves its
// field nil and its error set: the page says what it could not read rather
// than drawing an empty chart as if nothing happened.
type Leg struct {
	Result    rundir.LegResult
	Report    *report.Report
	ReportErr error
	// Server is the leg's server metrics, read through the gate table:
	// the block the report embeds (over the hold), else server_metrics.json
	// as the server last wrote it; nil with ServerErr when neither is
	// readable.
	Server    *gatetable.Metrics
	ServerErr error
	// Timeline comes from report.json, or from timeline.csv when the report
	// is unreadable (TimelineSource says which; a CSV from before the
	// swarm's columns has no worker dt or service interval).
	Timeline       []report.TimelinePoint
	TimelineSource string
	TimelineErr    error
	// TimelineColumns is how many columns timeline.csv had when the
	// timeline came from it (older runs wrote fewer).
	TimelineColumns int
	Phases          []Phase
}

// A leg's TimelineSource: the artifact its timeline was read from.
const (
	timelineReport = "report.json"
	timelineCSV    = "timeline.csv"
)

// Load reads a run directory. Only an unreadable summary.json is an error:
// without it there is no verdict to show.
func Load(dir string) (*Run, error) {
	sum, err := rundir.ReadSummary(dir)
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Summary: sum}
	run.Meta, run.MetaErr = rundir.ReadMetadata(dir)
	for _, lr := range sum.Legs {
		run.Legs = append(run.Legs, loadLeg(dir, lr))
	}
	return run, nil
}

// loadLeg reads one leg's artifacts from DIR/<leg id>: the run directory
// may have moved since the run (a CI artifact), so the absolute leg path
// recorded in summary.json is not used.
func loadLeg(dir string, lr rundir.LegResult) Leg {
	leg := Leg{Result: lr}
	legDir := filepath.Join(dir, lr.Leg.ID)
	reportPath := filepath.Join(legDir, "report.json")
	leg.Report, leg.ReportErr = report.ReadReport(reportPath)
	if leg.Report != nil {
		leg.Timeline, leg.TimelineSource = leg.Report.Timeline, timelineReport
		leg.Phases, leg.ReportErr = impairedPhases(reportPath, leg.Report.Phases)
	} else {
		csvPath := filepath.Join(legDir, "timeline.csv")
		var head []string
		leg.Timeline, head, leg.TimelineErr = rundir.ReadTimelineCSVColumns(csvPath)
		leg.TimelineColumns = len(head)
		if leg.TimelineErr == nil {
			leg.TimelineSource = timelineCSV
		}
	}
	// The report's block is what the gates read: the final metrics file
	// with every figure its cumulative state allows computed over the
	// hold. The file as the server last wrote it is the fallback (its
	// figures cover its own last window, after the swarm left).
	if leg.Report != nil && gatetable.FromReport(leg.Report).TickErr() == nil {
		leg.Server = gatetable.FromReport(leg.Report)
		return leg
	}
	_, raw, err := report.ReadServerTick(filepath.Join(legDir, "server_metrics.json"))
	if err == nil {
		leg.Server = gatetable.FromServerTick(raw)
	} else {
		leg.ServerErr = err
	}
	return leg
}

// impairedPhases are the report's impaired stretches, to shade: its phases
// cover the whole run, "before" and "after" being the clean stretches
// around the impairment.
func impairedPhases(path string, stretches []report.Stretch) ([]Phase, error) {
	var impaired []Phase
	for i, p := range stretches {
		if !(p.EndS >= p.StartS) {
			return nil, fmt.Errorf("%s: phases[%d] %q: end_s %g before start_s %g", path, i, p.Name, p.EndS, p.StartS)
		}
		if p.Name != "before" && p.Name != "after" {
			impaired = append(impaired, Phase{Name: p.Name, StartS: p.StartS, EndS: p.EndS})
		}
	}
	return impaired, nil
}
