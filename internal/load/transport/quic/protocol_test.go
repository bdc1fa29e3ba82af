package quic

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// rawDial connects to addr with quic-go directly, as a misbehaving client.
func rawDial(t *testing.T, addr string, alpn string) (*quicgo.Conn, error) {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), livetest.Wait)
	defer cancel()
	tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}}
	return quicgo.DialAddr(ctx, ua.String(), tc, &quicgo.Config{EnableDatagrams: true})
}

func TestMisbehavingClients(t *testing.T) {
	sh, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", sh)

	// Wrong ALPN: the TLS handshake fails, the server sees nothing.
	if c, err := rawDial(t, sh.Addr(), "h3"); err == nil {
		_ = c.CloseWithError(0, "")
		t.Fatal("handshake with ALPN h3 succeeded")
	}

	for _, tc := range []struct {
		name    string
		stream  []byte
		connect bool // the preamble is whole: EventConnect, then EventDisconnect
	}{
		{"short preamble", []byte{1, 0}, false},
		{"FIN inside a frame", append(appendPreamble(nil, proto.ConnectData), 9, 0, 1, 2), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := quicHost(server).Stats().ProtocolErrors
			c, err := rawDial(t, sh.Addr(), ALPN)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseWithError(0, "")
			s, err := c.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Write(tc.stream); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			transporttest.WaitUntil(t, "protocol error counted", func() bool { return quicHost(server).Stats().ProtocolErrors > before }, server)
			livetest.Eventually(t, livetest.Wait, livetest.Closed("the server closing the connection", c.Context().Done()))
			var ae *quicgo.ApplicationError
			if cause := context.Cause(c.Context()); !errors.As(cause, &ae) || ae.ErrorCode != codeProtocolError {
				t.Errorf("closed with %v, want application error %#x", cause, codeProtocolError)
			}
			if tc.connect {
				transporttest.WaitEvent(t, "connect", server, transporttest.IsKind(transport.EventConnect), server)
				ev := transporttest.WaitEvent(t, "disconnect", server, transporttest.IsKind(transport.EventDisconnect), server)
				if ev.Data != transport.ReasonTimeout {
					t.Errorf("disconnect reason %d after a protocol error, want ReasonTimeout", ev.Data)
				}
			} else if ev, ok := server.Take(transporttest.IsKind(transport.EventConnect)); ok {
				t.Errorf("connect event %+v for a client without a preamble", ev)
			}
		})
	}
}

func TestSocketPoolHosts(t *testing.T) {
	sh, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", sh)
	pool := NewSocketPool(2)
	var clients []*transporttest.Endpoint
	for i := 0; i < 3; i++ {
		h, err := pool.Dial(transport.Options{})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, transporttest.NewEndpoint(t, "client", h))
	}
	if clients[0].Host.Addr() != clients[1].Host.Addr() || clients[1].Host.Addr() == clients[2].Host.Addr() {
		t.Fatalf("pool of 2 per socket: addrs %s %s %s", clients[0].Host.Addr(), clients[1].Host.Addr(), clients[2].Host.Addr())
	}
	all := append([]*transporttest.Endpoint{server}, clients...)
	peers := make([]transport.PeerID, len(clients))
	for i, c := range clients {
		if peers[i], err = c.Host.Connect(sh.Addr(), uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range clients {
		transporttest.WaitEvent(t, "connect", c, transporttest.IsKind(transport.EventConnect), all...)
		if err := c.Host.Send(peers[i], transport.Unreliable, pattern(byte(i), 500)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[byte]bool{}
	transporttest.WaitUntil(t, "one datagram from each client", func() bool {
		for {
			ev, ok := server.Take(transporttest.IsReceive(transport.Unreliable))
			if !ok {
				break
			}
			seen[ev.Payload[0]] = true
		}
		return len(seen) == 3
	}, all...)
	// Closing one host must not disturb its socket neighbour.
	if err := clients[0].Host.Close(); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitEvent(t, "disconnect of the closed host", server, transporttest.IsKind(transport.EventDisconnect), server)
	if err := clients[1].Host.Send(peers[1], transport.Reliable, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	transporttest.WaitEvent(t, "reliable from the neighbour", server, transporttest.IsReceive(transport.Reliable), server, clients[1])
	if r := clients[1].Host.WireRates(); r.BytesOutPerSec <= 0 {
		t.Errorf("shared-socket host wire rates %+v, want its own traffic", r)
	}
}

// TestConnectNeedsServerAccept: a QUIC handshake alone is not a connect.
// A quic-go listener that never accepts completes handshakes, queues 32
// connections and refuses the rest; no client may report EventConnect, and
// each must end in EventDisconnect with ReasonTimeout. (Before the accept
// word, clients reported connected and were then refused: the swarm counted
// them admitted-then-lost.)
func TestConnectNeedsServerAccept(t *testing.T) {
	tc, err := serverTLS("", "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quicgo.ListenAddr("127.0.0.1:0", tc, &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 40 // more than quic-go's accept queue of 32
	var clients []*transporttest.Endpoint
	for i := 0; i < n; i++ {
		h, err := transport.Dial(Name, transport.Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		c := transporttest.NewEndpoint(t, "client", h)
		if _, err := h.Connect(ln.Addr().String(), proto.ConnectData); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	done := 0
	transporttest.WaitUntil(t, "every client to give up", func() bool {
		for _, c := range clients {
			if ev, ok := c.Take(transporttest.IsKind(transport.EventConnect)); ok {
				t.Fatalf("client reported connected (%+v) to a server that never accepted", ev)
			}
			for _, ev := range c.TakeAll(transporttest.IsKind(transport.EventDisconnect)) {
				if ev.Data != transport.ReasonTimeout {
					t.Fatalf("disconnect reason %d, want ReasonTimeout", ev.Data)
				}
				done++
			}
		}
		return done == n
	}, clients...)
	refused := 0
	for _, c := range clients {
		if strings.Contains(quicHost(c).Stats().LastDialError, "CONNECTION_REFUSED") {
			refused++
		}
	}
	t.Logf("%d clients gave up; %d of them after quic-go refused them %d times", done, refused, dialAttempts)
}

// TestMaxPeers: beyond Options.MaxPeers live connections the listener
// closes new ones; the client never reports connected (as an ENet client
// finding no free slot) and the server delivers no event for it.
func TestMaxPeers(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, proto.ConnectData, transport.Options{MaxPeers: 1}, transport.Options{})
	ch, err := transport.Dial(Name, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	extra := transporttest.NewEndpoint(t, "extra", ch)
	if _, err := ch.Connect(p.Server.Host.Addr(), proto.ConnectData); err != nil {
		t.Fatal(err)
	}
	ev := transporttest.WaitEvent(t, "refusal", extra, func(ev transport.Event) bool { return ev.Kind != transport.EventReceive }, p.Server, p.Client, extra)
	if ev.Kind != transport.EventDisconnect || ev.Data != transport.ReasonTimeout {
		t.Fatalf("extra client got %v data %d, want disconnect with ReasonTimeout", ev.Kind, ev.Data)
	}
	if got := quicHost(p.Server).Stats().RefusedFull; got != 1 {
		t.Errorf("RefusedFull = %d, want 1", got)
	}
	if ev, ok := p.Server.Take(transporttest.IsKind(transport.EventConnect)); ok {
		t.Errorf("server delivered %+v for a refused connection", ev)
	}
}
