package report

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// FuzzSplitObjectMatchesJSON: on every JSON object encoding/json decodes
// into a map of raw members, splitObject finds the same members with the
// same bytes.
func FuzzSplitObjectMatchesJSON(f *testing.F) {
	f.Add([]byte(`{"schema_version":6,"tick_ms":{"min":1,"p99":[1,"}",{"a":null}]},"transport":"enet"}`))
	f.Add([]byte(" {\n \"a\\\"b\" : \"x\\\\\" , \"a\\\"b\":[ ] ,\"\\u0063\":-1.5e3 } "))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil || want == nil {
			return
		}
		got, ok := splitObject(b)
		if !ok {
			t.Fatalf("splitObject declined %q, which encoding/json reads", b)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d members, encoding/json %d", b, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("%q: member %q is %q, encoding/json %q", b, k, got[k], v)
			}
		}
	})
}

// BenchmarkParseServerTick is a swarm's once-a-second read of the
// reference server's metrics document after a 60 s hold of the
// reference-enet aggressive leg (testdata/server_metrics_hold60.json: 128
// clients, the cumulative tick and phase histograms). The swarm runs it
// on the cores the measured server runs on.
func BenchmarkParseServerTick(b *testing.B) {
	doc, err := os.ReadFile("testdata/server_metrics_hold60.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := ParseServerTick(doc); err != nil {
			b.Fatal(err)
		}
	}
}
