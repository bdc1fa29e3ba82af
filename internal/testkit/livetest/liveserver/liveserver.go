// Package liveserver is the one way tests start the reference server and
// talk to it.
//
// The server (internal/reference/server) runs on a free loopback port, in
// the test's own process (Start) or as a child process the test can SIGKILL
// like a crashed server (StartProcess), and is stopped when the test ends;
// protocol clients dial it (Dial, PumpUntil). Every wait is a livetest
// wait: on an event, with a deadline.
package liveserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"

	// The backends a test may choose in its config or dial with.
	_ "github.com/scalegate/scalegate/internal/load/transport/enet"
	_ "github.com/scalegate/scalegate/internal/load/transport/quic"
)

// Config is the configuration every test server starts from, before the
// test's own changes: the defaults, on an ephemeral loopback port over
// ENet, one simulation worker (tests must not depend on the core count),
// and a metrics file in a fresh directory written every 100 ms, so waits on
// it end soon after the event.
func Config(t testing.TB) server.Config {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.Server.Port = 0
	cfg.Server.Bind = server.BindHost
	cfg.Server.Transport = "enet"
	cfg.World.SimWorkerThreads = 1
	cfg.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "metrics.json")
	cfg.Metrics.TickJSONIntervalMs = 100
	return cfg
}

// Server is a reference server running in the test's process.
type Server struct {
	*server.Server
	// Metrics is the metrics file's path ("" if the test's config removed it).
	Metrics string
	task    *livetest.Task
}

// Start starts the reference server with Config changed by mut (nil: as
// is), bound before it returns, ticking on a goroutine the test owns. It
// is stopped when the test ends; a Run error fails the test.
func Start(t testing.TB, mut func(*server.Config)) *Server {
	t.Helper()
	return StartPrepared(t, mut, nil)
}

// StartPrepared is Start with prepare (nil: none) called on the bound
// server before it starts ticking: what `scalegate serve` sets up between
// the two, such as the admin reload (Server.SetReload).
func StartPrepared(t testing.TB, mut func(*server.Config), prepare func(*server.Server)) *Server {
	t.Helper()
	cfg := Config(t)
	if mut != nil {
		mut(&cfg)
	}
	s, err := listen(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(s)
	}
	return &Server{Server: s, Metrics: cfg.Metrics.TickJSONPath, task: livetest.Go(t, "reference server", s.Run)}
}

// listen makes and binds a server from cfg and writes its first metrics
// document, as `scalegate serve` does before it announces the address: a
// reader may read the file as soon as the server is up.
func listen(cfg server.Config, log io.Writer) (*server.Server, error) {
	s, err := server.New(cfg, log)
	if err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	if err := s.Listen(); err != nil {
		return nil, fmt.Errorf("reference server: %w", err)
	}
	if err := s.WriteMetrics(); err != nil {
		return nil, fmt.Errorf("reference server: first metrics write: %w", err)
	}
	return s, nil
}

// Shutdown starts the server's shutdown (Notice to every peer, a bounded
// wait for them to go) without waiting for it: Stop waits.
func (s *Server) Shutdown() { s.task.Cancel() }

// Stop shuts the server down and waits for Run to return, pumping cs
// meanwhile (so they acknowledge the disconnect and the server need not
// wait out its grace), then returns its final metrics. A Run error, a
// server that does not stop within livetest.Wait, or an unreadable final
// metrics file fails the test.
func (s *Server) Stop(t testing.TB, cs ...*Client) *report.ServerTick {
	t.Helper()
	s.task.Cancel()
	livetest.EventuallyPumping(t, livetest.Wait, pumpAll(cs), livetest.Closed("the server's Run returned after its shutdown began", s.task.Done()))
	if err := s.task.Stop(); err != nil {
		t.Fatal(err)
	}
	st, _, err := report.ReadServerTick(s.Metrics)
	if err != nil {
		t.Fatalf("final metrics: %v", err)
	}
	return st
}

// MetricsWhen reads the metrics file until cond accepts it, for at most
// livetest.Wait, and returns what it accepted; what names the awaited
// state in a timeout.
func (s *Server) MetricsWhen(t testing.TB, what string, cond func(*report.ServerTick) bool) *report.ServerTick {
	t.Helper()
	st, err := metricsWhen(context.Background(), s.Metrics, what, cond)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// metricsWhen polls the metrics file at path until cond accepts it.
func metricsWhen(ctx context.Context, path, what string, cond func(*report.ServerTick) bool) (*report.ServerTick, error) {
	var got *report.ServerTick
	err := livetest.Poll(ctx, livetest.Wait, nil, func() (bool, string) {
		st, _, err := report.ReadServerTick(path)
		switch {
		case err != nil:
			return false, fmt.Sprintf("metrics file: %v", err)
		case !cond(st):
			return false, fmt.Sprintf("metrics file %s does not show %s yet (tick %d, %d peers)", path, what, st.TicksTotal, st.Peers)
		}
		got = st
		return true, ""
	})
	return got, err
}

// Client is one protocol client host dialled at a server, with everything
// it has received. It is used from the test goroutine only, like the Host
// it wraps.
type Client struct {
	t    testing.TB
	Host transport.Host
	// Peer is the server as this client's host names it.
	Peer transport.PeerID
	// Connected and Disconnected record the transport's connect and
	// disconnect events; Msgs every message received, in order (copied
	// out of the Service callback).
	Connected, Disconnected bool
	Msgs                    [][]byte
}

// Dial connects a new client host of backend to addr with connect data
// (proto.ConnectData for a well-behaved client). The connect completes as
// the client is pumped. The host closes when the test ends.
func Dial(t testing.TB, backend, addr string, data uint32) *Client {
	t.Helper()
	h, err := transport.Dial(backend, transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	p, err := h.Connect(addr, data)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{t: t, Host: h, Peer: p}
}

// Pump services the client's host once and returns how many events it
// delivered. A Service error fails the test.
func (c *Client) Pump() int {
	c.t.Helper()
	n, err := c.Host.Service(func(ev transport.Event) {
		switch ev.Kind {
		case transport.EventConnect:
			c.Connected = true
		case transport.EventDisconnect:
			c.Disconnected = true
		case transport.EventReceive:
			c.Msgs = append(c.Msgs, slices.Clone(ev.Payload))
		}
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// Send sends msg to the server and flushes. An error fails the test.
func (c *Client) Send(d transport.Delivery, msg []byte) {
	c.t.Helper()
	if err := c.Host.Send(c.Peer, d, msg); err != nil {
		c.t.Fatal(err)
	}
	c.Host.Flush()
}

// Of returns the received messages of type typ, in order.
func (c *Client) Of(typ proto.Type) [][]byte {
	var out [][]byte
	for _, m := range c.Msgs {
		if len(m) > 0 && proto.Type(m[0]) == typ {
			out = append(out, m)
		}
	}
	return out
}

// PumpUntil pumps every client, round after round, until cond holds, for
// at most livetest.Wait.
func PumpUntil(t testing.TB, cs []*Client, cond livetest.Cond) {
	t.Helper()
	livetest.EventuallyPumping(t, livetest.Wait, pumpAll(cs), cond)
}

func pumpAll(cs []*Client) func() int {
	return func() int {
		n := 0
		for _, c := range cs {
			n += c.Pump()
		}
		return n
	}
}
