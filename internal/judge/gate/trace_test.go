package gate

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

func traceReport(mut func(r *report.Report, st map[string]any)) *report.Report {
	r := &report.Report{ClientsConnected: 4, InputsSent: 1000, Traces: []report.TraceReplay{{
		Pattern: "trace:x.flit", Files: []string{"x.flit"}, Records: 200, Clients: 4, ClientsJoined: 4,
		ClientsReplayed: 4, RecordsReplayed: 1000, RecordsCovered: 200,
	}}}
	st := map[string]any{"schema_version": 6, "transport": "enet", "rss_kb": 1,
		"tick_ms": map[string]float64{"min": 1, "mean": 1, "max": 1, "p95": 1, "p99": 1}, "inputs_accepted": 990}
	if mut != nil {
		mut(r, st)
	}
	r.ServerTick, _ = json.Marshal(st)
	return r
}

// TestTraceCheck: each hollow replay fails (or is unevaluable) and names
// why; a full replay the server accepted passes.
func TestTraceCheck(t *testing.T) {
	tests := []struct {
		name   string
		mut    func(r *report.Report, st map[string]any)
		status rundir.Status
		detail string
	}{
		{"full replay", nil, rundir.StatusPass, ""},
		{"no traces block", func(r *report.Report, _ map[string]any) { r.Traces = nil }, rundir.StatusUnevaluable, "did not replay the recording"},
		{"a client replayed nothing", func(r *report.Report, _ map[string]any) { r.Traces[0].ClientsReplayed = 3 }, rundir.StatusFail, "3 of 4 admitted clients"},
		{"no client admitted", func(r *report.Report, _ map[string]any) { r.ClientsConnected, r.Traces[0].ClientsReplayed = 0, 0 }, rundir.StatusFail, "0 of 0 admitted"},
		// Skips are the harness's: alone they make the leg inconclusive.
		{"mostly skipped", func(r *report.Report, _ map[string]any) { r.Traces[0].RecordsSkipped = 400 }, rundir.StatusInconclusive, "could not keep the recording's pace"},
		{"a fragment looped", func(r *report.Report, _ map[string]any) { r.Traces[0].RecordsCovered = 20 }, rundir.StatusFail, "only 20 of 200 records covered"},
		{"short run, distinct records", func(r *report.Report, _ map[string]any) {
			r.Traces[0].Records, r.Traces[0].RecordsCovered = 100000, 950
		}, rundir.StatusPass, ""},
		{"server dropped the inputs", func(_ *report.Report, st map[string]any) { st["inputs_accepted"] = 0 }, rundir.StatusFail, "server accepted 0 of the 1000"},
		{"server took a few", func(_ *report.Report, st map[string]any) { st["inputs_accepted"] = 800 }, rundir.StatusFail, "server accepted 800"},
		{"server does not count", func(_ *report.Report, st map[string]any) { delete(st, "inputs_accepted") }, rundir.StatusUnevaluable, "inputs_accepted missing"},
		{"inputs fewer than records", func(r *report.Report, _ map[string]any) { r.InputsSent = 10 }, rundir.StatusFail, "inputs_sent 10 < records_replayed 1000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := traceCheck(traceReport(tc.mut), nil)
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || c.Level != gatetable.LevelHard {
				t.Fatalf("status %s level %s detail %q; want %s containing %q", c.Status, c.Level, c.Detail, tc.status, tc.detail)
			}
			if tc.status == rundir.StatusFail && !c.Failed() {
				t.Fatal("a failed trace_replay must fail its leg")
			}
		})
	}
	if c := traceCheck(nil, errors.New("gone")); c.Status != rundir.StatusUnevaluable || !c.Failed() {
		t.Fatalf("no report: %+v", c)
	}
	r := traceReport(nil)
	r.ServerTick = nil
	if c := traceCheck(r, nil); c.Status != rundir.StatusUnevaluable {
		t.Fatalf("no server_tick: %+v", c)
	}
	// Skips with another failure still fail.
	both := func(r *report.Report, st map[string]any) { r.Traces[0].RecordsSkipped = 400; st["inputs_accepted"] = 0 }
	if c := traceCheck(traceReport(both), nil); c.Status != rundir.StatusFail {
		t.Fatalf("skips + dropped inputs: %+v", c)
	}
}
