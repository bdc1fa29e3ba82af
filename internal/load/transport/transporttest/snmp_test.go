package transporttest

import (
	"runtime"
	"testing"
)

func TestSNMPField(t *testing.T) {
	const snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdp: 251076004 838288 259 252359600 259 0\n" +
		"UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors\nUdpLite: 0 0 0 0 7 0\n"
	for _, tc := range []struct {
		prefix, name string
		want         uint64
		ok           bool
	}{
		{"Udp:", "RcvbufErrors", 259, true},
		{"UdpLite:", "RcvbufErrors", 7, true},
		{"Udp:", "NoSuchField", 0, false},
		{"Tcp:", "RcvbufErrors", 0, false},
	} {
		got, ok := snmpField(snmp, tc.prefix, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("snmpField(%s %s) = %d, %v; want %d, %v", tc.prefix, tc.name, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := kernelDrops(); runtime.GOOS == "linux" && !ok {
		t.Error("kernelDrops cannot read /proc/net/snmp on Linux: every kernel drop would fail the many-clients tests")
	}
}

// TestFlowErrorsOnlyForgiveKernelDrops: an unreliable shortfall no larger
// than the datagrams the kernel dropped for a full receive buffer is not
// the transport's; any more, any fault, and any short reliable flow are.
func TestFlowErrorsOnlyForgiveKernelDrops(t *testing.T) {
	for _, tc := range []struct {
		name            string
		upU, downU, upR [2]uint64 // sent, received
		faults, shed    uint64
		wantErr         bool
	}{
		{"all in", [2]uint64{10, 10}, [2]uint64{10, 10}, [2]uint64{2, 2}, 0, 0, false},
		{"lost, the kernel dropped as many", [2]uint64{10, 9}, [2]uint64{10, 8}, [2]uint64{2, 2}, 0, 3, false},
		{"lost, the kernel dropped none", [2]uint64{10, 9}, [2]uint64{10, 10}, [2]uint64{2, 2}, 0, 0, true},
		{"lost more than the kernel dropped", [2]uint64{10, 9}, [2]uint64{10, 8}, [2]uint64{2, 2}, 0, 2, true},
		{"reliable short", [2]uint64{10, 10}, [2]uint64{10, 10}, [2]uint64{2, 1}, 0, 5, true},
		{"out of order", [2]uint64{10, 10}, [2]uint64{10, 10}, [2]uint64{2, 2}, 1, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &manyRun{clients: make([]manyClient, 1)}
			c := &r.clients[0]
			c.connects = 1
			set := func(f *flow, sr [2]uint64) { f.sent.Store(sr[0]); f.received = sr[1] }
			set(&c.upU, tc.upU)
			set(&c.downU, tc.downU)
			set(&c.upR, tc.upR)
			set(&c.downR, [2]uint64{1, 1})
			c.upU.faults = tc.faults
			errs := r.flowErrors(&ManyResult{}, tc.shed)
			if (len(errs) > 0) != tc.wantErr {
				t.Errorf("errors %v, want some: %v", errs, tc.wantErr)
			}
		})
	}
}
