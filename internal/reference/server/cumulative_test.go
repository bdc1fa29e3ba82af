package server

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestCumulativeBlock: the metrics file carries the state since the server
// started — every tick in the histogram (the warm-up's restart of the
// windows touches none of it), the phase totals, the tick counters, the
// load-factor integral and the wire traffic — and the send queue's mark
// restarts on a reset request, once per request number.
func TestCumulativeBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	ts := newTestServer(t, func(c *Config) {
		c.Metrics.TickJSONPath = path
		c.Metrics.TickStatsWarmupS = 0.5
	})
	ts.h.wire = transport.WireRates{Interval: 500 * time.Millisecond, BytesOutPerSec: 10000, BytesInPerSec: 2000, DatagramsOutPerSec: 60}
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.h.queued[1] = 7
	for range 120 {
		ts.step()
	}
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	st, _ := readRaw(t, path)
	c := st.Cumulative
	switch {
	case c == nil:
		t.Fatal("no cumulative block")
	case c.Ticks != 120 || c.TickMs == nil || c.TickMs.Count != 120:
		t.Fatalf("ticks %d, histogram %+v: every tick since the start, the warm-up's included", c.Ticks, c.TickMs)
	case st.TicksSampled >= 120:
		t.Fatalf("the file's own window (%d ticks) did not restart after the warm-up", st.TicksSampled)
	case c.PhaseMsSum["ai_ms"] < 0 || len(c.PhaseMsSum) != int(numPhases):
		t.Fatalf("phase sums %v", c.PhaseMsSum)
	case c.LoadFactorS == nil || c.SlowTicks == nil || c.DroppedTicks == nil || c.DegradedTicks == nil || c.CPUS == nil:
		t.Fatalf("counters missing: %+v", c)
	case c.WireOutBytes == nil || *c.WireOutBytes != 4*5000 || c.PeerS == nil || *c.PeerS != 4*0.5:
		t.Fatalf("wire %v over %v peer-seconds: want 4 samples of 5000 B at 1 peer", deref(c.WireOutBytes), deref(c.PeerS))
	case c.SendQueueHWM == nil || *c.SendQueueHWM != 7 || c.MarksReset == nil || *c.MarksReset != 0:
		t.Fatalf("send queue mark %v, reset %v", deref(c.SendQueueHWM), deref(c.MarksReset))
	}
	// The integral covers the span up to the write: 120 ticks at a full
	// load factor are 2 s of fake time (the write's own clock is real
	// time, far past it, so only a lower bound holds here).
	if *c.LoadFactorS < 119.0/60 {
		t.Errorf("load_factor_s %g over 120 ticks at 1", *c.LoadFactorS)
	}

	ts.h.queued[1] = 0
	if err := report.WriteFileAtomic(path+report.ResetRequestSuffix, []byte("42\n")); err != nil {
		t.Fatal(err)
	}
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	ts.step()
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	st, _ = readRaw(t, path)
	if m := st.Cumulative; *m.MarksReset != 42 || *m.SendQueueHWM != 0 {
		t.Errorf("after the reset request: mark %d reset %d, want 0 and 42", *m.SendQueueHWM, *m.MarksReset)
	}
	// An older or unreadable request is no request.
	ts.h.queued[1] = 3
	ts.step()
	for _, body := range []string{"41", "garbage", ""} {
		_ = report.WriteFileAtomic(path+report.ResetRequestSuffix, []byte(body))
		if err := ts.WriteMetrics(); err != nil {
			t.Fatal(err)
		}
		st, _ = readRaw(t, path)
		if m := st.Cumulative; *m.MarksReset != 42 || *m.SendQueueHWM != 3 {
			t.Errorf("request %q: mark %d reset %d", body, *m.SendQueueHWM, *m.MarksReset)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestSlowStretchFault: ticks inside the stretch spin its extra time, ticks
// before and after it do not.
func TestSlowStretchFault(t *testing.T) {
	s := SlowStretch{AtS: 10, ForS: 5, ExtraMs: 20}
	for _, tc := range []struct {
		at   float64
		want time.Duration
	}{{9.99, 0}, {10, 20 * time.Millisecond}, {14.99, 20 * time.Millisecond}, {15, 0}} {
		if got := s.extraAt(time.Duration(tc.at * float64(time.Second))); got != tc.want {
			t.Errorf("at %g s: %v, want %v", tc.at, got, tc.want)
		}
	}
	if (SlowStretch{AtS: 1, ExtraMs: 5}).on() {
		t.Error("a stretch of no length is on")
	}
	ts := newTestServer(t, func(c *Config) { c.Faults.SlowStretch = SlowStretch{AtS: 0, ForS: 1, ExtraMs: 8} })
	start := time.Now()
	ts.step()
	if el := time.Since(start); el < 8*time.Millisecond {
		t.Fatalf("a tick inside the stretch took %v", el)
	}
	if f := ts.cfg.Faults.Active(); !strings.Contains(strings.Join(f, " "), "slow_stretch={at_s:0,for_s:1,extra_ms:8}") {
		t.Errorf("faults %v", f)
	}
}

// TestAICostKnob: every AI controller run costs the knob's wall time, so
// N AI cost at least N × it per tick (the governor's stride, which sheds
// it, is TestGovernorLeversInOrderAndRecover's).
func TestAICostKnob(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.World.TestSpawnAICount = 100
		c.World.TestAICostUs = 50
	})
	start := time.Now()
	ts.step()
	if el := time.Since(start); el < 5*time.Millisecond {
		t.Fatalf("100 AI at 50 µs took %v in one tick", el)
	}
}

// TestStdoutFlood: the flood writes its rate, in blocks of whole lines,
// and stops with its context.
func TestStdoutFlood(t *testing.T) {
	var buf safeBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	flood(ctx, &buf, 10) // 10 MiB/s for 0.2 s: about 2 MiB
	n, want := buf.Len(), 10*float64(1<<20)*time.Since(start).Seconds()
	if float64(n) < want/4 || float64(n) > want*1.01+float64(len(floodLine)) {
		t.Errorf("wrote %d bytes in %s at 10 MiB/s (%.0f owed)", n, time.Since(start), want)
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\n")) || n%len(floodLine) != 0 {
		t.Error("the flood wrote a partial line")
	}
}

// safeBuffer is a bytes.Buffer written by flood and read after it returned.
type safeBuffer struct{ bytes.Buffer }

// TestEveryWriteCarriesWireTraffic: two interval writes a few ticks apart,
// both inside one 30-tick sampling period, still differ in the cumulative
// wire counters. A hold shorter than the sampling period (a short smoke leg
// whose connects ramped slowly) otherwise reads no wire traffic at all, and
// its wire gate is unevaluable on a healthy server.
func TestEveryWriteCarriesWireTraffic(t *testing.T) {
	for _, prom := range []bool{false, true} {
		t.Run(map[bool]string{false: "file", true: "prometheus"}[prom], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.json")
			ts := newTestServer(t, func(c *Config) { c.Metrics.TickJSONPath = path })
			if prom {
				// The exporter takes the traffic every tick and the file
				// sums those samples: the same rule must hold.
				ts.prom = newPromExport(ts.reported)
			}
			ts.h.wire = transport.WireRates{Interval: 100 * time.Millisecond, BytesOutPerSec: 10000, DatagramsOutPerSec: 60}
			ts.h.connect(1, "127.0.0.1", proto.ConnectData)
			ts.h.recv(1, joinMsg(t, "x"))
			var seen []float64
			for range 3 {
				for range 5 {
					ts.step()
				}
				ts.writeInterval()
				st, _ := readRaw(t, path)
				if st.Cumulative == nil || st.Cumulative.WireS == nil {
					t.Fatalf("write %d carries no wire_s", len(seen)+1)
				}
				seen = append(seen, *st.Cumulative.WireS)
			}
			if !(seen[0] > 0 && seen[1] > seen[0] && seen[2] > seen[1]) {
				t.Fatalf("cumulative wire_s over three writes 5 ticks apart: %v, want strictly growing", seen)
			}
		})
	}
}

// TestMetricsEncoderMatchesMarshal: the encoder that keeps its buffers
// writes, call after call, what json.Marshal and IndentTo write for each
// document alone — a large document first leaves nothing behind in a
// smaller one after it — and the omitted fields stay omitted.
func TestMetricsEncoderMatchesMarshal(t *testing.T) {
	big, small := stats.NewLogLinear(), stats.NewLogLinear()
	for i := range 400 {
		big.Record(0.05 * float64(i+1))
	}
	small.Record(1.5)
	doc := func(h *stats.LogLinear, rss int64) *report.ServerTick {
		return &report.ServerTick{SchemaVersion: report.ServerTickSchemaVersion, Transport: "enet", RSSKB: rss,
			Cumulative: &report.Cumulative{Ticks: int64(h.Count()), TickMs: h.Snapshot(),
				PhaseMsSum: map[string]float64{"ai_ms": 1.25}}}
	}
	plain := func(st *report.ServerTick, omit ...string) string {
		b, err := json.Marshal(st)
		if err != nil {
			t.Fatal(err)
		}
		if len(omit) > 0 {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			for _, k := range omit {
				delete(raw, k)
			}
			b, _ = json.Marshal(raw)
		}
		return string(append(report.IndentTo(b, metricsIndentDepth), '\n'))
	}
	var e metricsEncoder
	for i, tc := range []struct {
		st        *report.ServerTick
		wireTaken bool
		omit      []string
	}{
		{doc(big, 90000), true, nil},
		{doc(small, 7), true, nil},
		{doc(big, 90001), false, nil},
		{doc(small, 8), true, []string{"rss_kb"}},
		{doc(small, 9), true, nil},
	} {
		got, err := e.encode(tc.st, tc.wireTaken, tc.omit)
		if err != nil {
			t.Fatal(err)
		}
		omit := tc.omit
		if !tc.wireTaken {
			omit = append(omit, wireFields...)
		}
		if want := plain(tc.st, omit...); string(got) != want {
			t.Fatalf("write %d:\n%s\nwant\n%s", i, got, want)
		}
	}
}

// TestMetricsHTTPKeepsItsDocument: the endpoint serves the document it was
// given while later writes reuse the encoder's buffers.
func TestMetricsHTTPKeepsItsDocument(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "m.json")
		c.Metrics.HTTPListen = "127.0.0.1:0"
	})
	if err := ts.listenMetricsHTTP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.http.stop)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	served := *ts.http.doc.Load()
	kept := bytes.Clone(served)
	for range 30 {
		ts.step()
	}
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served, kept) {
		t.Fatal("the next write changed the document the endpoint was serving")
	}
	if bytes.Equal(*ts.http.doc.Load(), kept) {
		t.Fatal("the second write published nothing new")
	}
}
