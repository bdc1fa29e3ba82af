package htmlreport

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// Chart is one figure of a leg: an inline SVG, or the reason there is none.
type Chart struct {
	Title string
	SVG   template.HTML
	// Missing says why the chart could not be drawn (no samples, artifact
	// unreadable); the page shows it in the chart's place.
	Missing string
	Note    string
}

// Chart size in points: two per row on a laptop screen.
const (
	chartW = 6.4 * vg.Inch
	chartH = 2.6 * vg.Inch
)

var (
	lineColor      = color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}
	fitColor       = color.RGBA{R: 0xd0, G: 0x60, B: 0x00, A: 0xff}
	stepColor      = color.RGBA{R: 0xc0, G: 0x10, B: 0x30, A: 0xff}
	phaseColor     = color.NRGBA{R: 0xf0, G: 0xb0, B: 0x30, A: 0x40}
	warmupColor    = color.NRGBA{R: 0x80, G: 0x80, B: 0x80, A: 0x30}
	worstColor     = color.NRGBA{R: 0xc0, G: 0x10, B: 0x30, A: 0x28}
	gridGrey       = color.RGBA{R: 0x6e, G: 0x77, B: 0x81, A: 0xff}
	thresholdColor = color.RGBA{R: 0xc0, G: 0x10, B: 0x30, A: 0xff}
)

// opt reads an optional timeline figure; NaN marks "not measured".
func opt(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// legCharts builds every chart of a leg, in page order. Where the profile
// declares a gate on the charted figure, its threshold is drawn as a
// dashed red line (thresholdLine).
func legCharts(run *Run, l *Leg) []Chart {
	tl := l.Timeline
	series := func(f func(report.TimelinePoint) float64) plotter.XYs {
		xy := make(plotter.XYs, len(tl))
		for i, p := range tl {
			xy[i] = plotter.XY{X: p.TS, Y: f(p)}
		}
		return xy
	}
	// A worker dt of 0 is a second without an iteration (report.json) or
	// an empty cell (timeline.csv): not measured.
	dt := series(func(p report.TimelinePoint) float64 {
		if p.WorkerDtP99 > 0 {
			return p.WorkerDtP99
		}
		return math.NaN()
	})
	gate := func(g gatetable.Gate) *threshold { return gateThreshold(run, l, g) }
	charts := []Chart{
		timeChart(l, "Connected clients", "clients", series(func(p report.TimelinePoint) float64 { return float64(p.Connected) }), nil),
		timeChart(l, "Observed server tick-Hz (min over clients)", "Hz", series(func(p report.TimelinePoint) float64 { return opt(p.TickHzMin) }), gate(gatetable.MustLookup(gatetable.TickHzMinGate))),
		timeChart(l, "Payload KB/s per client (mean)", "KB/s", series(kbsSecond(l)), nil),
		tickChart(run, l, series, gate),
		phaseChart(run, l),
		rssChart(l),
		timeChart(l, "Swarm worker loop dt p99 (max over workers)", "ms", dt, nil),
		timeChart(l, "Swarm service interval mean per client (the input period when the harness keeps up)", "ms",
			series(func(p report.TimelinePoint) float64 { return opt(p.ServiceIntervalMeanMs) }), nil),
	}
	if hasInputLatency(tl) {
		charts = append(charts, timeChart(l, "Input latency p95 (Inputs acknowledged in each second: send to the first snapshot acknowledging it)", "ms",
			series(func(p report.TimelinePoint) float64 { return opt(p.InputLatencyP95Ms) }), gate(gatetable.MustLookup(gatetable.InputLatencyP95Gate))))
	}
	charts = append(charts, ownCharts(run, l, series, gate)...)
	return append(charts, diagCharts(l, series, gate)...)
}

// ownCharts are one chart per figure the profile declares (docs/metrics.md,
// "Your own figures"): each second's statistic its gate reads (the first
// it offers when no gate reads one), from the timeline's own columns,
// with the gate's threshold.
func ownCharts(run *Run, l *Leg, series func(func(report.TimelinePoint) float64) plotter.XYs, gate func(gatetable.Gate) *threshold) []Chart {
	p := run.Summary.Profile
	if p == nil {
		return nil
	}
	var out []Chart
	src := p.Server.MetricsSource()
	for _, name := range sortedFigureNames(p.Figures) {
		d := p.Figures[name]
		offered := d.Offered(src)
		if len(offered) == 0 {
			continue
		}
		stat := offered[0]
		for _, s := range offered {
			if p.Gates.Has(d.OwnGateName(name, s)) {
				stat = s
				break
			}
		}
		key := name + "." + stat
		xy := series(func(pt report.TimelinePoint) float64 {
			if v, ok := pt.Own[key]; ok {
				return v
			}
			return math.NaN()
		})
		g := d.OwnGate(name, stat, src)
		title := fmt.Sprintf("%s %s each second (your figure: %s)", name, stat, g.Metric)
		out = append(out, timeChart(l, title, d.Unit, xy, gate(g)))
	}
	return out
}

// sortedFigureNames are a profile's own figures' names in order.
func sortedFigureNames(fs gatetable.OwnFigures) []string {
	out := make([]string, 0, len(fs))
	for k := range fs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// hasInputLatency reports whether any second of the timeline timed an
// input: a server that does not acknowledge inputs gets no empty chart.
func hasInputLatency(tl []report.TimelinePoint) bool {
	for _, p := range tl {
		if p.InputLatencyP95Ms != nil {
			return true
		}
	}
	return false
}

// kbsSecond reads the payload chart's figure of a second. Where the
// timeline says how many clients each second's mean is over (kbs_clients,
// which the built-in swarm writes), it is the kbs_max gate's own
// per-second reading (gatetable), so a second the gate calls no reading is
// a gap in the line (NaN), never a rate of 0: the second a client joins,
// before it has two state updates to count between, included. A timeline
// without the count (timeline.csv has no such column; a report from an
// older or another swarm) can only tell a second without a connected
// client, which is the gap there.
func kbsSecond(l *Leg) func(report.TimelinePoint) float64 {
	if slices.ContainsFunc(l.Timeline, func(p report.TimelinePoint) bool { return p.KBsClients > 0 }) {
		return perSecond(gatetable.MustLookup(gatetable.KBsMaxGate))
	}
	return func(p report.TimelinePoint) float64 {
		if p.Connected == 0 {
			return math.NaN()
		}
		return p.KBs
	}
}

// perSecond is g's figure of a timeline second, NaN where g has none.
func perSecond(g gatetable.Gate) func(report.TimelinePoint) float64 {
	return func(p report.TimelinePoint) float64 {
		if v, ok := g.PerSecond(p); ok {
			return v
		}
		return math.NaN()
	}
}

// rollingTickS is the window the tick chart's rolling p99 covers when no
// worst-window gate names one: the 10 s (600 ticks) a metrics file's own
// tick figures span.
const rollingTickS = 10

// tickChart is the server's tick p99 against run time. With per-second
// tick histograms (a server with cumulative state, or a Prometheus one) it
// is the p99 of the window_s seconds ending at each second, window_s being
// the worst-window gate's when the profile declares one, and that gate's
// worst window is shaded and named; without, it is the file's rolling p99
// as read each second.
func tickChart(run *Run, l *Leg, series func(func(report.TimelinePoint) float64) plotter.XYs, gate func(gatetable.Gate) *threshold) Chart {
	windowS, worst := float64(rollingTickS), (*serverwindow.Worst)(nil)
	if spec, ok := gateSpec(run, gatetable.TickP99WorstGate); ok && spec.WindowS != nil {
		windowS = *spec.WindowS
		if l.Server != nil {
			if w, err := gatetable.WorstTickWindow(l.Server.WithWindow(windowS), 0.99); err == nil {
				worst = &w
			}
		}
	}
	roll := serverwindow.Rolling(l.Timeline, windowS, 0.99)
	if len(roll) == 0 {
		return timeChart(l, "Server tick ms p99 (its file's rolling window, read each second)", "ms",
			series(func(p report.TimelinePoint) float64 { return opt(p.TickMsP99) }), gate(gatetable.MustLookup(gatetable.TickP99Gate)))
	}
	xy := make(plotter.XYs, len(roll))
	for i, p := range roll {
		xy[i] = plotter.XY{X: p.TS, Y: math.NaN()}
		if p.OK {
			xy[i].Y = p.Value
		}
	}
	thr := gate(gatetable.MustLookup(gatetable.TickP99WorstGate))
	if thr == nil {
		thr = gate(gatetable.MustLookup(gatetable.TickP99Gate))
	}
	var extra []span
	if worst != nil {
		extra = append(extra, span{Label: "worst window", StartS: worst.FromS, EndS: worst.ToS, Fill: worstColor})
	}
	c := timeChartSpans(l, fmt.Sprintf("Server tick ms p99 over the %s s ending at each second", gatetable.FormatNumber(windowS)), "ms", xy, thr, extra)
	if worst != nil {
		c.Note = joinNotes(c.Note, fmt.Sprintf("worst %s s window (%s): t=%.1f–%.1f s, p99 %.2f ms over %d ticks, shaded",
			gatetable.FormatNumber(windowS), gatetable.TickP99WorstGate, worst.FromS, worst.ToS, worst.Value, worst.Ticks))
	}
	return c
}

// gateSpec is the profile's declaration of gate name, false when it
// declares none.
func gateSpec(run *Run, name string) (profile.GateSpec, bool) {
	p := run.Summary.Profile
	if p == nil {
		return profile.GateSpec{}, false
	}
	spec, ok := p.Gates[name]
	return spec, ok
}

// diagCharts are the server's why-was-it-slow figures against run time,
// from the metrics file as the swarm read it each second: its CPU and wire
// rate as written, and its run-long counters (slow ticks, GC cycles, slow
// sends) as per-second rates between two reads.
func diagCharts(l *Leg, series func(func(report.TimelinePoint) float64) plotter.XYs, gate func(gatetable.Gate) *threshold) []Chart {
	cpu := timeChart(l, "Server CPU % of one core (each second: from its cumulative CPU seconds, or its last metrics write without them)", "%",
		series(func(p report.TimelinePoint) float64 { return opt(p.ServerCPUPct) }), gate(gatetable.MustLookup(gatetable.ServerCPUGate)))
	cpu.Note = joinNotes(cpu.Note, cpuNote(l.Server))
	gc := timeChart(l, "Server GC cycles per second", "cycles/s", rate(l.Timeline, func(p report.TimelinePoint) *float64 { return p.GCCount }), nil)
	gc.Note = joinNotes(gc.Note, figureNote(l.Server, "GC pause p99 since start (end of run)", gatetable.GCPauseP99))
	return []Chart{
		cpu,
		timeChart(l, "Server wire KB/s per client (the rate the wire ceiling reads, as kept at each read)", "KB/s",
			series(func(p report.TimelinePoint) float64 { return opt(p.WireKBsPerClient) }), gate(gatetable.MustLookup(gatetable.WireKBsGate))),
		timeChart(l, "Server slow ticks per second", "ticks/s", rate(l.Timeline, func(p report.TimelinePoint) *float64 { return p.SlowTicks }), nil),
		gc,
		timeChart(l, "Server send queue max (deepest per-peer backlog of its last metrics-write window)", "messages",
			series(func(p report.TimelinePoint) float64 { return opt(p.SendQueueMax) }), nil),
		timeChart(l, "Server slow sends per second", "sends/s", rate(l.Timeline, func(p report.TimelinePoint) *float64 { return p.SlowSends }), nil),
	}
}

// rate turns a run-long counter of the timeline into a per-second rate:
// the difference between two consecutive rows that both read it, over
// their time apart, at the later row. A counter that went down (a server
// restarted) or a row without it is not measured there.
func rate(tl []report.TimelinePoint, get func(report.TimelinePoint) *float64) plotter.XYs {
	xy := make(plotter.XYs, len(tl))
	for i, p := range tl {
		xy[i] = plotter.XY{X: p.TS, Y: math.NaN()}
		if i == 0 {
			continue
		}
		prev, cur := get(tl[i-1]), get(p)
		if dt := p.TS - tl[i-1].TS; prev != nil && cur != nil && dt > 0 && *cur >= *prev {
			xy[i].Y = (*cur - *prev) / dt
		}
	}
	return xy
}

// cpuNote is the server's CPU over its tick window at the end of the run.
func cpuNote(m *gatetable.Metrics) string {
	if m == nil {
		return ""
	}
	mean, errMean := gatetable.CPUPctMean.Read(m)
	peak, errPeak := gatetable.CPUPctMax.Read(m)
	if errMean != nil || errPeak != nil {
		return "tick-window CPU (cpu_pct_mean, cpu_pct_max): not reported"
	}
	window := "tick-window CPU at the end of the run"
	if m.OverHold("cpu_pct_mean") {
		window = "CPU over the hold"
	}
	return fmt.Sprintf("%s: mean %.1f %%, busiest second %.1f %%", window, mean, peak)
}

// figureNote is "label value unit" of a figure of the end-of-run metrics.
func figureNote(m *gatetable.Metrics, label string, f gatetable.Figure) string {
	if m == nil {
		return ""
	}
	v, err := f.Read(m)
	if err != nil {
		return label + ": not reported"
	}
	return fmt.Sprintf("%s: %s %s", label, gatetable.FormatNumber(v), f.Unit)
}

func joinNotes(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// threshold is a declared gate's bound on a charted figure.
type threshold struct {
	Y    float64
	Note string
}

// gateThreshold is the bound the profile declares for gate g on this leg,
// described as the leg's check shows it (bound, level, phase); nil when
// the profile does not declare it there. g is the table's entry (or the
// profile's own figure's), never a name: a chart cannot name a gate that
// does not exist and silently draw no line.
func gateThreshold(run *Run, l *Leg, g gatetable.Gate) *threshold {
	p := run.Summary.Profile
	if p == nil {
		return nil
	}
	name := g.Name
	y, ok := p.GateThreshold(g, l.Result.Leg)
	if !ok {
		return nil
	}
	bound, level := g.Bound(y), p.Gates[name].Level
	for _, c := range l.Result.Checks {
		if c.Gate == name {
			bound, level = c.Threshold, c.Level
		}
	}
	note := fmt.Sprintf("dashed red line: %s %s (%s)", name, bound, level)
	if ph := p.Gates[name].Phase; ph != "" {
		note += ", checked in phase " + ph + " only"
	}
	return &threshold{Y: y, Note: note}
}

// timeChart draws one per-second figure against run time, with the gate's
// threshold when thr is set.
func timeChart(l *Leg, title, unit string, xy plotter.XYs, thr *threshold) Chart {
	return timeChartSpans(l, title, unit, xy, thr, nil)
}

// timeChartSpans is timeChart shading extra spans beside the leg's own.
func timeChartSpans(l *Leg, title, unit string, xy plotter.XYs, thr *threshold, extra []span) Chart {
	c := Chart{Title: title}
	if why := timelineMissing(l); why != "" {
		c.Missing = why
		return c
	}
	segs := segments(xy)
	if len(segs) == 0 {
		c.Missing = unmeasured(l)
		return c
	}
	p := newPlot(unit)
	p.Add(shade(append(legSpans(l), extra...)))
	for _, s := range segs {
		if err := addLine(p, s, lineColor, false); err != nil {
			c.Missing = err.Error()
			return c
		}
	}
	if thr != nil {
		p.Add(hline{y: thr.Y, c: thresholdColor})
		c.Note = thr.Note
	}
	floorZero(p)
	c.SVG, c.Missing = svg(p)
	return c
}

// hline is a horizontal line across the plot at y (a gate's threshold); it
// widens the y axis to include y, so a threshold far above the data still
// shows how far away it is.
type hline struct {
	y float64
	c color.Color
}

// Plot implements plot.Plotter.
func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(h.y)
	st := draw.LineStyle{Color: h.c, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(6), vg.Points(3)}}
	c.StrokeLine2(st, c.Min.X, y, c.Max.X, y)
}

// DataRange implements plot.DataRanger: y only.
func (h hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), h.y, h.y
}

// unmeasured says why a timeline figure has no sample. From timeline.csv
// it may simply not be a column there (a file written before the swarm's
// columns were added), so the page does not claim the run never measured it.
func unmeasured(l *Leg) string {
	if l.TimelineSource == timelineCSV && l.TimelineColumns < len(rundir.TimelineColumns()) {
		return "not in timeline.csv, and report.json is unreadable"
	}
	return "not measured in this run"
}

func timelineMissing(l *Leg) string {
	switch {
	case l.TimelineErr != nil && l.ReportErr != nil:
		return fmt.Sprintf("no timeline: %v; %v", l.ReportErr, l.TimelineErr)
	case l.TimelineSource == "":
		return "no timeline: " + errText(l.ReportErr)
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "not recorded"
	}
	return err.Error()
}

// segments splits a series at its NaN samples, so a second without a figure
// is a gap in the line, not a dip to zero or a bridge across it.
func segments(xy plotter.XYs) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for _, p := range xy {
		if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = nil
			}
			continue
		}
		cur = append(cur, p)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func newPlot(unit string) *plot.Plot {
	p := plot.New()
	p.X.Label.Text = "run time (s)"
	p.Y.Label.Text = unit
	p.Add(plotter.NewGrid())
	return p
}

// addLine adds a line; a single sample is drawn as a point so it shows.
func addLine(p *plot.Plot, xy plotter.XYs, c color.Color, dashed bool) error {
	if len(xy) == 1 {
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = c
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(s)
		return nil
	}
	ln, err := plotter.NewLine(xy)
	if err != nil {
		return err
	}
	ln.LineStyle.Color = c
	ln.LineStyle.Width = vg.Points(1.5)
	if dashed {
		ln.LineStyle.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	p.Add(ln)
	return nil
}

// floorZero starts the y axis at zero for non-negative figures, so a small
// wobble does not look like a cliff.
func floorZero(p *plot.Plot) {
	if p.Y.Min > 0 {
		p.Y.Min = 0
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
}

// span is a shaded stretch of run time, [StartS, EndS): an impairment
// phase, and (when profiles can declare one) the warm-up the windowed
// figures exclude.
type span struct {
	Label        string
	StartS, EndS float64
	Fill         color.Color
}

// legSpans are the stretches a leg's time charts shade: the warm-up its
// windowed figures leave out (from the start, the connect ramp included,
// to the report's warmup_end_s) and its impairment phases.
func legSpans(l *Leg) []span {
	out := make([]span, 0, len(l.Phases)+1)
	if end := warmupEnd(l); end != nil {
		out = append(out, span{Label: "warm-up", StartS: 0, EndS: *end, Fill: warmupColor})
	}
	for _, ph := range l.Phases {
		out = append(out, span{Label: ph.Name, StartS: ph.StartS, EndS: ph.EndS, Fill: phaseColor})
	}
	return out
}

// warmupEnd is where the leg's warm-up ends on its clock, nil without one
// (or without a readable report to say).
func warmupEnd(l *Leg) *float64 {
	if l.Report == nil || l.Report.WarmupEndS == nil || !(*l.Report.WarmupEndS > 0) {
		return nil
	}
	return l.Report.WarmupEndS
}

// ServerLogLine is what the leg's server wrote to server.log, and whether
// the cap cut it ("" when the leg did not say).
func (l Leg) ServerLogLine() string { return rundir.ServerLogText(l.Result.ServerLog) }

// WarmupSpan is the warm-up as the page lists it ("0.0–4.5 s"), "" without one.
func (l Leg) WarmupSpan() string {
	if end := warmupEnd(&l); end != nil {
		return fmt.Sprintf("0.0–%.1f s", *end)
	}
	return ""
}

// shade draws spans as labelled bands across the plot height.
type shade []span

// Plot implements plot.Plotter.
func (s shade) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, sp := range s {
		x0, x1 := trX(math.Max(sp.StartS, p.X.Min)), trX(math.Min(sp.EndS, p.X.Max))
		if x1 <= x0 {
			continue
		}
		pts := []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}
		c.FillPolygon(sp.Fill, pts)
		label := p.X.Tick.Label // the axis' own font and size
		label.XAlign, label.YAlign = draw.XLeft, draw.YTop
		c.FillText(label, vg.Point{X: x0 + vg.Points(2), Y: c.Max.Y - vg.Points(2)}, sp.Label)
	}
}

// DataRange implements plot.DataRanger so a span widens the x axis to show
// itself whole.
func (s shade) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for _, sp := range s {
		xmin, xmax = math.Min(xmin, sp.StartS), math.Max(xmax, sp.EndS)
	}
	return xmin, xmax, math.Inf(1), math.Inf(-1)
}

// phaseChart draws the server's per-phase mean tick time (ms) as bars, from
// the metrics file as read at the end of the run, each phase read through
// the gate table (gatetable.TickPhases()): a phase the server does not
// report is missing, named in the note, never drawn as a 0 ms bar.
func phaseChart(run *Run, l *Leg) Chart {
	c := Chart{Title: "Server tick phases, mean ms (end of run)"}
	m := l.Server
	if m == nil {
		c.Missing = "server metrics: " + errText(l.ServerErr)
		return c
	}
	if m.OverHold("ai_ms.mean") {
		c.Title = "Server tick phases, mean ms over the hold"
	}
	var vals plotter.Values
	var names, missing []string
	phases := gatetable.TickPhases()
	if p := run.Summary.Profile; p != nil {
		// The team's own phases, under their names, after the built-in ones.
		phases = append(phases, p.Figures.OwnPhases(p.Server.MetricsSource())...)
	}
	for _, f := range phases {
		v, err := f.Read(m)
		if err != nil {
			missing = append(missing, f.Title)
			continue
		}
		vals, names = append(vals, v), append(names, f.Title)
	}
	if len(vals) == 0 {
		c.Missing = "server metrics report no per-phase tick timing (" + strings.Join(missing, ", ") + ")"
		return c
	}
	p := plot.New()
	p.Y.Label.Text = "ms"
	p.Add(plotter.NewGrid())
	bars, err := plotter.NewBarChart(vals, vg.Points(28))
	if err != nil {
		c.Missing = err.Error()
		return c
	}
	bars.Color = lineColor
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalX(names...)
	floorZero(p)
	c.Note = phaseNote(m, missing)
	c.SVG, c.Missing = svg(p)
	return c
}

// phaseNote is the whole tick's figures under the phase bars, and the
// phases the server did not report.
func phaseNote(m *gatetable.Metrics, missing []string) string {
	var parts []string
	mean, errMean := gatetable.TickMsMean.Read(m)
	p99, errP99 := gatetable.TickMsP99.Read(m)
	window, errWindow := m.Tick("window_s")
	switch {
	case errMean == nil && errP99 == nil && m.OverHold("tick_ms"):
		h := m.Hold()
		parts = append(parts, fmt.Sprintf("whole tick: mean %.3f ms, p99 %.3f ms over the hold (t=%.1f–%.1f s)", mean, p99, h.FromS, h.ToS))
	case errMean == nil && errP99 == nil && errWindow == nil:
		parts = append(parts, fmt.Sprintf("whole tick: mean %.3f ms, p99 %.3f ms over the server's last %.0f s window", mean, p99, window))
	}
	if len(missing) > 0 {
		parts = append(parts, "not reported: "+strings.Join(missing, ", "))
	}
	return strings.Join(parts, "; ")
}

// rssChart draws the server's RSS: the per-second timeline, the sampled
// series the slope is fitted to, the fitted slope over the tail it was
// fitted on, and the largest single step.
func rssChart(l *Leg) Chart {
	c := Chart{Title: "Server RSS (MB)"}
	if why := timelineMissing(l); why != "" {
		c.Missing = why
		return c
	}
	p := newPlot("MB")
	p.Add(shade(legSpans(l)))
	tl := make(plotter.XYs, len(l.Timeline))
	for i, pt := range l.Timeline {
		tl[i] = plotter.XY{X: pt.TS, Y: math.NaN()}
		if pt.RSSKB != nil {
			tl[i].Y = float64(*pt.RSSKB) / 1000
		}
	}
	drawn := false
	for _, s := range segments(tl) {
		if err := addLine(p, s, lineColor, false); err != nil {
			c.Missing = err.Error()
			return c
		}
		drawn = true
	}
	var notes []string
	if l.Report != nil && len(l.Report.RSSSeries) > 0 {
		drawn = true
		if n := rssFit(p, l.Report); n != "" {
			notes = append(notes, n)
		}
	}
	if !drawn {
		c.Missing = "no RSS sample in this run"
		return c
	}
	c.Note = strings.Join(notes, "; ")
	c.SVG, c.Missing = svg(p)
	return c
}

// rssFit marks the sampled series, the fitted slope and the largest step.
// The fit is recomputed with the same estimator the swarm used, for the
// tail it starts from; the slope and step shown are the report's.
func rssFit(p *plot.Plot, r *report.Report) string {
	pts := make([]stats.Point, len(r.RSSSeries))
	xy := make(plotter.XYs, len(r.RSSSeries))
	for i, s := range r.RSSSeries {
		pts[i] = stats.Point{T: s.TS, V: float64(s.RSSKB)}
		xy[i] = plotter.XY{X: s.TS, Y: float64(s.RSSKB) / 1000}
	}
	if sc, err := plotter.NewScatter(xy); err == nil {
		sc.GlyphStyle.Color, sc.GlyphStyle.Shape = lineColor, draw.CircleGlyph{}
		p.Add(sc)
	}
	fit := stats.RSSSlope(pts)
	if r.RSSSlopeKBPerMin == nil || !fit.OK {
		return "slope not fitted (too few RSS samples; see rss_sample_interval_s)"
	}
	slope := *r.RSSSlopeKBPerMin
	var from plotter.XY
	for _, s := range xy {
		if s.X >= fit.TailFromS {
			from = s
			break
		}
	}
	last := xy[len(xy)-1]
	line := plotter.XYs{from, {X: last.X, Y: from.Y + slope/60*(last.X-from.X)/1000}}
	_ = addLine(p, line, fitColor, true)
	note := fmt.Sprintf("fitted slope %.1f KB/min (%s, from %.0f s)", slope, r.RSSSlopeMethod, fit.TailFromS)
	if r.RSSStepMaxKB != nil && r.RSSStepAtS != nil && *r.RSSStepMaxKB > 0 {
		at := *r.RSSStepAtS
		step := plotter.XYs{{X: at, Y: p.Y.Min}, {X: at, Y: p.Y.Max}}
		if ln, err := plotter.NewLine(step); err == nil {
			ln.LineStyle.Color, ln.LineStyle.Width = stepColor, vg.Points(1)
			ln.LineStyle.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(ln)
		}
		note += fmt.Sprintf("; largest step %.0f KB at %.1f s (red line)", *r.RSSStepMaxKB, at)
	}
	return note
}

// svg renders a plot to inline SVG markup (no XML prolog: it is embedded in
// HTML), or returns why it could not.
func svg(p *plot.Plot) (template.HTML, string) {
	c := vgsvg.New(chartW, chartH)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", "render: " + err.Error()
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// vgsvg sizes in points; the page scales charts to their column.
	s = strings.Replace(s, "<svg ", `<svg class="chart" preserveAspectRatio="xMidYMid meet" `, 1)
	return template.HTML(s), "" // #nosec: generated by vgsvg from numbers and our own labels
}
