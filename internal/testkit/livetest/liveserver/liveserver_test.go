package liveserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

func TestMain(m *testing.M) {
	ChildMain()
	os.Exit(m.Run())
}

// join sends client i's Join.
func join(t *testing.T, c *Client, i int) {
	t.Helper()
	j, err := proto.AppendJoin(nil, &proto.Join{ClientIndex: uint32(i), EntityType: "builtin:debug-entity", Name: "bot"})
	if err != nil {
		t.Fatal(err)
	}
	c.Send(transport.Reliable, j)
}

// StartProcess hands the child its config as TOML: what the test set is
// what the child loads, key for key.
func TestConfigSurvivesTOML(t *testing.T) {
	cfg := Config(t)
	cfg.Server.MaxPeers = 80
	cfg.Security.ConnectRateLimitCount = 100000
	cfg.Faults.RefuseEveryNthJoin = 2
	cfg.Trace.InputTraceDir = filepath.Join(t.TempDir(), "traces")
	path := filepath.Join(t.TempDir(), "s.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := encodeConfig(f, cfg); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := server.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cfg) {
		t.Fatalf("loaded back\n%+v\nwant\n%+v", got, cfg)
	}
}

// Two clients join an in-process server and get snapshots; Stop pumps them
// through the shutdown and returns the final metrics.
func TestStartDialStop(t *testing.T) {
	s := Start(t, func(c *server.Config) { c.Server.MaxPeers = 4 })
	cs := []*Client{Dial(t, "enet", s.Addr(), proto.ConnectData), Dial(t, "enet", s.Addr(), proto.ConnectData)}
	PumpUntil(t, cs, livetest.Holds("both connected", func() bool { return cs[0].Connected && cs[1].Connected }))
	for i, c := range cs {
		join(t, c, i)
	}
	PumpUntil(t, cs, func() (bool, string) {
		for i, c := range cs {
			if n := len(c.Of(proto.TypeSnapshot)); n < 3 {
				return false, fmt.Sprintf("client %d has %d snapshots", i, n)
			}
		}
		return true, ""
	})
	st := s.MetricsWhen(t, "2 peers", func(st *report.ServerTick) bool { return st.Peers == 2 })
	if st.Transport != "enet" {
		t.Fatalf("metrics %+v", st)
	}
	final := s.Stop(t, cs...)
	if final.TicksTotal < 3 || len(final.Refused) != 0 {
		t.Fatalf("final metrics: ticks %d refused %v", final.TicksTotal, final.Refused)
	}
	for i, c := range cs {
		if len(c.Of(proto.TypeNotice)) == 0 {
			t.Errorf("client %d got no shutdown Notice", i)
		}
	}
}

// A child server listens, counts a client, and dies at once on Kill; a
// clean Stop after it reports nothing.
func TestProcessKill(t *testing.T) {
	p := StartProcess(t, nil)
	c := Dial(t, "enet", p.Addr, proto.ConnectData)
	PumpUntil(t, []*Client{c}, livetest.Holds("connected", func() bool { return c.Connected }))
	join(t, c, 0)
	p.MetricsWhen(t, "1 peer", func(st *report.ServerTick) bool { return st.Peers == 1 })
	p.Kill()
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop after Kill: %v", err)
	}
}

// A child that cannot start fails the test naming why, and never claims
// an address.
func TestProcessThatCannotListen(t *testing.T) {
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := &livetest.Recorder{TB: t}
	p := StartProcess(r, func(c *server.Config) { c.Server.Port = busy.LocalAddr().(*net.UDPAddr).Port })
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "exited (exit status 1) before listening") || p.Addr != "" {
		t.Fatalf("failures %q, addr %q", r.Failures, p.Addr)
	}
	if err := p.Stop(); err == nil {
		t.Fatal("Stop of a child that exited 1: no error")
	}
}
