package transporttest

import (
	"testing"
)

// The suite's own checks must be able to fail: these pin what they reject.

func TestCheckSeqMsg(t *testing.T) {
	good := seqMsg('R', 77, 40)
	corrupt := seqMsg('R', 77, 40)
	corrupt[30] ^= 1
	tests := []struct {
		name    string
		b       []byte
		wantLen int
		wantSeq uint32
		wantErr bool
	}{
		{"intact", good, 40, 77, false},
		{"minimum size", seqMsg('R', 1<<31, 0), 0, 1 << 31, false},
		{"truncated", good[:39], 40, 0, true},
		{"wrong tag", seqMsg('U', 77, 40), 40, 0, true},
		{"corrupt byte", corrupt, 40, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, err := checkSeqMsg('R', tc.b, tc.wantLen)
			if (err != nil) != tc.wantErr || (!tc.wantErr && seq != tc.wantSeq) {
				t.Errorf("checkSeqMsg = %d, %v; want seq %d, error %v", seq, err, tc.wantSeq, tc.wantErr)
			}
		})
	}
}

func TestFlowFaults(t *testing.T) {
	tests := []struct {
		name       string
		exact      bool
		seqs       []uint64
		wantFaults uint64
	}{
		{"reliable in order", true, []uint64{0, 1, 2, 3}, 0},
		{"reliable gap", true, []uint64{0, 2, 3}, 1},
		{"reliable duplicate", true, []uint64{0, 1, 1, 2}, 1},
		{"reliable not starting at 0", true, []uint64{1, 2}, 1},
		{"unreliable gaps allowed", false, []uint64{0, 5, 9}, 0},
		{"unreliable reordered", false, []uint64{0, 2, 1}, 1},
		{"unreliable duplicate", false, []uint64{0, 1, 1}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f flow
			for _, s := range tc.seqs {
				f.take(s, tc.exact)
			}
			if f.faults != tc.wantFaults || f.received != uint64(len(tc.seqs)) {
				t.Errorf("faults %d received %d, want %d and %d", f.faults, f.received, tc.wantFaults, len(tc.seqs))
			}
			f.sent.Store(uint64(len(tc.seqs)) + 1)
			if f.drained() {
				t.Error("drained with a message still missing")
			}
		})
	}
}

func TestReliableMsg(t *testing.T) {
	var f flow
	if got := reliableSeq(reliableMsg('u', 123456789), 'u', &f); got != 123456789 || f.faults != 0 {
		t.Errorf("round trip = %d with %d faults", got, f.faults)
	}
	reliableSeq(reliableMsg('d', 1), 'u', &f)
	reliableSeq([]byte{'u', 1}, 'u', &f)
	if f.faults != 2 {
		t.Errorf("wrong tag and short message gave %d faults, want 2", f.faults)
	}
}
