package transporttest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// Endpoint is one host under test together with the events it has
// delivered and nobody has taken yet. Payloads are copied out of the
// Service callback, as the transport contract requires, so recorded events
// stay valid. An Endpoint is used from the test goroutine only, like the
// Host it wraps.
type Endpoint struct {
	// Name labels the endpoint in failure messages ("server", "client").
	Name string
	// Host is the host under test. Tests call its methods directly; only
	// Service should go through the Endpoint, so events are recorded.
	Host transport.Host

	t      testing.TB
	events []transport.Event
}

// NewEndpoint wraps h for a test and closes it when the test ends.
func NewEndpoint(t testing.TB, name string, h transport.Host) *Endpoint {
	t.Helper()
	t.Cleanup(func() { _ = h.Close() })
	return &Endpoint{Name: name, Host: h, t: t}
}

// Service runs one Service call, records its events and returns how many
// were delivered. A Service error fails the test.
func (e *Endpoint) Service() int {
	e.t.Helper()
	n, err := e.Host.Service(func(ev transport.Event) {
		ev.Payload = slices.Clone(ev.Payload)
		e.events = append(e.events, ev)
	})
	if err != nil {
		e.t.Fatalf("%s: Service: %v", e.Name, err)
	}
	if n < 0 {
		e.t.Fatalf("%s: Service returned %d events", e.Name, n)
	}
	return n
}

// Take removes and returns the first recorded event matching keep.
func (e *Endpoint) Take(keep func(transport.Event) bool) (transport.Event, bool) {
	for i, ev := range e.events {
		if keep(ev) {
			e.events = slices.Delete(e.events, i, i+1)
			return ev, true
		}
	}
	return transport.Event{}, false
}

// TakeAll removes and returns every recorded event matching keep, in the
// order they were delivered.
func (e *Endpoint) TakeAll(keep func(transport.Event) bool) []transport.Event {
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

// Any matches every event; TakeAll(Any) empties an endpoint.
func Any(transport.Event) bool { return true }

// IsKind matches events of kind k.
func IsKind(k transport.EventKind) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == k }
}

// IsReceive matches received messages that travelled with delivery d.
func IsReceive(d transport.Delivery) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == transport.EventReceive && ev.Delivery == d }
}

// Pump returns a livetest pump that services eps, in order, and counts
// the events they delivered: a wait that pumps re-checks at once while
// events flow and pauses only when none did.
func Pump(eps ...*Endpoint) func() int {
	return func() int {
		delivered := 0
		for _, e := range eps {
			delivered += e.Service()
		}
		return delivered
	}
}

// WaitUntil services eps round after round until cond holds, and fails
// the test naming what it awaited when cond does not hold within
// livetest.Wait. With no endpoints it only polls cond, for conditions
// that change on other goroutines.
func WaitUntil(t testing.TB, what string, cond func() bool, eps ...*Endpoint) {
	t.Helper()
	livetest.EventuallyPumping(t, livetest.Wait, Pump(eps...), livetest.Holds(what, cond))
}

// WaitEvent services eps until e has recorded an event matching keep, then
// removes and returns it. e must be among eps to be serviced.
func WaitEvent(t testing.TB, what string, e *Endpoint, keep func(transport.Event) bool, eps ...*Endpoint) transport.Event {
	t.Helper()
	var got transport.Event
	WaitUntil(t, e.Name+": "+what, func() bool {
		ev, ok := e.Take(keep)
		got = ev
		return ok
	}, eps...)
	return got
}

// Pair is a connected server and client on one backend.
type Pair struct {
	Server, Client *Endpoint
	// SPeer is the client as the server names it; CPeer is the server as
	// the client names it.
	SPeer, CPeer transport.PeerID
	// ConnectData is the word the client connected with.
	ConnectData uint32
	// Caps are the backend's capabilities.
	Caps transport.Capabilities
}

// OpeningMessage is what ConnectPair's client sends on a backend without a
// handshake (Capabilities.Handshake false), where the server learns of a
// client only from its first message. ConnectPair consumes it at the
// server, so a pair starts with no message recorded on either end.
func OpeningMessage() []byte { return slices.Clone(openingMessage) }

// openingMessage backs OpeningMessage; never handed out itself, so no caller can change it.
var openingMessage = []byte("transporttest: opening message")

// ConnectPair listens on 127.0.0.1, dials, connects with data and waits for
// both connect events; the server's must carry data (0 on a backend without
// Capabilities.ConnectData), the client's must name the peer Connect
// returned. On a backend without a handshake the client first sends
// OpeningMessage, which must reach the server intact.
func ConnectPair(t testing.TB, backend string, data uint32, sopt, copt transport.Options) *Pair {
	t.Helper()
	sh, err := transport.Listen(backend, "127.0.0.1:0", sopt)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	return ConnectTo(t, backend, NewEndpoint(t, "server", sh), sh.Addr(), data, copt)
}

// ConnectTo dials a client that connects to addr (the server's address, or
// a relay in front of it) and completes the pair as ConnectPair does.
func ConnectTo(t testing.TB, backend string, server *Endpoint, addr string, data uint32, copt transport.Options) *Pair {
	t.Helper()
	return ConnectVia(t, backend, server, addr, data, copt, nil)
}

// ConnectVia is ConnectTo with prepare (nil: none) called on the dialled
// client host before it connects: a relay in between must learn the
// client's socket (relay.Expect) before the client sends anything.
func ConnectVia(t testing.TB, backend string, server *Endpoint, addr string, data uint32, copt transport.Options, prepare func(transport.Host)) *Pair {
	t.Helper()
	caps, err := transport.CapabilitiesOf(backend)
	if err != nil {
		t.Fatalf("backend under test: %v", err)
	}
	ch, err := transport.Dial(backend, copt)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if prepare != nil {
		prepare(ch)
	}
	client := NewEndpoint(t, "client", ch)
	cPeer, err := ch.Connect(addr, data)
	if err != nil {
		t.Fatalf("Connect(%s): %v", addr, err)
	}
	p := &Pair{Server: server, Client: client, CPeer: cPeer, ConnectData: data, Caps: caps}
	cev := WaitEvent(t, "connect", client, IsKind(transport.EventConnect), p.Both()...)
	if cev.Peer != cPeer {
		t.Fatalf("client connect event for peer %d, Connect returned peer %d", cev.Peer, cPeer)
	}
	if !caps.Handshake {
		if err := ch.Send(cPeer, transport.Unreliable, openingMessage); err != nil {
			t.Fatalf("client: send the opening message: %v", err)
		}
	}
	ev := WaitEvent(t, "connect", server, IsKind(transport.EventConnect), p.Both()...)
	p.SPeer = ev.Peer
	want := data
	if !caps.ConnectData {
		want = 0
	}
	if ev.Data != want {
		t.Fatalf("server connect event Data = %#x, want %#x (client's connect data %#x, backend carries it: %v)", ev.Data, want, data, caps.ConnectData)
	}
	if !caps.Handshake {
		op := WaitEvent(t, "opening message", server, IsKind(transport.EventReceive), p.Both()...)
		if op.Peer != p.SPeer || string(op.Payload) != string(openingMessage) {
			t.Fatalf("server: first message from peer %d is %q, want the opening message from peer %d", op.Peer, op.Payload, p.SPeer)
		}
	}
	return p
}

// Both returns the server and the client, for waits that service both.
func (p *Pair) Both() []*Endpoint { return []*Endpoint{p.Server, p.Client} }

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
