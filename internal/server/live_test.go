package server

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/snapshot"
	"github.com/scalegate/scalegate/internal/transport"
	_ "github.com/scalegate/scalegate/internal/transport/enet"
	_ "github.com/scalegate/scalegate/internal/transport/quic"
)

// loopWait bounds every wait on loopback events: generous, because a
// loaded 2-core machine can stall an exchange for seconds; tests wait on the
// event, never on the clock.
const loopWait = 30 * time.Second

// liveServer is a real server on ENet loopback, run by Run on its own
// goroutine.
type liveServer struct {
	*Server
	metrics string
	stop    context.CancelFunc
	done    chan error
}

func startLive(t *testing.T, mut func(*Config)) *liveServer {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Server.Port = 0
	cfg.Server.Transport = "enet" // mut may change it
	cfg.World.SimWorkerThreads = 1
	cfg.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "metrics.json")
	cfg.Metrics.TickJSONIntervalMs = 100
	if mut != nil {
		mut(&cfg)
	}
	s, err := New(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ls := &liveServer{Server: s, metrics: cfg.Metrics.TickJSONPath, stop: cancel, done: make(chan error, 1)}
	go func() { ls.done <- s.Run(ctx) }()
	t.Cleanup(func() { ls.shutdown(t) })
	return ls
}

// shutdown stops the server (once) and returns its final metrics. The
// clients are serviced meanwhile, so they acknowledge the disconnect and
// the server need not wait out its grace period.
func (ls *liveServer) shutdown(t *testing.T, cs ...*client) *report.ServerTick {
	t.Helper()
	if ls.stop == nil {
		return nil
	}
	ls.stop()
	ls.stop = nil
	deadline := time.After(loopWait)
	for stopped := false; !stopped; {
		select {
		case err := <-ls.done:
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			stopped = true
		case <-deadline:
			t.Fatal("server did not stop")
		case <-time.After(2 * time.Millisecond):
			for _, c := range cs {
				c.pump()
			}
		}
	}
	st, _, err := report.ReadServerTick(ls.metrics)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// client is one ENet client host and everything it has received.
type client struct {
	t            *testing.T
	backend      string
	h            transport.Host
	peer         transport.PeerID
	connected    bool
	disconnected bool
	msgs         [][]byte
}

func dialClient(t *testing.T, addr string, data uint32) *client {
	t.Helper()
	return dialBackend(t, "enet", addr, data)
}

func dialBackend(t *testing.T, backend, addr string, data uint32) *client {
	t.Helper()
	h, err := transport.Dial(backend, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	p, err := h.Connect(addr, data)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, backend: backend, h: h, peer: p}
}

func (c *client) pump() {
	_, err := c.h.Service(func(ev transport.Event) {
		switch ev.Kind {
		case transport.EventConnect:
			c.connected = true
		case transport.EventDisconnect:
			c.disconnected = true
		case transport.EventReceive:
			c.msgs = append(c.msgs, slices.Clone(ev.Payload))
		}
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) send(d transport.Delivery, msg []byte) {
	if err := c.h.Send(c.peer, d, msg); err != nil {
		c.t.Fatal(err)
	}
	c.h.Flush()
}

func (c *client) of(t proto.Type) [][]byte {
	var out [][]byte
	for _, m := range c.msgs {
		if len(m) > 0 && proto.Type(m[0]) == t {
			out = append(out, m)
		}
	}
	return out
}

// waitAll pumps every client until cond holds.
func waitAll(t *testing.T, cs []*client, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(loopWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		for _, c := range cs {
			c.pump()
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestENetEveryAdmissionReason(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(*Config)
		data  []uint32 // connect data per client, in connect order
		join  string   // raw Join sent by the last client after it connects ("" none)
		badJn bool
		want  proto.Reason
	}{
		{"protocol version", nil, []uint32{0x53470002}, "", false, proto.ReasonProtocolVersion},
		{"rate limited", func(c *Config) { c.Security.ConnectRateLimitCount = 2; c.Security.ConnectRateLimitWindowS = 60 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, "", false, proto.ReasonRateLimited},
		{"server full", func(c *Config) { c.Server.MaxPeers = 2; c.Security.MaxConnectionsPerIP = 8 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, "", false, proto.ReasonServerFull},
		{"per-IP cap", func(c *Config) { c.Security.MaxConnectionsPerIP = 2 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, "", false, proto.ReasonPerIPCap},
		{"bad join", nil, []uint32{proto.ConnectData}, "", true, proto.ReasonBadJoin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls := startLive(t, tc.cfg)
			var cs []*client
			for _, d := range tc.data {
				// Connect one at a time so the order of admission is known.
				c := dialClient(t, ls.Addr(), d)
				cs = append(cs, c)
				waitAll(t, cs, "connect", func() bool { return c.connected || c.disconnected || len(c.of(proto.TypeRefuse)) > 0 })
			}
			last := cs[len(cs)-1]
			if tc.badJn {
				last.send(transport.Reliable, []byte{byte(proto.TypeJoin), 9})
			}
			waitAll(t, cs, "refuse and disconnect", func() bool { return len(last.of(proto.TypeRefuse)) == 1 && last.disconnected })
			r, err := proto.DecodeRefuse(last.of(proto.TypeRefuse)[0])
			if err != nil || r.Reason != tc.want || r.Message == "" {
				t.Fatalf("refuse %+v %v, want reason %v", r, err, tc.want)
			}
			for _, c := range cs[:len(cs)-1] {
				if len(c.of(proto.TypeRefuse)) != 0 || c.disconnected {
					t.Fatal("an earlier client was refused")
				}
			}
			st := ls.shutdown(t, cs...)
			if st.Refused[tc.want.String()] != 1 {
				t.Fatalf("metrics refused %v", st.Refused)
			}
		})
	}
}

// Join, play and shutdown over each real transport: the server must not
// care which backend it was given.
func TestENetJoinPlayAndShutdown(t *testing.T) { joinPlayShutdown(t, "enet") }

func TestQUICJoinPlayAndShutdown(t *testing.T) { joinPlayShutdown(t, "quic") }

func joinPlayShutdown(t *testing.T, backend string) {
	ls := startLive(t, func(c *Config) {
		c.Server.Transport = backend
		c.World.TestSpawnAICount = 200
		c.World.TestSpawnSpreadKm = 10
	})
	var cs []*client
	for i := 0; i < 4; i++ {
		cs = append(cs, dialBackend(t, backend, ls.Addr(), proto.ConnectData))
	}
	waitAll(t, cs, "connects", func() bool {
		for _, c := range cs {
			if !c.connected {
				return false
			}
		}
		return true
	})
	for i, c := range cs {
		j, _ := proto.AppendJoin(nil, &proto.Join{ClientIndex: uint32(i), EntityType: "builtin:sensor-fighter", Name: "bot"})
		c.send(transport.Reliable, j)
	}
	seq := uint32(0)
	waitAll(t, cs, "welcome, 60 snapshots and a PeerDelay each", func() bool {
		seq++
		for _, c := range cs {
			if len(c.of(proto.TypeWelcome)) == 1 {
				c.send(transport.Unreliable, inputMsg(seq))
			}
		}
		for _, c := range cs {
			if len(c.of(proto.TypeSnapshot)) < 60 || len(c.of(proto.TypePeerDelay)) == 0 {
				return false
			}
		}
		return true
	})
	dec, _ := snapshot.NewDecoder()
	defer dec.Close()
	for _, c := range cs {
		w, err := proto.DecodeWelcome(c.of(proto.TypeWelcome)[0])
		if err != nil || w.Transport != backend || w.BodyFormat != snapshot.BodyFormat {
			t.Fatalf("welcome %+v %v", w, err)
		}
		for _, m := range c.of(proto.TypeSnapshot) {
			h, body, err := proto.DecodeSnapshot(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) > 1200 {
				t.Fatalf("snapshot of %d bytes over the 1200-byte budget", len(m))
			}
			if _, err := dec.Decode(h.Flags, body); err != nil {
				t.Fatalf("tick %d: %v", h.Tick, err)
			}
			if dec.Records()[0].ID != w.EntityID {
				t.Fatal("first record is not the client's own entity")
			}
		}
	}
	ls.stop()
	waitAll(t, cs, "shutdown notices and disconnects", func() bool {
		for _, c := range cs {
			if len(c.of(proto.TypeNotice)) == 0 || !c.disconnected {
				return false
			}
		}
		return true
	})
	for _, c := range cs {
		n, err := proto.DecodeNotice(c.of(proto.TypeNotice)[0])
		if err != nil || n.Kind != proto.NoticeShutdown {
			t.Fatalf("notice %+v %v", n, err)
		}
	}
	ls.stop = func() {} // already cancelled; shutdown waits for Run
	st := ls.shutdown(t)
	if st.Transport != backend || st.TicksTotal < 60 || st.Entities < 200 || st.WirePeers != 4 || st.WireOutKBsPerClient <= 0 {
		t.Fatalf("final metrics: transport %q ticks %d entities %d wire_peers %d per-client %.2f",
			st.Transport, st.TicksTotal, st.Entities, st.WirePeers, st.WireOutKBsPerClient)
	}
	if len(st.Refused) != 0 || st.MalformedDropped != 0 {
		t.Fatalf("refused %v malformed %d", st.Refused, st.MalformedDropped)
	}
}
