package rundir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestWritePlayersCSV: one row per client in the given order, a figure the
// client did not measure is an empty cell (not 0), reasons kept verbatim.
func TestWritePlayersCSV(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	players := []report.Player{
		{Index: 0, Pattern: "weave", Outcome: report.OutcomeConnected, ConnectMs: f(34.9), Snapshots: 1196,
			KBs: f(71.2), TickHz: f(60), RTTP95Ms: f(23), MaxSnapshotGapMs: f(67.5), UpdatesPerS: f(59.8), MaxStateGapMs: f(67.5),
			StateIntervalMs: &report.IntervalSummary{P50: 16.75, P95: 18.5, P99: 33.5}, InputLatencyP95Ms: f(24.25)},
		{Index: 1, Pattern: "idle", Outcome: report.OutcomeRefused, Reason: "server_full", ConnectMs: f(30)},
		{Index: 2, Pattern: "weave", Outcome: report.OutcomeNeverConnected, Reason: "not_started"},
	}
	path := filepath.Join(t.TempDir(), "players.csv")
	if err := WritePlayersCSV(path, players); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "index,pattern,outcome,reason,connect_ms,snapshots,kbs,tick_hz,rtt_p95_ms,max_snapshot_gap_ms," +
		"updates_per_s,max_state_gap_ms,state_interval_p50_ms,state_interval_p95_ms,state_interval_p99_ms,input_latency_p95_ms\n" +
		"0,weave,connected,,34.9,1196,71.2,60,23,67.5,59.8,67.5,16.75,18.5,33.5,24.25\n" +
		"1,idle,refused,server_full,30,0,,,,,,,,,,\n" +
		"2,weave,never_connected,not_started,,0,,,,,,,,,,\n"
	if string(b) != want {
		t.Errorf("players.csv:\n%s\nwant:\n%s", b, want)
	}
	if err := WritePlayersCSV(filepath.Join(t.TempDir(), "no", "such", "dir.csv"), players); err == nil {
		t.Error("an unwritable path must fail")
	}
}
