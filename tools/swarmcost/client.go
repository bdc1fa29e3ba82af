package main

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/quic"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// client is one measured client, on either stack.
type client interface {
	// step does one tick's work: service the client (the host stack; the
	// bare stack's reader goroutine already did) and send the Input once
	// connected. It reports whether the client is up and whether it is gone.
	step(input []byte) (up, gone bool)
	// window returns the snapshots counted since the last reset.
	window() tickWindow
	// reset restarts the count (after the warm-up).
	reset()
	// rtt is the connection's smoothed round-trip time.
	rtt() time.Duration
	// close ends the connection.
	close()
}

// tickWindow counts snapshots by the server tick each carries (bytes 1–4,
// little-endian, after the type byte), so that delivered = received ÷
// sent in the window, whatever rate a loaded server managed.
type tickWindow struct {
	snaps int
	first uint32 // server tick of the first snapshot counted
	last  uint32 // server tick of the latest snapshot
}

// add counts one snapshot payload; shorter ones carry no tick and are not
// counted.
func (w *tickWindow) add(p []byte) {
	if len(p) < 5 {
		return
	}
	tick := binary.LittleEndian.Uint32(p[1:])
	if w.snaps == 0 {
		w.first = tick
	}
	w.last = max(w.last, tick)
	w.snaps++
}

// sent is how many ticks the server sent in the window.
func (w tickWindow) sent() int {
	if w.snaps == 0 {
		return 0
	}
	return int(w.last-w.first) + 1
}

// hostClient is a client through scalegate's QUIC host.
type hostClient struct {
	h         transport.Host
	peer      transport.PeerID
	connected bool
	gone      bool
	w         tickWindow
}

// dialHost makes a host (its own socket, or one from pool) and connects it.
func dialHost(pool *quic.SocketPool, addr string) (*hostClient, error) {
	var h transport.Host
	var err error
	if pool == nil {
		h, err = transport.Dial(quic.Name, transport.Options{})
	} else {
		h, err = pool.Dial(transport.Options{})
	}
	if err != nil {
		return nil, err
	}
	c := &hostClient{h: h}
	if c.peer, err = h.Connect(addr, proto.ConnectData); err != nil {
		_ = h.Close()
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	return c, nil
}

func (c *hostClient) step(input []byte) (up, gone bool) {
	_, _ = c.h.Service(func(ev transport.Event) {
		switch ev.Kind {
		case transport.EventConnect:
			c.connected = true
		case transport.EventDisconnect:
			c.gone = true
		case transport.EventReceive:
			c.w.add(ev.Payload)
		}
	})
	up = c.connected && !c.gone
	if up {
		_ = c.h.Send(c.peer, transport.Unreliable, input)
	}
	return up, c.gone
}

func (c *hostClient) window() tickWindow { return c.w }

func (c *hostClient) reset() { c.w = tickWindow{} }

func (c *hostClient) rtt() time.Duration { return c.h.RTT(c.peer) }

func (c *hostClient) close() { _ = c.h.Close() }

// stats is the host's drop counters.
func (c *hostClient) stats() quic.Stats { return c.h.(*quic.Host).Stats() }
