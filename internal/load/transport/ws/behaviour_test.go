package ws

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

func listenWS(t *testing.T, opt transport.Options) *transporttest.Endpoint {
	t.Helper()
	h, err := transport.Listen(Name, "127.0.0.1:0", opt)
	if err != nil {
		t.Fatal(err)
	}
	return transporttest.NewEndpoint(t, "server", h)
}

func hostStats(e *transporttest.Endpoint) Stats { return e.Host.(*Host).Stats() }

// rawConn is a hand-driven WebSocket client: it upgrades with a literal
// HTTP request and then writes whatever frames a test wants.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func rawUpgrade(t *testing.T, addr, path string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", path, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %s", resp.Status)
	}
	return &rawConn{Conn: c, br: br}
}

// frame writes one client frame: first byte b0 (FIN, opcode), masked
// unless unmasked, payload under 126 bytes.
func (c *rawConn) frame(t *testing.T, b0 byte, payload []byte, masked bool) {
	t.Helper()
	b := []byte{b0, byte(len(payload))}
	if masked {
		b[1] |= 0x80
		key := [4]byte{1, 2, 3, 4}
		b = append(b, key[:]...)
		for i, x := range payload {
			b = append(b, x^key[i%4])
		}
	} else {
		b = append(b, payload...)
	}
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// closeCode reads server frames until a close frame and returns its status.
func (c *rawConn) closeCode(t *testing.T) int {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(livetest.Wait))
	for {
		var hdr [2]byte
		if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
			t.Fatalf("reading for a close frame: %v", err)
		}
		n := int(hdr[1] & 0x7f)
		switch n {
		case 126:
			var ext [2]byte
			_, _ = io.ReadFull(c.br, ext[:])
			n = int(binary.BigEndian.Uint16(ext[:]))
		case 127:
			t.Fatal("unexpected 64-bit frame length")
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(c.br, payload); err != nil {
			t.Fatal(err)
		}
		if hdr[0]&0x0f == 0x8 {
			if len(payload) < 2 {
				return 1005
			}
			return int(binary.BigEndian.Uint16(payload))
		}
	}
}

// A frame that breaks RFC 6455 closes the connection with 1002, counted,
// and the owner sees the peer connect and disconnect with 1002; a message
// over MaxRecvMessage closes it with 1009, counted, both ends told.
func TestBadFramesClose(t *testing.T) {
	tests := []struct {
		name     string
		b0       byte
		payload  []byte
		masked   bool
		wantCode uint32
	}{
		{"reserved opcode", 0x83, []byte("x"), true, 1002},
		{"unmasked client frame", 0x82, []byte("x"), false, 1002},
		{"fragmented ping", 0x09, []byte("x"), true, 1002},
		{"message over the limit", 0x82, make([]byte, 100), true, 1009},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			server := listenWS(t, transport.Options{MaxRecvMessage: 64})
			c := rawUpgrade(t, server.Host.Addr(), "/")
			connect := transporttest.WaitEvent(t, "connect", server, transporttest.IsKind(transport.EventConnect), server)
			c.frame(t, tc.b0, tc.payload, tc.masked)
			ev := transporttest.WaitEvent(t, "disconnect", server, transporttest.IsKind(transport.EventDisconnect), server)
			if ev.Peer != connect.Peer || ev.Data != tc.wantCode {
				t.Errorf("disconnect peer %d data %d, want peer %d data %d", ev.Peer, ev.Data, connect.Peer, tc.wantCode)
			}
			st := hostStats(server)
			if tc.wantCode == 1009 && st.Oversized != 1 || tc.wantCode == 1002 && (st.ProtocolErrors != 1 || st.LastProtocolError == "") {
				t.Errorf("stats %+v, want the close counted", st)
			}
			if tc.masked { // the library answers what it can parse with a close frame
				if code := c.closeCode(t); code != int(tc.wantCode) {
					t.Errorf("client got close %d, want %d", code, tc.wantCode)
				}
			}
			if n := len(server.TakeAll(transporttest.IsKind(transport.EventReceive))); n != 0 {
				t.Errorf("%d messages delivered from a bad frame", n)
			}
		})
	}
}

// Requests that are not an upgrade on the host's path are answered by HTTP
// and counted; no peer appears.
func TestRejectedRequests(t *testing.T) {
	server := listenWS(t, transport.Options{Path: "/game"})
	base := "http://" + server.Host.Addr()
	for _, tc := range []struct {
		path string
		want int
	}{{"/game", http.StatusUpgradeRequired}, {"/other", http.StatusNotFound}} {
		resp, err := http.Get(base + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s: %s, want %d", tc.path, resp.Status, tc.want)
		}
	}
	http.DefaultClient.CloseIdleConnections()
	// Garbage that is not HTTP at all.
	c, err := net.Dial("tcp", server.Host.Addr())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte("\x16\x03\x01 not http\r\n\r\n"))
	_, _ = io.ReadAll(c)
	c.Close()
	if st := hostStats(server); st.Rejected < 2 {
		t.Errorf("Rejected = %d, want the 2 requests counted (and the garbage line logged)", st.Rejected)
	}
	server.Service()
	if n := len(server.TakeAll(transporttest.Any)); n != 0 {
		t.Errorf("%d events for rejected requests", n)
	}
}

// Path and URL: a client connects by URL to the server's path; one using
// the wrong path fails its dial with the 404 in LastDialError; a URL whose
// scheme is not the host's is refused by Connect.
func TestPathAndURL(t *testing.T) {
	server := listenWS(t, transport.Options{Path: "/game"})
	p := transporttest.ConnectTo(t, Name, server, "ws://"+server.Host.Addr()+"/game?room=1", 0, transport.Options{})
	if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitEvent(t, "message", p.Server, transporttest.IsKind(transport.EventReceive), p.Both()...)

	ch, err := transport.Dial(Name, transport.Options{Path: "/lobby"})
	if err != nil {
		t.Fatal(err)
	}
	client := transporttest.NewEndpoint(t, "client", ch)
	if _, err := ch.Connect(server.Host.Addr(), 0); err != nil {
		t.Fatal(err)
	}
	ev := transporttest.WaitEvent(t, "failed dial", client, transporttest.Any, client, server)
	if ev.Kind != transport.EventDisconnect || ev.Data != transport.ReasonTimeout {
		t.Errorf("got %v data %d, want a disconnect with ReasonTimeout", ev.Kind, ev.Data)
	}
	if st := hostStats(client); st.DialFailures != 1 || !strings.Contains(st.LastDialError, "404") {
		t.Errorf("dial failures %d, last %q: want 1 naming the 404", st.DialFailures, st.LastDialError)
	}
	if _, err := ch.Connect("wss://"+server.Host.Addr()+"/game", 0); err == nil || !strings.Contains(err.Error(), `"wss"`) {
		t.Errorf("Connect(wss://...) on a ws host: %v, want an error naming the wss transport", err)
	}
}

// A wss client verifies the server: without the self-signed certificate
// in its CAFile the dial fails, naming the certificate.
func TestTLSVerifies(t *testing.T) {
	h, err := transport.Listen(NameTLS, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", h)
	ch, err := transport.Dial(NameTLS, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := transporttest.NewEndpoint(t, "client", ch)
	if _, err := ch.Connect(h.Addr(), 0); err != nil {
		t.Fatal(err)
	}
	ev := transporttest.WaitEvent(t, "failed dial", client, transporttest.Any, client, server)
	if ev.Kind != transport.EventDisconnect {
		t.Fatalf("got %v, want the dial to fail on an untrusted certificate", ev.Kind)
	}
	if st := hostStats(client); !strings.Contains(st.LastDialError, "certificate") {
		t.Errorf("LastDialError %q, want it to name the certificate", st.LastDialError)
	}
	if h, err := transport.Dial(NameTLS, transport.Options{CAFile: "/nonexistent/ca.pem"}); err == nil {
		h.Close()
		t.Error("Dial with a missing CAFile succeeded")
	}
	if h, err := transport.Listen(NameTLS, "127.0.0.1:0", transport.Options{CertFile: "x.pem"}); err == nil {
		h.Close()
		t.Error("Listen with CertFile but no KeyFile succeeded")
	}
}

// A server that is not scalegate's closes with its own status codes: the
// client's EventDisconnect carries them, and the close text as its Payload.
func TestForeignCloseCodes(t *testing.T) {
	for _, tc := range []struct {
		code websocket.StatusCode
		text string
		want uint32
	}{{4003, "banned", 4003}, {websocket.StatusGoingAway, "restart", 1001}, {websocket.StatusNormalClosure, "bye", 1000},
		{websocket.StatusNormalClosure, "77", 77}, {4000, "", 4000}} {
		t.Run(fmt.Sprintf("%d %s", tc.code, tc.text), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				_ = c.Close(tc.code, tc.text)
			})}
			done := make(chan struct{})
			go func() { defer close(done); _ = srv.Serve(ln) }()
			t.Cleanup(func() { srv.Close(); <-done })
			ch, err := transport.Dial(Name, transport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			client := transporttest.NewEndpoint(t, "client", ch)
			peer, err := ch.Connect(ln.Addr().String(), 0)
			if err != nil {
				t.Fatal(err)
			}
			ev := transporttest.WaitEvent(t, "disconnect", client, transporttest.IsKind(transport.EventDisconnect), client)
			if ev.Peer != peer || ev.Data != tc.want || string(ev.Payload) != tc.text {
				t.Errorf("disconnect data %d text %q, want %d %q", ev.Data, ev.Payload, tc.want, tc.text)
			}
		})
	}
}

// tokenGate is an HTTP server that upgrades only a request carrying the
// token in its query and the header, and refuses any other with 403.
func tokenGate(t *testing.T, token, auth string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != token || r.Header.Get("Authorization") != auth {
			http.Error(w, "wrong token "+r.URL.RawQuery, http.StatusForbidden)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	})}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// A dial that fails says why (the refused upgrade's HTTP status, the
// network error) in its EventDisconnect and in LastDialError, and neither
// shows the join secrets: the query's values, the userinfo, the headers.
// The headers reach the server with the upgrade.
func TestDialSecretsNeverShown(t *testing.T) {
	const token, auth, pass = "tok-s3cret", "Bearer hdr-s3cret", "pw-s3cret"
	gate := tokenGate(t, token, auth)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // a port nobody listens on
	for _, tc := range []struct {
		name, url, auth string
		want            string // in the Payload; "" for a dial that connects
	}{
		{"admitted", "ws://" + gate + "/play?token=" + token, auth, ""},
		{"wrong header", "ws://" + gate + "/play?token=" + token, "Bearer other", "HTTP 403 Forbidden"},
		{"wrong token", "ws://user:" + pass + "@" + gate + "/play?room=1&token=tok-other#" + pass, auth, "HTTP 403 Forbidden"},
		{"refused", "ws://" + closedAddr + "/play?token=" + token, auth, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := transport.Dial(Name, transport.Options{Header: map[string][]string{"Authorization": {tc.auth}}})
			if err != nil {
				t.Fatal(err)
			}
			client := transporttest.NewEndpoint(t, "client", h)
			if _, err := h.Connect(tc.url, 0); err != nil {
				t.Fatal(err)
			}
			ev := transporttest.WaitEvent(t, "the dial's outcome", client, transporttest.Any, client)
			st := hostStats(client)
			if tc.want == "" {
				if ev.Kind != transport.EventConnect || st.DialFailures != 0 {
					t.Fatalf("got %v (%q), last dial error %q: want the dial with the right token and header to connect", ev.Kind, ev.Payload, st.LastDialError)
				}
				return
			}
			if ev.Kind != transport.EventDisconnect || !strings.Contains(string(ev.Payload), tc.want) {
				t.Errorf("got %v %q, want a disconnect saying %q", ev.Kind, ev.Payload, tc.want)
			}
			if !strings.Contains(st.LastDialError, tc.want) || !strings.Contains(st.LastDialError, "/play") {
				t.Errorf("LastDialError %q, want it to name the path and say %q", st.LastDialError, tc.want)
			}
			for _, secret := range []string{token, "tok-other", "hdr-s3cret", pass} {
				if strings.Contains(string(ev.Payload), secret) || strings.Contains(st.LastDialError, secret) {
					t.Errorf("a secret (%s) shows: payload %q, LastDialError %q", secret, ev.Payload, st.LastDialError)
				}
			}
		})
	}
}

// Connect's own errors, for an address it refuses, do not show the query
// either.
func TestConnectErrorsRedact(t *testing.T) {
	h, err := transport.Dial(Name, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, addr := range []string{"wss://u:tok-s3cret@127.0.0.1:1/play?token=tok-s3cret", "127.0.0.1?token=tok-s3cret", "127.0.0.1:0?token=tok-s3cret"} {
		_, err := h.Connect(addr, 0)
		if err == nil || strings.Contains(err.Error(), "tok-s3cret") {
			t.Errorf("Connect(%s): %v, want an error without the token", addr, err)
		}
	}
}

// The send queue is bounded: beyond maxQueuedSends an Unreliable message
// is dropped and counted, a Reliable one refused; what was queued arrives.
func TestSendQueueBound(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, 0, transport.Options{}, transport.Options{})
	for i := range maxQueuedSends {
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if got := p.Client.Host.QueuedSends(p.CPeer); got != maxQueuedSends {
		t.Errorf("QueuedSends = %d, want %d", got, maxQueuedSends)
	}
	if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte{1}); err == nil {
		t.Error("Reliable Send beyond the queue bound succeeded")
	}
	if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, []byte{1}); err != nil {
		t.Errorf("Unreliable Send beyond the bound: %v, want it dropped quietly", err)
	}
	if st := hostStats(p.Client); st.SendQueueDrops != 1 {
		t.Errorf("SendQueueDrops = %d, want 1", st.SendQueueDrops)
	}
	got := 0
	transporttest.WaitUntil(t, "every queued message", func() bool {
		got += len(p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)))
		return got == maxQueuedSends
	}, p.Both()...)
	if q := p.Client.Host.QueuedSends(p.CPeer); q != 0 {
		t.Errorf("QueuedSends = %d after the writer drained, want 0", q)
	}
}

// A reader whose owner does not service stops at MaxRecvWaiting bytes
// (counted as a stall) and loses nothing: every message arrives in order
// once the owner services.
func TestReceiveBackpressure(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, 0, transport.Options{MaxRecvMessage: 500, MaxRecvWaiting: 1000}, transport.Options{})
	const n = 20
	for i := range n {
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, append([]byte{byte(i)}, make([]byte, 399)...)); err != nil {
			t.Fatal(err)
		}
	}
	transporttest.WaitUntil(t, "the server's reader to stall", func() bool {
		return hostStats(p.Server).RecvStalls > 0
	}, p.Client) // the client only: the server's owner does not service
	var got []byte
	transporttest.WaitUntil(t, "every message after servicing", func() bool {
		for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)) {
			got = append(got, ev.Payload[0])
		}
		return len(got) == n
	}, p.Both()...)
	for i, b := range got {
		if int(b) != i {
			t.Fatalf("message %d arrived as %d: order lost", i, b)
		}
	}
}

// A peer that stops reading (its TCP stays open) does not answer pings:
// after Options.Timeout it is disconnected with ReasonTimeout and counted.
func TestUnansweredPingTimesOut(t *testing.T) {
	server := listenWS(t, transport.Options{Timeout: time.Second})
	t0 := time.Now()                       // before the connection exists, so before its first ping
	rawUpgrade(t, server.Host.Addr(), "/") // never reads, never pongs
	transporttest.WaitEvent(t, "connect", server, transporttest.IsKind(transport.EventConnect), server)
	ev := transporttest.WaitEvent(t, "timeout", server, transporttest.IsKind(transport.EventDisconnect), server)
	if ev.Data != transport.ReasonTimeout || hostStats(server).TimedOut != 1 {
		t.Errorf("disconnect data %d, TimedOut %d: want ReasonTimeout, 1", ev.Data, hostStats(server).TimedOut)
	}
	if waited := time.Since(t0); waited < 900*time.Millisecond {
		t.Errorf("timed out after %v, before the 1 s timeout", waited)
	}
}

// Wire bytes include the framing: a 100-byte binary message from a client
// is 106 bytes on the socket (2 header, 4 mask); over wss each also carries
// a TLS record (≥ 22 bytes more). Only pings and pongs may add to it.
func TestWireBytesIncludeFraming(t *testing.T) {
	cert, key, ca := writeCert(t)
	for _, tc := range []struct {
		backend    string
		sopt, copt transport.Options
		perMsg     float64
	}{
		{Name, transport.Options{}, transport.Options{}, 106},
		{NameTLS, transportOptions(cert, key, ""), transportOptions("", "", ca), 106 + 22},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			p := transporttest.ConnectPair(t, tc.backend, 0, tc.sopt, tc.copt)
			w := &p.Client.Host.(*Host).w
			p.Client.Host.WireRates()
			b0 := w.bytesOut.Load()
			const n = 50
			for i := range n {
				if err := p.Client.Host.Send(p.CPeer, transport.Reliable, make([]byte, 100)); err != nil {
					t.Fatal(err)
				}
				if i%10 == 9 {
					_ = p.Client.Host.Flush()
				}
			}
			got := 0
			transporttest.WaitUntil(t, "every message", func() bool {
				got += len(p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)))
				return got == n
			}, p.Both()...)
			// The server can read a message before the client's writer
			// has counted it: the count is added when Write returns, after
			// the kernel took the bytes. Wait for the count itself.
			livetest.Eventually(t, livetest.Wait, func() (bool, string) {
				b := w.bytesOut.Load() - b0
				return float64(b) >= n*tc.perMsg, fmt.Sprintf("client counted %d bytes out since the first sample", b)
			})
			r := p.Client.Host.WireRates()
			// A rate times its interval is the byte count back, up to the
			// float rounding of the division and product (6400 read as
			// 6399.999…): round to whole bytes.
			out := math.Round(r.BytesOutPerSec * r.Interval.Seconds())
			// At most one ping and one pong a second from the client, each
			// under 64 bytes with TLS.
			slack := 128 * (math.Ceil(r.Interval.Seconds()) + 1)
			if out < n*tc.perMsg || (tc.backend == Name && out > n*tc.perMsg+slack) {
				t.Errorf("%.0f bytes out over %v for %d 100-byte messages, want %.0f (+ ≤ %.0f of pings)", out, r.Interval, n, n*tc.perMsg, slack)
			}
		})
	}
}

// Close stops every goroutine: connections mid-traffic, one peer
// mid-Disconnect, one Connect still waiting for an upgrade that never comes.
func TestCloseStopsEverything(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	server := listenWS(t, transport.Options{})
	eps := []*transporttest.Endpoint{server}
	var cpeers []transport.PeerID
	for range 8 {
		ch, err := transport.Dial(Name, transport.Options{})
		if err != nil {
			t.Fatal(err)
		}
		peer, err := ch.Connect(server.Host.Addr(), 0)
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, transporttest.NewEndpoint(t, "client", ch))
		cpeers = append(cpeers, peer)
	}
	var speers []transport.PeerID
	transporttest.WaitUntil(t, "every connect", func() bool {
		for _, ev := range server.TakeAll(transporttest.IsKind(transport.EventConnect)) {
			speers = append(speers, ev.Peer)
		}
		return len(speers) == len(cpeers)
	}, eps...)
	// A listener that never accepts: the TCP connect completes in the
	// backlog and the upgrade is never answered.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if _, err := eps[1].Host.Connect(silent.Addr().String(), 0); err == nil {
		t.Error("a second Connect on a dialling host with MaxPeers 1 succeeded")
	}
	waiting, err := transport.Dial(Name, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps = append(eps, transporttest.NewEndpoint(t, "waiting client", waiting))
	if _, err := waiting.Connect(silent.Addr().String(), 0); err != nil {
		t.Fatal(err)
	}
	for i, c := range eps[1 : 1+len(cpeers)] {
		for range 50 {
			_ = c.Host.Send(cpeers[i], transport.Reliable, make([]byte, 1000))
			_ = server.Host.Send(speers[i], transport.Unreliable, make([]byte, 1000))
		}
		_ = c.Host.Flush()
	}
	_ = server.Host.Flush()
	server.Host.Disconnect(speers[0], 5)
	for _, e := range eps {
		if err := e.Host.Close(); err != nil {
			t.Errorf("%s: Close: %v", e.Name, err)
		}
	}
}

// decodeReason reads back what encodeReason writes, and a foreign close's
// status code otherwise.
func TestReasonCodec(t *testing.T) {
	for _, r := range []uint32{0, 1, 7, 42, 1000, 4003, 0xDEADBEEF, math.MaxUint32} {
		if got := decodeReason(encodeReason(r)); got != r {
			t.Errorf("reason %d came back as %d", r, got)
		}
	}
	for _, tc := range []struct {
		code websocket.StatusCode
		text string
		want uint32
	}{
		{1000, "", 1000}, {1000, "bye", 1000}, {1000, "4294967296", 1000}, {1000, "-1", 1000},
		{1001, "42", 1001}, {4003, "banned", 4003}, {1005, "", 1005},
	} {
		if got := decodeReason(tc.code, tc.text); got != tc.want {
			t.Errorf("decodeReason(%d, %q) = %d, want %d", tc.code, tc.text, got, tc.want)
		}
	}
}

// FuzzDecodeReason: any close frame decodes without panicking, to its
// status code unless it is encodeReason's form; every reason round-trips.
func FuzzDecodeReason(f *testing.F) {
	f.Add(uint32(42), uint16(1000), "42")
	f.Add(uint32(0), uint16(4003), "banned")
	f.Fuzz(func(t *testing.T, r uint32, code uint16, text string) {
		if got := decodeReason(encodeReason(r)); got != r {
			t.Fatalf("reason %d came back as %d", r, got)
		}
		got := decodeReason(websocket.StatusCode(code), text)
		if code != 1000 && got != uint32(code) {
			t.Fatalf("decodeReason(%d, %q) = %d, want the code", code, text, got)
		}
	})
}
