package server_test

// The live tests: a real server (liveserver.Start) on loopback and
// protocol clients over the real transports, seeing the server only as a
// client does.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/livetest/liveserver"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

func joinMsg(t testing.TB, entityType string) []byte {
	t.Helper()
	b, err := proto.AppendJoin(nil, &proto.Join{ClientIndex: 1, EntityType: entityType, Name: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func inputMsg(seq uint32) []byte {
	return proto.AppendInput(nil, &proto.Input{Seq: seq, Throttle: 0.8, Elevator: 0.1, Aileron: -0.2})
}

// all holds when every client satisfies ok; otherwise it names the first
// that does not.
func all(cs []*liveserver.Client, what string, ok func(*liveserver.Client) bool) livetest.Cond {
	return func() (bool, string) {
		for i, c := range cs {
			if !ok(c) {
				return false, fmt.Sprintf("client %d of %d: not yet %s", i, len(cs), what)
			}
		}
		return true, ""
	}
}

func TestENetEveryAdmissionReason(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(*server.Config)
		data  []uint32 // connect data per client, in connect order
		badJn bool     // the last client sends a malformed Join once connected
		want  proto.Reason
	}{
		{"protocol version", nil, []uint32{0x53470002}, false, proto.ReasonProtocolVersion},
		{"rate limited", func(c *server.Config) { c.Security.ConnectRateLimitCount = 2; c.Security.ConnectRateLimitWindowS = 60 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, false, proto.ReasonRateLimited},
		{"server full", func(c *server.Config) { c.Server.MaxPeers = 2; c.Security.MaxConnectionsPerIP = 8 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, false, proto.ReasonServerFull},
		{"per-IP cap", func(c *server.Config) { c.Security.MaxConnectionsPerIP = 2 },
			[]uint32{proto.ConnectData, proto.ConnectData, proto.ConnectData}, false, proto.ReasonPerIPCap},
		{"bad join", nil, []uint32{proto.ConnectData}, true, proto.ReasonBadJoin},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls := liveserver.Start(t, tc.cfg)
			var cs []*liveserver.Client
			for _, d := range tc.data {
				// Connect one at a time so the order of admission is known.
				c := liveserver.Dial(t, "enet", ls.Addr(), d)
				cs = append(cs, c)
				liveserver.PumpUntil(t, cs, livetest.Holds("connect, disconnect or refuse", func() bool {
					return c.Connected || c.Disconnected || len(c.Of(proto.TypeRefuse)) > 0
				}))
			}
			last := cs[len(cs)-1]
			if tc.badJn {
				last.Send(transport.Reliable, []byte{byte(proto.TypeJoin), 9})
			}
			liveserver.PumpUntil(t, cs, livetest.Holds("one Refuse and the disconnect", func() bool {
				return len(last.Of(proto.TypeRefuse)) == 1 && last.Disconnected
			}))
			r, err := proto.DecodeRefuse(last.Of(proto.TypeRefuse)[0])
			if err != nil || r.Reason != tc.want || r.Message == "" {
				t.Fatalf("refuse %+v %v, want reason %v", r, err, tc.want)
			}
			for _, c := range cs[:len(cs)-1] {
				if len(c.Of(proto.TypeRefuse)) != 0 || c.Disconnected {
					t.Fatal("an earlier client was refused")
				}
			}
			st := ls.Stop(t, cs...)
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
	ls := liveserver.Start(t, func(c *server.Config) {
		c.Server.Transport = backend
		c.World.TestSpawnAICount = 200
		c.World.TestSpawnSpreadKm = 10
	})
	var cs []*liveserver.Client
	for range 4 {
		cs = append(cs, liveserver.Dial(t, backend, ls.Addr(), proto.ConnectData))
	}
	liveserver.PumpUntil(t, cs, all(cs, "connected", func(c *liveserver.Client) bool { return c.Connected }))
	for i, c := range cs {
		j, _ := proto.AppendJoin(nil, &proto.Join{ClientIndex: uint32(i), EntityType: "builtin:sensor-fighter", Name: "bot"})
		c.Send(transport.Reliable, j)
	}
	seq := uint32(0)
	enough := all(cs, "welcomed with 60 snapshots and a PeerDelay", func(c *liveserver.Client) bool {
		return len(c.Of(proto.TypeSnapshot)) >= 60 && len(c.Of(proto.TypePeerDelay)) > 0
	})
	liveserver.PumpUntil(t, cs, func() (bool, string) {
		seq++
		for _, c := range cs {
			if len(c.Of(proto.TypeWelcome)) == 1 {
				c.Send(transport.Unreliable, inputMsg(seq))
			}
		}
		return enough()
	})
	dec, _ := snapshot.NewDecoder()
	defer dec.Close()
	for _, c := range cs {
		w, err := proto.DecodeWelcome(c.Of(proto.TypeWelcome)[0])
		if err != nil || w.Transport != backend || w.BodyFormat != snapshot.BodyFormat {
			t.Fatalf("welcome %+v %v", w, err)
		}
		for _, m := range c.Of(proto.TypeSnapshot) {
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
	ls.Shutdown()
	liveserver.PumpUntil(t, cs, all(cs, "given the shutdown Notice and disconnected", func(c *liveserver.Client) bool {
		return len(c.Of(proto.TypeNotice)) > 0 && c.Disconnected
	}))
	for _, c := range cs {
		n, err := proto.DecodeNotice(c.Of(proto.TypeNotice)[0])
		if err != nil || n.Kind != proto.NoticeShutdown {
			t.Fatalf("notice %+v %v", n, err)
		}
	}
	st := ls.Stop(t)
	if st.Transport != backend || st.TicksTotal < 60 || st.Entities < 200 || st.WirePeers != 4 || st.WireOutKBsPerClient <= 0 {
		t.Fatalf("final metrics: transport %q ticks %d entities %d wire_peers %d per-client %.2f",
			st.Transport, st.TicksTotal, st.Entities, st.WirePeers, st.WireOutKBsPerClient)
	}
	if len(st.Refused) != 0 || st.MalformedDropped != 0 {
		t.Fatalf("refused %v malformed %d", st.Refused, st.MalformedDropped)
	}
}

// TestMetricsOverHTTP: with [metrics] http_listen the document the file
// holds is served at /metrics; a reader parses it like the file; other
// paths and methods are refused; the endpoint closes with the server.
func TestMetricsOverHTTP(t *testing.T) {
	ls := liveserver.Start(t, func(c *server.Config) { c.Metrics.HTTPListen = "127.0.0.1:0" })
	url := ls.MetricsURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/metrics") {
		t.Fatalf("metrics URL %q", url)
	}
	// The server published its first document before it began ticking
	// (TestMetricsHTTPNotYet covers the 503 before any).
	st, _, err := report.ReadServerTick(url)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if st.Transport != "enet" || st.SchemaVersion != report.ServerTickSchemaVersion {
		t.Fatalf("document over HTTP: %+v", st)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"GET", "/", http.StatusNotFound}, {"POST", "/metrics", http.StatusMethodNotAllowed}} {
		req, _ := http.NewRequest(tc.method, strings.TrimSuffix(url, "/metrics")+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	ls.Stop(t)
	// Closed with the server: missing, not zero. (Stop returned after Run,
	// which closes the endpoint before it returns, so the first read
	// after it must already fail.)
	if _, err := report.ReadServerMetrics(url); err == nil {
		t.Fatal("metrics endpoint still answering after the server stopped")
	}
}

// Admin commands run on the tick loop while it ticks a joined peer: many
// concurrent connections all get answers (under -race, any command that
// touched loop state off the loop would be reported).
func TestAdminCommandsOnTheLoop(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ls := liveserver.Start(t, func(c *server.Config) {
		c.Admin.Socket = sock
		c.World.TestSpawnAICount = 20
	})
	cl := liveserver.Dial(t, "enet", ls.Addr(), proto.ConnectData)
	cs := []*liveserver.Client{cl}
	liveserver.PumpUntil(t, cs, livetest.Holds("connect", func() bool { return cl.Connected }))
	cl.Send(transport.Reliable, joinMsg(t, "x"))
	liveserver.PumpUntil(t, cs, livetest.Holds("5 snapshots", func() bool { return len(cl.Of(proto.TypeSnapshot)) >= 5 }))

	ctx, cancel := context.WithTimeout(context.Background(), livetest.Wait)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for range 20 {
		for _, cmd := range []string{"status", "tickstats"} {
			wg.Go(func() {
				lines, err := admin.Do(ctx, sock, cmd)
				if err != nil || len(lines) == 0 {
					errs <- fmt.Sprintf("%s: %v, %d lines", cmd, err, len(lines))
				}
			})
		}
	}
	// Keep the client alive (its acknowledgements) while the answers come.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	liveserver.PumpUntil(t, cs, livetest.Closed("every admin answer", finished))
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	lines, err := admin.Do(ctx, sock, "status")
	if err != nil || !strings.HasPrefix(lines[0], "peers 1 entities 21 tick-Hz ") {
		t.Fatalf("status %q, %v", lines, err)
	}
	ls.Stop(t, cl)
}
