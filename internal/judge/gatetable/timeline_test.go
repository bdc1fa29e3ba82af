package gatetable

import (
	"encoding/json"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// Every server column of a timeline row has a reader, and a row read from
// a file is what the file says: a field the server left out (here
// slow_sends, and the wire rate of a server that kept no sample with peers)
// stays nil.
func TestTimelineServer(t *testing.T) {
	var s report.TimelineServer
	for _, f := range s.Fields() {
		if timelineFigures[f.Name].Read == nil {
			t.Fatalf("timeline column %s has no figure", f.Name)
		}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(`{"cpu_pct":87.5,"slow_ticks":4,"gc_count":2,"gc_pause_ms":{"max":1,"p99":0.5},
		"send_queue_max":0,"wire_peers":0,"wire_out_kbs_per_client":0}`), &raw); err != nil {
		t.Fatal(err)
	}
	got := TimelineServer(FromServerTick(raw))
	want := map[string]float64{"server_cpu_pct": 87.5, "slow_ticks": 4, "gc_count": 2, "gc_pause_p99_ms": 0.5, "send_queue_max": 0}
	for _, f := range got.Fields() {
		w, ok := want[f.Name]
		switch v := *f.V; {
		case !ok && v != nil:
			t.Errorf("%s = %v, want missing", f.Name, *v)
		case ok && (v == nil || *v != w):
			t.Errorf("%s = %v, want %v", f.Name, v, w)
		}
	}
	if (&report.TimelineServer{}).Measured() || !got.Measured() {
		t.Error("Measured: an empty row is unmeasured, a read one measured")
	}
}
