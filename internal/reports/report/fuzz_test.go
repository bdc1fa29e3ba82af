package report

import (
	"encoding/json"
	"testing"
)

// FuzzParseServerTick feeds arbitrary bytes to the metrics-file parser. It
// must never panic; an accepted file must carry every required field, and
// re-encoding what was parsed must parse again.
//
//	go test -run='^$' -fuzz=FuzzParseServerTick -fuzztime=30s ./internal/reports/report
func FuzzParseServerTick(f *testing.F) {
	f.Add([]byte(goodTick))
	f.Add([]byte(`{"schema_version":6,"tick_ms":{"p99":1`))
	f.Add([]byte(`{"schema_version":6,"transport":"enet","rss_kb":0,"tick_ms":{"min":0,"mean":0,"max":0,"p95":0,"p99":null}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"schema_version":6,"transport":"enet","rss_kb":1,"tick_ms":{"min":0,"mean":0,"max":0,"p95":0,"p99":0},` +
		`"cumulative":{"uptime_s":12.5,"ticks":720,"tick_ms":{"count":3,"sum":9,"buckets":[[2,2.03125,2],[16384,null,1]]},` +
		`"cpu_s":1.5,"load_factor_s":12,"send_queue_hwm":3,"marks_reset":7,"phase_ms_sum":{"ai_ms":4}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, raw, err := ParseServerTick(b)
		if err != nil {
			if st != nil || raw != nil || err.Error() == "" {
				t.Fatalf("error %v with non-nil results", err)
			}
			return
		}
		for _, k := range []string{"schema_version", "tick_ms", "transport", "rss_kb"} {
			if _, ok := raw[k]; !ok {
				t.Fatalf("accepted a file without %s", k)
			}
		}
		out, err := json.Marshal(st)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, _, err := ParseServerTick(out); err != nil {
			t.Fatalf("re-encoded file does not parse: %v\n%s", err, out)
		}
	})
}

// FuzzParseReport does the same for the swarm report.
//
//	go test -run='^$' -fuzz=FuzzParseReport -fuzztime=30s ./internal/reports/report
func FuzzParseReport(f *testing.F) {
	f.Add([]byte(goodReport))
	f.Add([]byte(`{"schema_version":5,"transport":"quic","clients":1,"clients_connected":0,"server_tick":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseReport(b)
		if err != nil {
			if r != nil {
				t.Fatalf("error %v with a report", err)
			}
			return
		}
		_, _ = r.ServerTickParsed() // must not panic on whatever was embedded
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		if _, err := ParseReport(out); err != nil {
			t.Fatalf("re-encoded report does not parse: %v\n%s", err, out)
		}
	})
}
