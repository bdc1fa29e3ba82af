package server_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/scalegate/scalegate/internal/load/transport"
	tquic "github.com/scalegate/scalegate/internal/load/transport/quic"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/livetest/liveserver"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// forgedENetConnect is a 52-byte ENet CONNECT datagram as a flood tool
// sends it (peer id 0xFFF, sent time, one CONNECT command with its own
// connect id); nobody answers the VERIFY_CONNECT it provokes. The enet
// package's guard tests build the same bytes.
func forgedENetConnect(connectID uint32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0x8FFF)
	b = binary.BigEndian.AppendUint16(b, 1)
	b = append(b, 0x82, 0xFF, 0, 1, 0, 0, 0xFF, 0xFF)
	for _, v := range []uint32{1400, 65536, 2, 0, 0, 5000, 2, 2, connectID, proto.ConnectData} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// TestENetConnectFloodThenJoin is the acceptance test: 400 forged CONNECTs
// from one UDP socket (which held every peer slot for 25-30 s), then a
// real client joins within 1 s. The unguarded control, with the same flood,
// does not: that is what shows the test can fail.
func TestENetConnectFloodThenJoin(t *testing.T) {
	const forged = 400
	for _, tc := range []struct {
		name   string
		cfg    func(*server.Config)
		joined bool
	}{
		{"default guard", nil, true},
		{"guard off (control)", func(c *server.Config) {
			c.Security.SourceConnectLimitCount, c.Security.HalfOpenTimeoutS = 0, 0
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := liveserver.Start(t, tc.cfg)
			before := ls.MetricsWhen(t, "a first tick", func(st *report.ServerTick) bool { return st.TicksTotal > 0 })
			c, err := net.Dial("udp", ls.Addr())
			if err != nil {
				t.Fatal(err)
			}
			for i := range forged {
				if _, err := c.Write(forgedENetConnect(uint32(i + 1))); err != nil {
					t.Fatal(err)
				}
			}
			c.Close()
			// The flood sits in the socket before these ticks run; ENet
			// reads 256 datagrams a pass, so a few ticks take it all in.
			ls.MetricsWhen(t, "ticks after the flood", func(st *report.ServerTick) bool { return st.TicksTotal >= before.TicksTotal+6 })
			cl := liveserver.Dial(t, "enet", ls.Addr(), proto.ConnectData)
			// The acceptance bound is the assertion: welcomed within 1 s
			// (guarded) or not (control). Poll reports which.
			start := time.Now()
			sentJoin := false
			err = livetest.Poll(context.Background(), time.Second, cl.Pump, func() (bool, string) {
				if cl.Connected && !sentJoin {
					cl.Send(transport.Reliable, joinMsg(t, "builtin:debug-entity"))
					sentJoin = true
				}
				return len(cl.Of(proto.TypeWelcome)) > 0, "no Welcome"
			})
			if welcomed := err == nil; welcomed != tc.joined {
				t.Fatalf("client welcomed within 1 s: %v (%v), want %v (connected %v)", welcomed, err, tc.joined, cl.Connected)
			}
			if !tc.joined {
				return
			}
			t.Logf("welcomed %v after the flood", time.Since(start).Round(time.Millisecond))
			st := ls.MetricsWhen(t, "the dropped CONNECTs", func(st *report.ServerTick) bool {
				return st.ConnectAttemptsDropped != nil && *st.ConnectAttemptsDropped == forged-4
			})
			if st.HalfOpenReset == nil {
				t.Fatal("half_open_reset missing from the metrics file")
			}
		})
	}
}

// TestQUICBogusFragmentsKicked: a QUIC client that joins and then sends
// fragment datagrams that can never be reassembled is struck for each and
// kicked, as an ENet peer sending malformed messages is. It speaks QUIC
// through quic-go directly, because the transport's own client never sends
// such datagrams.
func TestQUICBogusFragmentsKicked(t *testing.T) {
	// Idle and join timeouts out of reach: only the strikes may kick.
	ls := liveserver.Start(t, func(c *server.Config) {
		c.Server.Transport = "quic"
		c.Server.IdleTimeoutS = 3600
		c.Server.JoinTimeoutS = 600
	})
	ctx, cancel := context.WithTimeout(context.Background(), livetest.Wait)
	defer cancel()
	tlsConf := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{tquic.ALPN}, MinVersion: tls.VersionTLS13} //nolint:gosec // loopback test client
	conn, err := quicgo.DialAddr(ctx, ls.Addr(), tlsConf, &quicgo.Config{EnableDatagrams: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	st, err := conn.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	// The connect-data preamble, the server's accept word, then a framed
	// Join (u16 length prefix), as docs/transport-quic.md lays them out.
	if _, err := st.Write(binary.LittleEndian.AppendUint32(nil, proto.ConnectData)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(st, make([]byte, 4)); err != nil {
		t.Fatalf("accept word: %v", err)
	}
	j := joinMsg(t, "builtin:debug-entity")
	if _, err := st.Write(append(binary.LittleEndian.AppendUint16(nil, uint16(len(j))), j...)); err != nil {
		t.Fatal(err)
	}
	// Paced (a millisecond apart), so none is lost to quic-go's receive
	// queue: the server must kick on the 32nd it reads. The pause paces the
	// sender; it synchronises nothing.
	sent := 0
	for conn.Context().Err() == nil && sent < 10*server.GarbageKick {
		if err := conn.SendDatagram([]byte{0xFF, byte(sent), 0, 5, 3}); err != nil {
			break
		}
		sent++
		time.Sleep(time.Millisecond)
	}
	livetest.Eventually(t, livetest.Wait, livetest.Closed(fmt.Sprintf("the kick after %d bogus fragment datagrams", sent), conn.Context().Done()))
	var ae *quicgo.ApplicationError
	if err := context.Cause(conn.Context()); !errors.As(err, &ae) || ae.ErrorCode != quicgo.ApplicationErrorCode(proto.NoticeKicked) {
		t.Fatalf("connection ended with %v after %d bogus datagrams, want the kick (code %d)", err, sent, proto.NoticeKicked)
	}
	st2 := ls.MetricsWhen(t, "the kick", func(st *report.ServerTick) bool { return st.Kicked == 1 })
	if st2.MalformedDropped < server.GarbageKick || st2.IdleTimeouts != 0 {
		t.Fatalf("malformed_dropped %d (want at least %d), idle_timeouts %d (want 0)", st2.MalformedDropped, server.GarbageKick, st2.IdleTimeouts)
	}
}
