package serverwindow

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// server is a fake server's cumulative state, advanced tick by tick.
type server struct {
	up     float64
	ticks  int64
	hist   *stats.LogLinear
	cpu    float64
	lfS    float64
	slow   int64
	deg    int64
	out    float64
	wireS  float64
	peerS  float64
	gc     int64
	hwm    int64
	marks  int64
	phases map[string]float64
}

func newServer() *server {
	return &server{hist: stats.NewLogLinear(), phases: map[string]float64{"ai_ms": 0}}
}

// run advances n ticks of ms each at 60 Hz, with cpuPct of a core, the
// governor at lf, peers joined sending kbs per client.
func (s *server) run(n int, ms, cpuPct, lf float64, peers int, kbs float64) {
	for range n {
		dt := 1.0 / 60
		s.up += dt
		s.ticks++
		s.hist.Record(ms)
		s.cpu += cpuPct / 100 * dt
		s.lfS += lf * dt
		if ms > 12.5 {
			s.slow++
		}
		if lf < 1 {
			s.deg++
		}
		s.out += float64(peers) * kbs * 1000 * dt
		s.wireS += dt
		s.peerS += float64(peers) * dt
		s.phases["ai_ms"] += ms / 2
	}
}

// reading is the file the server would write now, at swarm time at.
func (s *server) reading(at float64, fields map[string]any) Reading {
	c := &report.Cumulative{UptimeS: s.up, Ticks: s.ticks, TickMs: s.hist.Snapshot(), PhaseMsSum: map[string]float64{},
		CPUS: ptr(s.cpu), LoadFactorS: ptr(s.lfS), SlowTicks: ptr(s.slow), DegradedTicks: ptr(s.deg), DroppedTicks: ptr(int64(0)),
		WireOutBytes: ptr(s.out), WireS: ptr(s.wireS), PeerS: ptr(s.peerS), GCCount: ptr(s.gc), SendQueueHWM: ptr(s.hwm), MarksReset: ptr(s.marks)}
	for k, v := range s.phases {
		c.PhaseMsSum[k] = v
	}
	file := map[string]any{"schema_version": 7, "transport": "enet", "rss_kb": 1000,
		"tick_ms": map[string]any{"min": 1, "mean": 1, "max": 1, "p95": 1, "p99": 1}, "ai_ms": map[string]any{"mean": 9, "p99": 9},
		"cpu_pct": 1.0, "slow_ticks": s.slow, "send_queue_max": 3, "cumulative": c}
	for k, v := range fields {
		file[k] = v
	}
	b, _ := json.Marshal(file)
	st, raw, err := report.ParseServerTick(b)
	if err != nil {
		panic(err)
	}
	return Reading{At: at, Raw: raw, Tick: st}
}

func number(t *testing.T, m map[string]json.RawMessage, path ...string) float64 {
	t.Helper()
	raw := m[path[0]]
	if len(path) == 2 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("%v: %v", path, err)
		}
		raw = obj[path[1]]
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v = %s: %v", path, raw, err)
	}
	return v
}

func info(t *testing.T, m map[string]json.RawMessage) Info {
	t.Helper()
	var h Info
	if err := json.Unmarshal(m[Key], &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHoldIsTheDifference: a server slow and busy for the first 20 s of a
// 40 s hold and healthy for the rest reads slow over the hold, whatever
// its file's last window says; the ramp before the hold counts for
// nothing.
func TestHoldIsTheDifference(t *testing.T) {
	s := newServer()
	s.run(600, 30, 90, 1, 4, 50) // the ramp: slow, not in the hold
	base := s.reading(10, nil)
	s.run(1200, 20, 100, 0.5, 8, 12) // the first half of the hold: slow
	s.run(1200, 2, 10, 1, 8, 12)     // the second: healthy
	s.marks = 42
	s.hwm = 17
	end := s.reading(50, nil)
	out := Compute(Hold{Base: base, End: end, InHold: true, Readings: 40, ResetToken: 42})
	h := info(t, out)
	if !h.Hold || !h.Cumulative || h.SpanS != 40 || h.Readings != 40 {
		t.Fatalf("info %+v", h)
	}
	if p99 := number(t, out, "tick_ms", "p99"); p99 < 19.6 || p99 > 20.4 {
		t.Errorf("tick p99 over the hold %g, want ≈ 20 (half the hold's ticks took 20 ms; the file said 1)", p99)
	}
	if p50 := number(t, out, "tick_ms", "p50"); p50 > 2.1 && p50 < 19.6 {
		t.Errorf("p50 %g lies in neither half", p50)
	}
	if mx := number(t, out, "tick_ms", "max"); mx < 20 || mx > 20.4 {
		t.Errorf("max %g, want the 20 ms bucket's ceiling", mx)
	}
	if cpu := number(t, out, "cpu_pct"); math.Abs(cpu-55) > 0.01 {
		t.Errorf("cpu_pct over the hold %g, want 55 (100 %% then 10 %%)", cpu)
	}
	if lf := number(t, out, "load_factor_mean"); math.Abs(lf-0.75) > 1e-6 {
		t.Errorf("load_factor_mean %g, want 0.75", lf)
	}
	if d := number(t, out, "degraded_ticks_share"); d != 0.5 {
		t.Errorf("degraded share %g, want 0.5", d)
	}
	if st := number(t, out, "slow_ticks"); st != 1200 {
		t.Errorf("slow ticks over the hold %g, want 1200 (the ramp's 600 are not the hold's)", st)
	}
	if kbs := number(t, out, "wire_out_kbs_per_client"); math.Abs(kbs-12) > 1e-9 {
		t.Errorf("wire per client %g, want 12 (the ramp's 50 left out)", kbs)
	}
	if peers := number(t, out, "wire_peers"); peers != 8 {
		t.Errorf("wire_peers %g", peers)
	}
	if ai := number(t, out, "ai_ms", "mean"); math.Abs(ai-5.5) > 1e-9 {
		t.Errorf("ai_ms mean %g, want 5.5", ai)
	}
	if ai := number(t, out, "ai_ms", "p99"); ai != 9 {
		t.Errorf("ai_ms p99 %g: a statistic without cumulative state stays the file's", ai)
	}
	if q := number(t, out, "send_queue_max"); q != 17 {
		t.Errorf("send_queue_max %g, want the mark since the reset (17)", q)
	}
	for _, f := range []string{"tick_ms", "cpu_pct", "load_factor_mean", "ai_ms.mean", "send_queue_max", "wire_out_kbs_per_client"} {
		if !slices.Contains(h.Figures, f) {
			t.Errorf("figures %v lack %s", h.Figures, f)
		}
	}
	if slices.Contains(h.Figures, "ai_ms.p99") {
		t.Error("ai_ms.p99 listed as over the hold")
	}
}

// TestHoldWithoutCumulative: an old file keeps its own figures, and says
// none is over the hold.
func TestHoldWithoutCumulative(t *testing.T) {
	s := newServer()
	s.run(60, 3, 10, 1, 4, 5)
	old := func(at float64) Reading {
		r := s.reading(at, nil)
		delete(r.Raw, "cumulative")
		r.Tick.Cumulative = nil
		return r
	}
	var ex Extremes
	ex.Add(old(1).Raw)
	out := Compute(Hold{Base: old(1), End: old(9), InHold: true, Extremes: ex})
	h := info(t, out)
	if h.Cumulative || len(h.Figures) != 0 {
		t.Fatalf("info %+v: nothing of an old file is over the hold", h)
	}
	if p99 := number(t, out, "tick_ms", "p99"); p99 != 1 {
		t.Errorf("p99 %g, want the file's own 1", p99)
	}
	if h.Extremes["peers"].N != 0 && h.Extremes["peers"].Min != 0 {
		t.Errorf("extremes %+v", h.Extremes)
	}
}

// TestHoldAcrossARestart: cumulative state that went back (the server
// restarted) makes the figures missing with the reason, never a
// difference of two servers.
func TestHoldAcrossARestart(t *testing.T) {
	a := newServer()
	a.run(600, 3, 10, 1, 4, 5)
	base := a.reading(5, nil)
	b := newServer()
	b.run(60, 3, 10, 1, 4, 5)
	out := Compute(Hold{Base: base, End: b.reading(20, nil), InHold: true})
	h := info(t, out)
	if _, ok := out["tick_ms"]; ok {
		t.Error("tick_ms kept across a restart")
	}
	if !strings.Contains(h.Missing["tick_ms"], "restarted") {
		t.Errorf("missing %v", h.Missing)
	}
}

// TestSendQueueMarkNeedsTheReset: a mark the server did not reset at the
// hold's start is since the server started: the file's own figure stays.
func TestSendQueueMarkNeedsTheReset(t *testing.T) {
	s := newServer()
	s.run(60, 3, 10, 1, 4, 5)
	base := s.reading(1, nil)
	s.hwm = 99
	out := Compute(Hold{Base: base, End: s.reading(5, nil), InHold: true, ResetToken: 7})
	if q := number(t, out, "send_queue_max"); q != 3 {
		t.Errorf("send_queue_max %g, want the file's 3 (marks_reset 0 ≠ the request 7)", q)
	}
	if slices.Contains(info(t, out).Figures, "send_queue_max") {
		t.Error("an unreset mark listed as over the hold")
	}
}

func TestExtremes(t *testing.T) {
	var e Extremes
	for _, v := range []float64{640, 512, 700} {
		b, _ := json.Marshal(map[string]any{"entities": v, "load_factor": v / 1000})
		var raw map[string]json.RawMessage
		_ = json.Unmarshal(b, &raw)
		e.Add(raw)
	}
	e.Add(map[string]json.RawMessage{"entities": json.RawMessage(`"x"`)}) // not a number: skipped
	if m := e["entities"]; m.Min != 512 || m.Max != 700 || m.N != 3 {
		t.Errorf("entities %+v", m)
	}
	if _, ok := e["contacts"]; ok {
		t.Error("a gauge no reading had")
	}
}

func TestStepBetween(t *testing.T) {
	s := newServer()
	s.run(60, 3, 10, 1, 4, 5)
	a := s.reading(1, nil).Tick.Cumulative
	s.run(60, 8, 50, 1, 4, 5)
	b := s.reading(2, nil).Tick.Cumulative
	st := StepBetween(a, b)
	if st.TickHist == nil || st.TickHist.Count != 60 {
		t.Fatalf("step ticks %+v", st.TickHist)
	}
	if st.CPUPct == nil || math.Abs(*st.CPUPct-50) > 1e-6 {
		t.Errorf("step cpu %v", st.CPUPct)
	}
	if st.WireKBsPerClient == nil || math.Abs(*st.WireKBsPerClient-5) > 1e-9 {
		t.Errorf("step wire %v", st.WireKBsPerClient)
	}
	if st := StepBetween(b, a); st.TickHist != nil || st.CPUPct != nil {
		t.Errorf("a step backwards %+v", st)
	}
	if st := StepBetween(nil, b); st.TickHist != nil {
		t.Error("a step from nothing")
	}
}
