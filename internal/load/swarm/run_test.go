package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// runSwarm runs cfg and fails the test if the swarm does not return
// within limit (a hang is the failure being tested).
func runSwarm(t *testing.T, ctx context.Context, cfg Config, limit time.Duration) *Result {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	o := livetest.Within(t, limit, "the swarm", func() out {
		res, err := Run(ctx, cfg)
		return out{res, err}
	})
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	return o.res
}

// inputsOver holds once the fake server has received more than n Inputs.
func inputsOver(srv *fakeServer, n int) livetest.Cond {
	return func() (bool, string) {
		got := srv.inputCount()
		return got > n, fmt.Sprintf("the server has received %d Inputs, waiting for more than %d", got, n)
	}
}

func TestRunAgainstFakeServer(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 200), 0)
	cfg := Config{Addr: srv.addr, Clients: 6, Duration: 3 * time.Second, Ramp: 10 * time.Millisecond,
		Mix: Mix{{Name: "weave", Weight: 1}, {Name: "idle", Weight: 1}}, Threads: 2}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if r.ClientsConnected != 6 || r.ClientsRefused != 0 || r.ClientsDisconnected != 0 || r.ClientsNeverConnected != 0 {
		t.Fatalf("admission: connected %d refused %d disconnected %d never %d %v", r.ClientsConnected, r.ClientsRefused, r.ClientsDisconnected, r.ClientsNeverConnected, r.NeverConnectedByReason)
	}
	if r.Transport != "enet" || r.ServerTransport != "enet" || r.BodyFormat != BodyFormatOpaque {
		t.Errorf("transport %q server_transport %q body_format %q", r.Transport, r.ServerTransport, r.BodyFormat)
	}
	if r.ObservedServerTickHz == nil || r.ObservedServerTickHz.Min <= 0 {
		t.Errorf("observed tick-Hz %+v", r.ObservedServerTickHz)
	}
	if r.DownstreamKBsPerClient == nil || r.WorkerLoopDtMs == nil || r.ConnectMs == nil || r.MaxSnapshotGapMs == nil {
		t.Errorf("missing client metrics: kbs %v dt %v connect %v gap %v", r.DownstreamKBsPerClient, r.WorkerLoopDtMs, r.ConnectMs, r.MaxSnapshotGapMs)
	}
	if r.SnapshotDecodeErrors != 0 || r.SnapshotsDecoded != 0 {
		t.Errorf("opaque bodies: decode errors %d, decoded %d (must not be decoded)", r.SnapshotDecodeErrors, r.SnapshotsDecoded)
	}
	if r.PatternCounts["weave"] != 3 || r.PatternCounts["idle"] != 3 {
		t.Errorf("pattern counts %v", r.PatternCounts)
	}
	// Weave clients send input every tick; idle ones one keepalive a second.
	if r.InputsSent == 0 || srv.inputCount() == 0 {
		t.Errorf("inputs sent %d, received by server %d", r.InputsSent, srv.inputCount())
	}
	if len(r.Timeline) == 0 || r.ClientTicks == 0 {
		t.Errorf("timeline %d rows, client ticks %d", len(r.Timeline), r.ClientTicks)
	}
	if r.Aborted != "" {
		t.Errorf("aborted %q", r.Aborted)
	}
	checkPlayers(t, r)
}

// checkPlayers: one row per client in index order, every connected one with
// its own measured figures, the mix's patterns assigned as counted.
func checkPlayers(t *testing.T, r *report.Report) {
	t.Helper()
	if len(r.Players) != r.Clients {
		t.Fatalf("%d players for %d clients", len(r.Players), r.Clients)
	}
	patterns := map[string]int{}
	for i, p := range r.Players {
		patterns[p.Pattern]++
		if p.Index != i {
			t.Errorf("player %d has index %d", i, p.Index)
		}
		if p.Outcome != report.OutcomeConnected || p.Reason != "" {
			t.Errorf("player %d: outcome %q reason %q", i, p.Outcome, p.Reason)
		}
		if p.ConnectMs == nil || p.Snapshots < 2 || p.KBs == nil || *p.KBs <= 0 || p.TickHz == nil || *p.TickHz <= 0 || p.MaxSnapshotGapMs == nil {
			t.Errorf("player %d: figures missing: %+v", i, p)
		}
	}
	for name, n := range r.PatternCounts {
		if patterns[name] != n {
			t.Errorf("players fly %v, pattern counts %v", patterns, r.PatternCounts)
		}
	}
}

func TestRunCountsRefusalsByReason(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 2)
	cfg := Config{Addr: srv.addr, Clients: 6, Duration: 3 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.ClientsRefused != 3 || r.RefusedByReason["server_full"] != 3 || r.ClientsConnected != 3 {
		t.Errorf("refused %d by reason %v, connected %d; want 3 server_full, 3 connected", r.ClientsRefused, r.RefusedByReason, r.ClientsConnected)
	}
	refused := 0
	for _, p := range r.Players {
		if p.Outcome == report.OutcomeRefused && p.Reason == "server_full" {
			refused++
			if p.Snapshots != 0 || p.KBs != nil || p.TickHz != nil {
				t.Errorf("refused player %d has figures: %+v", p.Index, p)
			}
		}
	}
	if refused != 3 || len(r.Players) != 6 {
		t.Errorf("%d players, %d refused server_full; want 6, 3", len(r.Players), refused)
	}
}

func TestRunDecodesKnownFormatAndCountsErrors(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	// A body that is not a valid sg-entities/1 body: every snapshot fails.
	srv := startFakeServer(t, "sg-entities/1", []byte{0xde, 0xad, 0xbe, 0xef}, 0)
	cfg := Config{Addr: srv.addr, Clients: 2, Duration: 2 * time.Second, Threads: 1}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.SnapshotsReceived == 0 || r.SnapshotDecodeErrors != r.SnapshotsReceived {
		t.Errorf("snapshots %d, decode errors %d: every corrupt body must count", r.SnapshotsReceived, r.SnapshotDecodeErrors)
	}
}

// Valid sg-entities/2 bodies (records and events) are decoded and their
// entities counted: the report carries entities per snapshot and Snapshot
// bytes per entity (the figure a binding budget cannot hide a fatter record
// from); events are decoded, not counted as entities.
func TestRunReportsBytesPerEntity(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	enc, err := snapshot.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	for i := uint32(1); i <= 3; i++ {
		enc.Append(&snapshot.Record{ID: i, Rot: [4]float32{0, 0, 0, 1}, Type: 1})
	}
	enc.AppendEvent(&snapshot.Event{Kind: snapshot.EventDespawn, ID: 9})
	enc.AppendEvent(&snapshot.Event{Kind: snapshot.EventImpact, ID: 1, Other: 2, Value: 12})
	_, body := enc.Finish(nil, false)
	body = append([]byte(nil), body...)
	srv := startFakeServer(t, snapshot.BodyFormat, body, 0)
	cfg := Config{Addr: srv.addr, Clients: 2, Duration: 2 * time.Second, Threads: 1}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.SnapshotsDecoded == 0 || r.SnapshotDecodeErrors != 0 {
		t.Fatalf("decoded %d, errors %d", r.SnapshotsDecoded, r.SnapshotDecodeErrors)
	}
	msg := float64(proto.SnapshotHeaderSize + len(body))
	if r.EntitiesPerSnapshot == nil || *r.EntitiesPerSnapshot != 3 {
		t.Errorf("entities_per_snapshot %v, want 3", r.EntitiesPerSnapshot)
	}
	if r.SnapshotBytesPerEntity == nil || *r.SnapshotBytesPerEntity != msg/3 {
		t.Errorf("snapshot_bytes_per_entity %v, want %v", r.SnapshotBytesPerEntity, msg/3)
	}
}

// An opaque server's bodies are not decoded: no per-entity figures, null
// rather than zero.
func TestRunOpaqueHasNoBytesPerEntity(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 1500 * time.Millisecond}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.EntitiesPerSnapshot != nil || r.SnapshotBytesPerEntity != nil {
		t.Errorf("opaque bodies gave entities_per_snapshot %v, bytes per entity %v", r.EntitiesPerSnapshot, r.SnapshotBytesPerEntity)
	}
}

func TestRunUnknownBodyFormatIsRecorded(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, "other-game/7", []byte{1, 2, 3}, 0)
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 2 * time.Second}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.SnapshotDecodeErrors != 0 || r.SnapshotsDecoded != 0 || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "other-game/7") {
		t.Errorf("unknown format: errors %d decoded %d warnings %v", r.SnapshotDecodeErrors, r.SnapshotsDecoded, r.Warnings)
	}
}

func TestRunServerKilledMidRun(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 50), 0)
	cfg := Config{Addr: srv.addr, Clients: 4, Duration: 120 * time.Second, Ramp: 5 * time.Millisecond,
		Threads: 2, Timeout: time.Second}
	livetest.Go(t, "server killer", func(ctx context.Context) error {
		// Kill on an event (inputs reaching the server), not after a fixed
		// sleep. Should it never come, kill anyway: the checks below fail.
		_ = livetest.Poll(ctx, livetest.Wait, nil, inputsOver(srv, 4*30))
		srv.kill()
		return nil
	})
	// The run must end long before its 120 s duration: every client is lost.
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.ClientsConnected != 4 || r.ClientsDisconnected != 4 {
		t.Fatalf("connected %d disconnected %d %v; want all 4 lost", r.ClientsConnected, r.ClientsDisconnected, r.DisconnectedByReason)
	}
	if r.DurationS >= 100 {
		t.Errorf("run lasted %.1fs: it should end when every client is lost", r.DurationS)
	}
	if Evaluate(NoAsserts(), &Result{Report: r}); r.Passed {
		t.Error("a run whose server died passed")
	}
}

func TestRunInterrupted(t *testing.T) {
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	livetest.Go(t, "interrupter", func(ctx context.Context) error {
		// Interrupt once the clients play; should that never happen,
		// interrupt anyway and let the checks below judge the run.
		_ = livetest.Poll(ctx, livetest.Wait, nil, inputsOver(srv, 0))
		cancel()
		return nil
	})
	cfg := Config{Addr: srv.addr, Clients: 2, Duration: 120 * time.Second}
	r := runSwarm(t, ctx, cfg, 60*time.Second).Report
	if r.Aborted == "" {
		t.Error("an interrupted run is not marked aborted")
	}
}

func TestRunUnknownTransport(t *testing.T) {
	_, err := Run(context.Background(), Config{Addr: "127.0.0.1:1", Clients: 1, Duration: time.Second, Transport: "carrier-pigeon"})
	var ub *transport.UnknownBackendError
	if !errors.As(err, &ub) {
		t.Fatalf("err = %v, want *transport.UnknownBackendError", err)
	}
}

func TestServerMetricsMissingIsReportedNotZero(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          string
	}{
		{"missing", "", "no such file"},
		{"truncated", `{"schema_version":6,"tick_ms":{"p99":1`, "not a JSON object"},
		{"foreign", `{"hello":"world"}`, "required field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".json")
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := Config{Addr: srv.addr, Clients: 1, Duration: 1500 * time.Millisecond, ServerMetrics: path}
			res := runSwarm(t, context.Background(), cfg, 60*time.Second)
			r := res.Report
			if !strings.Contains(r.ServerMetricsError, tc.want) || len(r.ServerTick) != 0 || res.ServerTickRaw != nil {
				t.Errorf("server_metrics_error %q (want %q), server_tick %s", r.ServerMetricsError, tc.want, r.ServerTick)
			}
			a := NoAsserts()
			a["tick_ms_p99_max"] = 1000
			if failed := Evaluate(a, res); len(failed) != 1 || failed[0].Measured != nil {
				t.Errorf("tick-ms assert on an unreadable file: %+v", failed)
			}
		})
	}
}

func TestServerMetricsSampledAndEmbedded(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	path := filepath.Join(t.TempDir(), "m.json")
	if err := report.WriteFileAtomic(path, []byte(metricsFile)); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 2500 * time.Millisecond, ServerMetrics: path, RSSSampleInterval: time.Second}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if r.ServerMetricsError != "" || len(r.ServerTick) == 0 || res.ServerTick.Entities != 40 {
		t.Fatalf("server metrics not embedded: err %q", r.ServerMetricsError)
	}
	if len(r.RSSSeries) < 2 || r.RSSSeries[0].RSSKB != 50000 {
		t.Errorf("rss_series %+v, want ≥2 samples of 50000", r.RSSSeries)
	}
	if r.RSSSlopeKBPerMin != nil {
		t.Errorf("rss slope %v from %d samples, want null (too short)", *r.RSSSlopeKBPerMin, len(r.RSSSeries))
	}
	withServer := 0
	for _, p := range r.Timeline {
		if p.TickMsP99 != nil && *p.TickMsP99 == 2.5 && p.RSSKB != nil {
			withServer++
		}
	}
	if withServer == 0 {
		t.Errorf("no timeline row carries the server's tick p99 and rss: %+v", r.Timeline)
	}
}
