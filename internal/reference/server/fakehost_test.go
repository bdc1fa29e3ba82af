package server

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// fakeHost is an in-memory transport.Host: tests queue events, the server
// services them, and what it sends is recorded per peer.
type fakeHost struct {
	events       []transport.Event
	sent         map[transport.PeerID][][]byte
	disconnected map[transport.PeerID]uint32
	addrs        map[transport.PeerID]string
	wire         transport.WireRates
	queued       map[transport.PeerID]int // QueuedSends per peer
	sendErr      error                    // returned by every Send when set
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		sent:         map[transport.PeerID][][]byte{},
		disconnected: map[transport.PeerID]uint32{},
		addrs:        map[transport.PeerID]string{},
		queued:       map[transport.PeerID]int{},
		wire:         transport.WireRates{Interval: time.Second, BytesOutPerSec: 64000, BytesInPerSec: 1000, DatagramsOutPerSec: 120},
	}
}

func (h *fakeHost) Backend() string                                  { return "fake" }
func (h *fakeHost) Addr() string                                     { return "127.0.0.1:1" }
func (h *fakeHost) Connect(string, uint32) (transport.PeerID, error) { return 0, nil }
func (h *fakeHost) Flush() error                                     { return nil }
func (h *fakeHost) RTT(transport.PeerID) time.Duration               { return 12 * time.Millisecond }
func (h *fakeHost) PeerAddr(p transport.PeerID) string               { return h.addrs[p] }
func (h *fakeHost) WireRates() transport.WireRates                   { return h.wire }
func (h *fakeHost) Close() error                                     { return nil }
func (h *fakeHost) QueuedSends(p transport.PeerID) int               { return h.queued[p] }

func (h *fakeHost) Send(p transport.PeerID, _ transport.Delivery, msg []byte) error {
	if _, gone := h.disconnected[p]; gone {
		return transport.ErrUnknownPeer
	}
	if h.sendErr != nil {
		return h.sendErr
	}
	h.sent[p] = append(h.sent[p], bytes.Clone(msg))
	return nil
}

func (h *fakeHost) Service(fn func(transport.Event)) (int, error) {
	evs := h.events
	h.events = nil
	for _, ev := range evs {
		fn(ev)
	}
	return len(evs), nil
}

func (h *fakeHost) Disconnect(p transport.PeerID, reason uint32) {
	if _, gone := h.disconnected[p]; gone {
		return
	}
	h.disconnected[p] = reason
	h.events = append(h.events, transport.Event{Kind: transport.EventDisconnect, Peer: p, Data: reason})
}

func (h *fakeHost) connect(p transport.PeerID, ip string, data uint32) {
	h.addrs[p] = ip + ":5000"
	h.events = append(h.events, transport.Event{Kind: transport.EventConnect, Peer: p, Data: data})
}

func (h *fakeHost) recv(p transport.PeerID, msg []byte) {
	h.events = append(h.events, transport.Event{Kind: transport.EventReceive, Peer: p, Payload: msg})
}

// messagesOf returns the messages of type t sent to p.
func (h *fakeHost) messagesOf(p transport.PeerID, t proto.Type) [][]byte {
	var out [][]byte
	for _, m := range h.sent[p] {
		if len(m) > 0 && proto.Type(m[0]) == t {
			out = append(out, m)
		}
	}
	return out
}

// testServer is a server on a fakeHost, ticked by hand with a fake clock.
type testServer struct {
	*Server
	h   *fakeHost
	now time.Time
}

func newTestServer(t testing.TB, mut func(*Config)) *testServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.World.SimWorkerThreads = 1
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := newFakeHost()
	s.attach(h)
	ts := &testServer{Server: s, h: h, now: time.Unix(5000, 0)}
	s.started = ts.now
	s.pacer = NewPacer(ts.now, time.Second/TickHz)
	t.Cleanup(s.sim.Close)
	return ts
}

// step runs one tick at the fake clock, then advances it one period.
func (ts *testServer) step() {
	ts.runTick(ts.now, 0)
	ts.now = ts.now.Add(time.Second / TickHz)
}

func joinMsg(t testing.TB, entityType string) []byte {
	b, err := proto.AppendJoin(nil, &proto.Join{ClientIndex: 1, EntityType: entityType, Name: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inputMsg(seq uint32) []byte {
	return proto.AppendInput(nil, &proto.Input{Seq: seq, Throttle: 0.8, Elevator: 0.1, Aileron: -0.2})
}
