//go:build cgo

package enet

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestBatchDeliversPerHost runs 8 client hosts through one Batch against a
// server that answers every client with messages naming it — some larger
// than the batch's payload buffer, and together more than it holds in one
// call — and checks that every event reaches the item of its own host,
// whole and in order, and that each client's uplink messages arrive.
func TestBatchDeliversPerHost(t *testing.T) {
	const n = 8
	srv := listenHost(t, transport.Options{MaxPeers: n})
	clients := make([]*Host, n)
	peers := make([]transport.PeerID, n)
	for i := range clients {
		clients[i] = dialHost(t, transport.Options{})
		p, err := clients[i].Connect(srv.Addr(), proto.ConnectData)
		if err != nil {
			t.Fatal(err)
		}
		peers[i] = p
	}
	b := backend{}.NewBatch().(*Batch)
	// Sizes per reply: small, one over the payload buffer (grow), and
	// enough in total to fill the buffer within one call (resume).
	sizes := []int{100, len(b.buf) + 1000, 90_000}
	connected := make([]bool, n)
	got := make([][]int, n) // reply sizes received, per client
	up := map[string]int{}  // uplink messages received by the server, per text
	srvPeerOf := map[transport.PeerID]int{}
	replied := false
	// One round: every client's send and service in one batch, then the
	// server's service (and, once every client has spoken, its replies).
	// Every round sends, so it reports no deliveries: the wait then paces
	// the rounds instead of flooding the uplink as fast as it can loop.
	round := func() int {
		b.Reset()
		for i, c := range clients {
			var msg []byte
			if connected[i] {
				msg = []byte(fmt.Sprintf("up %d", i))
			}
			if k := b.Add(c, peers[i], msg); k != i {
				t.Fatalf("Add returned %d, want %d", k, i)
			}
		}
		b.Run(func(item int, at time.Time, ev transport.Event) {
			if at.IsZero() || time.Since(at) > 10*time.Second {
				t.Errorf("item %d: turn time %v", item, at)
			}
			switch ev.Kind {
			case transport.EventConnect:
				connected[item] = true
			case transport.EventReceive:
				if want := fmt.Sprintf("to %d:", item); !bytes.HasPrefix(ev.Payload, []byte(want)) {
					t.Fatalf("item %d got a message for %q", item, ev.Payload[:min(len(ev.Payload), 12)])
				}
				got[item] = append(got[item], len(ev.Payload))
			}
		})
		for i := range clients {
			if _, sendErr, svcErr := b.Result(i); sendErr != nil || svcErr != nil {
				t.Fatalf("item %d: send %v, service %v", i, sendErr, svcErr)
			}
		}
		_, err := srv.Service(func(ev transport.Event) {
			switch ev.Kind {
			case transport.EventConnect:
				srvPeerOf[ev.Peer] = -1
			case transport.EventReceive:
				up[string(ev.Payload)]++
				var i int
				fmt.Sscanf(string(ev.Payload), "up %d", &i)
				srvPeerOf[ev.Peer] = i
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !replied && len(up) == n {
			for p, i := range srvPeerOf {
				for _, size := range sizes {
					msg := bytes.Repeat([]byte{'x'}, size)
					copy(msg, fmt.Sprintf("to %d:", i))
					if err := srv.Send(p, transport.Reliable, msg); err != nil {
						t.Fatal(err)
					}
				}
			}
			replied = true
		}
		return 0
	}
	livetest.EventuallyPumping(t, livetest.Wait, round, func() (bool, string) {
		done := replied
		for i := range got {
			done = done && len(got[i]) == len(sizes)
		}
		return done, fmt.Sprintf("connected %v, replies %v, uplink %v", connected, got, up)
	})
	for i := range got {
		for k, size := range sizes {
			if got[i][k] != size {
				t.Errorf("client %d reply %d: %d bytes, want %d", i, k, got[i][k], size)
			}
		}
	}
}

// TestBatchSendError: a send the host refuses, or a host closed before Run,
// is reported for its item and the item is not serviced; the others are.
func TestBatchSendError(t *testing.T) {
	srv := listenHost(t, transport.Options{})
	a, c := dialHost(t, transport.Options{}), dialHost(t, transport.Options{})
	pa, err := a.Connect(srv.Addr(), proto.ConnectData)
	if err != nil {
		t.Fatal(err)
	}
	gone := dialHost(t, transport.Options{})
	b := backend{}.NewBatch()
	b.Add(c, transport.PeerID(7), []byte("nobody")) // c has one peer slot: 7 is no peer
	b.Add(gone, 0, []byte("late"))
	b.Add(a, pa, nil)
	gone.Close() // closed between Add and Run: skipped, reported
	b.Run(func(int, time.Time, transport.Event) {})
	if _, sendErr, svcErr := b.Result(1); sendErr != nil || !errors.Is(svcErr, transport.ErrClosed) {
		t.Errorf("closed item: send %v, service %v, want ErrClosed", sendErr, svcErr)
	}
	if _, sendErr, _ := b.Result(0); !errors.Is(sendErr, transport.ErrUnknownPeer) {
		t.Errorf("item 0: send error %v, want ErrUnknownPeer", sendErr)
	}
	if _, sendErr, svcErr := b.Result(2); sendErr != nil || svcErr != nil {
		t.Errorf("item 2: %v, %v", sendErr, svcErr)
	}
}
