package swarm

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	_ "github.com/scalegate/scalegate/internal/load/transport/udp" // registers "udp" (Linux)
)

// closeBot is a Bot that maps the server's close codes it knows (a
// CloseReader); codes it does not know it leaves to the engine.
type closeBot struct {
	noopBot
	codes map[uint32]Msg
}

func (b closeBot) Closed(code uint32, _ string) Msg { return b.codes[code] }

// noopBot is a Bot with nothing to say.
type noopBot struct{}

func (noopBot) Connected(Conn) error                                { return nil }
func (noopBot) Receive(Conn, []byte) (Msg, error)                   { return Msg{}, nil }
func (noopBot) Input([]byte, *Control) ([]byte, transport.Delivery) { return nil, 0 }

// TestDisconnectReasons: how a client's end is named from its transport's
// EventDisconnect, in each phase: a failed connect says why, a close with
// an application code before admission is a refusal with the code and
// text, after it the loss's reason; a CloseReader's mapping wins; other
// codes stay transport_disconnect, a timeout transport_timeout; a
// Leaving the server announced names what follows.
func TestDisconnectReasons(t *testing.T) {
	maps := map[uint32]Msg{4003: {Kind: MsgRefused, Reason: "server_full"}, 4010: {Kind: MsgLeaving, Reason: "kicked_for_afk"},
		4020: {Kind: MsgRefused}}
	hostile := "\x1b[2Jx" + strings.Repeat("é", 40) // 85 bytes: byte 64 is inside an é, so the cut steps back to 63
	for _, tc := range []struct {
		name    string
		bot     Bot
		phase   phase
		leaving string
		ev      transport.Event
		want    phase
		reason  string
	}{
		{"dial refused by HTTP", noopBot{}, phaseConnecting, "", transport.Event{Payload: []byte("HTTP 403 Forbidden")}, phaseFailed, "connect_error (HTTP 403 Forbidden)"},
		{"connect timeout", noopBot{}, phaseConnecting, "", transport.Event{}, phaseFailed, "connect_error"},
		{"app close before admission", noopBot{}, phaseJoining, "", transport.Event{Data: 4003, Payload: []byte("server full")}, phaseRefused, "close_4003 (server full)"},
		{"app close without text", noopBot{}, phaseJoining, "", transport.Event{Data: 4999}, phaseRefused, "close_4999"},
		{"app close after admission", noopBot{}, phaseJoined, "", transport.Event{Data: 4001, Payload: []byte("kicked")}, phaseLost, "close_4001 (kicked)"},
		{"hostile close text", noopBot{}, phaseJoining, "", transport.Event{Data: 4000, Payload: []byte(hostile)}, phaseRefused,
			"close_4000 (\\x1b[2Jx" + strings.Repeat("é", 29) + "…)"},
		{"going away before admission", noopBot{}, phaseJoining, "", transport.Event{Data: 1001, Payload: []byte("restart")}, phaseFailed, "transport_disconnect"},
		{"going away after admission", noopBot{}, phaseJoined, "", transport.Event{Data: 1001}, phaseLost, "transport_disconnect"},
		{"timeout", noopBot{}, phaseJoined, "", transport.Event{Data: transport.ReasonTimeout}, phaseLost, "transport_timeout"},
		{"announced", noopBot{}, phaseJoined, "shutdown", transport.Event{Data: 4001}, phaseLost, "shutdown"},
		{"mapped refusal", closeBot{codes: maps}, phaseJoining, "", transport.Event{Data: 4003, Payload: []byte("full")}, phaseRefused, "server_full"},
		{"mapped refusal, no reason", closeBot{codes: maps}, phaseJoining, "", transport.Event{Data: 4020, Payload: []byte("x")}, phaseRefused, "close_4020 (x)"},
		{"mapped refusal after admission", closeBot{codes: maps}, phaseJoined, "", transport.Event{Data: 4003}, phaseLost, "server_full"},
		{"mapped kick", closeBot{codes: maps}, phaseJoined, "", transport.Event{Data: 4010}, phaseLost, "kicked_for_afk"},
		{"mapped code outside the range", closeBot{codes: map[uint32]Msg{1008: {Kind: MsgRefused, Reason: "policy"}}}, phaseJoining, "",
			transport.Event{Data: 1008}, phaseRefused, "policy"},
		{"unmapped code", closeBot{codes: maps}, phaseJoining, "", transport.Event{Data: 4004, Payload: []byte("banned")}, phaseRefused, "close_4004 (banned)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(0, "idle", nil, time.Now(), tc.bot)
			c.phase, c.leaving = tc.phase, tc.leaving
			tc.ev.Kind = transport.EventDisconnect
			c.onDisconnect(tc.ev, time.Now())
			if c.phase != tc.want || c.reason != tc.reason {
				t.Errorf("ended in phase %d as %q, want %d as %q", c.phase, c.reason, tc.want, tc.reason)
			}
		})
	}
}

// TestRawUDPHasNoTransportTimeout: over raw UDP a server that never
// answers the join ends the clients by the swarm's own clock,
// join_timeout, at the connect timeout, not as transport_timeout when the
// UDP host forgets a peer it heard nothing from (--timeout-s, shorter).
func TestRawUDPHasNoTransportTimeout(t *testing.T) {
	if _, err := transport.Lookup("udp"); err != nil {
		t.Fatal(err) // the test file links raw UDP: unregistered is a bug, not a skip
	}
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	cfg := Config{Addr: silent.LocalAddr().String(), Transport: "udp", Clients: 3, Duration: 4 * time.Second,
		Ramp: 10 * time.Millisecond, Timeout: time.Second, ConnectTimeout: 2 * time.Second, Mix: Mix{{Name: "idle", Weight: 1}}}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.ClientsNeverConnected != 3 || r.NeverConnectedByReason[failJoinTimeout] != 3 {
		t.Errorf("never connected %d %v, want all 3 as %s", r.ClientsNeverConnected, r.NeverConnectedByReason, failJoinTimeout)
	}
}
