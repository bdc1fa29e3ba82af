package swarm

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	_ "github.com/scalegate/scalegate/internal/load/swarm/bodydec/sgentities" // the engine links no body decoder: its tests decode sg-entities
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// untickedV1 is v1 with the tick stripped from every state update, and
// optionally a Pinger that "pings" by timing the server's next PeerDelay
// (the fake server sends one a second): a protocol whose state carries
// no tick, as a team's may.
type untickedV1 struct {
	ping, mute bool // mute: the ping is never answered
}

func (untickedV1) Name() string        { return "unticked/1" }
func (untickedV1) ConnectData() uint32 { return proto.ConnectData }
func (p untickedV1) NewWorker(cfg *Config) WorkerProtocol {
	return untickedWorker{WorkerProtocol: LoadV1.NewWorker(cfg), p: p}
}

type untickedWorker struct {
	WorkerProtocol
	p untickedV1
}

func (w untickedWorker) NewBot(index int) Bot {
	b := &untickedBot{Bot: w.WorkerProtocol.NewBot(index), mute: w.p.mute}
	if w.p.ping {
		return &pingingBot{b}
	}
	return b
}

type untickedBot struct {
	Bot
	token uint32 // the outstanding ping
	mute  bool
}

func (b *untickedBot) Receive(c Conn, msg []byte) (Msg, error) {
	m, err := b.Bot.Receive(c, msg)
	switch m.Kind {
	case MsgState:
		m.HasTick, m.Tick = false, 0
	case MsgDelay:
		m = Msg{Kind: MsgPong, Token: b.token}
		if b.mute {
			m = Msg{}
		}
	}
	return m, err
}

type pingingBot struct{ *untickedBot }

func (b *pingingBot) Ping(_ Conn, token uint32) error { b.token = token; return nil }

// TestRunProtocolWithoutTick: state updates without a tick still count
// (snapshots, payload KB/s, gaps), the tick rate is missing, never
// invented from arrival times, the report says why, and a tick_hz_min
// assert fails as unevaluable.
func TestRunProtocolWithoutTick(t *testing.T) {
	// Parallel: it judges counts and outcomes (a lower bound at most), not
	// rates, so another test beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	cfg := Config{Addr: srv.addr, Clients: 3, Duration: 3 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1, Protocol: untickedV1{}}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if r.Protocol != "unticked/1" || r.ClientsConnected != 3 || r.SnapshotsReceived == 0 {
		t.Fatalf("protocol %q connected %d snapshots %d", r.Protocol, r.ClientsConnected, r.SnapshotsReceived)
	}
	if r.ObservedServerTickHz != nil || r.Histograms.TickHzPerClient != nil {
		t.Errorf("tick-Hz %+v measured from updates that carry no tick", r.ObservedServerTickHz)
	}
	if r.DownstreamKBsPerClient == nil || r.MaxSnapshotGapMs == nil {
		t.Errorf("payload KB/s %v or gap %v missing: they need no tick", r.DownstreamKBsPerClient, r.MaxSnapshotGapMs)
	}
	for _, p := range r.Timeline {
		if p.TickHzMin != nil {
			t.Errorf("timeline t=%v has tick_hz_min %v", p.TS, *p.TickHzMin)
		}
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "no state update carried a server tick") {
		t.Errorf("warnings %q do not say why tick-Hz is missing", r.Warnings)
	}
	g, _ := gatetable.Lookup("tick_hz_min")
	a := NoAsserts()
	a.Set(g, 30)
	failed := Evaluate(a, res)
	if len(failed) != 1 || failed[0].Measured != nil {
		t.Errorf("tick_hz_min on a tickless protocol: %+v, want one failure with nothing measured", failed)
	}
	// Without a Pinger the RTT is the transport's (ENet has one).
	if r.RTTMs == nil {
		t.Error("no transport RTT on ENet")
	}
}

// TestRunPingerTimesRoundTrips: a protocol's own ping replaces the
// transport's RTT estimate: answered, the engine times it; never
// answered, rtt_ms is missing although ENet has an estimate.
func TestRunPingerTimesRoundTrips(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	for _, mute := range []bool{false, true} {
		cfg := Config{Addr: srv.addr, Clients: 2, Duration: 4 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1, Protocol: untickedV1{ping: true, mute: mute}}
		r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
		if r.PeerDelayMs != nil || r.ClientsConnected != 2 {
			t.Fatalf("mute %v: connected %d, peer delay %+v: the PeerDelays were the pongs", mute, r.ClientsConnected, r.PeerDelayMs)
		}
		if mute && r.RTTMs != nil {
			t.Errorf("pings never answered, yet rtt %+v", r.RTTMs)
		}
		// The answer is the server's next once-a-second PeerDelay.
		if !mute && (r.RTTMs == nil || r.RTTMs.Max > 3000) {
			t.Errorf("rtt %+v: want the pings timed", r.RTTMs)
		}
	}
}

// TestClientProtocolOutcomes: what the engine does with each kind of
// answer while a client joins: admission, refusal with the protocol's
// reason, a disconnect named by a Leaving, and the fail-fast rule for an
// undecodable answer to the join.
func TestClientProtocolOutcomes(t *testing.T) {
	w := newWorker(0, &Config{}, nil, time.Second/60)
	now := time.Now()
	welcome, _ := proto.AppendWelcome(nil, &proto.Welcome{Transport: "enet", BodyFormat: BodyFormatOpaque})
	refuse, _ := proto.AppendRefuse(nil, &proto.Refuse{Reason: proto.ReasonRateLimited})
	kicked, _ := proto.AppendNotice(nil, &proto.Notice{Kind: proto.NoticeKicked})
	tests := []struct {
		name          string
		msgs          [][]byte
		disconnect    bool
		phase         phase
		reason        string
		protocolError int64
	}{
		{"welcome admits", [][]byte{welcome}, false, phaseJoined, "", 0},
		{"refuse names its reason", [][]byte{refuse}, false, phaseRefused, "rate_limited", 0},
		{"garbage before admission fails fast", [][]byte{{0x7f}}, false, phaseFailed, failProtocol, 1},
		{"a second welcome is a protocol error", [][]byte{welcome, welcome}, false, phaseJoined, "", 1},
		{"garbage after admission is counted", [][]byte{welcome, {0x7f}}, false, phaseJoined, "", 1},
		{"leaving names the disconnect", [][]byte{welcome, kicked}, true, phaseLost, lostKicked, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := w.protocolErrors
			c := newClient(0, "weave", nil, now, w.proto.NewBot(0))
			c.host, c.phase = discardHost{}, phaseConnecting
			c.onConnect(now)
			if c.phase != phaseJoining {
				t.Fatalf("after connect: phase %d", c.phase)
			}
			for _, m := range tc.msgs {
				c.onMessage(w, m, now, now)
			}
			if tc.disconnect {
				c.onDisconnect(transport.Event{Kind: transport.EventDisconnect, Data: 7}, now)
			}
			if c.phase != tc.phase || c.reason != tc.reason || w.protocolErrors-before != tc.protocolError {
				t.Errorf("phase %d reason %q protocol errors %d; want %d %q %d", c.phase, c.reason, w.protocolErrors-before, tc.phase, tc.reason, tc.protocolError)
			}
		})
	}
}

// TestClientSendFailureEndsIt: a send the protocol makes that fails ends
// the client with send_error, whichever call made it.
func TestClientSendFailureEndsIt(t *testing.T) {
	w := newWorker(0, &Config{}, nil, time.Second/60)
	c := newClient(0, "weave", nil, time.Now(), w.proto.NewBot(0))
	c.host, c.phase = failingHost{}, phaseConnecting
	c.onConnect(time.Now())
	if c.phase != phaseFailed || c.reason != failSend {
		t.Errorf("phase %d reason %q, want failed %s", c.phase, c.reason, failSend)
	}
}

type failingHost struct{ discardHost }

func (failingHost) Send(transport.PeerID, transport.Delivery, []byte) error {
	return transport.ErrClosed
}

// TestStateWithoutTickStretch: an impaired run's stretches count updates
// without a tick but give no tick rate from them.
func TestStateWithoutTickStretch(t *testing.T) {
	var a stretchAcc
	base := time.Unix(0, 0)
	for i := range 5 {
		a.snapshot(false, 0, base.Add(time.Duration(i)*100*time.Millisecond), 10, 0)
	}
	if a.snaps != 5 || !math.IsNaN(a.tickHz()) || a.kbs() <= 0 {
		t.Errorf("snaps %d tickHz %v kbs %v", a.snaps, a.tickHz(), a.kbs())
	}
}

// TestProtocolHotPathAllocatesNothing: through the Protocol interface, one v1
// state update (opaque, and a decoded sg-entities body) and one tick's
// Input allocate nothing per client-tick, as before the interface.
func TestProtocolHotPathAllocatesNothing(t *testing.T) {
	for _, format := range []string{BodyFormatOpaque, snapshot.BodyFormat} {
		w := newWorker(0, &Config{}, nil, time.Second/60)
		c := welcomedClient(t, w, format)
		c.host = discardHost{}
		c.pattern = patterns["weave"](0, 1)
		msg := snapshotBytes(t, 8)
		now := time.Now()
		if n := testing.AllocsPerRun(1000, func() {
			c.onMessage(w, msg, now, now)
			c.sendInput(w, now)
		}); n != 0 {
			t.Errorf("%s: %v allocations per snapshot and input", format, n)
		}
		if c.decodeErrors != 0 || c.inputs == 0 {
			t.Errorf("%s: decode errors %d, inputs %d", format, c.decodeErrors, c.inputs)
		}
	}
}

// TestReportWarnsOfStarvedClients: a client admitted long before the end
// and held, that got no state updates, is named in the warnings (nothing
// else in the report would show it: it has no rates to pull a minimum
// down); one admitted just before the end is not.
func TestReportWarnsOfStarvedClients(t *testing.T) {
	cfg := Config{Clients: 3, RateHz: 60, Mix: Mix{{Name: "weave", Weight: 1}}}
	w := newWorker(0, &cfg, nil, time.Second/60)
	start := time.Unix(3000, 0)
	end := start.Add(10 * time.Second)
	for i := range 3 {
		c := newClient(i, "weave", nil, start, w.proto.NewBot(i))
		c.phase, c.welcomedAt = phaseDone, start.Add(time.Second)
		w.add(c)
	}
	w.clients[0].snaps = 500
	w.clients[2].welcomedAt = end.Add(-time.Second) // admitted just before the end
	r := buildReport(&cfg, []*worker{w}, start, end)
	if got := strings.Join(r.Warnings, "\n"); !strings.Contains(got, "1 admitted client(s) held to the end received fewer than two state updates") {
		t.Errorf("warnings %q", r.Warnings)
	}
}
