package gatetable

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestMissingCountsAreMissing: a custom swarm's report that leaves its
// refusal and loss counts out (they decode as 0) does not pass admission
// or the load rule: the counts are missing, not 0.
func TestMissingCountsAreMissing(t *testing.T) {
	full := `{"schema_version": 6, "transport": "udp", "clients": 4, "clients_connected": 4, "clients_refused": 0,
		"clients_disconnected": 0, "clients_never_connected": 0, "snapshots_received": 400}`
	r, err := report.ParseReport([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if o := admission(FromReport(r), 4); o.Err != nil || !o.Pass {
		t.Fatalf("full report: %+v", o)
	}
	if why := LoadHappened(r); len(why) != 0 {
		t.Fatalf("full report: %v", why)
	}
	bare := `{"schema_version": 6, "transport": "udp", "clients": 4, "clients_connected": 4, "snapshots_received": 400}`
	r, err = report.ParseReport([]byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if o := admission(FromReport(r), 4); o.Err == nil || !strings.Contains(o.Err.Error(), "clients_refused missing") {
		t.Fatalf("counts left out: %+v", o)
	}
	if why := LoadHappened(r); len(why) == 0 || !strings.Contains(why[0], "clients_disconnected missing") {
		t.Fatalf("counts left out: %v", why)
	}
}

// TestAdmissionCountsEachClientOnce: a refused client never connected
// either, but is counted once, as refused ("4 never connected; 4 refused"
// was printed for 4 refusals).
func TestAdmissionCountsEachClientOnce(t *testing.T) {
	tests := []struct{ body, want string }{
		{`"clients_connected": 4, "clients_refused": 4, "refused_by_reason": {"server_full": 4}, "clients_never_connected": 0`,
			"4 refused map[server_full:4]"},
		{`"clients_connected": 4, "clients_refused": 1, "refused_by_reason": {"server_full": 1}, "clients_never_connected": 3, "never_connected_by_reason": {"connect_timeout": 3}`,
			"3 never connected map[connect_timeout:3]; 1 refused map[server_full:1]"},
	}
	for _, tc := range tests {
		r, err := report.ParseReport([]byte(`{"schema_version": 6, "transport": "udp", "clients": 8, "clients_disconnected": 0, "snapshots_received": 400, ` + tc.body + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if o := admission(FromReport(r), 8); o.Pass || o.Detail != tc.want {
			t.Errorf("detail %q, want %q", o.Detail, tc.want)
		}
	}
}
