package gatetable

import (
	"fmt"
	"strings"
)

// Window is the stretch of a run a gate's figure covers. Every gate names
// one (docs/gate.md's "window" column); none reads an instant or the last
// N seconds unless its name says so. The summary says, per check, which
// window was actually read (WindowRead): a server that writes no
// cumulative state leaves some figures on its file's own window, and the
// reader must see that.
type Window int

// Windows.
const (
	// WindowRun: since the run (or the server) started: admission, counts
	// of things that happened, the RSS growth since startup, run-long
	// watermarks.
	WindowRun Window = iota
	// WindowClients: each client's joined time after the warm-up, pooled
	// or compared across clients (the swarm's own figures).
	WindowClients
	// WindowServerHold: the server's figure over the hold (from the first
	// reading after the warm-up to the last one while every client was
	// connected), by difference of its cumulative state or a Prometheus
	// source's increases; a server without cumulative state falls back to
	// its file's own window, and the summary says so.
	WindowServerHold
	// WindowReadings: the lowest (for a floor) or highest (for a ceiling)
	// of the swarm's once-a-second readings of a server gauge over the
	// hold.
	WindowReadings
	// WindowWorst: the worst window of window_s seconds over the hold.
	WindowWorst
	// WindowTail: the final half of a series (the RSS slope's estimator).
	WindowTail
	// WindowPhase: one stretch of an impaired run.
	WindowPhase
)

// Doc is the window in docs/gate.md's words.
func (w Window) Doc() string {
	switch w {
	case WindowClients:
		return "each client's joined time after the warm-up"
	case WindowServerHold:
		return "the hold, from the server's cumulative state (a file without it: its own window, named in the summary)"
	case WindowReadings:
		return "the hold's once-a-second readings (lowest for a floor, highest for a ceiling)"
	case WindowWorst:
		return "the worst `window_s`-second window of the hold"
	case WindowTail:
		return "the RSS series' final half, after the warm-up"
	case WindowPhase:
		return "the stretch after the last impairment phase"
	}
	return "the whole run"
}

// WindowRead says which window a check of g actually read on m, for the
// summary: the hold's span when its server fields were computed over it,
// the file's own window when they were not, the readings a gauge's
// extreme was taken from. "" when the gate's window needs no saying (the
// swarm's own figures, run-long counts).
func (g Gate) WindowRead(m *Metrics) string {
	if m.Scope != "" {
		return "phase " + m.Scope
	}
	h := m.Hold()
	span := ""
	if h != nil {
		span = fmt.Sprintf("t=%s–%s s", fmt1(h.FromS), fmt1(h.ToS))
		if !h.Hold {
			span += ", ramp included (no reading in the hold)"
		}
	}
	switch g.Window {
	case WindowServerHold:
		return g.serverWindowRead(m, span)
	case WindowReadings:
		name := ""
		if len(g.ServerFields) > 0 {
			name = g.ServerFields[0]
		}
		which := "highest"
		if g.Dir == AtLeast {
			which = "lowest"
		}
		if _, n, ok := m.Extreme(name, g.Dir == AtLeast); ok {
			return fmt.Sprintf("%s of %d readings over the hold (%s)", which, n, span)
		}
		return "the final reading (the report keeps no extremes over the hold)"
	case WindowWorst:
		if w, err := WorstTickWindow(m, 0.99); err == nil {
			unread := ""
			if w.Unread > 0 {
				unread = fmt.Sprintf("; %d timeline rows without a tick histogram, their ticks in the next row's", w.Unread)
			}
			return fmt.Sprintf("worst %s s window: t=%s–%s s (%d ticks, of %d windows in the hold %s%s)", FormatNumber(w.WindowS), fmt1(w.FromS), fmt1(w.ToS), w.Ticks, w.Windows, span, unread)
		}
		return ""
	}
	return ""
}

// serverWindowRead names the window of a server-hold figure: the hold when
// every field it reads was computed over it, else the file's own windows.
func (g Gate) serverWindowRead(m *Metrics, span string) string {
	var own []string
	for _, f := range g.ServerFields {
		switch {
		case m.OverHold(f):
		case g.Own:
			// A team's summary: its window is whatever the server kept.
			name, _, _ := strings.Cut(f, ".")
			return "the server's own window: " + name + " as the server wrote it (a summary, not over the hold)"
		default:
			own = append(own, fileWindow(m, f))
		}
	}
	if len(own) == 0 {
		if span == "" {
			return "the hold"
		}
		return "the hold (" + span + ")"
	}
	return "the file's own window: " + strings.Join(dedupe(own), "; ") + " (no cumulative state)"
}

// fileWindow is what a metrics file field covers as the file wrote it.
func fileWindow(m *Metrics, field string) string {
	first, _, _ := strings.Cut(field, ".")
	switch {
	case strings.HasSuffix(first, "_ms"):
		n, errN := m.Tick("ticks_sampled")
		w, errW := m.Tick("window_s")
		if errN == nil && errW == nil {
			return fmt.Sprintf("%s over its last %s ticks (%s s)", first, FormatNumber(n), fmt1(w))
		}
		return first + " over its last ticks"
	case first == "cpu_pct":
		return "cpu_pct over its last metrics write"
	case strings.HasPrefix(first, "wire_"):
		return "wire rates over its intervals at the peak peer count"
	case first == "send_queue_max":
		return "send_queue_max over its last metrics write"
	case strings.HasSuffix(first, "_ticks") || first == "slow_sends" || first == "gc_count":
		return first + " since the server started"
	}
	return first + " as last written"
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

func fmt1(v float64) string { return fmt.Sprintf("%.1f", v) }
