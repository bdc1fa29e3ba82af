package swarm

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	_ "github.com/scalegate/scalegate/internal/load/transport/enet"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// fakeServer is a minimal protocol-v1 server on real ENet for swarm tests
// that must not depend on the reference server's behaviour: it welcomes
// every Join (or refuses every refuseNth), sends a Snapshot carrying the tick
// number every tick and a PeerDelay every second.
type fakeServer struct {
	addr       string
	bodyFormat string
	body       []byte // snapshot body sent as is
	refuseNth  int
	// tickEvery > 1 advances the tick number only every tickEvery sends:
	// a server whose simulation runs at 60/tickEvery Hz (the swarm's
	// observed tick-Hz) while it still sends at 60 Hz.
	tickEvery int
	// quiet, when set, says the server sends no Snapshot (PeerDelay still
	// goes) at this long after it started: a stall or a silence.
	quiet func(since time.Duration) bool

	task   *livetest.Task
	mu     sync.Mutex
	inputs int
	joins  []proto.Join // every Join received, in order
}

func startFakeServer(t testing.TB, bodyFormat string, body []byte, refuseNth int) *fakeServer {
	t.Helper()
	return startFake(t, &fakeServer{bodyFormat: bodyFormat, body: body, refuseNth: refuseNth})
}

// startFakeServerTicking is startFakeServer whose tick number advances
// every tickEvery sends.
func startFakeServerTicking(t testing.TB, bodyFormat string, body []byte, refuseNth, tickEvery int) *fakeServer {
	t.Helper()
	return startFake(t, &fakeServer{bodyFormat: bodyFormat, body: body, refuseNth: refuseNth, tickEvery: tickEvery})
}

// startFake starts s (its options set) on an ephemeral loopback port.
func startFake(t testing.TB, s *fakeServer) *fakeServer {
	t.Helper()
	h, err := transport.Listen("enet", "127.0.0.1:0", transport.Options{MaxPeers: 256})
	if err != nil {
		t.Fatalf("fake server listen: %v", err)
	}
	_, port, _ := net.SplitHostPort(h.Addr())
	s.addr = net.JoinHostPort("127.0.0.1", port)
	s.tickEvery = max(1, s.tickEvery)
	s.task = livetest.Go(t, "fake server", func(ctx context.Context) error {
		s.loop(ctx, h)
		return nil
	})
	return s
}

// kill stops the server without telling its peers, like a crashed process.
func (s *fakeServer) kill() { _ = s.task.Stop() }

func (s *fakeServer) loop(ctx context.Context, h transport.Host) {
	defer h.Close()
	joined := map[transport.PeerID]bool{}
	joins := 0
	tk := time.NewTicker(time.Second / 60)
	defer tk.Stop()
	var tick, sends uint32
	buf := make([]byte, 0, 2048)
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		if sends++; sends%uint32(s.tickEvery) == 0 {
			tick++
		}
		h.Service(func(ev transport.Event) {
			if ev.Kind == transport.EventDisconnect {
				delete(joined, ev.Peer)
			}
			if ev.Kind != transport.EventReceive || len(ev.Payload) == 0 {
				return
			}
			switch proto.Type(ev.Payload[0]) {
			case proto.TypeJoin:
				if j, err := proto.DecodeJoin(ev.Payload); err == nil {
					s.mu.Lock()
					s.joins = append(s.joins, j)
					s.mu.Unlock()
				}
				joins++
				if s.refuseNth > 0 && joins%s.refuseNth == 0 {
					b, _ := proto.AppendRefuse(nil, &proto.Refuse{Reason: proto.ReasonServerFull, Message: "fault"})
					h.Send(ev.Peer, transport.Reliable, b)
					h.Disconnect(ev.Peer, 0)
					return
				}
				b, _ := proto.AppendWelcome(nil, &proto.Welcome{EntityID: uint32(ev.Peer) + 1, TickHz: 60, ServerTick: tick, Transport: "enet", BodyFormat: s.bodyFormat})
				h.Send(ev.Peer, transport.Reliable, b)
				joined[ev.Peer] = true
			case proto.TypeInput:
				s.mu.Lock()
				s.inputs++
				s.mu.Unlock()
			}
		})
		quiet := s.quiet != nil && s.quiet(time.Since(started))
		for p := range joined {
			buf = proto.AppendSnapshotHeader(buf[:0], proto.SnapshotHeader{Tick: tick})
			buf = append(buf, s.body...)
			if !quiet {
				h.Send(p, transport.Unreliable, buf)
			}
			if sends%60 == 0 {
				h.Send(p, transport.Unreliable, proto.AppendPeerDelay(buf[:0], 12))
			}
		}
		h.Flush()
	}
}

func (s *fakeServer) inputCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inputs
}

// joined returns a copy of every Join received so far.
func (s *fakeServer) joined() []proto.Join {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]proto.Join(nil), s.joins...)
}
