package server

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/transport"
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

// metricsWhen reads the live server's metrics file until cond holds.
func (ls *liveServer) metricsWhen(t *testing.T, what string, cond func(*report.ServerTick) bool) *report.ServerTick {
	t.Helper()
	deadline := time.Now().Add(loopWait)
	for {
		if st, _, err := report.ReadServerTick(ls.metrics); err == nil && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the metrics file to show %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestENetConnectFloodThenJoin is the acceptance test: 400 forged CONNECTs
// from one UDP socket (which held every peer slot for 25-30 s), then a
// real client joins within 1 s. The unguarded control, with the same flood,
// does not: that is what shows the test can fail.
func TestENetConnectFloodThenJoin(t *testing.T) {
	const forged = 400
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		joined bool
	}{
		{"default guard", nil, true},
		{"guard off (control)", func(c *Config) {
			c.Security.SourceConnectLimitCount, c.Security.HalfOpenTimeoutS = 0, 0
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls := startLive(t, tc.cfg)
			before := ls.metricsWhen(t, "a first tick", func(st *report.ServerTick) bool { return st.TicksTotal > 0 })
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
			ls.metricsWhen(t, "ticks after the flood", func(st *report.ServerTick) bool { return st.TicksTotal >= before.TicksTotal+6 })
			cl := dialClient(t, ls.Addr(), proto.ConnectData)
			start := time.Now()
			welcomed, sentJoin := false, false
			for !welcomed && time.Since(start) < time.Second {
				cl.pump()
				if cl.connected && !sentJoin {
					cl.send(transport.Reliable, joinMsg(t, "builtin:debug-entity"))
					sentJoin = true
				}
				welcomed = len(cl.of(proto.TypeWelcome)) > 0
				time.Sleep(time.Millisecond)
			}
			if welcomed != tc.joined {
				t.Fatalf("client welcomed within 1 s: %v, want %v (connected %v)", welcomed, tc.joined, cl.connected)
			}
			if !tc.joined {
				return
			}
			t.Logf("welcomed %v after the flood", time.Since(start).Round(time.Millisecond))
			st := ls.metricsWhen(t, "the dropped CONNECTs", func(st *report.ServerTick) bool {
				return st.ConnectAttemptsDropped != nil && *st.ConnectAttemptsDropped == forged-4
			})
			if st.HalfOpenReset == nil {
				t.Fatal("half_open_reset missing from the metrics file")
			}
		})
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
