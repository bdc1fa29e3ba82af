package server

import (
	"io"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// linkHost is a fake host whose per-peer link figures the test sets.
type linkHost struct {
	*fakeHost
	links map[transport.PeerID]transport.LinkStats
}

func (h *linkHost) LinkStats(p transport.PeerID) transport.LinkStats { return h.links[p] }

// ccRun drives the controller for ticks ticks over n peers, calling link
// before every tick to set the links, and returns the snapshots sent per
// peer per tick.
func ccRun(c *congestion, h *linkHost, peers []*peer, from, ticks int, link func(tick int)) [][]bool {
	out := make([][]bool, ticks)
	for t := 0; t < ticks; t++ {
		link(from + t)
		out[t] = append([]bool(nil), c.schedule(h, peers, uint32(from+t))...)
	}
	return out
}

func sentHz(sent [][]bool, peer, from, to int) float64 {
	n := 0
	for t := from; t < to; t++ {
		if sent[t][peer] {
			n++
		}
	}
	return float64(n) / (float64(to-from) / TickHz)
}

func newLinkHost(n int, rtt time.Duration) (*linkHost, []*peer) {
	h := &linkHost{fakeHost: newFakeHost(), links: map[transport.PeerID]transport.LinkStats{}}
	var peers []*peer
	for i := 0; i < n; i++ {
		peers = append(peers, &peer{id: transport.PeerID(i)})
		h.links[transport.PeerID(i)] = transport.LinkStats{RTT: rtt}
	}
	return h, peers
}

// The seed's scenario: +200 ms RTT for 30 s in the middle of a 90 s run.
// The controller goes to the floor inside the window and back to the tick
// rate after it; the watermarks carry both.
func TestCongestionEngagesAndRecovers(t *testing.T) {
	for _, on := range []bool{true, false} {
		c := newCongestion(on)
		h, peers := newLinkHost(3, 12*time.Millisecond)
		window := func(tick int) {
			rtt := 12 * time.Millisecond
			if tick >= 25*TickHz && tick < 55*TickHz {
				rtt = 212 * time.Millisecond
			}
			h.links[0] = transport.LinkStats{RTT: rtt} // only peer 0's link is bad
		}
		sent := ccRun(c, h, peers, 0, 90*TickHz, window)
		during := sentHz(sent, 0, 30*TickHz, 55*TickHz)
		after := sentHz(sent, 0, 60*TickHz, 90*TickHz)
		clean := sentHz(sent, 1, 0, 90*TickHz)
		if !on {
			if during != TickHz || c.minHz != TickHz || c.recoveredHz != TickHz {
				t.Fatalf("off: sent %.1f Hz in the window, watermarks %.1f/%.1f; want the tick rate throughout", during, c.minHz, c.recoveredHz)
			}
			continue
		}
		if during > CongestionFloorHz+0.5 || after != TickHz || clean != TickHz {
			t.Fatalf("on: peer 0 sent %.1f Hz in the window and %.1f after; clean peer %.1f Hz", during, after, clean)
		}
		if c.minHz != CongestionFloorHz || c.recoveredHz != TickHz {
			t.Fatalf("watermarks min %.1f recovered %.1f, want %d and %d", c.minHz, c.recoveredHz, CongestionFloorHz, TickHz)
		}
	}
}

func TestCongestionTriggers(t *testing.T) {
	for _, c := range []struct {
		name   string
		link   transport.LinkStats
		cut    bool
		spikes bool // congested for one evaluation only
	}{
		{"clean", transport.LinkStats{RTT: 12 * time.Millisecond}, false, false},
		{"rtt under margin", transport.LinkStats{RTT: 12*time.Millisecond + CongestionRTTMargin}, false, false},
		{"rtt over margin", transport.LinkStats{RTT: 13*time.Millisecond + CongestionRTTMargin}, true, false},
		{"loss over limit", transport.LinkStats{RTT: 12 * time.Millisecond, Loss: 0.2, LossKnown: true}, true, false},
		{"loss not reported", transport.LinkStats{RTT: 12 * time.Millisecond, Loss: 0.9}, false, false},
		{"one spike", transport.LinkStats{RTT: 500 * time.Millisecond}, false, true},
	} {
		cc := newCongestion(true)
		h, peers := newLinkHost(1, 12*time.Millisecond)
		// One clean second to set the baseline, then the condition.
		ccRun(cc, h, peers, 0, TickHz, func(int) {})
		ccRun(cc, h, peers, TickHz, 5*TickHz, func(tick int) {
			h.links[0] = c.link
			if c.spikes && tick >= TickHz+congestionEvalTicks {
				h.links[0] = transport.LinkStats{RTT: 12 * time.Millisecond}
			}
		})
		if cut := cc.minHz < TickHz; cut != c.cut {
			t.Errorf("%s: min send %.1f Hz, want cut=%v", c.name, cc.minHz, c.cut)
		}
	}
}

// Once the peer count falls below its peak (the load is leaving), the
// watermarks stop moving: the end-of-run metrics still show the run.
func TestCongestionWatermarksFreeze(t *testing.T) {
	cc := newCongestion(true)
	h, peers := newLinkHost(2, 12*time.Millisecond)
	ccRun(cc, h, peers, 0, TickHz, func(int) {})
	h.links[0] = transport.LinkStats{RTT: time.Second}
	ccRun(cc, h, peers[:1], TickHz, 10*TickHz, func(int) {})
	if cc.minHz != TickHz || !cc.frozen {
		t.Fatalf("after a peer left: min %.1f frozen %v, want %d and frozen", cc.minHz, cc.frozen, TickHz)
	}
}

func TestCongestionConfig(t *testing.T) {
	cfg := DefaultConfig()
	if !cfg.Network.CongestionControl {
		t.Fatal("congestion_control must default on")
	}
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		on     bool
	}{
		{"default", func(*Config) {}, true},
		{"config off", func(c *Config) { c.Network.CongestionControl = false }, false},
		{"fault", func(c *Config) { c.Faults.DisableCongestionControl = true }, false},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		s, err := New(cfg, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if s.cc.on != c.on {
			t.Errorf("%s: controller on=%v, want %v", c.name, s.cc.on, c.on)
		}
		s.sim.Close()
	}
	f := FaultConfig{DisableCongestionControl: true}
	if a := f.Active(); len(a) != 1 || a[0] != "disable_congestion_control=true" {
		t.Errorf("Active() = %v", a)
	}
}

// recovered is the climb back after the last time the floor was touched: a
// later partial dip does not erase it, a later return to the floor does.
func TestCongestionRecoveredWatermark(t *testing.T) {
	cc := newCongestion(true)
	for _, step := range []struct {
		cur            float64
		min, recovered float64
	}{
		{60, 60, 60}, {30, 30, 30}, {10, 10, 10}, {35, 10, 35}, {60, 10, 60}, {40, 10, 60}, {60, 10, 60}, {10, 10, 10}, {20, 10, 20},
	} {
		cc.peers = map[*peer]*peerCongestion{{}: {rate: step.cur}}
		cc.watermark(1)
		if cc.minHz != step.min || cc.recoveredHz != step.recovered {
			t.Fatalf("after %g Hz: min %g recovered %g, want %g and %g", step.cur, cc.minHz, cc.recoveredHz, step.min, step.recovered)
		}
	}
}
