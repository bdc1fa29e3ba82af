package server

import (
	"testing"
)

const period60 = 1000.0 / 60

// lever positions, compared as a tuple so the order of engagement shows.
type levers struct {
	rateShed, strideOn, interestOn bool
}

func leversOf(g *governor) levers {
	return levers{g.loadFactor() < 1, g.aiStride() > 1, g.interestScale() < 1}
}

// A steady overload makes the levers engage in order — snapshot rate, then
// AI stride, then interest radius — down to the floor; when the load falls
// they release in reverse order and load_factor returns to 1.
func TestGovernorLeversInOrderAndRecover(t *testing.T) {
	g := newGovernor(true, period60)
	var seen []levers
	note := func() {
		l := leversOf(g)
		if len(seen) == 0 || seen[len(seen)-1] != l {
			seen = append(seen, l)
		}
	}
	note()
	for i := 0; i < 600; i++ { // 10 s of 40 ms ticks
		g.observe(40)
		note()
	}
	if g.loadFactor() != governorFloor || g.interestScale() != governorInterestFloor || g.aiStride() != 3 {
		t.Fatalf("after a steady overload: load_factor %v interest_scale %v stride %d, want the floors", g.loadFactor(), g.interestScale(), g.aiStride())
	}
	want := []levers{{}, {true, false, false}, {true, true, false}, {true, true, true}}
	if len(seen) != len(want) {
		t.Fatalf("lever sequence under load %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("lever sequence under load %v, want %v", seen, want)
		}
	}
	seen = seen[:0]
	note()
	for i := 0; i < 3600; i++ { // 60 s of 4 ms ticks
		g.observe(4)
		note()
	}
	if g.loadFactor() != 1 || g.degraded() {
		t.Fatalf("no recovery: load_factor %v", g.loadFactor())
	}
	back := []levers{{true, true, true}, {true, true, false}, {true, false, false}, {}}
	if len(seen) != len(back) {
		t.Fatalf("lever sequence on recovery %v, want %v", seen, back)
	}
	for i := range back {
		if seen[i] != back[i] {
			t.Fatalf("lever sequence on recovery %v, want %v", seen, back)
		}
	}
	if g.minLF != governorFloor || g.engaged == 0 {
		t.Errorf("run-long figures: min %v engaged %d", g.minLF, g.engaged)
	}
}

// Between the watermarks the governor holds: no oscillation.
func TestGovernorHysteresis(t *testing.T) {
	g := newGovernor(true, period60)
	for i := 0; i < 200; i++ {
		g.observe(40)
	}
	lf := g.loadFactor()
	for i := 0; i < 2000; i++ {
		g.observe(0.7 * period60) // between low (0.6) and high (0.85)
	}
	if g.loadFactor() != lf {
		t.Errorf("load_factor moved between the watermarks: %v → %v", lf, g.loadFactor())
	}
}

func TestGovernorOffNeverSheds(t *testing.T) {
	g := newGovernor(false, period60)
	for i := 0; i < 600; i++ {
		g.observe(100)
	}
	if g.loadFactor() != 1 || g.aiStride() != 1 || g.interestScale() != 1 || !g.snapshotDue(7, 0.3) {
		t.Fatalf("a disabled governor shed work: %+v", g)
	}
	if g.ewmaMs < 90 {
		t.Errorf("the EWMA is kept while off (for a live switch-on): %v", g.ewmaMs)
	}
	g.setEnabled(true)
	g.observe(100)
	if g.loadFactor() >= 1 {
		t.Error("switched on under overload: no shedding")
	}
	g.setEnabled(false)
	if g.loadFactor() != 1 {
		t.Error("switching off must release every lever")
	}
}

// At load_factor lf each peer gets a snapshot on an lf share of the ticks,
// and peers of different phases do not all fall on the same tick.
func TestSnapshotDueShareAndStagger(t *testing.T) {
	for _, lf := range []float64{1, 0.85, 0.5, 0.3, 0.25} {
		g := newGovernor(true, period60)
		g.lf = lf
		perTick := make([]int, 600)
		for p := 0; p < 64; p++ {
			v := Viewer{Slot: int32(p)}
			n := 0
			for tick := uint32(1); tick <= 600; tick++ {
				if g.snapshotDue(tick, v.stagger()) {
					n++
					perTick[tick-1]++
				}
			}
			if want := lf * 600; float64(n) < want-1 || float64(n) > want+1 {
				t.Errorf("lf %v peer %d: %d snapshots in 600 ticks, want %v ± 1", lf, p, n, want)
			}
		}
		hi := 0
		for _, c := range perTick {
			hi = max(hi, c)
		}
		if limit := int(64*lf) + 16; hi > limit {
			t.Errorf("lf %v: %d of 64 peers on one tick (> %d): not staggered", lf, hi, limit)
		}
	}
}

// TestOverrunByConstruction is the shipped overrun profile's load as a
// model of the tick, on machines from three times faster to twice as slow
// as the development machine: the AI (2000 × 8 µs of wall-clock spin, 16
// ms at full rate whatever the machine, divided by the governor's AI
// stride) plus the world's own work (a fixed part and a part the snapshot
// rate sheds: 1 + 2 ms here, 0.33 + 0.67 three times faster, 2 + 4 twice as
// slow). With the governor on it stays engaged through the hold on every
// one of them and the loop never falls the four periods behind that drop
// ticks; off, the factor stays 1. The gates of profiles/overrun.cue
// (degraded share ≥ 0.9, mean load factor ≤ 0.9, highest ≤ 0.99, ≤ 10
// dropped ticks) are checked on the model's hold.
func TestOverrunByConstruction(t *testing.T) {
	const aiMs, period, ticks, warm = 16.0, 1000.0 / 60, 3600, 600
	for _, speed := range []float64{3, 2, 1, 0.5} {
		fixed, shed := 1/speed, 2/speed
		for _, on := range []bool{true, false} {
			g := newGovernor(on, period)
			late, dropped, degraded := 0.0, 0, 0
			lfSum, lfMax := 0.0, 0.0
			for i := range ticks {
				work := aiMs/float64(g.aiStride()) + fixed + shed*g.loadFactor()
				g.observe(work)
				late = max(late+work-period, 0)
				if late > 4*period { // the pacer drops what it cannot catch up
					late = 0
					if i >= warm {
						dropped++
					}
				}
				if i >= warm {
					lfSum += g.loadFactor()
					lfMax = max(lfMax, g.loadFactor())
					if g.degraded() {
						degraded++
					}
				}
			}
			hold := float64(ticks - warm)
			share, mean := float64(degraded)/hold, lfSum/hold
			passes := share >= 0.9 && mean <= 0.9 && lfMax <= 0.99 && dropped <= 10
			t.Logf("speed ×%g, governor %v: degraded %.3f, mean load factor %.3f, highest %.2f, dropped %d", speed, on, share, mean, lfMax, dropped)
			if passes != on {
				t.Errorf("speed ×%g, governor %v: the overrun gates pass %v", speed, on, passes)
			}
		}
	}
}
