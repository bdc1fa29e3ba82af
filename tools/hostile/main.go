// Command hostile attacks a scalegate server on loopback. It attacks the way
// the figures in docs/security.md were measured: forged ENet CONNECT floods,
// raw UDP garbage, ENet peers sending malformed messages, one oversize
// message, and QUIC connections sending bogus fragment datagrams. It only
// ever targets 127.0.0.1 or ::1.
//
//	go run ./tools/hostile -attack connect-flood -addr 127.0.0.1:7777
//
// Each attack prints one line of what it did (and, for connect-flood, how
// long a real client then took to be welcomed).
package main

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/scalegate/scalegate/internal/load/transport"
	_ "github.com/scalegate/scalegate/internal/load/transport/enet"
	tquic "github.com/scalegate/scalegate/internal/load/transport/quic"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

func main() {
	attack := flag.String("attack", "", "connect-flood | udp-garbage | enet-malformed | big-message | quic-fragments")
	addr := flag.String("addr", "127.0.0.1:7777", "server address (loopback only)")
	n := flag.Int("n", 400, "connect-flood: forged CONNECTs; enet-malformed: peers")
	rate := flag.Int("rate", 1000, "datagrams or messages per second (per peer for enet-malformed)")
	dur := flag.Duration("duration", 10*time.Second, "how long the attack runs")
	size := flag.Int("bytes", 33_000_000, "big-message: message size")
	sockets := flag.Int("sockets", 1, "connect-flood: source sockets the CONNECTs are spread over")
	flag.Parse()
	if err := run(*attack, *addr, *n, *rate, *dur, *size, *sockets); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

func run(attack, addr string, n, rate int, dur time.Duration, size, sockets int) error {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() {
		return fmt.Errorf("-addr %q: need a loopback ip:port", addr)
	}
	switch attack {
	case "connect-flood":
		return connectFlood(addr, n, sockets)
	case "udp-garbage":
		return udpGarbage(addr, rate, dur)
	case "enet-malformed":
		return enetMalformed(addr, n, rate, dur)
	case "big-message":
		return bigMessage(addr, size)
	case "quic-fragments":
		return quicFragments(addr, rate, dur)
	}
	return fmt.Errorf("-attack %q: unknown", attack)
}

// forgedConnect is a 52-byte ENet CONNECT that nobody will complete.
func forgedConnect(id uint32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0x8FFF)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 0x82, 0xFF, 0, 1, 0, 0, 0xFF, 0xFF)
	for _, v := range []uint32{1400, 65536, 2, 0, 0, 5000, 2, 2, id, proto.ConnectData} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func connectFlood(addr string, n, sockets int) error {
	conns := make([]net.Conn, max(sockets, 1))
	for i := range conns {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		conns[i] = c
	}
	for i := range n {
		if _, err := conns[i%len(conns)].Write(forgedConnect(uint32(i + 1))); err != nil {
			return err
		}
	}
	start := time.Now()
	err := joinOnce(addr, 60*time.Second)
	fmt.Printf("connect-flood: %d forged CONNECTs from %d socket(s); a real client then welcomed after %v (err %v)\n",
		n, len(conns), time.Since(start).Round(time.Millisecond), err)
	return nil
}

// enetClient is one real ENet client that joins.
type enetClient struct {
	h       transport.Host
	peer    transport.PeerID
	up      bool
	gone    bool
	welcome bool
}

func dialENet(addr string) (*enetClient, error) {
	h, err := transport.Dial("enet", transport.Options{})
	if err != nil {
		return nil, err
	}
	p, err := h.Connect(addr, proto.ConnectData)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &enetClient{h: h, peer: p}, nil
}

// service runs one Service and sends Join right after the connect.
func (c *enetClient) service() error {
	_, err := c.h.Service(func(ev transport.Event) {
		switch ev.Kind {
		case transport.EventConnect:
			c.up = true
			j, _ := proto.AppendJoin(nil, &proto.Join{ClientIndex: 1, EntityType: "builtin:debug-entity", Name: "hostile"})
			_ = c.h.Send(c.peer, transport.Reliable, j)
		case transport.EventDisconnect:
			c.gone = true
		case transport.EventReceive:
			if t, err := proto.PeekType(ev.Payload); err == nil && t == proto.TypeWelcome {
				c.welcome = true
			}
		}
	})
	return err
}

// joinOnce connects, joins and waits for Welcome.
func joinOnce(addr string, limit time.Duration) error {
	c, err := dialENet(addr)
	if err != nil {
		return err
	}
	defer c.h.Close()
	deadline := time.Now().Add(limit)
	for !c.welcome {
		if c.gone {
			return errors.New("disconnected before Welcome")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no Welcome within %v", limit)
		}
		if err := c.service(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func udpGarbage(addr string, rate int, dur time.Duration) error {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	// Random bytes made once: generating them per datagram would make the
	// attacker, not the server, the busiest process on the machine.
	pool := make([]byte, 1<<20)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	sent, bytes := 0, 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(dur); time.Now().Before(end); <-tick.C {
		for range max(rate/100, 1) {
			n := 1 + rng.IntN(1400)
			if rng.IntN(20) == 0 {
				n = 4097 + rng.IntN(4000) // over ENet's receive buffer
			}
			off := rng.IntN(len(pool) - n)
			if _, err := c.Write(pool[off : off+n]); err == nil {
				sent++
				bytes += n
			}
		}
	}
	fmt.Printf("udp-garbage: %d datagrams, %d bytes in %v\n", sent, bytes, dur)
	return nil
}

// enetMalformed runs n ENet peers that join and then send malformed
// messages at rate each; a kicked peer reconnects.
func enetMalformed(addr string, n, rate int, dur time.Duration) error {
	peers := make([]*enetClient, n)
	kicks, sent := 0, 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(dur); time.Now().Before(end); <-tick.C {
		for i, c := range peers {
			if c == nil || c.gone {
				if c != nil {
					c.h.Close()
					kicks++
				}
				nc, err := dialENet(addr)
				if err != nil {
					return err
				}
				peers[i], c = nc, nc
			}
			if err := c.service(); err != nil {
				return err
			}
			if !c.welcome {
				continue
			}
			for range max(rate/100, 1) {
				bad := []byte{0x7f, byte(sent), 2, 3}
				if c.h.Send(c.peer, transport.Unreliable, bad) == nil {
					sent++
				}
			}
			_ = c.h.Flush()
		}
	}
	for _, c := range peers {
		if c != nil {
			c.h.Close()
		}
	}
	fmt.Printf("enet-malformed: %d peers sent %d malformed messages in %v; %d disconnects seen (kicks)\n", n, sent, dur, kicks)
	return nil
}

// bigMessage joins and sends one reliable message of size bytes.
func bigMessage(addr string, size int) error {
	c, err := dialENet(addr)
	if err != nil {
		return err
	}
	defer c.h.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !c.welcome && time.Now().Before(deadline) {
		if err := c.service(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	if !c.welcome {
		return errors.New("no Welcome")
	}
	msg := make([]byte, size)
	msg[0] = 0x7f
	if err := c.h.Send(c.peer, transport.Reliable, msg); err != nil {
		return err
	}
	// Keep servicing while ENet pushes the fragments (or stalls when the
	// server refuses them) for a while.
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !c.gone; {
		if err := c.service(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Printf("big-message: sent one %d-byte reliable message; client disconnected: %v\n", size, c.gone)
	return nil
}

// quicFragments opens a scalegate QUIC connection (handshake, control
// stream, connect-data preamble, accept word) and sends fragment datagrams
// whose index is not below their count, at rate, until the server closes
// the connection or dur ends.
func quicFragments(addr string, rate int, dur time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Second)
	defer cancel()
	tlsConf := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{tquic.ALPN}, MinVersion: tls.VersionTLS13} //nolint:gosec // loopback attack tool
	conn, err := quicgo.DialAddr(ctx, addr, tlsConf, &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		return err
	}
	st, err := conn.OpenStream()
	if err != nil {
		return err
	}
	pre := binary.LittleEndian.AppendUint32(nil, proto.ConnectData)
	if _, err := st.Write(pre); err != nil {
		return err
	}
	if _, err := io.ReadFull(st, make([]byte, 4)); err != nil {
		return fmt.Errorf("accept word: %w", err)
	}
	j, _ := proto.AppendJoin(nil, &proto.Join{ClientIndex: 1, EntityType: "builtin:debug-entity", Name: "hostile"})
	frame := binary.LittleEndian.AppendUint16(nil, uint16(len(j)))
	if _, err := st.Write(append(frame, j...)); err != nil {
		return err
	}
	start := time.Now()
	sent := 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	closedAfter := time.Duration(0)
	for end := start.Add(dur); time.Now().Before(end) && closedAfter == 0; <-tick.C {
		for range max(rate/100, 1) {
			if err := conn.SendDatagram([]byte{0xFF, byte(sent), 0, 5, 3}); err != nil {
				closedAfter = time.Since(start)
				break
			}
			sent++
		}
		if conn.Context().Err() != nil {
			closedAfter = time.Since(start)
		}
	}
	fmt.Printf("quic-fragments: %d bogus fragment datagrams; server closed the connection after %v (0 = not closed within %v): %v\n",
		sent, closedAfter.Round(time.Millisecond), dur, context.Cause(conn.Context()))
	return nil
}
