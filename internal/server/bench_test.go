package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/snapshot"
)

// BenchmarkSnapshotBuild is one peer's snapshot build + encode (priority
// sort, records, zstd) with N entities in view, at the default 1200-byte
// budget and unlimited.
func BenchmarkSnapshotBuild(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		for _, budget := range []int{1200, 0} {
			b.Run(fmt.Sprintf("inview=%d/budget=%d", n, budget), func(b *testing.B) {
				w, own := denseWorld(n, 1, 9000, 1)
				g := NewGrid(8000)
				g.Rebuild(w, w.Live())
				enc, _ := snapshot.NewEncoder()
				v := &Viewer{Slot: own[0]}
				v.In.Sense(w, g, v.Slot, 1e6)
				if v.In.InView != 0 && v.In.InView != n {
					b.Fatalf("in view %d", v.In.InView)
				}
				p := &SnapshotParams{BudgetBytes: budget, Compress: true}
				p.Records = EncodeRecords(w, w.Live(), nil, serialRun)
				b.ReportAllocs()
				tick := uint32(0)
				bytes := 0
				for b.Loop() {
					tick++
					p.Tick = tick
					v.In.Build(w, v.Slot, enc, p)
					bytes += len(v.In.Msg)
				}
				if v.In.InView != n {
					b.Fatalf("in view %d, want %d", v.In.InView, n)
				}
				b.ReportMetric(float64(bytes)/float64(b.N), "msgB/op")
			})
		}
	}
}

// BenchmarkTick is a whole tick minus the network: AI, integration,
// spatial rebuilds, collision, interest for 128 peers, and 128 snapshot
// builds, at 1 and 2 workers, with 0 and 2000 AI entities spread as the
// pr profile spreads them.
func BenchmarkTick(b *testing.B) {
	for _, ai := range []int{0, 2000} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("peers=128/ai=%d/workers=%d", ai, workers), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.World.TestSpawnAICount = ai
				sim, err := NewSim(&cfg, workers)
				if err != nil {
					b.Fatal(err)
				}
				defer sim.Close()
				var vs []*Viewer
				for i := 0; i < 128; i++ {
					vs = append(vs, &Viewer{Slot: sim.World.SpawnPlayer(1, TypeSensorFighter, uint32(i))})
				}
				var ph [numPhases]time.Duration
				tick := uint32(0)
				b.ReportAllocs()
				for b.Loop() {
					tick++
					tm := timer{at: time.Now(), sum: &ph}
					sim.Simulate(&tm)
					sim.Sense(&tm, vs)
					sim.Build(vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
					tm.lap(PhaseSerialize)
				}
				for i := Phase(0); i < PhaseOther; i++ {
					b.ReportMetric(ms(ph[i])/float64(b.N), i.String()+"-ms/op")
				}
			})
		}
	}
}
