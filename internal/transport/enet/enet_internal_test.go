//go:build cgo

package enet

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
	"github.com/scalegate/scalegate/internal/transport/transporttest"
)

// TestLoopback256 is the acceptance exchange: 256 client hosts, distinct
// connect data, 3 s at 60 Hz, every message accounted for.
func TestLoopback256(t *testing.T) {
	res := transporttest.Many(t, Name, transporttest.ManyConfig{Clients: 256, Shards: 4, Duration: 3 * time.Second})
	if res.UpUnreliable.Received != res.UpUnreliable.Sent || res.DownUnreliable.Received != res.DownUnreliable.Sent {
		t.Fatalf("unreliable traffic lost: %+v", res)
	}
}

// waitTimeout bounds every wait here, generous for a loaded machine.
const waitTimeout = 30 * time.Second

// enetPair is a connected server and client of this backend.
type enetPair struct {
	server, client *Host
	sPeer, cPeer   transport.PeerID
}

func listenHost(t *testing.T, opt transport.Options) *Host {
	t.Helper()
	h, err := backend{}.Listen("127.0.0.1:0", opt)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h.(*Host)
}

func dialHost(t *testing.T, opt transport.Options) *Host {
	t.Helper()
	h, err := backend{}.Dial(opt)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h.(*Host)
}

// pump services both hosts, handing events to on, until done or the deadline.
func pump(t *testing.T, what string, hosts []*Host, on func(*Host, transport.Event), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		for _, h := range hosts {
			if _, err := h.Service(func(ev transport.Event) { on(h, ev) }); err != nil {
				t.Fatalf("Service: %v", err)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

func connect(t *testing.T, sopt, copt transport.Options) *enetPair {
	t.Helper()
	p := &enetPair{server: listenHost(t, sopt), client: dialHost(t, copt)}
	var err error
	if p.cPeer, err = p.client.Connect(p.server.Addr(), proto.ConnectData); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	sUp, cUp := false, false
	pump(t, "connect", []*Host{p.server, p.client}, func(h *Host, ev transport.Event) {
		if ev.Kind != transport.EventConnect {
			return
		}
		if h == p.server {
			p.sPeer, sUp = ev.Peer, true
		} else {
			cUp = true
		}
	}, func() bool { return sUp && cUp })
	return p
}

// TestThrottleNeverDrops checks the throttle settings ENet would otherwise
// use to shed unreliable packets: deceleration 0 and a full throttle on
// both ends, after traffic.
func TestThrottleNeverDrops(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	got := 0
	for i := range 60 {
		if err := p.client.Send(p.cPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := p.server.Send(p.sPeer, transport.Unreliable, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
	}
	pump(t, "traffic", []*Host{p.server, p.client}, func(*Host, transport.Event) { got++ }, func() bool { return got >= 120 })
	for _, s := range []struct {
		name string
		h    *Host
		peer transport.PeerID
	}{{"server", p.server, p.sPeer}, {"client", p.client, p.cPeer}} {
		throttle, decel, ok := s.h.peerThrottle(s.peer)
		if !ok || decel != 0 || throttle != throttleScale {
			t.Errorf("%s: throttle %d/%d deceleration %d (ok %v), want %d/%d and 0", s.name, throttle, throttleScale, decel, ok, throttleScale, throttleScale)
		}
	}
}

// TestLargeUnreliableStaysUnreliable: an unreliable message above the
// fragment size (1372 B at MTU 1400) must not travel as reliable fragments,
// which ENet does unless UNRELIABLE_FRAGMENT is set. Before the server
// services (so nothing is acknowledged), only a reliable send may leave
// reliable data in transit.
func TestLargeUnreliableStaysUnreliable(t *testing.T) {
	tests := []struct {
		name        string
		d           transport.Delivery
		wantTransit bool
	}{
		{"unreliable 3000 B", transport.Unreliable, false},
		{"reliable 3000 B (control)", transport.Reliable, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := connect(t, transport.Options{}, transport.Options{})
			// Let connect-time acknowledgements settle first.
			pump(t, "no reliable data in transit", []*Host{p.server, p.client}, func(*Host, transport.Event) {},
				func() bool { return p.client.reliableInTransit(p.cPeer) == 0 })
			if err := p.client.Send(p.cPeer, tc.d, make([]byte, 3000)); err != nil {
				t.Fatal(err)
			}
			if err := p.client.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := p.client.reliableInTransit(p.cPeer); (got > 0) != tc.wantTransit {
				t.Errorf("reliable data in transit after one %s: %d B", tc.d, got)
			}
		})
	}
}

// TestRangeCoder checks the option is applied on both ends: compressible
// traffic arrives intact and costs far fewer wire bytes than without it.
func TestRangeCoder(t *testing.T) {
	const n, size = 100, 200
	out := map[bool]float64{}
	for _, rc := range []bool{false, true} {
		t.Run("range="+strconv.FormatBool(rc), func(t *testing.T) {
			opt := transport.Options{RangeCoder: rc}
			p := connect(t, opt, opt)
			p.client.WireRates()
			msg := bytes.Repeat([]byte("snapshot "), size/9+1)[:size]
			got := 0
			on := func(h *Host, ev transport.Event) {
				if ev.Kind == transport.EventReceive && h == p.server {
					if !bytes.Equal(ev.Payload, msg) {
						t.Fatalf("payload corrupted: %q", ev.Payload)
					}
					got++
				}
			}
			for range n {
				if err := p.client.Send(p.cPeer, transport.Unreliable, msg); err != nil {
					t.Fatal(err)
				}
				if err := p.client.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			pump(t, "messages", []*Host{p.server, p.client}, on, func() bool { return got >= n })
			r := p.client.WireRates()
			out[rc] = r.BytesOutPerSec * r.Interval.Seconds()
		})
	}
	t.Logf("client bytes out for %d×%d B: plain %.0f, range coder %.0f", n, size, out[false], out[true])
	if out[false] < n*size || out[true] <= 0 || out[true] > out[false]/2 {
		t.Errorf("range coder did not compress: plain %.0f B, range coder %.0f B", out[false], out[true])
	}
}

// rmemMax is the kernel's cap on SO_RCVBUF requests.
func rmemMax(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Fatalf("reading the kernel's receive buffer cap: %v", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("/proc/sys/net/core/rmem_max: %v", err)
	}
	return v
}

// TestRecvBuffer checks SO_RCVBUF as the kernel reports it: it doubles the
// request, which rmem_max caps unless the process may force it.
func TestRecvBuffer(t *testing.T) {
	cap := rmemMax(t)
	tests := []struct {
		name   string
		listen bool
		opt    transport.Options
		req    int
	}{
		{"server default", true, transport.Options{}, DefaultServerRecvBuffer},
		{"server explicit small", true, transport.Options{RecvBufferBytes: 64 << 10}, 64 << 10},
		{"client explicit", false, transport.Options{RecvBufferBytes: 1 << 20}, 1 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h *Host
			if tc.listen {
				h = listenHost(t, tc.opt)
			} else {
				h = dialHost(t, tc.opt)
			}
			got := h.recvBuffer()
			if got < 2*min(tc.req, cap) || got > 2*tc.req {
				t.Errorf("SO_RCVBUF = %d, want between %d (capped by rmem_max %d) and %d (forced)", got, 2*min(tc.req, cap), cap, 2*tc.req)
			}
			t.Logf("requested %d, kernel reports %d (rmem_max %d)", tc.req, got, cap)
		})
	}
}

// TestWireCountersWrap drives ENet's own 32-bit host counters across 2^32
// and checks the rates the host reports over the wrap.
func TestWireCountersWrap(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	const start = ^uint32(0) - 999 // 1000 units below the wrap
	p.client.setCounters(transport.WireCounters{BytesOut: start, BytesIn: start, DatagramsOut: start, DatagramsIn: start})
	p.client.WireRates() // sample the near-wrap reading
	const n, size = 1100, 100
	got := 0
	count := func(h *Host, ev transport.Event) {
		if ev.Kind == transport.EventReceive {
			got++
		}
	}
	for range n {
		// Flush after each message: one datagram per message, so every
		// counter crosses the wrap.
		for _, s := range []struct {
			h    *Host
			peer transport.PeerID
		}{{p.client, p.cPeer}, {p.server, p.sPeer}} {
			if err := s.h.Send(s.peer, transport.Unreliable, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			if err := s.h.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		for _, h := range []*Host{p.server, p.client} {
			if _, err := h.Service(func(ev transport.Event) { count(h, ev) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	pump(t, "messages", []*Host{p.server, p.client}, count, func() bool { return got >= 2*n })
	time.Sleep(5 * time.Millisecond)
	raw := p.client.counters()
	r := p.client.WireRates()
	sec := r.Interval.Seconds()
	for _, c := range []struct {
		name string
		raw  uint32
		rate float64
		min  float64
	}{
		{"bytes out", raw.BytesOut, r.BytesOutPerSec, n * size},
		{"bytes in", raw.BytesIn, r.BytesInPerSec, n * size},
		{"datagrams out", raw.DatagramsOut, r.DatagramsOutPerSec, n},
		{"datagrams in", raw.DatagramsIn, r.DatagramsInPerSec, n},
	} {
		delta := float64(c.raw - start) // modular, as the sampler must be
		if c.raw >= start {
			t.Errorf("%s counter %d did not wrap past 2^32 (test traffic too small)", c.name, c.raw)
		}
		if total := c.rate * sec; total < c.min || total > delta*1.0000001+1 || total < delta*0.9999999-1 {
			t.Errorf("%s: rate×interval %.1f, want the modular delta %.0f (≥ %.0f)", c.name, total, delta, c.min)
		}
	}
}

// TestDrainBatches pushes more events and bytes than one cgo crossing
// returns (256 events, 64 KiB) plus one message larger than the buffer, and
// checks they all arrive in order.
func TestDrainBatches(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	sizes := make([]int, 0, 700)
	for i := range 600 {
		sizes = append(sizes, 1000+i)
	}
	sizes = append(sizes, 300_000, 7)
	for i, n := range sizes {
		msg := bytes.Repeat([]byte{byte(i)}, n)
		if err := p.client.Send(p.cPeer, transport.Reliable, msg); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	next := 0
	pump(t, "every message", []*Host{p.client, p.server}, func(h *Host, ev transport.Event) {
		if h != p.server || ev.Kind != transport.EventReceive {
			return
		}
		if len(ev.Payload) != sizes[next] || ev.Payload[0] != byte(next) || ev.Payload[len(ev.Payload)-1] != byte(next) {
			t.Fatalf("message %d: got %d bytes starting %d, want %d bytes of %d", next, len(ev.Payload), ev.Payload[0], sizes[next], byte(next))
		}
		next++
	}, func() bool { return next == len(sizes) })
}

// TestDisconnectWhileConnecting: ENet drops a half-open peer without an
// event; the host must still deliver the EventDisconnect it promises, long
// before ENet's 30 s connect timeout would.
func TestDisconnectWhileConnecting(t *testing.T) {
	dead := listenHost(t, transport.Options{})
	addr := dead.Addr()
	dead.Close()
	c := dialHost(t, transport.Options{})
	peer, err := c.Connect(addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Disconnect(peer, 9)
	var got []transport.Event
	deadline := time.Now().Add(10 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		if _, err := c.Service(func(ev transport.Event) { got = append(got, ev) }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	if len(got) != 1 || got[0].Kind != transport.EventDisconnect || got[0].Peer != peer {
		t.Fatalf("events %+v, want one disconnect of peer %d", got, peer)
	}
	if _, err := c.Connect(addr, 1); err != nil {
		t.Errorf("the freed peer slot was not reusable: %v", err)
	}
}

// TestServiceReentry: Service from inside its own callback is refused,
// and Close from inside it stops delivery cleanly.
func TestServiceReentry(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	for range 5 {
		if err := p.client.Send(p.cPeer, transport.Reliable, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var nestedErr error
	calls := 0
	pump(t, "a message", []*Host{p.client, p.server}, func(h *Host, ev transport.Event) {
		if h != p.server || ev.Kind != transport.EventReceive {
			return
		}
		calls++
		_, nestedErr = h.Service(func(transport.Event) {})
		if err := h.Close(); err != nil {
			t.Errorf("Close in callback: %v", err)
		}
	}, func() bool { return calls > 0 })
	if nestedErr == nil {
		t.Error("nested Service succeeded, want an error")
	}
	if calls != 1 {
		t.Errorf("%d events delivered after Close in the callback, want 0 more", calls-1)
	}
	if _, err := p.server.Service(func(transport.Event) {}); !errors.Is(err, transport.ErrClosed) {
		t.Errorf("Service after Close: %v, want ErrClosed", err)
	}
}

func TestOptionsValidated(t *testing.T) {
	tests := []struct {
		name string
		opt  transport.Options
		want string
	}{
		{"too many peers", transport.Options{MaxPeers: MaxPeers + 1}, "MaxPeers"},
		{"negative buffer", transport.Options{RecvBufferBytes: -1}, "negative"},
		{"negative timeout", transport.Options{Timeout: -time.Second}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := backend{}.Listen("127.0.0.1:0", tc.opt)
			if err == nil {
				h.Close()
				t.Fatalf("Listen succeeded, want an error about %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "enet: listen 127.0.0.1:0: ") {
				t.Errorf("error %q, want the context and %q", err, tc.want)
			}
		})
	}
}
