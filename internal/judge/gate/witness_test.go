package gate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// healthyWitness is the runner's record of a run that healthyReport
// describes: a 5 s swarm life for a 3 s leg, the server counting inputs,
// peers and more ticks than the report read.
func healthyWitness() *Witness {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	inputs, peerS, ticks, atEnd := 1400.0, 24.0, 180.0, 400.0
	return &Witness{RunID: "weave-0123", ServerAddr: "127.0.0.1:40001", MetricsSource: "run/weave/server_metrics.json",
		DurationS: 3, Launched: at, Exited: at.Add(5 * time.Second),
		Server: ServerCounts{Source: "run/weave/server_metrics.json", Inputs: &inputs, PeerS: &peerS, Ticks: &ticks, TicksAtEnd: &atEnd}}
}

// witnessedReport is healthyReport with the identity of healthyWitness's run.
func witnessedReport() *report.Report {
	tick := healthyTick()
	tick["ticks_total"] = 180
	tick["inputs_accepted"] = 1400
	r := healthyReport(tick)
	r.RunID, r.ServerAddr, r.ServerMetricsPath = "weave-0123", "127.0.0.1:40001", "run/weave/server_metrics.json"
	r.StartedAt = "2026-12-02T12:00:00.2Z"
	r.InputsSent = 1440
	return r
}

// witnessedReportTick encodes a server_tick for a test report.
func witnessedReportTick(tick map[string]any) []byte {
	b, err := json.Marshal(tick)
	if err != nil {
		panic(err)
	}
	return b
}

// TestWitnessRefusesAnotherRunsReport: the load check holds the report to
// what the runner saw of the run. Each way a swarm can hand in a report of
// another run, or one its server never saw, fails it naming why; the
// healthy pair passes, and without a witness (a report gated offline) the
// report alone is judged.
func TestWitnessRefusesAnotherRunsReport(t *testing.T) {
	zero := 0.0
	for _, tc := range []struct {
		name   string
		report func(*report.Report)
		wit    func(*Witness)
		want   string // "" = pass
	}{
		{"healthy", nil, nil, ""},
		{"another run id", func(r *report.Report) { r.RunID = "weave-ffff" }, nil, `report.run_id "weave-ffff" is not this run's`},
		{"another server", func(r *report.Report) { r.ServerAddr = "127.0.0.1:39999" }, nil, "report.server_addr 127.0.0.1:39999 is not this leg's server"},
		{"another metrics file", func(r *report.Report) { r.ServerMetricsPath = "old/weave/server_metrics.json" }, nil, "report.server_metrics_path old/weave/server_metrics.json is not this leg's metrics"},
		{"started before the launch", func(r *report.Report) { r.StartedAt = "2026-12-01T09:00:00Z" }, nil, "report.started_at 2026-12-01T09:00:00Z is outside this leg's swarm run"},
		{"started after the exit", func(r *report.Report) { r.StartedAt = "2026-12-02T12:00:06Z" }, nil, "is outside this leg's swarm run"},
		{"started_at not a time", func(r *report.Report) { r.StartedAt = "yesterday" }, nil, `report.started_at "yesterday" is not an RFC 3339 time`},
		{"lived shorter than the duration", nil, func(w *Witness) { w.Exited = w.Launched.Add(300 * time.Millisecond) }, "the swarm lived 0.30 s (launch to exit) of the leg's 3 s"},
		{"server counted no inputs the report says it accepted", nil, func(w *Witness) { w.Server.Inputs = &zero },
			"counted 0 inputs accepted while the swarm ran, where the report's server_tick.inputs_accepted says 1400 (and 1440 inputs sent)"},
		{"server counted no peers", nil, func(w *Witness) { w.Server.PeerS = &zero }, "counted no joined peer while the swarm ran, which reports 8 clients admitted"},
		{"report read more ticks than the server ran", nil, func(w *Witness) { v := 100.0; w.Server.TicksAtEnd = &v }, "report.server_tick.ticks_total 180 is more than the server had run (100"},
		{"server unread", nil, func(w *Witness) { w.Server.Err = "read server metrics: EOF" }, "the server's own metrics could not be read after the swarm (read server metrics: EOF)"},
		// What the witness must not refuse.
		{"no identity in the report (another swarm's writer)", func(r *report.Report) { r.RunID, r.ServerAddr, r.StartedAt = "", "", "" }, nil, ""},
		{"an early end is judged by its own check", func(r *report.Report) { at := 0.2; r.AbortedAtS = &at; r.AbortGate = "tick_hz_min" },
			func(w *Witness) { w.Exited = w.Launched.Add(300 * time.Millisecond) }, ""},
		// A server that ignored every input, and whose figures say so, is the
		// inputs-accepted gate's finding: the load reached it.
		{"a server that ignored the inputs, and says so", func(r *report.Report) {
			tick := healthyTick()
			tick["ticks_total"], tick["inputs_accepted"] = 180, 0
			r.ServerTick = witnessedReportTick(tick)
		}, func(w *Witness) { w.Server.Inputs = &zero }, ""},
		{"idle clients send no inputs", func(r *report.Report) {
			tick := healthyTick()
			tick["ticks_total"], tick["inputs_accepted"] = 180, 0
			r.InputsSent, r.ServerTick = 0, witnessedReportTick(tick)
		}, func(w *Witness) { w.Server.Inputs = &zero }, ""},
		{"a server that counts nothing", nil, func(w *Witness) { w.Server = ServerCounts{Source: w.Server.Source} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			r, w := witnessedReport(), healthyWitness()
			if tc.report != nil {
				tc.report(r)
			}
			if tc.wit != nil {
				tc.wit(w)
			}
			c, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline(), Witness: w}), "load")
			if !ok {
				t.Fatal("no load check")
			}
			if tc.want == "" {
				if c.Status != rundir.StatusPass {
					t.Fatalf("load check %s: %s", c.Status, c.Detail)
				}
				return
			}
			if c.Status != rundir.StatusFail || !strings.Contains(c.Detail, tc.want) {
				t.Fatalf("load check %s %q, want fail with %q", c.Status, c.Detail, tc.want)
			}
		})
	}
}

// TestWitnessAbsentJudgesTheReportAlone: a report gated without its run
// (no witness) is judged on its own figures, as before.
func TestWitnessAbsentJudgesTheReportAlone(t *testing.T) {
	p := testProfile()
	r := witnessedReport()
	r.RunID = "some-other-run"
	c, _ := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "load")
	if c.Status != rundir.StatusPass {
		t.Fatalf("load check %s: %s", c.Status, c.Detail)
	}
}
