package bot

import (
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// The public types cross to the engine's by conversion, not by copying
// field by field: their values must stay the same. A change that breaks
// one of these breaks the build.
var (
	_ = [1]struct{}{}[swarm.MsgState-swarm.MsgKind(State)]
	_ = [1]struct{}{}[swarm.MsgAdmitted-swarm.MsgKind(Admitted)]
	_ = [1]struct{}{}[swarm.MsgRefused-swarm.MsgKind(Refused)]
	_ = [1]struct{}{}[swarm.MsgPong-swarm.MsgKind(Pong)]
	_ = [1]struct{}{}[swarm.MsgLeaving-swarm.MsgKind(Leaving)]
	_ = [1]struct{}{}[transport.Unreliable-transport.Delivery(Unreliable)]
	_ = (*swarm.Control)((*Controls)(nil)) // identical layout
)

// protocol is a Game as the engine's swarm.Protocol.
type protocol struct{ g Game }

func (p protocol) Name() string        { return p.g.Name }
func (p protocol) ConnectData() uint32 { return p.g.ConnectData }

// Target is the Game's Target, or hostport (swarm.Targeter).
func (p protocol) Target(index int, hostport string) string {
	if p.g.Target == nil {
		return hostport
	}
	return p.g.Target(index, hostport)
}

// Header is the Game's Header, or none (swarm.Headerer).
func (p protocol) Header(index int) map[string][]string {
	if p.g.Header == nil {
		return nil
	}
	return p.g.Header(index)
}

func (p protocol) NewWorker(cfg *swarm.Config) swarm.WorkerProtocol {
	return &worker{g: p.g, entityType: cfg.EntityType, skipBodies: cfg.SkipBodyDecode}
}

// worker makes one worker's bots; they share nothing else.
type worker struct {
	g          Game
	entityType string
	skipBodies bool
}

func (w *worker) NewBot(index int) swarm.Bot {
	p := w.g.New(index)
	return &adapter{p: p, conn: Conn{index: index, entityType: w.entityType}}
}

func (w *worker) Warnings() []string {
	if w.skipBodies {
		return []string{fmt.Sprintf("--decode-bodies=false has no effect on protocol %s: its Receive decodes what it always decodes", w.g.Name)}
	}
	return nil
}

func (w *worker) Close() {}

// adapter is one bot's Protocol as the engine's swarm.Bot.
type adapter struct {
	p    Protocol
	conn Conn
}

func (a *adapter) Connected(c swarm.Conn) error {
	a.conn.c = c
	return a.p.Connected(&a.conn)
}

func (a *adapter) Receive(c swarm.Conn, msg []byte) (swarm.Msg, error) {
	a.conn.c = c
	m, err := a.p.Receive(&a.conn, msg)
	if m.Kind > Leaving {
		return swarm.Msg{}, fmt.Errorf("bot: %T.Receive returned unknown kind %d", a.p, m.Kind)
	}
	return swarm.Msg{Kind: swarm.MsgKind(m.Kind), HasTick: m.HasTick, HasEntities: m.HasEntities,
		Tick: m.Tick, Entities: m.Entities, Token: m.Token, Reason: m.Reason, AnnouncedHz: m.AnnouncedHz,
		HasInputAck: m.HasInputAck, InputAck: m.InputAck}, err
}

func (a *adapter) Input(buf []byte, ctl *swarm.Control) ([]byte, transport.Delivery) {
	msg, d := a.p.Controls(buf, (*Controls)(ctl))
	return msg, transport.Delivery(d)
}

// Parts hands the engine the protocol's optional parts (swarm.Parts):
// exactly those the Protocol has, each nil when it does not.
func (a *adapter) Parts() (swarm.Pinger, swarm.Waiter, swarm.Leaver) {
	var (
		pg swarm.Pinger
		wt swarm.Waiter
		lv swarm.Leaver
	)
	if p, ok := a.p.(Pinger); ok {
		pg = pingPart{a, p}
	}
	if p, ok := a.p.(Waiter); ok {
		wt = waitPart{a, p}
	}
	if p, ok := a.p.(Leaver); ok {
		lv = leavePart{a, p}
	}
	return pg, wt, lv
}

// Closed is the protocol's CloseReader answer as the engine's
// (swarm.CloseReader). Every adapter has it, unlike the parts Parts hands out: a
// protocol without Closed answers the zero Msg, which is the engine's own
// rule, so having the method changes nothing for it. Only Refused and
// Leaving mean something to the engine here; any other Kind is the zero
// Msg.
func (a *adapter) Closed(code uint32, reason string) swarm.Msg {
	cr, ok := a.p.(CloseReader)
	if !ok {
		return swarm.Msg{}
	}
	switch m := cr.Closed(code, reason); m.Kind {
	case Refused, Leaving:
		return swarm.Msg{Kind: swarm.MsgKind(m.Kind), Reason: m.Reason}
	}
	return swarm.Msg{}
}

// pingPart, waitPart and leavePart are a Pinger's, a Waiter's and a
// Leaver's methods as the engine's.
type pingPart struct {
	a  *adapter
	pg Pinger
}

func (p pingPart) Ping(c swarm.Conn, token uint32) error {
	p.a.conn.c = c
	return p.pg.Ping(&p.a.conn, token)
}

type waitPart struct {
	a  *adapter
	wt Waiter
}

func (w waitPart) Waiting(c swarm.Conn, waited time.Duration) error {
	w.a.conn.c = c
	return w.wt.Waiting(&w.a.conn, waited)
}

type leavePart struct {
	a  *adapter
	lv Leaver
}

func (l leavePart) Leave(c swarm.Conn) error {
	l.a.conn.c = c
	return l.lv.Leave(&l.a.conn)
}
