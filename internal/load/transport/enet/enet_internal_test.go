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

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestLoopback256 is the acceptance exchange: 256 client hosts, distinct
// connect data, 3 s at 60 Hz, every message accounted for.
func TestLoopback256(t *testing.T) {
	res := transporttest.Many(t, Name, transporttest.ManyConfig{Clients: 256, Shards: 4, Duration: 3 * time.Second})
	if res.UpUnreliable.Received != res.UpUnreliable.Sent || res.DownUnreliable.Received != res.DownUnreliable.Sent {
		t.Fatalf("unreliable traffic lost: %+v", res)
	}
}

// enetHost is the ENet host behind e, for the internals these tests read.
// Every endpoint here is made on this backend.
func enetHost(e *transporttest.Endpoint) *Host { return e.Host.(*Host) }

// connect is a connected server and client of this backend.
func connect(t *testing.T, sopt, copt transport.Options) *transporttest.Pair {
	t.Helper()
	return transporttest.ConnectPair(t, Name, proto.ConnectData, sopt, copt)
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

// TestThrottleNeverDrops checks the throttle settings ENet would otherwise
// use to shed unreliable packets: deceleration 0 and a full throttle on
// both ends, after traffic.
func TestThrottleNeverDrops(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	got := 0
	for i := range 60 {
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := p.Server.Host.Send(p.SPeer, transport.Unreliable, make([]byte, 200)); err != nil {
			t.Fatal(err)
		}
	}
	transporttest.WaitUntil(t, "traffic", func() bool {
		got += len(p.Server.TakeAll(transporttest.Any)) + len(p.Client.TakeAll(transporttest.Any))
		return got >= 120
	}, p.Both()...)
	for _, s := range []struct {
		name string
		h    *Host
		peer transport.PeerID
	}{{"server", enetHost(p.Server), p.SPeer}, {"client", enetHost(p.Client), p.CPeer}} {
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
			client := enetHost(p.Client)
			// Let connect-time acknowledgements settle first.
			transporttest.WaitUntil(t, "no reliable data in transit", func() bool { return client.reliableInTransit(p.CPeer) == 0 }, p.Both()...)
			if err := client.Send(p.CPeer, tc.d, make([]byte, 3000)); err != nil {
				t.Fatal(err)
			}
			if err := client.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := client.reliableInTransit(p.CPeer); (got > 0) != tc.wantTransit {
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
			p.Client.Host.WireRates()
			msg := bytes.Repeat([]byte("snapshot "), size/9+1)[:size]
			for range n {
				if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, msg); err != nil {
					t.Fatal(err)
				}
				if err := p.Client.Host.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			got := 0
			transporttest.WaitUntil(t, "messages", func() bool {
				for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)) {
					if !bytes.Equal(ev.Payload, msg) {
						t.Fatalf("payload corrupted: %q", ev.Payload)
					}
					got++
				}
				return got >= n
			}, p.Both()...)
			r := p.Client.Host.WireRates()
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
	client := enetHost(p.Client)
	const start = ^uint32(0) - 999 // 1000 units below the wrap
	client.setCounters(transport.WireCounters{BytesOut: start, BytesIn: start, DatagramsOut: start, DatagramsIn: start})
	client.WireRates() // sample the near-wrap reading
	const n, size = 1100, 100
	got := 0
	count := func() bool {
		for _, e := range p.Both() {
			got += len(e.TakeAll(transporttest.IsKind(transport.EventReceive)))
		}
		return got >= 2*n
	}
	for range n {
		// Flush after each message: one datagram per message, so every
		// counter crosses the wrap.
		for _, s := range []struct {
			e    *transporttest.Endpoint
			peer transport.PeerID
		}{{p.Client, p.CPeer}, {p.Server, p.SPeer}} {
			if err := s.e.Host.Send(s.peer, transport.Unreliable, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
			if err := s.e.Host.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		p.Server.Service()
		p.Client.Service()
		count()
	}
	transporttest.WaitUntil(t, "messages", count, p.Server, p.Client)
	// The sampling interval spans the whole exchange above, so it is
	// non-zero; were it zero the rates would be zero and the checks fail.
	raw := client.counters()
	r := client.WireRates()
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
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, msg); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	next := 0
	transporttest.WaitUntil(t, "every message", func() bool {
		for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)) {
			if next == len(sizes) {
				t.Fatalf("message %d (%d bytes) after the last one sent", next, len(ev.Payload))
			}
			if len(ev.Payload) != sizes[next] || ev.Payload[0] != byte(next) || ev.Payload[len(ev.Payload)-1] != byte(next) {
				t.Fatalf("message %d: got %d bytes starting %d, want %d bytes of %d", next, len(ev.Payload), ev.Payload[0], sizes[next], byte(next))
			}
			next++
		}
		return next == len(sizes)
	}, p.Client, p.Server)
}

// TestDisconnectWhileConnecting: ENet drops a half-open peer without an
// event; the host must still deliver the EventDisconnect it promises, long
// before ENet's 30 s connect timeout would.
func TestDisconnectWhileConnecting(t *testing.T) {
	dead := listenHost(t, transport.Options{})
	addr := dead.Addr()
	dead.Close()
	ch, err := transport.Dial(Name, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := transporttest.NewEndpoint(t, "client", ch)
	peer, err := c.Host.Connect(addr, 1)
	if err != nil {
		t.Fatal(err)
	}
	c.Host.Disconnect(peer, 9)
	start := time.Now()
	var got []transport.Event
	transporttest.WaitUntil(t, "an event for the half-open peer", func() bool {
		got = append(got, c.TakeAll(transporttest.Any)...)
		return len(got) > 0
	}, c)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("disconnect event after %v, want it within 10 s (ENet's own connect timeout is 30 s)", took)
	}
	if len(got) != 1 || got[0].Kind != transport.EventDisconnect || got[0].Peer != peer {
		t.Fatalf("events %+v, want one disconnect of peer %d", got, peer)
	}
	if _, err := c.Host.Connect(addr, 1); err != nil {
		t.Errorf("the freed peer slot was not reusable: %v", err)
	}
}

// TestServiceReentry: Service from inside its own callback is refused,
// and Close from inside it stops delivery cleanly.
func TestServiceReentry(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	for range 5 {
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	var nestedErr error
	calls := 0
	server := enetHost(p.Server)
	// The server is serviced here, with a callback that re-enters it; the
	// harness services only the client.
	onServer := func(ev transport.Event) {
		if ev.Kind != transport.EventReceive {
			return
		}
		calls++
		_, nestedErr = server.Service(func(transport.Event) {})
		if err := server.Close(); err != nil {
			t.Errorf("Close in callback: %v", err)
		}
	}
	transporttest.WaitUntil(t, "a message", func() bool {
		if _, err := server.Service(onServer); err != nil {
			t.Fatalf("Service: %v", err)
		}
		return calls > 0
	}, p.Client)
	if nestedErr == nil {
		t.Error("nested Service succeeded, want an error")
	}
	if calls != 1 {
		t.Errorf("%d events delivered after Close in the callback, want 0 more", calls-1)
	}
	if _, err := server.Service(func(transport.Event) {}); !errors.Is(err, transport.ErrClosed) {
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

// TestLinkStats: once reliable traffic has been acknowledged, the peer's
// link stats carry ENet's RTT and a known loss (nothing retransmitted on
// loopback); an unknown peer has none.
func TestLinkStats(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	for i := range 20 {
		if err := p.Server.Host.Send(p.SPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	transporttest.WaitUntil(t, "reliable traffic acknowledged", func() bool {
		got += len(p.Client.TakeAll(transporttest.IsKind(transport.EventReceive)))
		return got >= 20 && enetHost(p.Server).reliableInTransit(p.SPeer) == 0
	}, p.Both()...)
	ls := enetHost(p.Server).LinkStats(p.SPeer)
	if ls.RTT <= 0 || !ls.LossKnown || ls.Loss != 0 {
		t.Errorf("link stats %+v, want RTT > 0 and a known loss of 0", ls)
	}
	if ls := enetHost(p.Server).LinkStats(transport.PeerID(4000)); ls != (transport.LinkStats{}) {
		t.Errorf("unknown peer link stats %+v, want zero", ls)
	}
}

// TestPeersPingOutOfStep: a server's peers get ping intervals 450–569 ms
// by slot, a 60 Hz tick apart, so their pings do not fall on one tick
// (with ENet's 500 ms for all they did, every 31st tick).
func TestPeersPingOutOfStep(t *testing.T) {
	first := connect(t, transport.Options{}, transport.Options{})
	pairs := []*transporttest.Pair{first}
	for range 9 {
		pairs = append(pairs, transporttest.ConnectTo(t, Name, first.Server, first.Server.Host.Addr(), proto.ConnectData, transport.Options{}))
	}
	server := enetHost(first.Server)
	seen := map[time.Duration]bool{}
	for _, p := range pairs {
		got := server.pingInterval(p.SPeer)
		want := time.Duration(450+int(p.SPeer)%8*17) * time.Millisecond
		if got != want {
			t.Errorf("server peer %d pings every %v, want %v", p.SPeer, got, want)
		}
		if c := enetHost(p.Client).pingInterval(p.CPeer); c < 450*time.Millisecond || c > 569*time.Millisecond {
			t.Errorf("client peer %d pings every %v, want 450–569 ms", p.CPeer, c)
		}
		seen[got] = true
	}
	if len(seen) != 8 {
		t.Fatalf("10 peers got %d ping intervals, want all 8", len(seen))
	}
}
