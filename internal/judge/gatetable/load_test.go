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
