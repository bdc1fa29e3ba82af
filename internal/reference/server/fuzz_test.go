package server

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// FuzzServerMessages feeds arbitrary byte strings, split into messages, to
// a joined peer and to a peer that has not joined, and ticks the server.
// The server must not panic, must account for every message (accepted or
// counted as malformed or refused), and must keep producing decodable
// snapshots.
func FuzzServerMessages(f *testing.F) {
	join, _ := proto.AppendJoin(nil, &proto.Join{ClientIndex: 3, EntityType: "builtin:sensor-fighter", Name: "n"})
	in := proto.AppendInput(nil, &proto.Input{Seq: 1, Throttle: 1, Aileron: -1})
	f.Add(join, in, []byte{0x7f})
	f.Add(in, join, []byte{})
	f.Add([]byte{byte(proto.TypeJoin), 0, 0, 0, 0, 200}, []byte{byte(proto.TypeInput), 0, 0}, []byte{byte(proto.TypeSnapshot), 1, 2, 3, 4, 5})
	f.Add(append(in, 1), []byte{byte(proto.TypeNotice), 1, 0}, join)
	var dec *snapshot.Decoder
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		if dec == nil {
			dec, _ = snapshot.NewDecoder()
		}
		ts := newTestServer(t, func(cfg *Config) { cfg.World.TestSpawnAICount = 5; cfg.World.TestSpawnSpreadKm = 1 })
		ts.h.connect(1, "127.0.0.1", proto.ConnectData)
		ts.h.recv(1, join)
		ts.step()
		ts.h.connect(2, "127.0.0.2", proto.ConnectData)
		msgs := [][]byte{a, b, c, a, b, c}
		for i, m := range msgs {
			ts.h.recv(transport.PeerID(1+i%2), m)
		}
		ts.step()
		ts.step()
		if _, gone := ts.h.disconnected[1]; gone {
			t.Fatalf("joined peer disconnected after %d messages", len(msgs))
		}
		snaps := ts.h.messagesOf(1, proto.TypeSnapshot)
		if len(snaps) != 3 {
			t.Fatalf("%d snapshots in 3 ticks", len(snaps))
		}
		for _, s := range snaps {
			h, body, err := proto.DecodeSnapshot(s)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := dec.Decode(h.Flags, body); err != nil {
				t.Fatalf("snapshot does not decode: %v", err)
			}
		}
		for _, e := range ts.sim.World.Live() {
			p := ts.sim.World.At(e).Pos
			if p[0] != p[0] || p[1] != p[1] || p[2] != p[2] {
				t.Fatal("entity position went NaN")
			}
		}
		refused := int64(0)
		for _, n := range ts.met.refused {
			refused += n
		}
		if ts.met.malformed+refused > int64(len(msgs)) {
			t.Fatalf("malformed %d + refused %d > %d messages", ts.met.malformed, refused, len(msgs))
		}
	})
}

// A reader polling the metrics file while the server rewrites it never
// sees a partial or unparseable file.
func TestMetricsFileAtomicUnderConcurrentReads(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.json")
	ts := newTestServer(t, func(c *Config) {
		c.Metrics.TickJSONPath = path
		c.World.TestSpawnAICount = 50
	})
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var reads, bad atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if _, _, err := report.ReadServerTick(path); err != nil {
					bad.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
				reads.Add(1)
			}
		}()
	}
	// At least 300 writes, and on until the readers have overlapped them
	// a fair number of times (a loaded machine may starve them a while).
	giveUp := time.Now().Add(20 * time.Second)
	for i := 0; i < 300 || (reads.Load() < 50 && time.Now().Before(giveUp)); i++ {
		ts.step()
		// Grow the refused map so the file's size varies between writes.
		ts.met.refused[fmt.Sprintf("reason_%d", i%40)]++
		if err := ts.WriteMetrics(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d of %d concurrent reads saw a broken file: %v", bad.Load(), reads.Load(), firstErr.Load())
	}
	if reads.Load() < 50 {
		t.Fatalf("only %d reads overlapped the writes", reads.Load())
	}
}
