package main

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

func TestParseStacks(t *testing.T) {
	cases := []struct {
		spec string
		want int // stacks; -1: an error
	}{
		{"host", 1},
		{"bare", 1},
		{"host,bare", 2},
		{"bare,host,bare", 3},
		{"", -1},
		{"quic", -1},
		{"host,", -1},
		{"host, bare", -1},
	}
	for _, c := range cases {
		got, err := parseStacks(c.spec)
		switch {
		case c.want < 0 && err == nil:
			t.Errorf("parseStacks(%q) = %v, want an error", c.spec, got)
		case c.want >= 0 && (err != nil || len(got) != c.want):
			t.Errorf("parseStacks(%q) = %v, %v; want %d stacks", c.spec, got, err, c.want)
		}
	}
}

func snapshotAt(tick uint32) []byte {
	p := make([]byte, 16)
	p[0] = byte(proto.TypeSnapshot)
	binary.LittleEndian.PutUint32(p[1:], tick)
	return p
}

func TestTickWindow(t *testing.T) {
	cases := []struct {
		name        string
		ticks       []uint32
		short       int // payloads too short to carry a tick
		snaps, sent int
		first, last uint32
	}{
		{"none", nil, 0, 0, 0, 0, 0},
		{"every tick", []uint32{7, 8, 9, 10}, 0, 4, 4, 7, 10},
		{"one lost", []uint32{7, 8, 10}, 0, 3, 4, 7, 10},
		{"reordered", []uint32{7, 9, 8}, 0, 3, 3, 7, 9},
		{"short payloads are not snapshots", []uint32{3}, 2, 1, 1, 3, 3},
	}
	for _, c := range cases {
		var w tickWindow
		for range c.short {
			w.add([]byte{byte(proto.TypeSnapshot), 1})
		}
		for _, tk := range c.ticks {
			w.add(snapshotAt(tk))
		}
		if w.snaps != c.snaps || w.sent() != c.sent || w.first != c.first || w.last != c.last {
			t.Errorf("%s: snaps %d sent %d window %d..%d, want %d %d %d..%d",
				c.name, w.snaps, w.sent(), w.first, w.last, c.snaps, c.sent, c.first, c.last)
		}
	}
}

// TestStacks runs each stack's load server in this process and two of its
// clients against it until every client has counted snapshots from the
// server's ticks and is still up: the path a measurement leg takes.
func TestStacks(t *testing.T) {
	servers := map[string]func(context.Context, int, func(string)) error{
		stackHost: runServer,
		stackBare: runBareServer,
	}
	for stack, run := range servers {
		t.Run(stack, func(t *testing.T) {
			var mu sync.Mutex
			addr := ""
			srv := livetest.Go(t, stack+" load server", func(ctx context.Context) error {
				return run(ctx, 200, func(a string) { mu.Lock(); addr = a; mu.Unlock() })
			})
			livetest.Eventually(t, livetest.Wait, func() (bool, string) {
				if ok, _ := livetest.Closed("", srv.Done())(); ok {
					t.Fatalf("server ended before listening: %v", srv.Err())
				}
				mu.Lock()
				defer mu.Unlock()
				return addr != "", "the server has not reported its address"
			})
			var cs []client
			defer func() {
				for _, c := range cs {
					c.close()
				}
			}()
			for range 2 {
				c, err := dial(t.Context(), stack, nil, addr)
				if err != nil {
					t.Fatal(err)
				}
				cs = append(cs, c)
			}
			input := proto.AppendInput(nil, &proto.Input{Seq: 1})
			livetest.Eventually(t, livetest.Wait, livetest.Holds("every client up with 3 snapshots counted", func() bool {
				return allCounted(t, cs, input)
			}))
			for i, c := range cs {
				if w := c.window(); w.sent() < w.snaps || w.first == 0 {
					t.Errorf("client %d: window %+v", i, w)
				}
				if c.rtt() <= 0 {
					t.Errorf("client %d: rtt %v", i, c.rtt())
				}
				c.reset()
				if w := c.window(); w.snaps != 0 || w.sent() != 0 {
					t.Errorf("client %d: after reset %+v", i, w)
				}
			}
		})
	}
}

// allCounted steps every client once and reports whether each is up and
// has counted at least 3 snapshots; a client that is gone fails the test.
func allCounted(t *testing.T, cs []client, input []byte) bool {
	t.Helper()
	all := true
	for i, c := range cs {
		up, gone := c.step(input)
		if gone {
			t.Fatalf("client %d is gone", i)
		}
		all = all && up && c.window().snaps >= 3
	}
	return all
}
