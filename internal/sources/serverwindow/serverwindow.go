// Package serverwindow turns readings of a server's metrics file into the
// gate's windowed figures.
//
// The gate reads each figure over the window it names: the hold (from the
// first reading after the warm-up to the last one while every client was
// still connected) and each second of the timeline. A server that writes
// its cumulative state (report.Cumulative) has every figure computed from
// the difference of two readings, as a Prometheus source computes its
// counters' increases; one that does not keeps its file's own windows, and
// the result says which figures are which, so the summary can name the
// window each gate read.
//
// Gauges (entities, contacts, the governor's load factor) have no
// cumulative form: their lowest and highest reading over the hold are
// kept instead (Extremes), so a floor gate reads the lowest the hold saw,
// never the value at the moment someone happened to read it.
package serverwindow

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Reading is one read of the metrics file: at At seconds on the run's
// clock, its fields by name and the parsed file.
type Reading struct {
	At   float64
	Raw  map[string]json.RawMessage
	Tick *report.ServerTick
}

func (r Reading) cum() *report.Cumulative {
	if r.Tick == nil {
		return nil
	}
	return r.Tick.Cumulative
}

// Gauges are the file's gauge fields whose extremes over the hold are
// kept: the floors and ceilings the gate table reads (entities_min,
// contacts_min, fused_contacts_min, load_factor_max) and the peers the
// per-client rates are over.
func Gauges() []string { return slices.Clone(gauges) }

// gauges backs Gauges; never handed out itself, so no caller can change it.
var gauges = []string{"entities", "contacts", "fused_contacts", "load_factor", "peers", "projectiles_live"}

// MinMax is a gauge's lowest and highest reading and how many readings.
type MinMax struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

// Extremes accumulates the Gauges over a stretch of readings. The zero
// value is ready.
type Extremes map[string]*MinMax

// Add folds one reading's gauges in (a gauge the reading lacks is
// skipped).
func (e *Extremes) Add(raw map[string]json.RawMessage) {
	if *e == nil {
		*e = Extremes{}
	}
	for _, name := range gauges {
		var v float64
		if b, ok := raw[name]; !ok || json.Unmarshal(b, &v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		m := (*e)[name]
		if m == nil {
			(*e)[name] = &MinMax{Min: v, Max: v, N: 1}
			continue
		}
		m.Min, m.Max, m.N = min(m.Min, v), max(m.Max, v), m.N+1
	}
}

// Info is the report's account of the window a server block covers
// (server_tick.hold): the stretch, which figures are over it, the gauges'
// extremes, and why any figure that should be is missing.
type Info struct {
	// FromS and ToS are the readings at the window's ends, in seconds on
	// the run's clock; SpanS the time between them. UptimeFromS and
	// UptimeToS are the server's own clock at them (cumulative state only).
	FromS       float64  `json:"from_s"`
	ToS         float64  `json:"to_s"`
	SpanS       float64  `json:"span_s"`
	UptimeFromS *float64 `json:"uptime_from_s,omitempty"`
	UptimeToS   *float64 `json:"uptime_to_s,omitempty"`
	// Hold: the window starts at the first reading after every client's
	// connect slot and the warm-up. False: no such reading came before the
	// last one, and it starts at the run's first reading instead.
	Hold bool `json:"hold"`
	// Cumulative: the server wrote its cumulative state at both ends.
	Cumulative bool `json:"cumulative"`
	// Figures are the server_tick paths computed over the window ("tick_ms",
	// "cpu_pct", "ai_ms.mean"); every other field is as the file wrote it.
	Figures []string `json:"figures"`
	// Extremes are the Gauges' lowest and highest reading over the window.
	Extremes map[string]MinMax `json:"extremes,omitempty"`
	// Missing: a path the window should cover but cannot, and why (the
	// file's own value is removed: it would describe another window).
	Missing map[string]string `json:"missing,omitempty"`
	// Readings is how many readings the window spans.
	Readings int `json:"readings"`
}

// Key is the field of a server block that holds its Info.
const Key = "hold"

// Hold is what Compute needs besides the two readings.
type Hold struct {
	Base, End Reading
	// InHold: Base is the first reading of the hold (false: the run's
	// first, because none came in the hold before End).
	InHold   bool
	Extremes Extremes
	Readings int
	// BusiestCPUPct is the busiest second's CPU over the window (from the
	// timeline's per-second steps), nil when none was measured.
	BusiestCPUPct *float64
	// ResetToken is the marks reset the swarm asked for at the hold's
	// start (0: none asked): when End says the server honoured it, the
	// send queue's mark covers the hold.
	ResetToken int64
	// Own are the profile's own figures read from the file, by name
	// (own.go); their gauges' extremes are in Extremes under the name.
	Own map[string]FileFigure
}

// Compute is End's fields with every figure the cumulative state allows
// computed over [Base, End], and the Info under Key. It never fails: a
// figure that cannot be computed is missing with its reason.
func Compute(h Hold) map[string]json.RawMessage {
	out := maps.Clone(h.End.Raw)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	info := Info{FromS: round3(h.Base.At), ToS: round3(h.End.At), SpanS: round3(h.End.At - h.Base.At),
		Hold: h.InHold, Figures: []string{}, Readings: h.Readings}
	if len(h.Extremes) > 0 {
		info.Extremes = map[string]MinMax{}
		for k, v := range h.Extremes {
			info.Extremes[k] = *v
		}
	}
	w := &writer{out: out, info: &info}
	b, e := h.Base.cum(), h.End.cum()
	if b != nil && e != nil {
		info.Cumulative = true
		info.UptimeFromS, info.UptimeToS = ptr(round3(b.UptimeS)), ptr(round3(e.UptimeS))
		w.figures(b, e, h)
	}
	w.own(h)
	slices.Sort(info.Figures)
	w.set(Key, info)
	return out
}

// writer sets the block's fields and records what it set.
type writer struct {
	out  map[string]json.RawMessage
	info *Info
}

func (w *writer) set(path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // finite values only reach here; a failure would be a bug, not data
	}
	w.out[path] = b
}

// figure sets one computed field.
func (w *writer) figure(path string, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		w.missing(path, fmt.Sprintf("%s over the hold is not a number", path))
		return
	}
	w.set(path, v)
	w.info.Figures = append(w.info.Figures, path)
}

func (w *writer) count(path string, v int64) {
	w.set(path, v)
	w.info.Figures = append(w.info.Figures, path)
}

// missing removes the file's value (it covers another window) and says why.
func (w *writer) missing(path, why string) {
	delete(w.out, path)
	if w.info.Missing == nil {
		w.info.Missing = map[string]string{}
	}
	w.info.Missing[path] = why
}

// figures computes every figure both readings' cumulative state has.
func (w *writer) figures(b, e *report.Cumulative, h Hold) {
	span := e.UptimeS - b.UptimeS
	ticks := e.Ticks - b.Ticks
	if !(span > 0) || ticks < 0 {
		w.missing("tick_ms", fmt.Sprintf("the server's cumulative state went back (uptime %.1f → %.1f s, ticks %d → %d): it restarted within the window", b.UptimeS, e.UptimeS, b.Ticks, e.Ticks))
		return
	}
	w.count("ticks_sampled", ticks)
	w.figure("window_s", round3(span))
	w.figure("tick_hz", float64(ticks)/span)
	w.tickMs(b, e, ticks)
	w.phases(b, e, ticks)
	w.counters(b, e, ticks, span)
	w.cpu(b, e, span, h.BusiestCPUPct)
	w.wire(b, e)
	w.gc(b, e)
	w.sendQueue(e, h.ResetToken)
}

func (w *writer) tickMs(b, e *report.Cumulative, ticks int64) {
	if b.TickMs == nil || e.TickMs == nil {
		return
	}
	d, err := e.TickMs.Sub(b.TickMs)
	switch {
	case err != nil:
		w.missing("tick_ms", "the cumulative tick_ms histogram: "+err.Error())
		return
	case d.Empty():
		w.missing("tick_ms", fmt.Sprintf("no tick ran in the window (%d ticks counted)", ticks))
		return
	}
	ph, why := PhaseOf(d)
	if why != "" {
		w.missing("tick_ms", why)
		return
	}
	w.set("tick_ms", ph)
	w.info.Figures = append(w.info.Figures, "tick_ms")
}

// PhaseOf is a timing object {min, mean, p50, p95, p99, max} of a bucket
// histogram: the percentiles interpolated in their buckets, max the
// highest bucket's upper bound (a ceiling), min the lowest's lower bound
// (a floor); why is set when a figure would be unbounded (a percentile or
// the max in the open top bucket).
func PhaseOf(d *stats.Buckets) (ph map[string]float64, why string) {
	ph = map[string]float64{"mean": d.Mean()}
	if lo, ok := d.MinBound(); ok {
		ph["min"] = lo
	}
	for name, q := range map[string]float64{"p50": 0.5, "p95": 0.95, "p99": 0.99} {
		r := d.Quantile(q)
		if !r.OK {
			return nil, fmt.Sprintf("the %s lies above the histogram's highest finite bound %g ms: unbounded", name, r.Lo)
		}
		ph[name] = r.Value
	}
	lo, hi, above, ok := d.MaxBound()
	if !ok || above {
		return nil, fmt.Sprintf("the longest tick lies above the histogram's highest finite bound %g ms: unbounded", lo)
	}
	ph["max"] = hi
	return ph, ""
}

// phases replaces each phase's mean with its mean over the window (the
// file's other statistics of a phase stay the file's, and say so by not
// being listed).
func (w *writer) phases(b, e *report.Cumulative, ticks int64) {
	if ticks <= 0 {
		return
	}
	for name, end := range e.PhaseMsSum {
		start, ok := b.PhaseMsSum[name]
		raw, inFile := w.out[name]
		if !ok || !inFile {
			continue
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			continue
		}
		mean := (end - start) / float64(ticks)
		if math.IsNaN(mean) || math.IsInf(mean, 0) || mean < 0 {
			continue
		}
		obj["mean"], _ = json.Marshal(mean)
		w.set(name, obj)
		w.info.Figures = append(w.info.Figures, name+".mean")
	}
}

// diff is e − b of an optional counter; ok false when either is missing
// or it went down (a restart: no figure, said so).
func (w *writer) diff(path string, b, e *int64) (int64, bool) {
	if b == nil || e == nil {
		return 0, false
	}
	if *e < *b {
		w.missing(path, fmt.Sprintf("the server's cumulative %s went down (%d → %d): it restarted within the window", path, *b, *e))
		return 0, false
	}
	return *e - *b, true
}

func (w *writer) diffF(path string, b, e *float64) (float64, bool) {
	if b == nil || e == nil {
		return 0, false
	}
	if *e < *b {
		w.missing(path, fmt.Sprintf("the server's cumulative %s went down (%g → %g): it restarted within the window", path, *b, *e))
		return 0, false
	}
	return *e - *b, true
}

func (w *writer) counters(b, e *report.Cumulative, ticks int64, span float64) {
	if d, ok := w.diff("slow_ticks", b.SlowTicks, e.SlowTicks); ok {
		w.count("slow_ticks", d)
	}
	if d, ok := w.diff("dropped_ticks", b.DroppedTicks, e.DroppedTicks); ok {
		w.count("dropped_ticks", d)
	}
	if d, ok := w.diff("degraded_ticks", b.DegradedTicks, e.DegradedTicks); ok {
		w.count("degraded_ticks", d)
		if ticks > 0 {
			w.figure("degraded_ticks_share", float64(d)/float64(ticks))
		}
	}
	if d, ok := w.diffF("load_factor_s", b.LoadFactorS, e.LoadFactorS); ok {
		// To 1e-9: an integral and a clock read a tick apart must not make
		// a factor that never left 1 read 1.0000000000000002.
		w.figure("load_factor_mean", math.Round(d/span*1e9)/1e9)
	}
	if d, ok := w.diff("sensor_checks", b.SensorChecks, e.SensorChecks); ok {
		w.figure("sensor_checks_per_s", float64(d)/span)
	}
	if d, ok := w.diff("slow_sends", b.SlowSends, e.SlowSends); ok {
		w.count("slow_sends", d)
	}
	if d, ok := w.diff("gc_count", b.GCCount, e.GCCount); ok {
		w.count("gc_count", d)
	}
}

func (w *writer) cpu(b, e *report.Cumulative, span float64, busiest *float64) {
	d, ok := w.diffF("cpu_s", b.CPUS, e.CPUS)
	if !ok {
		return
	}
	pct := 100 * d / span
	w.figure("cpu_pct", pct)
	w.figure("cpu_pct_mean", pct)
	if busiest != nil {
		w.figure("cpu_pct_max", *busiest)
	} else {
		w.missing("cpu_pct_max", "no second of the window had two CPU readings")
	}
}

func (w *writer) wire(b, e *report.Cumulative) {
	out, okO := w.diffF("wire_out_bytes", b.WireOutBytes, e.WireOutBytes)
	in, okI := w.diffF("wire_in_bytes", b.WireInBytes, e.WireInBytes)
	dg, okD := w.diffF("wire_out_datagrams", b.WireOutDatagrams, e.WireOutDatagrams)
	secs, okS := w.diffF("wire_s", b.WireS, e.WireS)
	peerS, okP := w.diffF("peer_s", b.PeerS, e.PeerS)
	if !okO || !okS {
		return
	}
	if !(secs > 0) {
		for _, f := range []string{"wire_out_kbs", "wire_in_kbs", "wire_out_pps", "wire_peers", "wire_out_kbs_per_client"} {
			w.missing(f, "the server took no wire sample within the window")
		}
		return
	}
	w.figure("wire_out_kbs", out/secs/1000)
	if okI {
		w.figure("wire_in_kbs", in/secs/1000)
	}
	if okD {
		w.figure("wire_out_pps", dg/secs)
	}
	if !okP {
		return
	}
	// wire_peers is a count in the file's contract: the mean peer count
	// over the window's samples, to the nearest peer (the per-client rate
	// below divides by the exact peer-seconds).
	w.count("wire_peers", int64(math.Round(peerS/secs)))
	if peerS > 0 {
		w.figure("wire_out_kbs_per_client", out/peerS/1000)
	} else {
		w.missing("wire_out_kbs_per_client", "no peer was joined while the server sampled its wire traffic in the window")
	}
}

func (w *writer) gc(b, e *report.Cumulative) {
	if b.GCPauseMs == nil || e.GCPauseMs == nil {
		return
	}
	d, err := e.GCPauseMs.Sub(b.GCPauseMs)
	if err != nil {
		w.missing("gc_pause_ms", "the cumulative gc_pause_ms histogram: "+err.Error())
		return
	}
	p := map[string]float64{"max": 0, "p99": 0} // no pause in the window: none was long
	if !d.Empty() {
		if _, hi, above, ok := d.MaxBound(); ok && !above {
			p["max"] = hi
		}
		if q := d.Quantile(0.99); q.OK {
			p["p99"] = q.Hi // the runtime's buckets are coarse: their ceiling, never under
		}
	}
	w.set("gc_pause_ms", p)
	w.info.Figures = append(w.info.Figures, "gc_pause_ms")
}

// sendQueue takes the mark over the hold when the server honoured the
// reset asked for at its start.
func (w *writer) sendQueue(e *report.Cumulative, token int64) {
	if token <= 0 || e.SendQueueHWM == nil || e.MarksReset == nil || *e.MarksReset != token {
		return
	}
	w.count("send_queue_max", *e.SendQueueHWM)
}

// Step is the server's share of one timeline row, from two consecutive
// readings' cumulative state: what happened between them.
type Step struct {
	// TickHist is the ticks run between the readings (nil without a
	// cumulative histogram, or across a restart).
	TickHist *stats.Buckets
	// CPUPct is the process's CPU between them, % of one core.
	CPUPct *float64
	// WireKBsPerClient is the wire rate per joined peer between them.
	WireKBsPerClient *float64
}

// StepBetween is the step from prev to cur (either nil: no step).
func StepBetween(prev, cur *report.Cumulative) Step {
	var s Step
	if prev == nil || cur == nil {
		return s
	}
	span := cur.UptimeS - prev.UptimeS
	if !(span > 0) {
		return s
	}
	if prev.TickMs != nil && cur.TickMs != nil {
		if d, err := cur.TickMs.Sub(prev.TickMs); err == nil {
			s.TickHist = d
		}
	}
	if prev.CPUS != nil && cur.CPUS != nil && *cur.CPUS >= *prev.CPUS {
		s.CPUPct = ptr(100 * (*cur.CPUS - *prev.CPUS) / span)
	}
	if ok := prev.WireOutBytes != nil && cur.WireOutBytes != nil && prev.PeerS != nil && cur.PeerS != nil; ok {
		if out, peerS := *cur.WireOutBytes-*prev.WireOutBytes, *cur.PeerS-*prev.PeerS; out >= 0 && peerS > 0 {
			s.WireKBsPerClient = ptr(out / peerS / 1000)
		}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
