package swarm

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		ok   bool
	}{
		{"0/1", Shard{0, 1}, true}, {"3/4", Shard{3, 4}, true}, {" 1 / 2 ", Shard{1, 2}, true},
		{"4/4", Shard{}, false}, {"-1/4", Shard{}, false}, {"0/0", Shard{}, false}, {"1", Shard{}, false}, {"a/b", Shard{}, false},
	} {
		got, err := ParseShard(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestShardsPartitionTheRun: for every shard count, the shards' clients
// together are exactly the unsharded run's clients, each with the same
// index, pattern and ramp slot, and no client is in two shards.
func TestShardsPartitionTheRun(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	mix := Mix{{Name: "weave", Weight: 3}, {Name: "aggressive", Weight: 1}, {Name: "idle", Weight: 2}}
	type key struct {
		index   int
		pattern string
		slot    time.Time
	}
	collect := func(cfg Config) []key {
		var out []key
		factories, _, err := cfg.Mix.factories(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range buildWorkers(&cfg, factories, nil, start, start, nil) {
			for _, c := range w.clients {
				out = append(out, key{c.index, c.patternName, c.slot})
			}
		}
		slices.SortFunc(out, func(a, b key) int { return a.index - b.index })
		return out
	}
	for _, clients := range []int{1, 7, 64, 129} {
		whole := collect(Config{Clients: clients, RateHz: 60, Threads: 3, Ramp: 5 * time.Millisecond, Mix: mix})
		for _, n := range []int{1, 2, 3, 4, 8} {
			if n > clients {
				continue
			}
			var union []key
			total := map[string]int{}
			for i := range n {
				cfg := Config{Clients: clients, RateHz: 60, Threads: 2, Ramp: 5 * time.Millisecond, Mix: mix, Shard: Shard{i, n}, StartAt: start}
				part := collect(cfg)
				lo, hi := cfg.Shard.Range(clients)
				if len(part) != hi-lo || cfg.ShardClients() != hi-lo || hi-lo < 1 {
					t.Fatalf("C=%d shard %d/%d: %d clients, range [%d,%d)", clients, i, n, len(part), lo, hi)
				}
				for p, c := range shardPatternCounts(&cfg) {
					total[p] += c
				}
				union = append(union, part...)
			}
			if !slices.Equal(union, whole) {
				t.Fatalf("C=%d N=%d: shards' clients differ from the unsharded run's", clients, n)
			}
			if want := mix.Counts(clients); fmt.Sprint(total) != fmt.Sprint(want) {
				t.Fatalf("C=%d N=%d: pattern counts %v, unsharded %v", clients, n, total, want)
			}
		}
	}
}

func TestShardValidate(t *testing.T) {
	cfg := Config{Addr: "x:1", Clients: 3, Duration: time.Second, Shard: Shard{0, 4}}
	if err := cfg.Validate(); err == nil {
		t.Fatal("4 shards of 3 clients must be refused")
	}
}

// TestRunShardsOnSharedClock runs two shards of a 6-client run at once
// against one server on a shared start instant: the server sees each
// client index and name exactly once, both reports carry their shard
// block, on time; a third run whose start instant is already past records
// how late it began.
func TestRunShardsOnSharedClock(t *testing.T) {
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	at := time.Now().Add(300 * time.Millisecond).Round(time.Millisecond)
	results := make([]*Result, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			cfg := Config{Addr: srv.addr, Clients: 6, Duration: 2 * time.Second, Ramp: 10 * time.Millisecond,
				Shard: Shard{i, 2}, StartAt: at}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Errorf("shard %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var names []string
	for _, j := range srv.joined() {
		names = append(names, fmt.Sprintf("%d:%s", j.ClientIndex, j.Name))
	}
	slices.Sort(names)
	want := []string{"0:sg-bot-0", "1:sg-bot-1", "2:sg-bot-2", "3:sg-bot-3", "4:sg-bot-4", "5:sg-bot-5"}
	if !slices.Equal(names, want) {
		t.Fatalf("server saw joins %v, want %v", names, want)
	}
	for i, res := range results {
		r := res.Report
		s := r.Shard
		if s == nil || s.Index != i || s.Count != 2 || s.ClientsTotal != 6 || s.FirstClient != 3*i || r.Clients != 3 {
			t.Fatalf("shard %d: block %+v clients %d", i, s, r.Clients)
		}
		if s.StartAt != at.UTC().Format(time.RFC3339Nano) || s.StartLateMs != 0 {
			t.Errorf("shard %d: start_at %q late %g ms, want %s on time", i, s.StartAt, s.StartLateMs, at.UTC().Format(time.RFC3339Nano))
		}
		if r.ClientsConnected != 3 || r.Histograms == nil || r.Histograms.RTTMs == nil && r.Histograms.ConnectMs == nil {
			t.Errorf("shard %d: connected %d histograms %+v", i, r.ClientsConnected, r.Histograms)
		}
	}
	// 3 s late into a 5 s run: 2 s left to run.
	late := Config{Addr: srv.addr, Clients: 2, Duration: 5 * time.Second, StartAt: time.Now().Add(-3 * time.Second)}
	r := runSwarm(t, context.Background(), late, 60*time.Second).Report
	if r.Shard == nil || r.Shard.StartLateMs < 3000 {
		t.Fatalf("late start: shard block %+v, want start_late_ms ≥ 3000", r.Shard)
	}
	if r.ClientsConnected != 2 || r.ConnectMs == nil || r.ConnectMs.Max >= 3000 {
		t.Errorf("late start: connected %d connect_ms %+v (slots past must move to the start, not count the lateness)", r.ClientsConnected, r.ConnectMs)
	}
}
