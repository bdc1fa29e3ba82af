package swarm

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// snapshotMessage builds a Snapshot message with n sg-entities/2 records,
// zstd-compressed when that is smaller (what the reference server sends).
func snapshotMessage(b *testing.B, n int) []byte { return snapshotBytes(b, n) }

func snapshotBytes(b testing.TB, n int) []byte {
	b.Helper()
	enc, err := snapshot.NewEncoder()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		a := float64(i) * 0.7
		enc.Append(&snapshot.Record{
			ID: uint32(i + 1), Type: 1,
			Pos: [3]float32{float32(1000 * math.Cos(a)), 4000, float32(1000 * math.Sin(a))},
			Rot: [4]float32{0, 0, 0, 1}, Vel: [3]float32{200, 0, 10},
		})
	}
	flags, body := enc.Finish(nil, true)
	msg := proto.AppendSnapshotHeader(nil, proto.SnapshotHeader{Tick: 1, Flags: flags})
	return append(msg, body...)
}

// BenchmarkClientSnapshot is the swarm's per-snapshot work on the reference
// server's format: header decode, metrics, sg-entities/2 body decode.
func BenchmarkClientSnapshot(b *testing.B) {
	for _, n := range []int{8, 48} {
		b.Run(map[int]string{8: "8-entities", 48: "48-entities"}[n], func(b *testing.B) {
			msg := snapshotMessage(b, n)
			cfg := Config{}
			w := newWorker(0, &cfg, nil, time.Second/60)
			c := welcomedClient(b, w, snapshot.BodyFormat)
			now := time.Now()
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				c.onMessage(w, msg, now, now)
			}
			if c.decodeErrors != 0 {
				b.Fatalf("%d decode errors", c.decodeErrors)
			}
		})
	}
}

// BenchmarkClientInput is the per-tick Input work without a socket: the
// pattern, the encode and the send into a host that discards it.
func BenchmarkClientInput(b *testing.B) {
	cfg := Config{}
	w := newWorker(0, &cfg, nil, time.Second/60)
	c := newClient(0, "weave", patterns["weave"](0, 1), time.Now(), w.proto.NewBot(0))
	c.host, c.phase, c.welcomedAt = discardHost{}, phaseJoined, time.Now()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		c.sendInput(w, now)
	}
}

// BenchmarkWorkerIterateENet is one worker loop iteration over 32 joined
// clients on real ENet sockets against an in-process server sending opaque
// 200-byte snapshots at 60 Hz: the swarm's whole per-tick cost including
// syscalls. ns/op ÷ 32 is the cost of one client-tick.
func BenchmarkWorkerIterateENet(b *testing.B) {
	for _, mode := range []struct {
		name      string
		perClient bool
	}{{"batch", false}, {"per-client", true}} {
		b.Run(mode.name, func(b *testing.B) { benchWorkerIterateENet(b, mode.perClient) })
	}
}

// benchWorkerIterateENet times one worker iteration over 32 joined ENet
// clients of an in-process server, batched or one service call per client.
func benchWorkerIterateENet(b *testing.B, perClient bool) {
	const n = 32
	srv := startFakeServer(b, BodyFormatOpaque, make([]byte, 200), 0)
	b.ReportAllocs()
	cfg := Config{PerClientService: perClient, Addr: srv.addr, Clients: n, Timeout: 30 * time.Second, ConnectTimeout: 30 * time.Second}
	be, err := transport.Lookup("enet")
	if err != nil {
		b.Fatal(err)
	}
	w := newWorker(0, &cfg, be, time.Second/60)
	start := time.Now()
	for i := 0; i < n; i++ {
		c := newClient(i, "weave", patterns["weave"](i, n), start, w.proto.NewBot(i))
		c.addr = srv.addr // as Run sets it (no relay here)
		w.add(c)
	}
	defer w.shutdown()
	livetest.EventuallyPumping(b, livetest.Wait, func() int { w.iterate(0, len(w.clients)); return 0 }, func() (bool, string) {
		joined := 0
		for _, c := range w.clients {
			if c.phase == phaseJoined {
				joined++
			}
		}
		return joined == n, fmt.Sprintf("%d of %d clients joined", joined, n)
	})
	for b.Loop() {
		w.iterate(0, len(w.clients))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n/1000, "µs/client-tick")
}

// testClient is a client speaking v1, made by a worker of its own.
func testClient(index int, patternName string, p Pattern, slot time.Time) *client {
	return newClient(index, patternName, p, slot, LoadV1.NewWorker(&Config{}).NewBot(index))
}

// welcomedClient is a v1 client of w admitted by a Welcome naming format,
// as a server would admit it: its bot picks the body decoder.
func welcomedClient(tb testing.TB, w *worker, format string) *client {
	tb.Helper()
	c := newClient(0, "weave", nil, time.Now(), w.proto.NewBot(0))
	c.phase = phaseJoining
	welcome, err := proto.AppendWelcome(nil, &proto.Welcome{TickHz: 60, Transport: "enet", BodyFormat: format})
	if err != nil {
		tb.Fatal(err)
	}
	c.onMessage(w, welcome, time.Now(), time.Now())
	if c.phase != phaseJoined || c.bodyFormat != format {
		tb.Fatalf("Welcome(%s) left the client in phase %d, body format %q", format, c.phase, c.bodyFormat)
	}
	return c
}

// discardHost is a transport.Host that accepts and drops everything.
type discardHost struct{}

func (discardHost) Backend() string                                  { return "discard" }
func (discardHost) Addr() string                                     { return "" }
func (discardHost) Connect(string, uint32) (transport.PeerID, error) { return 0, nil }
func (discardHost) Send(transport.PeerID, transport.Delivery, []byte) error {
	return nil
}
func (discardHost) Service(func(transport.Event)) (int, error) { return 0, nil }
func (discardHost) Flush() error                               { return nil }
func (discardHost) Disconnect(transport.PeerID, uint32)        {}
func (discardHost) RTT(transport.PeerID) time.Duration         { return 0 }
func (discardHost) PeerAddr(transport.PeerID) string           { return "" }
func (discardHost) WireRates() transport.WireRates             { return transport.WireRates{} }
func (discardHost) QueuedSends(transport.PeerID) int           { return 0 }
func (discardHost) Close() error                               { return nil }

// FuzzClientMessage feeds arbitrary server bytes to a client in every phase:
// whatever a server sends, the swarm counts it and never panics.
func FuzzClientMessage(f *testing.F) {
	welcome, _ := proto.AppendWelcome(nil, &proto.Welcome{TickHz: 60, Transport: "enet", BodyFormat: snapshot.BodyFormat})
	refuse, _ := proto.AppendRefuse(nil, &proto.Refuse{Reason: 9, Message: "x"})
	notice, _ := proto.AppendNotice(nil, &proto.Notice{Kind: proto.NoticeShutdown})
	for _, seed := range [][]byte{welcome, refuse, notice, proto.AppendPeerDelay(nil, 7),
		proto.AppendSnapshotHeader(nil, proto.SnapshotHeader{Tick: 3, Flags: 1}), {0x20, 1}, {0x10}, {}} {
		f.Add(seed, uint8(phaseJoined))
	}
	cfg := Config{}
	w := newWorker(0, &cfg, nil, time.Second/60)
	f.Fuzz(func(t *testing.T, msg []byte, ph uint8) {
		c := testClient(0, "weave", nil, time.Now())
		if p := phase(ph % uint8(phaseDone+1)); p == phaseJoined {
			c = welcomedClient(t, w, snapshot.BodyFormat)
		} else {
			c.phase = p
		}
		c.host = discardHost{}
		before := c.phase
		c.onMessage(w, msg, time.Now(), time.Now())
		c.onMessage(w, msg, time.Now().Add(time.Millisecond), time.Now().Add(time.Millisecond))
		if before != phaseRefused && c.phase == phaseRefused && c.reason == "" {
			t.Fatal("refused without a reason")
		}
	})
}

// BenchmarkClientTickAcks is one client-tick of 128 clients in turn (an
// Input out, a 48-entity snapshot in), with and without the snapshot's
// input acknowledgement (load protocol v1.1): what timing input latency
// costs per client-tick, with every client's state competing for the
// cache as in a worker.
func BenchmarkClientTickAcks(b *testing.B) {
	for _, acked := range []bool{false, true} {
		b.Run(map[bool]string{false: "v1.0", true: "v1.1-acked"}[acked], func(b *testing.B) {
			w := newWorker(0, &Config{}, nil, time.Second/60)
			cs := make([]*client, 128)
			for i := range cs {
				cs[i] = welcomedClient(b, w, snapshot.BodyFormat)
				cs[i].host, cs[i].pattern = discardHost{}, patterns["weave"](i, len(cs))
			}
			plain := snapshotMessage(b, 48)
			msg := append([]byte(nil), plain...)
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				for _, c := range cs {
					c.sendInput(w, now)
					if acked {
						msg = msg[:0]
						msg = proto.AppendSnapshotHeader(msg, proto.SnapshotHeader{Tick: 1, Flags: plain[5] | proto.SnapshotFlagInputAck, InputSeq: c.acks.seq})
						msg = append(msg, plain[proto.SnapshotHeaderSize:]...)
					}
					c.onMessage(w, msg, now, now)
				}
				now = now.Add(time.Second / 60)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cs)), "ns/client-tick")
		})
	}
}
