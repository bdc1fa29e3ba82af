package htmlreport

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/scalegate/scalegate/internal/run/rundir"
)

// capacityView is one capacity curve (summary.json capacity[]) and its
// charts: the client count on the x axis, the knee and the harness limit
// marked.
type capacityView struct {
	rundir.CapacityCurve
	Charts []Chart
}

func capacityViews(curves []rundir.CapacityCurve) []capacityView {
	var out []capacityView
	for _, c := range curves {
		out = append(out, capacityView{CapacityCurve: c, Charts: capacityCharts(c)})
	}
	return out
}

func capacityCharts(c rundir.CapacityCurve) []Chart {
	fig := func(get func(rundir.CapacityPoint) *float64) plotter.XYs {
		xy := make(plotter.XYs, len(c.Points))
		for i, p := range c.Points {
			xy[i] = plotter.XY{X: float64(p.Clients), Y: opt(get(p))}
		}
		return xy
	}
	return []Chart{
		curveChart(c, "Observed tick-Hz (min) vs clients", "Hz", fig(func(p rundir.CapacityPoint) *float64 { return p.TickHzMin })),
		curveChart(c, "Server tick ms p99 vs clients", "ms", fig(func(p rundir.CapacityPoint) *float64 { return p.TickMsP99 })),
		curveChart(c, "Payload KB/s per client vs clients", "KB/s", fig(func(p rundir.CapacityPoint) *float64 { return p.KBsMean })),
		curveChart(c, "Server CPU % of one core (tick-window mean) vs clients", "%", fig(func(p rundir.CapacityPoint) *float64 { return p.CPUPctMean })),
		curveChart(c, "Swarm worker dt p99 vs clients", "ms", fig(func(p rundir.CapacityPoint) *float64 { return p.WorkerDtP99Ms })),
		curveChart(c, "Per-client service interval p99 vs clients", "ms", fig(func(p rundir.CapacityPoint) *float64 { return p.ServiceIntervalP99Ms })),
	}
}

// curveChart draws one figure against the client count, with the knee (red)
// and the harness limit (grey) as vertical lines.
func curveChart(c rundir.CapacityCurve, title, unit string, xy plotter.XYs) Chart {
	ch := Chart{Title: c.Group + ": " + title}
	segs := segments(xy)
	if len(segs) == 0 {
		ch.Missing = "not measured at any client count"
		return ch
	}
	p := plot.New()
	p.X.Label.Text = "clients"
	p.Y.Label.Text = unit
	p.Add(plotter.NewGrid())
	for _, s := range segs {
		if err := addLine(p, s, lineColor, false); err != nil {
			ch.Missing = err.Error()
			return ch
		}
		if sc, err := plotter.NewScatter(s); err == nil {
			sc.GlyphStyle.Color = lineColor
			p.Add(sc)
		}
	}
	floorZero(p)
	var notes []string
	if c.Knee != nil {
		vline(p, float64(*c.Knee), stepColor)
		notes = append(notes, fmt.Sprintf("knee at %d clients (red)", *c.Knee))
	}
	if c.HarnessLimit != nil {
		vline(p, float64(*c.HarnessLimit), gridGrey)
		notes = append(notes, fmt.Sprintf("harness limit at %d clients (grey): not a knee", *c.HarnessLimit))
	}
	if len(notes) > 0 {
		ch.Note = notes[0]
		for _, n := range notes[1:] {
			ch.Note += "; " + n
		}
	}
	ch.SVG, ch.Missing = svg(p)
	return ch
}

// vline marks x across the plot's current y range.
func vline(p *plot.Plot, x float64, c interface{ RGBA() (r, g, b, a uint32) }) {
	ln, err := plotter.NewLine(plotter.XYs{{X: x, Y: p.Y.Min}, {X: x, Y: p.Y.Max}})
	if err != nil {
		return
	}
	ln.LineStyle.Color, ln.LineStyle.Width = c, vg.Points(1.5)
	ln.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	p.Add(ln)
}
