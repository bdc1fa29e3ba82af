package gate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// Witness is what the gate saw of a leg itself, apart from the swarm's
// report: which run it started, how long the swarm lived and what the
// server's own metrics counted while it did. A report says what its swarm
// claims; a swarm that exits at once and writes (or copies) a report of
// another run claims a healthy leg. The load check holds the report to the
// witness: a report of another run, a swarm that could not have run the
// leg's duration, or a server that counted none of the traffic the report
// describes fails the leg. Nil for a report judged without its run (a saved
// report gated offline): only the report's own figures are checked then.
type Witness struct {
	// RunID is the id given to the swarm ($SCALEGATE_RUN_ID); ServerAddr
	// the address it was told to dial; MetricsSource the metrics file or
	// URL it was told to read.
	RunID, ServerAddr, MetricsSource string
	// DurationS is the leg's declared run length.
	DurationS float64
	// Launched and Exited are when the swarm process (the first shard's
	// launch, the last one's exit) started and ended.
	Launched, Exited time.Time
	// Server is what the server's own metrics counted over the swarm's
	// life, read by the gate.
	Server ServerCounts
}

// ServerCounts are the server's own counters over the swarm's life (from
// just before its launch to just after its exit), read by the gate from
// the leg's metrics file or endpoint: nil where the server does not count
// the figure. Err says why they could not be read at all.
type ServerCounts struct {
	// Source is the file or URL read.
	Source string
	// Inputs accepted, peer-seconds (joined peers integrated over time)
	// and ticks run over the swarm's life.
	Inputs, PeerS, Ticks *float64
	// TicksAtEnd is the server's ticks_total since it started, read after
	// the swarm exited (a metrics file's own cumulative count).
	TicksAtEnd *float64
	Err        string
}

// durationSlack is how far short of its declared duration a swarm's life
// may fall before it could not have run it: timer and process-clock
// granularity. A swarm counts its duration from its first connect, after
// it started, so a real run lives longer than its duration, never shorter.
const durationSlack = 100 * time.Millisecond

// startedSlack is how far before the swarm's launch (clock steps, a shard
// counting from an instant set before it started) the report's started_at
// may lie.
const startedSlack = 2 * time.Second

// minPeerWindow is the shortest swarm life over which a server that
// counts peer-seconds must have counted some for an admitted client: a
// few of its metrics writes.
const minPeerWindow = 2 * time.Second

// witnessed is why the report is not of the run the gate witnessed, one
// reason each; none means nothing contradicts it.
func witnessed(w *Witness, r *report.Report) []string {
	if w == nil {
		return nil
	}
	var why []string
	why = append(why, w.identity(r)...)
	why = append(why, w.lifetime(r)...)
	why = append(why, w.serverSaw(r)...)
	return why
}

// identity compares the run the report names with this leg's.
func (w *Witness) identity(r *report.Report) []string {
	var why []string
	if r.RunID != "" && w.RunID != "" && r.RunID != w.RunID {
		why = append(why, fmt.Sprintf("report.run_id %q is not this run's (%s)", r.RunID, w.RunID))
	}
	if r.ServerAddr != "" && w.ServerAddr != "" && r.ServerAddr != w.ServerAddr {
		why = append(why, fmt.Sprintf("report.server_addr %s is not this leg's server (%s)", r.ServerAddr, w.ServerAddr))
	}
	if r.ServerMetricsPath != "" && w.MetricsSource != "" && r.ServerMetricsPath != w.MetricsSource {
		why = append(why, fmt.Sprintf("report.server_metrics_path %s is not this leg's metrics (%s)", r.ServerMetricsPath, w.MetricsSource))
	}
	if r.StartedAt != "" && !w.Launched.IsZero() {
		at, err := time.Parse(time.RFC3339Nano, r.StartedAt)
		switch {
		case err != nil:
			why = append(why, fmt.Sprintf("report.started_at %q is not an RFC 3339 time", r.StartedAt))
		case at.Before(w.Launched.Add(-startedSlack)) || at.After(w.Exited):
			why = append(why, fmt.Sprintf("report.started_at %s is outside this leg's swarm run (%s to %s)",
				r.StartedAt, w.Launched.UTC().Format(time.RFC3339), w.Exited.UTC().Format(time.RFC3339)))
		}
	}
	return why
}

// lifetime fails a swarm that exited before it could have run the leg's
// duration, unless its report says it ended early (an early end is judged
// by the check it names).
func (w *Witness) lifetime(r *report.Report) []string {
	if w.Launched.IsZero() || w.Exited.IsZero() || w.DurationS <= 0 || r.AbortedAtS != nil || r.Aborted != "" {
		return nil
	}
	lived := w.Exited.Sub(w.Launched)
	want := time.Duration(w.DurationS * float64(time.Second))
	if lived+durationSlack >= want {
		return nil
	}
	return []string{fmt.Sprintf("the swarm lived %.2f s (launch to exit) of the leg's %s s and its report says it ran to the end: it could not have run the leg",
		lived.Seconds(), fmtS(w.DurationS))}
}

// serverSaw holds the report's traffic to what the server itself counted.
func (w *Witness) serverSaw(r *report.Report) []string {
	sc := w.Server
	if sc.Err != "" {
		return []string{fmt.Sprintf("the server's own metrics could not be read after the swarm (%s): the report's load cannot be shown to have reached this leg's server", sc.Err)}
	}
	var why []string
	// A server that accepted none of the inputs sent is the inputs-accepted
	// gate's finding (the load reached it; it ignored it). What the load
	// check refuses is a report that says this server accepted inputs the
	// server never counted: its figures were read elsewhere.
	if claimed, ok := reportInputs(r); ok && sc.Inputs != nil && *sc.Inputs == 0 && claimed > 0 {
		why = append(why, fmt.Sprintf("the server's own metrics (%s) counted 0 inputs accepted while the swarm ran, where the report's server_tick.inputs_accepted says %d (and %d inputs sent)", sc.Source, claimed, r.InputsSent))
	}
	if sc.PeerS != nil && *sc.PeerS == 0 && r.ClientsConnected > 0 && w.Exited.Sub(w.Launched) >= minPeerWindow {
		why = append(why, fmt.Sprintf("the server's own metrics (%s) counted no joined peer while the swarm ran, which reports %d clients admitted", sc.Source, r.ClientsConnected))
	}
	if sc.TicksAtEnd != nil {
		if t, ok := reportTicks(r); ok && t > *sc.TicksAtEnd {
			why = append(why, fmt.Sprintf("report.server_tick.ticks_total %s is more than the server had run (%s, %s): it was not read from this leg's server",
				fmtS(t), fmtS(*sc.TicksAtEnd), sc.Source))
		}
	}
	return why
}

// embeddedTick is what the witness reads of the report's embedded
// server_tick (the figures a custom swarm could have copied).
type embeddedTick struct {
	TicksTotal     *float64 `json:"ticks_total"`
	InputsAccepted *int64   `json:"inputs_accepted"`
}

// reportTick decodes the report's embedded server_tick (false: none, or not
// an object).
func reportTick(r *report.Report) (embeddedTick, bool) {
	var st embeddedTick
	if len(r.ServerTick) == 0 || json.Unmarshal(r.ServerTick, &st) != nil {
		return st, false
	}
	return st, true
}

// reportTicks is the ticks_total of the report's embedded server_tick.
func reportTicks(r *report.Report) (float64, bool) {
	st, ok := reportTick(r)
	if !ok || st.TicksTotal == nil {
		return 0, false
	}
	return *st.TicksTotal, true
}

// reportInputs is the inputs_accepted of the report's embedded server_tick.
func reportInputs(r *report.Report) (int64, bool) {
	st, ok := reportTick(r)
	if !ok || st.InputsAccepted == nil {
		return 0, false
	}
	return *st.InputsAccepted, true
}

// text is the witness's figures for the load check's measured column.
func (w *Witness) text() string {
	if w == nil {
		return ""
	}
	s := ""
	if !w.Launched.IsZero() && !w.Exited.IsZero() {
		s = fmt.Sprintf("; swarm lived %.1f s", w.Exited.Sub(w.Launched).Seconds())
	}
	if v := w.Server.Inputs; v != nil {
		s += fmt.Sprintf("; server counted %s inputs", fmtS(*v))
	}
	return s
}

func fmtS(v float64) string { return fmt.Sprintf("%g", v) }
