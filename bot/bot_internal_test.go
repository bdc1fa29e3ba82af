package bot

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// stateProto is a minimal Protocol: 's' u32 tick u8 n is a state update,
// 'w' admits, 'x' is a Kind no swarm knows; Controls appends 4 bytes.
type stateProto struct{ seq uint32 }

func (p *stateProto) Connected(c *Conn) error { return c.Send(Reliable, []byte{'j'}) }

func (p *stateProto) Receive(_ *Conn, msg []byte) (Msg, error) {
	switch msg[0] {
	case 's':
		return Msg{Kind: State, Tick: binary.LittleEndian.Uint32(msg[1:]), HasTick: true, Entities: int(msg[5]), HasEntities: true}, nil
	case 'w':
		return Msg{Kind: Admitted}, nil
	case 'x':
		return Msg{Kind: Leaving + 1}, nil
	}
	return Msg{}, errors.New("unknown")
}

func (p *stateProto) Controls(buf []byte, ctl *Controls) ([]byte, Delivery) {
	p.seq++
	return binary.LittleEndian.AppendUint32(buf, p.seq+uint32(ctl.Buttons)), Unreliable
}

// discardConn is the engine's side of a Conn that drops what is sent.
type discardConn struct{ sent int }

func (c *discardConn) Send(transport.Delivery, []byte) error { c.sent++; return nil }

func newAdapter(p Protocol) swarm.Bot {
	w := protocol{Game{Name: "t/1", New: func(int) Protocol { return p }}}.NewWorker(&swarm.Config{})
	return w.NewBot(3)
}

// TestAdapterCarriesMsg: what Receive says reaches the engine field for
// field; a Kind the swarm does not know is an error, never a guess.
func TestAdapterCarriesMsg(t *testing.T) {
	b := newAdapter(&stateProto{})
	c := &discardConn{}
	if err := b.Connected(c); err != nil || c.sent != 1 {
		t.Fatalf("Connected: %v, %d sent", err, c.sent)
	}
	m, err := b.Receive(c, []byte{'s', 7, 0, 0, 0, 12})
	if err != nil || m.Kind != swarm.MsgState || !m.HasTick || m.Tick != 7 || !m.HasEntities || m.Entities != 12 {
		t.Errorf("state: %+v %v", m, err)
	}
	if m, err := b.Receive(c, []byte{'w'}); err != nil || m.Kind != swarm.MsgAdmitted {
		t.Errorf("admitted: %+v %v", m, err)
	}
	if m, err := b.Receive(c, []byte{'x'}); err == nil || m.Kind != swarm.MsgOther {
		t.Errorf("unknown kind: %+v %v, want an error", m, err)
	}
	msg, d := b.Input(nil, &swarm.Control{Buttons: 100})
	if d != transport.Unreliable || binary.LittleEndian.Uint32(msg) != 101 {
		t.Errorf("input % x %v", msg, d)
	}
	if pg, _, _ := b.(swarm.Parts).Parts(); pg != nil {
		t.Error("a protocol without Ping is taken for a Pinger: the transport's RTT would be replaced by nothing")
	}
}

// TestHotPathAllocatesNothing: a state update through the SDK (the
// adapter and the team's Receive) and one tick's Controls allocate
// nothing, as the built-in protocol's do.
func TestHotPathAllocatesNothing(t *testing.T) {
	b := newAdapter(&stateProto{})
	c := &discardConn{}
	state := []byte{'s', 7, 0, 0, 0, 12}
	buf := make([]byte, 0, 64)
	ctl := &swarm.Control{}
	if n := testing.AllocsPerRun(1000, func() {
		if _, err := b.Receive(c, state); err != nil {
			t.Fatal(err)
		}
		buf, _ = b.Input(buf[:0], ctl)
	}); n != 0 {
		t.Errorf("%v allocations per state update and tick, want 0", n)
	}
}

// pingWaitProto is a Protocol that is also a Pinger and a Waiter;
// leaveProto one that is a Leaver; allProto all three.
type pingWaitProto struct {
	stateProto
	pinged, waited int
}

func (p *pingWaitProto) Ping(*Conn, uint32) error           { p.pinged++; return nil }
func (p *pingWaitProto) Waiting(*Conn, time.Duration) error { p.waited++; return nil }

type leaveProto struct {
	stateProto
	left int
}

func (p *leaveProto) Leave(c *Conn) error { p.left++; return c.Send(Unreliable, []byte{'b'}) }

type allProto struct {
	pingWaitProto
	left int
}

func (p *allProto) Leave(*Conn) error { p.left++; return nil }

// TestAdapterOptionalParts: the engine gets a Pinger, a Waiter and a
// Leaver exactly when the team's protocol is one, and each call reaches
// the protocol.
func TestAdapterOptionalParts(t *testing.T) {
	for _, tc := range []struct {
		p                  Protocol
		ping, waits, leave bool
		calls              func() (pinged, waited, left int)
	}{
		{p: &stateProto{}},
		{p: &pingWaitProto{}, ping: true, waits: true},
		{p: &leaveProto{}, leave: true},
		{p: &allProto{}, ping: true, waits: true, leave: true},
	} {
		parts, ok := newAdapter(tc.p).(swarm.Parts)
		if !ok {
			t.Fatalf("%T: the adapter does not hand out its parts", tc.p)
		}
		pg, wt, lv := parts.Parts()
		if (pg != nil) != tc.ping || (wt != nil) != tc.waits || (lv != nil) != tc.leave {
			t.Errorf("%T: pinger %v waiter %v leaver %v, want %v %v %v", tc.p, pg != nil, wt != nil, lv != nil, tc.ping, tc.waits, tc.leave)
			continue
		}
		c := &discardConn{}
		if pg != nil {
			_ = pg.Ping(c, 1)
		}
		if wt != nil {
			_ = wt.Waiting(c, time.Second)
		}
		if lv != nil {
			_ = lv.Leave(c)
		}
		var pinged, waited, left int
		switch p := tc.p.(type) {
		case *pingWaitProto:
			pinged, waited = p.pinged, p.waited
		case *leaveProto:
			left = p.left
		case *allProto:
			pinged, waited, left = p.pinged, p.waited, p.left
		}
		if pinged != b2i(tc.ping) || waited != b2i(tc.waits) || left != b2i(tc.leave) {
			t.Errorf("%T: calls reached the protocol %d, %d, %d times, want %v %v %v", tc.p, pinged, waited, left, tc.ping, tc.waits, tc.leave)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// closeProto is a Protocol that is a CloseReader answering msg.
type closeProto struct {
	stateProto
	msg Msg
}

func (p *closeProto) Closed(uint32, string) Msg { return p.msg }

// TestAdapterCarriesClose: the engine gets a CloseReader's Refused and
// Leaving with their reason; any other answer, and a protocol without
// Closed, is the zero Msg: the engine's own rule.
func TestAdapterCarriesClose(t *testing.T) {
	for _, tc := range []struct {
		p    Protocol
		want swarm.Msg
	}{
		{&stateProto{}, swarm.Msg{}},
		{&pingWaitProto{}, swarm.Msg{}},
		{&closeProto{msg: Msg{Kind: Refused, Reason: "server_full"}}, swarm.Msg{Kind: swarm.MsgRefused, Reason: "server_full"}},
		{&closeProto{msg: Msg{Kind: Leaving, Reason: "kicked"}}, swarm.Msg{Kind: swarm.MsgLeaving, Reason: "kicked"}},
		{&closeProto{msg: Msg{Kind: State, Reason: "x", Tick: 3}}, swarm.Msg{}},
	} {
		cr, ok := newAdapter(tc.p).(swarm.CloseReader)
		if !ok {
			t.Fatalf("%T: the adapter is no CloseReader", tc.p)
		}
		if got := cr.Closed(4003, "server full"); got != tc.want {
			t.Errorf("%T answering %+v: engine got %+v, want %+v", tc.p, tc.p, got, tc.want)
		}
	}
}

// TestMissingTransportNamesItsPackage: each transport a bot can ask for
// names the package under bot/transport that links it, and that package
// exists; a name no package links gets no hint.
func TestMissingTransportNamesItsPackage(t *testing.T) {
	for _, name := range []string{"enet", "quic", "udp", "ws", "wss"} {
		hint := missingTransport(name)
		pkg := transportPackages[name]
		if !strings.Contains(hint, `"github.com/scalegate/scalegate/bot/transport/`+pkg+`"`) {
			t.Errorf("%s: %q names no bot/transport package", name, hint)
		}
		if _, err := os.Stat(filepath.Join("transport", pkg)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if hint := missingTransport("tcp"); hint != "" {
		t.Errorf("tcp: %q, want no hint", hint)
	}
	if !strings.Contains(missingTransport("enet"), "cgo") {
		t.Error("the enet hint does not say it needs cgo")
	}
}

// TestFlagsAreScalegateSwarms: a bot binary declares exactly the flags of
// `scalegate swarm`, with their defaults except --transport's.
func TestFlagsAreScalegateSwarms(t *testing.T) {
	flags := func(cmd swarmcli.Command) map[string]string {
		m := map[string]string{}
		cmd.NewFlagSet(&swarmcli.Flags{}, io.Discard).VisitAll(func(f *flag.Flag) { m[f.Name] = f.DefValue })
		return m
	}
	mine := flags(Game{Name: "t/1", Transport: "udp", New: func(int) Protocol { return &stateProto{} }}.command())
	theirs := flags(swarmcli.Scalegate)
	if mine["transport"] != "udp" || theirs["transport"] != swarm.DefaultTransport {
		t.Errorf("--transport defaults %q and %q", mine["transport"], theirs["transport"])
	}
	delete(mine, "transport")
	delete(theirs, "transport")
	var names []string
	for n, d := range theirs {
		names = append(names, n)
		if md, ok := mine[n]; !ok || md != d {
			t.Errorf("--%s: bot %q (declared %v), scalegate swarm %q", n, md, ok, d)
		}
	}
	if len(mine) != len(theirs) || len(names) < 40 {
		t.Errorf("bot has %d flags, scalegate swarm %d", len(mine), len(theirs))
	}
}

// TestRunRefusesAnIncompleteGame: a Game without a name or a maker is a
// usage error naming what is missing, before anything runs.
func TestRunRefusesAnIncompleteGame(t *testing.T) {
	var out, errb strings.Builder
	code := Run(context.Background(), Game{}, []string{"127.0.0.1", "1"}, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "Game.Name") || !strings.Contains(errb.String(), "Game.New") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}

// TestRunHelp: --help is the usage on stdout, naming the protocol, exit 0.
func TestRunHelp(t *testing.T) {
	var out, errb strings.Builder
	code := Run(context.Background(), Game{Name: "tiny/1", New: func(int) Protocol { return &stateProto{} }}, []string{"--help"}, &out, &errb)
	if code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "tiny/1") || !strings.Contains(out.String(), "--assert-admission") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// BenchmarkSDKStateAndControls is the SDK's per-client-tick work beside
// the codec: one state update through the adapter into the engine's Msg,
// and one tick's Controls, on examples/udpgame's codec shape (stateProto).
func BenchmarkSDKStateAndControls(b *testing.B) {
	a := newAdapter(&stateProto{})
	c := &discardConn{}
	state := []byte{'s', 7, 0, 0, 0, 12}
	buf := make([]byte, 0, 64)
	ctl := &swarm.Control{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Receive(c, state); err != nil {
			b.Fatal(err)
		}
		buf, _ = a.Input(buf[:0], ctl)
	}
}
