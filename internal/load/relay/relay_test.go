package relay

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// sink is a fake server: it records when each numbered datagram arrived
// and from which address, and echoes nothing.
type sink struct {
	conn *net.UDPConn
	base time.Time
	mu   sync.Mutex
	lat  []float64 // arrival − send time, ms
	from map[string]int
	n    int
	wg   sync.WaitGroup
}

func newSink(t *testing.T) *sink {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadBuffer(socketBuffer)
	s := &sink{conn: c, base: time.Now(), from: map[string]int{}}
	s.wg.Go(s.run)
	t.Cleanup(func() { c.Close(); s.wg.Wait() })
	return s
}

func (s *sink) run() {
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := s.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		now := time.Since(s.base)
		s.mu.Lock()
		if n >= 8 {
			sent := time.Duration(binary.LittleEndian.Uint64(buf))
			s.lat = append(s.lat, float64(now-sent)/float64(time.Millisecond))
		}
		s.from[from.String()]++
		s.n++
		s.mu.Unlock()
	}
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// atLeast holds once got() reaches want; what names the count.
func atLeast(what string, want int64, got func() int64) livetest.Cond {
	return func() (bool, string) {
		g := got()
		return g >= want, fmt.Sprintf("%s: %d of %d", what, g, want)
	}
}

// pump sends n timestamped datagrams from one client socket through link 0
// of r, 10 every millisecond (10,000/s): paced, so what the sink measures
// is the relay, not a burst queueing in a socket buffer.
func pump(t *testing.T, r *Relay, s *sink, n int) {
	t.Helper()
	cl := dialLink(t, r, 0)
	defer cl.Close()
	b := make([]byte, 64)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for i := 0; i < n; {
		<-tick.C
		for k := 0; k < 10 && i < n; k, i = k+1, i+1 {
			binary.LittleEndian.PutUint64(b, uint64(time.Since(s.base)))
			if _, err := cl.Write(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	livetest.Eventually(t, livetest.Wait, atLeast("datagrams the relay read", int64(n), func() int64 { return r.Stats().DatagramsUp }))
}

// dialLink opens a client socket to link i and tells the relay it is that
// link's client (as the swarm does after creating each client's host).
func dialLink(t *testing.T, r *Relay, i int) *net.UDPConn {
	t.Helper()
	cl, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(mustAddr(t, r.Addr(i))))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Expect(i, cl.LocalAddr().String()); err != nil {
		t.Fatal(err)
	}
	return cl
}

func mustAddr(t *testing.T, s string) (a netip.AddrPort) {
	t.Helper()
	u, err := net.ResolveUDPAddr("udp4", s)
	if err != nil {
		t.Fatal(err)
	}
	return u.AddrPort()
}

func newRelay(t *testing.T, s *sink, links int, sched impairment.Schedule) *Relay {
	t.Helper()
	sched, err := sched.Normalize()
	if err != nil && len(sched) > 0 {
		t.Fatal(err)
	}
	r, err := New(Config{Server: s.conn.LocalAddr().String(), Links: links, Schedule: sched, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Acceptance: through real sockets, 25 % configured loss drops 25 ± 2 % of
// 20,000 datagrams, every datagram not dropped arrives, and the relay
// dropped nothing of its own.
func TestRelayLossOverSockets(t *testing.T) {
	s := newSink(t)
	r := newRelay(t, s, 1, impairment.Schedule{{StartS: 0, DurationS: 3600, Settings: impairment.Settings{Loss: 0.25}}})
	const n = 20000
	pump(t, r, s, n)
	st := r.Stats()
	livetest.Eventually(t, livetest.Wait, atLeast("survivors at the server", n-st.DroppedUp, func() int64 { return int64(s.count()) }))
	if f := float64(st.DroppedUp) / n; math.Abs(f-0.25) > 0.02 {
		t.Fatalf("dropped %.4f of %d, want 0.25 ± 0.02", f, n)
	}
	if got := s.count(); int64(got) != n-st.DroppedUp || st.Overflow != 0 {
		t.Fatalf("server got %d, want %d − %d dropped = %d; overflow %d", got, n, st.DroppedUp, n-st.DroppedUp, st.Overflow)
	}
	if st.DroppedDown != 0 || st.DatagramsUp != n || !st.Impaired() {
		t.Fatalf("stats %+v", st)
	}
}

// Acceptance: a configured 50 ms one-way delay adds 50 ± 3 ms at p50 over
// 20,000 datagrams, against the same path run clean.
func TestRelayDelayOverSockets(t *testing.T) {
	p50 := func(sched impairment.Schedule) float64 {
		s := newSink(t)
		r := newRelay(t, s, 1, sched)
		const n = 20000
		pump(t, r, s, n)
		livetest.Eventually(t, livetest.Wait, atLeast("datagrams at the server", n, func() int64 { return int64(s.count()) }))
		s.mu.Lock()
		defer s.mu.Unlock()
		if st := r.Stats(); st.Overflow != 0 {
			t.Fatalf("relay fell behind: %+v", st)
		}
		sm := stats.Summarize(s.lat)
		t.Logf("latency p50 %.3f p95 %.3f max %.3f ms; %+v", sm.P50, sm.P95, sm.Max, r.Stats())
		return sm.P50
	}
	clean := p50(nil)
	delayed := p50(impairment.Schedule{{StartS: 0, DurationS: 3600, Settings: impairment.Settings{DelayMs: 50}}})
	if added := delayed - clean; math.Abs(added-50) > 3 {
		t.Fatalf("p50 clean %.2f ms, delayed %.2f ms: added %.2f, want 50 ± 3", clean, delayed, added)
	}
	t.Logf("p50 clean %.3f ms, with 50 ms delay %.3f ms", clean, delayed)
}

// Each link is its own socket: the server sees one address per client, and
// answers reach the right client. Outside the schedule nothing is touched.
func TestRelayLinksAndDirections(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	// An echo server.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer srv.Close()
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			// Reply with the address the server saw.
			_, _ = srv.WriteToUDP(append(buf[:n:n], []byte(from.String())...), from)
		}
	})
	sched, _ := impairment.Schedule{{StartS: 3600, DurationS: 1, Settings: impairment.Settings{Loss: 1}}}.Normalize()
	r, err := New(Config{Server: srv.LocalAddr().String(), Links: 3, Schedule: sched, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen := map[string]bool{}
	for i := 0; i < r.Links(); i++ {
		cl := dialLink(t, r, i)
		_ = cl.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := cl.Write([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2048)
		n, err := cl.Read(buf)
		cl.Close()
		if err != nil {
			t.Fatalf("link %d: no echo: %v", i, err)
		}
		if buf[0] != byte(i) {
			t.Fatalf("link %d got link %d's echo", i, buf[0])
		}
		as := string(buf[1:n])
		if as != r.Addr(i) || seen[as] {
			t.Fatalf("link %d: server saw %s (relay socket %s, seen %v)", i, as, r.Addr(i), seen)
		}
		seen[as] = true
	}
	st := r.Stats()
	if st.DatagramsUp != 3 || st.DatagramsDown != 3 || st.Impaired() || st.Overflow != 0 {
		t.Fatalf("clean run stats %+v", st)
	}
}

// Close stops every goroutine, also with datagrams still held.
func TestRelayCloseWithHeld(t *testing.T) {
	s := newSink(t)
	r := newRelay(t, s, 2, impairment.Schedule{{StartS: 0, DurationS: 3600, Settings: impairment.Settings{DelayMs: 10000}}})
	pump(t, r, s, 100)
	if err := livetest.Within(t, livetest.Wait, "Close", func() error { return r.Close() }); err != nil {
		t.Fatalf("Close with datagrams held: %v", err)
	}
	if st := r.Stats(); st.Delayed != 100 || s.count() != 0 {
		t.Fatalf("held %d, delivered %d", st.Delayed, s.count())
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []Config{
		{Server: "10.0.0.1:4000", Links: 1},
		{Server: "127.0.0.1:4000", Links: 0},
		{Server: "nonsense", Links: 1},
		{Server: "127.0.0.1:4000", Links: 1, Schedule: impairment.Schedule{{Name: "x", StartS: 0, DurationS: 1, Direction: impairment.DirBoth}}},
	} {
		if r, err := New(c); err == nil {
			r.Close()
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

// BenchmarkRelayForward is the relay's CPU per datagram through real
// loopback sockets. cpu-ns/datagram is getrusage over the whole process, so
// it includes the sending client and the receiving sink; the "direct"
// case sends to the sink without the relay, and the relay's own cost is the
// difference between it and the others.
func BenchmarkRelayForward(b *testing.B) {
	for _, c := range []struct {
		name   string
		direct bool
		sched  impairment.Schedule
	}{
		{"direct", true, nil},
		{"clean", false, nil},
		{"delay50_jitter10", false, impairment.Schedule{{StartS: 0, DurationS: 3600, Settings: impairment.Settings{DelayMs: 50, JitterMs: 10}}}},
	} {
		b.Run(c.name, func(b *testing.B) { benchForward(b, c.direct, c.sched) })
	}
}

func benchForward(b *testing.B, direct bool, sched impairment.Schedule) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	_ = srv.SetReadBuffer(socketBuffer)
	var wg sync.WaitGroup
	var got atomic.Int64
	window := make(chan struct{}, 1024)
	wg.Go(func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := srv.ReadFromUDP(buf); err != nil {
				return
			}
			if got.Add(1)%256 == 0 {
				window <- struct{}{}
			}
		}
	})
	defer func() { srv.Close(); wg.Wait() }()
	target := srv.LocalAddr().String()
	var rl *Relay
	if !direct {
		sched, _ = sched.Normalize()
		r, err := New(Config{Server: target, Links: 1, Schedule: sched, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		target, rl = r.Addr(0), r
	}
	ap, _ := net.ResolveUDPAddr("udp4", target)
	cl, err := net.DialUDP("udp4", nil, ap)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	if rl != nil {
		if err := rl.Expect(0, cl.LocalAddr().String()); err != nil {
			b.Fatal(err)
		}
	}
	payload := make([]byte, 200)
	// At most 1024 datagrams in flight (the delayed case holds 50 ms of
	// them), so no socket buffer overflows; the sink signals every 256.
	cpu0 := cpuNs()
	i := int64(0)
	for b.Loop() {
		_, _ = cl.Write(payload)
		i++
		if i%256 == 0 && i > 768 {
			<-window
		}
	}
	for got.Load() < i-256 {
		<-window
	}
	b.ReportMetric(float64(cpuNs()-cpu0)/float64(i), "cpu-ns/datagram")
}

// TestStraysNeverTakeOverALink: stray datagrams sent to every relay port
// before the clients connect (anything else on the machine can send to a
// loopback port) are dropped and counted, never relayed to the server,
// and every client that then connects gets its link: its datagrams reach
// the server and the server's answers come back to it. Before, a link
// learnt its client from the first datagram: the strays took the links
// over and 5 of 8 clients never connected, which the gate blamed on the
// server.
func TestStraysNeverTakeOverALink(t *testing.T) {
	srv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var fromStray atomic.Int64
	stray, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { // the server echoes every datagram; strays must never arrive
		buf := make([]byte, 2048)
		for {
			n, from, err := srv.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if string(buf[:n]) == "stray" {
				fromStray.Add(1)
			}
			srv.WriteToUDP(buf[:n], from)
		}
	})
	defer srv.Close()
	sched, _ := impairment.Schedule{{StartS: 3600, DurationS: 1, Settings: impairment.Settings{Loss: 1}}}.Normalize()
	const links = 8
	r, err := New(Config{Server: srv.LocalAddr().String(), Links: links, Schedule: sched, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const perLink = 4
	for i := range links {
		for range perLink {
			if _, err := stray.WriteToUDP([]byte("stray"), net.UDPAddrFromAddrPort(mustAddr(t, r.Addr(i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The strays are read (counted) before any client exists.
	livetest.Eventually(t, 20*time.Second, func() (bool, string) {
		n := r.Stats().Stray
		return n >= links*perLink, fmt.Sprintf("stray %d, want %d", n, links*perLink)
	})
	for i := range links {
		cl := dialLink(t, r, i)
		defer cl.Close()
		_ = cl.SetDeadline(time.Now().Add(10 * time.Second))
		msg := []byte{'c', byte(i)}
		if _, err := cl.Write(msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := cl.Read(buf)
		if err != nil || string(buf[:n]) != string(msg) {
			t.Fatalf("client %d: echo %q, %v: the link did not relay for its own client", i, buf[:n], err)
		}
		// The stray socket, still sending, stays stray.
		stray.WriteToUDP([]byte("stray"), net.UDPAddrFromAddrPort(mustAddr(t, r.Addr(i))))
	}
	if n := fromStray.Load(); n != 0 {
		t.Fatalf("%d stray datagram(s) reached the server", n)
	}
	st := r.Stats()
	if st.DatagramsUp != links || st.DatagramsDown != links || st.Stray < links*perLink {
		t.Fatalf("stats %+v: want %d up, %d down, at least %d stray", st, links, links, links*perLink)
	}
}

func TestExpectRefuses(t *testing.T) {
	sched, _ := impairment.Schedule{{StartS: 3600, DurationS: 1, Settings: impairment.Settings{Loss: 1}}}.Normalize()
	r, err := New(Config{Server: "127.0.0.1:9", Links: 1, Schedule: sched, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct {
		i    int
		addr string
	}{{1, "127.0.0.1:5"}, {0, "127.0.0.1:0"}, {0, "10.0.0.1:5"}, {0, "nonsense"}} {
		if err := r.Expect(tc.i, tc.addr); err == nil {
			t.Errorf("Expect(%d, %q) accepted", tc.i, tc.addr)
		}
	}
	for _, ok := range []string{"0.0.0.0:5", "[::]:5", "127.0.0.1:5"} {
		if err := r.Expect(0, ok); err != nil {
			t.Errorf("Expect(0, %q): %v", ok, err)
		}
	}
}
