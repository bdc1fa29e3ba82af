package server

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// joined connects peer id from ip and joins it.
func (ts *testServer) joined(t *testing.T, id transport.PeerID, ip string) {
	t.Helper()
	ts.h.connect(id, ip, proto.ConnectData)
	ts.h.recv(id, joinMsg(t, "x"))
	ts.step()
	if ts.peers[id] == nil || ts.peers[id].state != peerJoined {
		t.Fatalf("peer %d did not join", id)
	}
}

// TestStrikesSlideAcrossTheWindowEdge: garbageKick malformed messages within
// any garbageWindow kick the peer, wherever they fall. A counter reset
// every garbageWindow from the first strike let 61 bad messages in 1.5 s
// through when they straddled the reset.
func TestStrikesSlideAcrossTheWindowEdge(t *testing.T) {
	type burst struct {
		at    time.Duration // after the first strike
		n     int
		every time.Duration
	}
	cases := []struct {
		name   string
		bursts []burst
		kicked bool
	}{
		{"61 in 1.5 s across the edge", []burst{{0, 1, 0}, {8500 * time.Millisecond, 30, 50 * time.Millisecond}, {10010 * time.Millisecond, 30, 10 * time.Millisecond}}, true},
		{"31 then 31 a window apart", []burst{{0, 31, time.Millisecond}, {10001 * time.Millisecond, 31, time.Millisecond}}, false},
		{"31 spread then 1 just inside", []burst{{0, 31, 100 * time.Millisecond}, {9990 * time.Millisecond, 1, 0}}, true},
		{"31 spread then 1 after the first left", []burst{{0, 31, 100 * time.Millisecond}, {10001 * time.Millisecond, 1, 0}}, false},
		{"32 at once", []burst{{0, garbageKick, 0}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(c *Config) { c.Server.IdleTimeoutS = 3600 })
			ts.joined(t, 1, "127.0.0.1")
			p := ts.peers[1]
			t0 := ts.now
			sent := 0
			for _, b := range tc.bursts {
				for i := range b.n {
					ts.malformed(p, t0.Add(b.at+time.Duration(i)*b.every), 1)
					sent++
				}
			}
			if got := p.state == peerClosing; got != tc.kicked {
				t.Fatalf("after %d malformed messages: kicked %v, want %v", sent, got, tc.kicked)
			}
			if ts.met.malformed != int64(sent) {
				t.Fatalf("malformed counted %d, want %d", ts.met.malformed, sent)
			}
		})
	}
}

// TestKickLogRateLimited: a flood of kicks writes at most one line a second;
// the rest are counted in the metrics file and named on the next line.
func TestKickLogRateLimited(t *testing.T) {
	var logs bytes.Buffer
	ts := newTestServer(t, nil)
	ts.log.SetOutput(&logs)
	const peers = 200
	for i := range peers {
		ts.h.connect(transport.PeerID(i+1), "127.0.0.1", proto.ConnectData)
	}
	ts.cfg.Security.MaxConnectionsPerIP = 0
	ts.admit.perIPMax = 0
	ts.admit.limit = 1 << 20
	ts.step()
	for i := range peers {
		for range garbageKick {
			ts.h.recv(transport.PeerID(i+1), []byte{0xee})
		}
	}
	ts.step() // all 200 kicked within one tick
	if ts.met.kicked != peers {
		t.Fatalf("kicked %d, want %d", ts.met.kicked, peers)
	}
	lines := strings.Count(logs.String(), "kicked after")
	if lines != 1 {
		t.Fatalf("%d kick lines for %d kicks in one tick, want 1:\n%s", lines, peers, logs.String())
	}
	if ts.met.kickLogsSuppressed != peers-1 {
		t.Fatalf("suppressed %d, want %d", ts.met.kickLogsSuppressed, peers-1)
	}
	st := ts.met.build(snapshotInputs{})
	if st.KickLogsSuppressed != peers-1 {
		t.Fatalf("metrics kick_logs_suppressed %d", st.KickLogsSuppressed)
	}
	// A second later the next kick is logged and names what was held back.
	ts.now = ts.now.Add(time.Second)
	ts.h.connect(1000, "127.0.0.1", proto.ConnectData)
	ts.step()
	for range garbageKick {
		ts.h.recv(1000, []byte{0xee})
	}
	ts.step()
	if !strings.Contains(logs.String(), "199 kick line(s) not logged") {
		t.Fatalf("held-back count not named:\n%s", logs.String())
	}
}

// TestTransportMalformedStrikes: a backend's EventMalformed (datagrams it
// dropped before they became messages) counts and strikes like a bad
// message, so a peer flooding bogus fragments is kicked.
func TestTransportMalformedStrikes(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.joined(t, 1, "127.0.0.1")
	ts.h.events = append(ts.h.events, transport.Event{Kind: transport.EventMalformed, Peer: 1, Data: 10})
	ts.step()
	if ts.met.malformed != 10 || ts.peers[1].state == peerClosing {
		t.Fatalf("after 10: malformed %d, state %v", ts.met.malformed, ts.peers[1].state)
	}
	ts.h.events = append(ts.h.events, transport.Event{Kind: transport.EventMalformed, Peer: 1, Data: garbageKick})
	ts.step()
	if ts.met.malformed != 10+garbageKick || ts.met.kicked != 1 {
		t.Fatalf("malformed %d kicked %d", ts.met.malformed, ts.met.kicked)
	}
	if _, ok := ts.h.disconnected[1]; !ok {
		t.Fatal("peer not disconnected")
	}
}

// TestConnectGuardConfigRanges: the guard's keys are range-checked and named.
func TestConnectGuardConfigRanges(t *testing.T) {
	cases := []struct {
		key string
		mut func(*Config)
		ok  bool
	}{
		{"", func(c *Config) {}, true},
		{"", func(c *Config) { c.Security.SourceConnectLimitCount = 0; c.Security.HalfOpenTimeoutS = 0 }, true},
		{"security.source_connect_limit_count", func(c *Config) { c.Security.SourceConnectLimitCount = 17 }, false},
		{"security.source_connect_limit_count", func(c *Config) { c.Security.SourceConnectLimitCount = -1 }, false},
		{"security.source_connect_limit_window_s", func(c *Config) { c.Security.SourceConnectLimitWindowS = 0 }, false},
		{"security.half_open_timeout_s", func(c *Config) { c.Security.HalfOpenTimeoutS = 0.05 }, false},
		{"security.half_open_timeout_s", func(c *Config) { c.Security.HalfOpenTimeoutS = 601 }, false},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.mut(&c)
		err := c.Validate()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), tc.key)) {
			t.Errorf("%s: %v", tc.key, err)
		}
	}
}

// TestMaxClientMessage pins maxClientMessage to the largest Join and keeps
// the transport's receive cap above it.
func TestMaxClientMessage(t *testing.T) {
	long := string(make([]byte, proto.MaxString))
	b, err := proto.AppendJoin(nil, &proto.Join{ClientIndex: 1, EntityType: long, Name: long})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != maxClientMessage {
		t.Fatalf("largest Join is %d bytes, maxClientMessage %d", len(b), maxClientMessage)
	}
	if in := proto.AppendInput(nil, &proto.Input{}); len(in) > maxClientMessage {
		t.Fatalf("Input %d bytes", len(in))
	}
	if maxRecvMessage < maxClientMessage {
		t.Fatalf("receive cap %d below the largest client message %d", maxRecvMessage, maxClientMessage)
	}
}
