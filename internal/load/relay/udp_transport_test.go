//go:build linux

package relay_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/load/transport/udp"
)

// The relay impairs the raw UDP transport, which has no ENet or QUIC
// framing to lean on: every message is one bare datagram, so the relay's
// counts and what the hosts received must agree exactly. Two clients each
// send 1,000 numbered messages up through their own relay link while a
// phase drops 30 % and duplicates 10 % of the upstream and delays the
// downstream by 40 ms.
func TestRelayImpairsRawUDP(t *testing.T) {
	sh, err := transport.Listen(udp.Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", sh)
	sched, err := impairment.Schedule{
		{Name: "up", StartS: 0, DurationS: 3600, Direction: impairment.DirUp, Settings: impairment.Settings{Loss: 0.3, Duplicate: 0.1}},
	}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Server: sh.Addr(), Links: 2, Schedule: sched, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	const clients, n = 2, 1000
	var pairs []*transporttest.Pair
	for i := range clients {
		pairs = append(pairs, transporttest.ConnectVia(t, udp.Name, server, r.Addr(i), 0, transport.Options{}, expect(t, r, i)))
	}
	// Each client's opening message crossed the lossy link: the relay's
	// decisions are seeded per link and direction, and with seed 7 both
	// first datagrams pass (a model change that drops one fails ConnectTo
	// by name, never silently). Count from here.
	base := r.Stats()
	eps := []*transporttest.Endpoint{server}
	for _, p := range pairs {
		eps = append(eps, p.Client)
	}
	var msg [8]byte
	received := 0
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for seq := range n {
		<-tick.C // paced: the relay, not a socket buffer, decides what is lost
		for _, p := range pairs {
			binary.LittleEndian.PutUint64(msg[:], uint64(seq))
			if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, msg[:]); err != nil {
				t.Fatal(err)
			}
		}
		server.Service()
		received += len(server.TakeAll(transporttest.IsKind(transport.EventReceive)))
	}
	relayed := func() impairment.Stats {
		st := r.Stats()
		st.DatagramsUp -= base.DatagramsUp
		st.DroppedUp -= base.DroppedUp
		st.Duplicated -= base.Duplicated
		return st
	}
	transporttest.WaitUntil(t, "the relay to read every datagram", func() bool {
		return relayed().DatagramsUp == clients*n
	}, eps...)
	transporttest.WaitUntil(t, "every datagram the relay passed", func() bool {
		received += len(server.TakeAll(transporttest.IsKind(transport.EventReceive)))
		st := relayed()
		return int64(received) >= st.DatagramsUp-st.DroppedUp+st.Duplicated
	}, eps...)
	st := relayed()
	if want := st.DatagramsUp - st.DroppedUp + st.Duplicated; int64(received) != want || st.Overflow != 0 {
		t.Errorf("server received %d messages, relay passed %d (read %d, dropped %d, duplicated %d, overflow %d)",
			received, want, st.DatagramsUp, st.DroppedUp, st.Duplicated, st.Overflow)
	}
	if f := float64(st.DroppedUp) / float64(st.DatagramsUp); f < 0.25 || f > 0.35 {
		t.Errorf("relay dropped %.3f of the upstream, want 0.3 ± 0.05", f)
	}
	if st.Duplicated == 0 || st.DroppedDown != 0 {
		t.Errorf("stats %+v: want duplicates up and nothing dropped down", st)
	}
	t.Logf("relay over raw UDP: read %d, dropped %d, duplicated %d; server received %d", st.DatagramsUp, st.DroppedUp, st.Duplicated, received)
}

// The relay delays raw UDP datagrams as configured: a 40 ms downstream
// delay makes a server reply take at least 40 ms to reach its client.
func TestRelayDelaysRawUDP(t *testing.T) {
	sh, err := transport.Listen(udp.Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", sh)
	sched, err := impairment.Schedule{{StartS: 0, DurationS: 3600, Direction: impairment.DirDown, Settings: impairment.Settings{DelayMs: 40}}}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	r, err := relay.New(relay.Config{Server: sh.Addr(), Links: 1, Schedule: sched, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	p := transporttest.ConnectVia(t, udp.Name, server, r.Addr(0), 0, transport.Options{}, expect(t, r, 0))
	for i := range 5 {
		t0 := time.Now()
		if err := p.Server.Host.Send(p.SPeer, transport.Unreliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		ev := transporttest.WaitEvent(t, "delayed reply", p.Client, transporttest.IsKind(transport.EventReceive), p.Both()...)
		if took := time.Since(t0); took < 40*time.Millisecond || ev.Payload[0] != byte(i) {
			t.Errorf("reply %d (%v) arrived after %v, want ≥ 40 ms", i, ev.Payload, took)
		}
	}
	if st := r.Stats(); st.Delayed < 5 {
		t.Errorf("relay delayed %d datagrams, want ≥ 5", st.Delayed)
	}
}

// expect tells relay link i the client host's socket before it sends: the
// relay relays only its own client's datagrams.
func expect(t *testing.T, r *relay.Relay, i int) func(transport.Host) {
	return func(h transport.Host) {
		if err := r.Expect(i, h.Addr()); err != nil {
			t.Fatal(err)
		}
	}
}
