package swarm

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// TestStraysBeforeTheClientsDoNotStopThem: datagrams sent to every relay
// port before any client exists (something else on the machine) are
// counted as stray and reported as the harness's, and every client still
// connects through its own link. Before, the strays took 5 of 8 links
// over and the gate failed admission, blaming the server.
func TestStraysBeforeTheClientsDoNotStopThem(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 200), 0)
	stray, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	const clients, perLink = 8, 4
	relayStarted = func(rl *relay.Relay) {
		for i := range rl.Links() {
			to, _ := net.ResolveUDPAddr("udp4", rl.Addr(i))
			for range perLink {
				stray.WriteToUDP([]byte("stray"), to)
			}
		}
		// Every stray is read before the first client dials.
		// Not the test's goroutine: Poll, and t.Error rather than t.Fatal.
		err := livetest.Poll(context.Background(), 20*time.Second, nil, func() (bool, string) {
			n := rl.Stats().Stray
			return n >= clients*perLink, fmt.Sprintf("only %d of %d strays read", n, clients*perLink)
		})
		if err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { relayStarted = nil })
	sched, _ := impairment.Schedule{{StartS: 2, DurationS: 1, Settings: impairment.Settings{DelayMs: 5}}}.Normalize()
	cfg := Config{Addr: srv.addr, Clients: clients, Duration: 3 * time.Second, Ramp: 10 * time.Millisecond,
		Mix: Mix{{Name: "weave", Weight: 1}}, Threads: 2, Impairment: sched}
	r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	if r.ClientsConnected != clients || r.ClientsNeverConnected != 0 {
		t.Fatalf("connected %d of %d, never connected %d %v: strays took links over", r.ClientsConnected, clients, r.ClientsNeverConnected, r.NeverConnectedByReason)
	}
	if r.Relay == nil || r.Relay.Stray < clients*perLink {
		t.Fatalf("relay block %+v: want stray ≥ %d", r.Relay, clients*perLink)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || strings.Contains(w, "stray datagram(s) dropped") && strings.Contains(w, "not its doing")
	}
	if !found {
		t.Errorf("warnings %q: want one saying the strays are not the server's doing", r.Warnings)
	}
}
