package report

import (
	"context"
	"math"
	"net"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
)

func TestReportValidate(t *testing.T) {
	good := func() *Report {
		return &Report{Clients: 8, ClientsConnected: 6, ClientsRefused: 1, ClientsDisconnected: 2, ClientsNeverConnected: 1,
			Threads: 2, RateHz: 60, DurationS: 20, PatternCounts: map[string]int{"weave": 8},
			Shard:   &ShardInfo{Index: 1, Count: 2, ClientsTotal: 16, FirstClient: 8},
			Players: []Player{{Index: 8}, {Index: 15}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("a valid report refused: %v", err)
	}
	aborted := good()
	aborted.AbortedAtS, aborted.AbortReason, aborted.AbortGate = ptr(4.0), "tick_hz_min: 3 s under 24 Hz", "tick_hz_min"
	aborted.HarnessErrors = &HarnessErrors{Socket: 2, FDExhausted: 2, FDLimit: &FDLimit{Soft: 256, Hard: 256, SoftBefore: 256, Needed: 1064, Clients: 1000, PerClient: 1, Spare: 64}}
	if err := aborted.Validate(); err != nil {
		t.Fatalf("a valid aborted report refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		mut  func(r *Report)
		want string
	}{
		{"negative connected", func(r *Report) { r.ClientsConnected = -1 }, "clients_connected is -1: a count cannot be negative"},
		{"negative clients", func(r *Report) { r.Clients = -8 }, "clients is -8"},
		{"more connected than clients", func(r *Report) { r.ClientsConnected = 9 }, "clients_connected is 9, more than the report's 8 clients"},
		{"lost more than admitted", func(r *Report) { r.ClientsDisconnected = 7 }, "only an admitted client can be lost"},
		{"negative snapshots", func(r *Report) { r.SnapshotsReceived = -5 }, "snapshots_received is -5"},
		{"NaN rate", func(r *Report) { r.RateHz = math.NaN() }, "rate_hz is NaN"},
		{"negative map count", func(r *Report) { r.RefusedByReason = map[string]int{"full": -1} }, `refused_by_reason["full"] is -1`},
		{"shard index -1", func(r *Report) { r.Shard.Index = -1 }, "shard: index is -1: want 0..1"},
		{"shard index = count", func(r *Report) { r.Shard.Index = 2 }, "shard: index is 2"},
		{"shard count 0", func(r *Report) { r.Shard.Count = 0 }, "shard: count is 0"},
		{"shard overflows the run", func(r *Report) { r.Shard.FirstClient = 12 }, "first_client 12 + this shard's 8 clients is more than clients_total 16"},
		{"shard late NaN", func(r *Report) { r.Shard.StartLateMs = math.Inf(1) }, "start_late_ms is +Inf"},
		{"player outside", func(r *Report) { r.Players[1].Index = 16 }, "players[1]: index 16 is outside the run's 16 clients"},
		{"abort without reason", func(r *Report) { r.AbortedAtS = ptr(4.0) }, "aborted_at_s is set without an abort_reason"},
		{"abort reason without time", func(r *Report) { r.AbortReason = "x" }, "abort_reason/abort_gate without aborted_at_s"},
		{"abort at NaN", func(r *Report) { r.AbortedAtS, r.AbortReason = ptr(math.NaN()), "x" }, "aborted_at_s is NaN"},
		{"abort before the start", func(r *Report) { r.AbortedAtS, r.AbortReason = ptr(-1.0), "x" }, "aborted_at_s is -1"},
		{"negative harness count", func(r *Report) { r.HarnessErrors = &HarnessErrors{Socket: -1} }, "harness_errors: a count cannot be negative"},
		{"fd errors beyond the failures", func(r *Report) { r.HarnessErrors = &HarnessErrors{Socket: 1, FDExhausted: 2} }, "fd_exhausted 2 is more than"},
		{"negative fd limit", func(r *Report) { r.HarnessErrors = &HarnessErrors{FDLimit: &FDLimit{Soft: -1}} }, "harness_errors.fd_limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := good()
			tc.mut(r)
			err := r.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	// ParseReport applies it: merge, the gate and compare read through it.
	if _, err := ParseReport(with(t, goodReport, "clients_connected", -3)); err == nil || !strings.Contains(err.Error(), "clients_connected is -3") {
		t.Errorf("ParseReport with a negative count: %v", err)
	}
}

// TestReportAndMetricsReadersRefuseHostileFiles is the acceptance test of
// the report and metrics readers: a /dev/zero symlink, a FIFO and a 300 MB
// file are each refused within 2 s with less than 64 MB of growth.
func TestReportAndMetricsReadersRefuseHostileFiles(t *testing.T) {
	dir := t.TempDir()
	t.Run("report", func(t *testing.T) {
		boundedfiletest.Refuses(t, boundedfiletest.Files(t, dir, "report.json"), func(p string) error {
			_, err := ReadReport(p)
			return err
		})
	})
	t.Run("metrics", func(t *testing.T) {
		boundedfiletest.Refuses(t, boundedfiletest.Files(t, dir, "server_metrics.json"), func(p string) error {
			_, _, err := ReadServerTick(p)
			return err
		})
	})
}

// TestReadServerTickContextEndsWithTheContext: a metrics endpoint that
// accepts and never answers cannot hold the reader past its context.
func TestReadServerTickContextEndsWithTheContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := ReadServerTickContext(ctx, "http://"+ln.Addr().String()+"/metrics")
		errc <- err
	}()
	c, err := ln.Accept() // the request arrived; nobody answers
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	if err := <-errc; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("err = %v, want the context's", err)
	}
}

func ptr[T any](v T) *T { return &v }
