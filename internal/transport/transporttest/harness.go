package transporttest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/transport"
)

// waitTimeout bounds every wait for an event. It is generous on purpose: a
// loaded 2-core machine can stall a loopback exchange for seconds, and a test
// waits on the event itself, never on a clock.
const waitTimeout = 30 * time.Second

// pollPause is the pause between service rounds while waiting, so a wait
// yields the CPU instead of spinning.
const pollPause = time.Millisecond

// endpoint is one host under test with the events it has delivered so far.
// Payloads are copied out of the callback, as the contract requires.
type endpoint struct {
	t      testing.TB
	name   string
	h      transport.Host
	events []transport.Event
}

func newEndpoint(t testing.TB, name string, h transport.Host) *endpoint {
	t.Helper()
	e := &endpoint{t: t, name: name, h: h}
	t.Cleanup(func() { _ = h.Close() })
	return e
}

// service runs one Service call and records its events.
func (e *endpoint) service() {
	e.t.Helper()
	n, err := e.h.Service(func(ev transport.Event) {
		ev.Payload = slices.Clone(ev.Payload)
		e.events = append(e.events, ev)
	})
	if err != nil {
		e.t.Fatalf("%s: Service: %v", e.name, err)
	}
	if n < 0 {
		e.t.Fatalf("%s: Service returned %d events", e.name, n)
	}
}

// take removes and returns the first recorded event matching keep.
func (e *endpoint) take(keep func(transport.Event) bool) (transport.Event, bool) {
	for i, ev := range e.events {
		if keep(ev) {
			e.events = slices.Delete(e.events, i, i+1)
			return ev, true
		}
	}
	return transport.Event{}, false
}

// takeAll removes and returns every recorded event matching keep, in order.
func (e *endpoint) takeAll(keep func(transport.Event) bool) []transport.Event {
	var out, rest []transport.Event
	for _, ev := range e.events {
		if keep(ev) {
			out = append(out, ev)
		} else {
			rest = append(rest, ev)
		}
	}
	e.events = rest
	return out
}

func isKind(k transport.EventKind) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == k }
}

func isReceive(d transport.Delivery) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == transport.EventReceive && ev.Delivery == d }
}

// waitUntil services eps until cond holds, failing after waitTimeout with
// what was awaited.
func waitUntil(t testing.TB, what string, cond func() bool, eps ...*endpoint) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		for _, e := range eps {
			e.service()
		}
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(pollPause)
	}
}

// waitEvent services eps until e records an event matching keep, then
// removes and returns it.
func waitEvent(t testing.TB, what string, e *endpoint, keep func(transport.Event) bool, eps ...*endpoint) transport.Event {
	t.Helper()
	var got transport.Event
	waitUntil(t, e.name+": "+what, func() bool {
		ev, ok := e.take(keep)
		got = ev
		return ok
	}, eps...)
	return got
}

// pair is a connected server and client.
type pair struct {
	server, client *endpoint
	// sPeer is the client as the server names it; cPeer the server as the
	// client names it.
	sPeer, cPeer transport.PeerID
	connectData  uint32
}

// connectPair listens on loopback, dials, connects with data and waits for
// both connect events.
func connectPair(t testing.TB, backend string, data uint32, sopt, copt transport.Options) *pair {
	t.Helper()
	sh, err := transport.Listen(backend, "127.0.0.1:0", sopt)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	server := newEndpoint(t, "server", sh)
	ch, err := transport.Dial(backend, copt)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	client := newEndpoint(t, "client", ch)
	cPeer, err := ch.Connect(sh.Addr(), data)
	if err != nil {
		t.Fatalf("Connect(%s): %v", sh.Addr(), err)
	}
	p := &pair{server: server, client: client, cPeer: cPeer, connectData: data}
	ev := waitEvent(t, "connect", server, isKind(transport.EventConnect), server, client)
	p.sPeer = ev.Peer
	if ev.Data != data {
		t.Fatalf("server connect event Data = %#x, want the client's connect data %#x", ev.Data, data)
	}
	cev := waitEvent(t, "connect", client, isKind(transport.EventConnect), server, client)
	if cev.Peer != cPeer {
		t.Fatalf("client connect event for peer %d, Connect returned peer %d", cev.Peer, cPeer)
	}
	return p
}

// both returns the two endpoints for waits.
func (p *pair) both() []*endpoint { return []*endpoint{p.server, p.client} }

// seqMsg is a numbered test message of size n (at least 5 bytes): a tag,
// the sequence number, then a pattern derived from both, so corruption,
// truncation and reordering are all visible.
func seqMsg(tag byte, seq uint32, n int) []byte {
	b := make([]byte, max(n, 5))
	b[0] = tag
	b[1], b[2], b[3], b[4] = byte(seq), byte(seq>>8), byte(seq>>16), byte(seq>>24)
	for i := 5; i < len(b); i++ {
		b[i] = byte(uint32(i)*31 + seq)
	}
	return b
}

// checkSeqMsg returns the sequence number of a message made by seqMsg, or an
// error saying what is wrong with it.
func checkSeqMsg(tag byte, b []byte, wantLen int) (uint32, error) {
	if len(b) != max(wantLen, 5) {
		return 0, fmt.Errorf("length %d, want %d", len(b), max(wantLen, 5))
	}
	if b[0] != tag {
		return 0, fmt.Errorf("tag %#x, want %#x", b[0], tag)
	}
	seq := uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16 | uint32(b[4])<<24
	for i := 5; i < len(b); i++ {
		if b[i] != byte(uint32(i)*31+seq) {
			return seq, fmt.Errorf("message %d corrupt at byte %d", seq, i)
		}
	}
	return seq, nil
}
