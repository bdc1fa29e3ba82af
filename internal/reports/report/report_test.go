package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodTick is a metrics file as a server writes it, plus a field no reader
// knows (the format is additive: it must be ignored, and kept in raw).
const goodTick = `{
  "schema_version": 6, "tick_hz": 59.8, "ticks_sampled": 600, "ticks_total": 12345,
  "window_s": 10.02, "peers": 64, "entities": 2064, "load_factor": 1, "interest_scale": 1,
  "dropped_ticks": 2, "rss_kb": 85700, "rss_startup_kb": 61000,
  "congestion_min_send_hz": 60, "congestion_recovered_send_hz": 60, "congestion_max_loss": 0,
  "wire_out_kbs": 1520.5, "wire_in_kbs": 90.25, "wire_out_pps": 3900, "wire_peers": 64,
  "wire_out_kbs_per_client": 23.76, "transport": "enet",
  "tick_ms": {"min": 0.8, "mean": 1.9, "max": 9.5, "p95": 3.1, "p99": 4.25},
  "serialize_ms": {"min": 0.1, "mean": 0.6, "max": 2, "p95": 1, "p99": 1.5},
  "refused": {"server_full": 3},
  "future_field": {"anything": [1, 2, 3]}
}
`

func TestParseServerTick(t *testing.T) {
	st, raw, err := ParseServerTick([]byte(goodTick))
	if err != nil {
		t.Fatal(err)
	}
	if st.SchemaVersion != 6 || st.TickHz != 59.8 || st.TicksTotal != 12345 || st.Peers != 64 ||
		st.RSSKB != 85700 || st.RSSStartupKB != 61000 || st.WireOutKBsPerClient != 23.76 ||
		st.Transport != "enet" || st.TickMs != (Phase{Min: 0.8, Mean: 1.9, Max: 9.5, P95: 3.1, P99: 4.25}) ||
		st.SerializeMs.P99 != 1.5 || st.Refused["server_full"] != 3 {
		t.Fatalf("parsed %+v", st)
	}
	if _, ok := raw["future_field"]; !ok {
		t.Fatal("raw map dropped an unknown field; readers look fields up by name")
	}
	// A field the file does not carry is absent from raw: the caller can
	// tell missing from zero.
	if _, ok := raw["ai_ms"]; ok {
		t.Fatal("raw has ai_ms, which the file does not carry")
	}
}

// without returns goodTick with key removed (at top level, or inside
// tick_ms when sub is set).
func without(t *testing.T, doc, key, sub string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	if sub != "" {
		delete(m[sub].(map[string]any), key)
	} else {
		delete(m, key)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func with(t *testing.T, doc, key string, v any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m[key] = v
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseServerTickRejects(t *testing.T) {
	cases := []struct {
		name string
		in   []byte
		want string // substring the message must carry
	}{
		{"empty", nil, "not a JSON object"},
		{"array", []byte(`[1,2]`), "not a JSON object"},
		{"string", []byte(`"metrics"`), "not a JSON object"},
		{"null document", []byte(`null`), `required field "schema_version" missing`},
		{"foreign object", []byte(`{"hello":"world"}`), `required field "schema_version" missing`},
		{"no schema_version", without(t, goodTick, "schema_version", ""), `"schema_version" missing`},
		{"no tick_ms", without(t, goodTick, "tick_ms", ""), `"tick_ms" missing`},
		{"no transport", without(t, goodTick, "transport", ""), `"transport" missing`},
		{"no rss_kb", without(t, goodTick, "rss_kb", ""), `"rss_kb" missing`},
		{"null rss_kb", with(t, goodTick, "rss_kb", nil), `"rss_kb" is null`},
		{"null tick_ms", with(t, goodTick, "tick_ms", nil), `"tick_ms" is null`},
		{"tick_ms without p99", without(t, goodTick, "p99", "tick_ms"), `tick_ms: required field "p99" missing`},
		{"tick_ms without min", without(t, goodTick, "min", "tick_ms"), `tick_ms: required field "min" missing`},
		{"empty tick_ms", with(t, goodTick, "tick_ms", map[string]any{}), `tick_ms: required field "min" missing`},
		{"tick_ms p99 null", with(t, goodTick, "tick_ms", map[string]any{"min": 1, "mean": 1, "max": 1, "p95": 1, "p99": nil}), `"p99" is null`},
		{"tick_ms not an object", with(t, goodTick, "tick_ms", 4.2), `"tick_ms"`},
		{"wrong type", with(t, goodTick, "rss_kb", "lots"), "rss_kb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, raw, err := ParseServerTick(c.in)
			if err == nil || st != nil || raw != nil {
				t.Fatalf("accepted: %+v, %v", st, err)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "server metrics") {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// TestParseTruncated cuts a good file at every byte: a reader that raced a
// non-atomic writer must get an error, never a zero-filled struct.
func TestParseTruncated(t *testing.T) {
	good := []byte(goodTick)
	end := bytes.LastIndexByte(good, '}')
	for k := 0; k < end; k++ {
		if st, _, err := ParseServerTick(good[:k]); err == nil {
			t.Fatalf("truncated at %d/%d parsed: %+v", k, len(good), st)
		}
	}
	rep := []byte(goodReport)
	end = bytes.LastIndexByte(rep, '}')
	for k := 0; k < end; k++ {
		if r, err := ParseReport(rep[:k]); err == nil {
			t.Fatalf("report truncated at %d/%d parsed: %+v", k, len(rep), r)
		}
	}
}

func TestReadServerTickNamesPath(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	if _, _, err := ReadServerTick(missing); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema_version": 6`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadServerTick(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": server metrics") {
		t.Fatalf("bad file: %v", err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(goodTick), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _, err := ReadServerTick(good); err != nil || st.RSSKB != 85700 {
		t.Fatalf("good file: %v", err)
	}
}

var goodReport = `{
  "schema_version": 5, "transport": "enet", "pattern": "weave", "clients": 64,
  "duration_s": 20, "clients_connected": 64, "clients_refused": 0, "clients_disconnected": 0,
  "refused_by_reason": {},
  "observed_server_tick_hz": {"min": 59.6, "mean": 59.9, "max": 60.1},
  "downstream_kbs_per_client": {"mean": 11.5, "max": 12.25},
  "rtt_ms": {"min": 1, "mean": 2, "p50": 2, "p95": 4, "p99": 6, "max": 9},
  "max_snapshot_gap_ms": 50.5, "snapshot_decode_errors": 0,
  "server_tick": ` + strings.TrimSpace(goodTick) + `,
  "rss_series": [{"t_s": 0, "rss_kb": 61000}, {"t_s": 30, "rss_kb": 85700}],
  "rss_slope_kb_per_min": null, "rss_step_max_kb": null, "rss_step_at_s": null,
  "asserts": [], "passed": true, "from_a_newer_swarm": true
}`

func TestParseReport(t *testing.T) {
	r, err := ParseReport([]byte(goodReport))
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != 5 || r.Transport != "enet" || r.Clients != 64 || r.ClientsConnected != 64 ||
		r.ObservedServerTickHz == nil || r.ObservedServerTickHz.Min != 59.6 ||
		r.DownstreamKBsPerClient.Max != 12.25 || r.RTTMs.P99 != 6 || r.MaxSnapshotGapMs == nil ||
		len(r.RSSSeries) != 2 || r.RSSSeries[1] != (RSSPoint{TS: 30, RSSKB: 85700}) || !r.Passed {
		t.Fatalf("parsed %+v", r)
	}
	// null means unevaluable, and stays distinguishable from 0.
	if r.RSSSlopeKBPerMin != nil || r.RSSStepMaxKB != nil || r.ConnectMs != nil {
		t.Fatal("a null or absent figure decoded as a value")
	}
	st, err := r.ServerTickParsed()
	if err != nil || st.TickMs.P99 != 4.25 {
		t.Fatalf("embedded server_tick: %+v, %v", st, err)
	}
}

func TestParseReportRejects(t *testing.T) {
	for _, k := range []string{"schema_version", "transport", "clients", "clients_connected"} {
		_, err := ParseReport(without(t, goodReport, k, ""))
		if err == nil || !strings.Contains(err.Error(), `"`+k+`" missing`) {
			t.Errorf("without %s: %v", k, err)
		}
		_, err = ParseReport(with(t, goodReport, k, nil))
		if err == nil || !strings.Contains(err.Error(), `"`+k+`" is null`) {
			t.Errorf("null %s: %v", k, err)
		}
	}
	for _, in := range []string{"", "[]", `{"schema_version":5,`} {
		if _, err := ParseReport([]byte(in)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("%q: %v", in, err)
		}
	}
	if _, err := ParseReport(with(t, goodReport, "clients", "many")); err == nil || !strings.Contains(err.Error(), "clients") {
		t.Errorf("wrong type: %v", err)
	}
	// A schema this reader does not know is refused, not read by rules it
	// was not written for.
	for _, v := range []int{0, -1, ReportSchemaVersion + 1, 99} {
		if _, err := ParseReport(with(t, goodReport, "schema_version", v)); err == nil || !strings.Contains(err.Error(), "schema_version") {
			t.Errorf("schema_version %d: %v", v, err)
		}
	}
	if _, err := ParseReport(with(t, goodReport, "schema_version", ReportSchemaVersion)); err != nil {
		t.Errorf("the current schema refused: %v", err)
	}
}

func TestServerTickParsedMissing(t *testing.T) {
	r := &Report{}
	if _, err := r.ServerTickParsed(); err == nil || !strings.Contains(err.Error(), "no server_tick") {
		t.Fatalf("no block: %v", err)
	}
	r = &Report{ServerTick: json.RawMessage("null"), ServerMetricsError: "open m.json: no such file or directory"}
	if _, err := r.ServerTickParsed(); err == nil || !strings.Contains(err.Error(), "m.json") {
		t.Fatalf("null block with an error: %v", err)
	}
	r = &Report{ServerTick: json.RawMessage(`{"schema_version":6}`)}
	if _, err := r.ServerTickParsed(); err == nil || !strings.Contains(err.Error(), `"tick_ms"`) {
		t.Fatalf("incomplete block: %v", err)
	}
}

func TestReadReportNamesPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.json")
	if _, err := ReadReport(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("missing: %v", err)
	}
	if err := os.WriteFile(p, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReport(p); err == nil || !strings.HasPrefix(err.Error(), p+": report: required field") {
		t.Fatalf("empty object: %v", err)
	}
}

func TestInputRates(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	if got := InputRates(nil); got != nil {
		t.Fatalf("no players: %+v, want nil", got)
	}
	if got := InputRates([]Player{{Index: 0}, {Index: 1}}); got != nil {
		t.Fatalf("players without a rate: %+v, want nil", got)
	}
	got := InputRates([]Player{{InputsPerS: f(59)}, {}, {InputsPerS: f(60)}, {InputsPerS: f(58)}})
	if got == nil || got.Min != 58 || got.Max != 60 || got.Mean != 59 {
		t.Fatalf("InputRates = %+v, want min 58 mean 59 max 60 (the player without a rate left out)", got)
	}
}

// A row's server figures are flat keys of the row (additive to the old
// format), absent when nil, and a clone shares no pointer with its source.
func TestTimelineServerRow(t *testing.T) {
	cpu, slow := 97.5, 0.0
	p := TimelinePoint{TS: 3, TimelineServer: TimelineServer{ServerCPUPct: &cpu, SlowTicks: &slow}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw["server_cpu_pct"]) != "97.5" || string(raw["slow_ticks"]) != "0" {
		t.Fatalf("row %s", b)
	}
	if _, ok := raw["gc_count"]; ok {
		t.Fatalf("a nil figure was written: %s", b)
	}
	var back TimelinePoint
	if err := json.Unmarshal(b, &back); err != nil || back.ServerCPUPct == nil || *back.ServerCPUPct != cpu || back.GCCount != nil {
		t.Fatalf("round trip %+v (%v)", back.TimelineServer, err)
	}
	c := p.Clone()
	if c.ServerCPUPct == p.ServerCPUPct || *c.ServerCPUPct != cpu || c.SlowTicks == nil || *c.SlowTicks != 0 || c.GCCount != nil {
		t.Fatalf("clone %+v", c)
	}
}
