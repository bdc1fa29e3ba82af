package server

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
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

// BenchmarkSnapshotBuildDelta is BenchmarkSnapshotBuild for a peer that
// takes sg-entities/3 deltas and acknowledges every snapshot by the next
// build (the world does not move between builds: deltas of unchanged
// states, the cheapest case).
func BenchmarkSnapshotBuildDelta(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("inview=%d/budget=1200", n), func(b *testing.B) {
			w, own := denseWorld(n, 1, 9000, 1)
			g := NewGrid(8000)
			g.Rebuild(w, w.Live())
			enc, _ := snapshot.NewEncoder()
			v := &Viewer{Slot: own[0]}
			v.In.Deltas = true
			v.In.Sense(w, g, v.Slot, 1e6)
			p := &SnapshotParams{BudgetBytes: 1200, Compress: true}
			p.Records, p.States = encodeAll(w, w.Live(), nil, []snapshot.State{}, serialRun)
			b.ReportAllocs()
			tick, bytes := uint32(0), 0
			for b.Loop() {
				tick++
				p.Tick = tick
				v.In.Build(w, v.Slot, enc, p)
				v.In.TakeSnapshotAck(tick)
				bytes += len(v.In.Msg)
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "msgB/op")
		})
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
				sim, vs := benchSim(b, &cfg, workers, TypeSensorFighter)
				var ph [numPhases]time.Duration
				tick := uint32(0)
				b.ReportAllocs()
				for b.Loop() {
					tick++
					tm := timer{at: time.Now(), sum: &ph}
					sim.Simulate(&tm)
					sim.Sense(&tm)
					sim.Build(vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
					tm.lap(PhaseSerialize)
				}
				reportPhases(b, &ph)
			})
		}
	}
}

// benchSim is the tick benchmarks' world: a sim of cfg at the given worker
// count with 128 peers' entities of type code spawned (the peers of the
// reference profiles), closed when the benchmark ends.
func benchSim(b *testing.B, cfg *Config, workers int, code uint8) (*Sim, []*Viewer) {
	b.Helper()
	sim, err := NewSim(cfg, workers)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(sim.Close)
	vs := make([]*Viewer, 0, 128)
	for i := range 128 {
		vs = append(vs, &Viewer{Slot: sim.World.SpawnPlayer(1, code, uint32(i))})
	}
	return sim, vs
}

// referenceWorld is the reference profiles' world on workers: 512 loiter
// AI within 20 km and 128 sensor-fighter peers, each taking deltas or not,
// the workers pinned or not (world.pin_sim_workers).
func referenceWorld(b *testing.B, workers int, deltas, pinned bool) (*Sim, []*Viewer) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.World.TestSpawnAICount = 512
	cfg.World.TestSpawnSpreadKm = 20
	cfg.World.PinSimWorkers = pinned
	sim, vs := benchSim(b, &cfg, workers, TypeSensorFighter)
	for _, v := range vs {
		v.In.Deltas = deltas
	}
	return sim, vs
}

// benchTick runs one tick's simulation, sensing and snapshot builds (the
// reference budget), adding each phase's time to ph.
func benchTick(sim *Sim, vs []*Viewer, tick uint32, ph *[numPhases]time.Duration) {
	tm := timer{at: time.Now(), sum: ph}
	sim.Tick = tick
	sim.Simulate(&tm)
	sim.Sense(&tm)
	sim.Build(vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
	tm.lap(PhaseSerialize)
}

// ackLate has every peer acknowledge the snapshot of three ticks ago, as a
// client a loopback round trip away at 60 Hz does.
func ackLate(vs []*Viewer, tick uint32) {
	if tick <= 3 {
		return
	}
	for _, v := range vs {
		v.In.TakeSnapshotAck(tick - 3)
	}
}

// reportPhases reports each phase's mean ms per tick over the b.N ticks.
func reportPhases(b *testing.B, ph *[numPhases]time.Duration) {
	for i := Phase(0); i < PhaseOther; i++ {
		b.ReportMetric(ms(ph[i])/float64(b.N), i.String()+"-ms/op")
	}
}

// discardHost is a fakeHost whose sends are dropped, so a long benchmark
// does not accumulate every snapshot in memory.
type discardHost struct{ *fakeHost }

func (discardHost) Send(transport.PeerID, transport.Delivery, []byte) error { return nil }

// BenchmarkInputs128 is what one tick pays to take one Input from each of
// 128 joined peers (drain, decode, validate, apply), with and without
// [trace] input_trace_dir: the difference is the recording's cost per
// tick at 128 clients (docs/trace-format.md).
func BenchmarkInputs128(b *testing.B) {
	for _, rec := range []bool{false, true} {
		b.Run(fmt.Sprintf("record=%v", rec), func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.World.SimWorkerThreads = 1
			cfg.Server.MaxPeers = 256
			cfg.Security.MaxConnectionsPerIP = 0
			cfg.Security.ConnectRateLimitCount = 1000
			if rec {
				cfg.Trace.InputTraceDir = b.TempDir()
			}
			s, err := New(cfg, io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			defer s.sim.Close()
			h := discardHost{newFakeHost()}
			s.attach(h)
			now := time.Now()
			for p := transport.PeerID(1); p <= 128; p++ {
				h.connect(p, "127.0.0.1", proto.ConnectData)
				h.recv(p, joinMsg(b, "x"))
			}
			s.service(now)
			msgs := make([][]byte, 128)
			seq := uint32(0)
			for b.Loop() {
				seq++
				for i := range msgs {
					msgs[i] = proto.AppendInput(msgs[i][:0], &proto.Input{Seq: seq, Throttle: 0.5, Aileron: float32(i) / 128, Buttons: seq % 8})
					h.recv(transport.PeerID(i+1), msgs[i])
				}
				s.tick++
				s.service(now)
			}
			if s.met.inputsAccepted < int64(b.N)*128 {
				b.Fatalf("accepted %d inputs, want %d", s.met.inputsAccepted, int64(b.N)*128)
			}
			if err := s.closeRecorder(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkTickWorld is BenchmarkTick's 128 peers and 2000 AI in a hollow
// world (debug-entity players without sensors, all-loiter AI, no churn, no
// fire) beside the populated one (sensor fighters in two datalink teams,
// the loiter:60,pursuit:25,patrol:15 mix, 120/s projectile churn living
// 3 s, and the peers firing on the swarm's weapons schedule), so
// docs/server.md can show what the populated world costs per phase.
func BenchmarkTickWorld(b *testing.B) {
	for _, world := range []string{"hollow", "populated"} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("world=%s/peers=128/ai=2000/workers=%d", world, workers), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.World.TestSpawnAICount = 2000
				code := TypeDebug
				if world == "populated" {
					cfg.World.TestSpawnAIMix = "loiter:60,pursuit:25,patrol:15"
					cfg.World.TestProjectileRate = 120
					cfg.World.TestProjectileTTLS = 3
					code = TypeSensorFighter
				}
				sim, vs := benchSim(b, &cfg, workers, code)
				var ph [numPhases]time.Duration
				tick := uint32(0)
				step := func() {
					tick++
					if world == "populated" {
						weaponsSchedule(sim, vs, tick)
					}
					benchTick(sim, vs, tick, &ph)
				}
				for range 4 * TickHz { // churn and contact tables reach steady state
					step()
				}
				ph = [numPhases]time.Duration{}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					step()
				}
				reportPhases(b, &ph)
				b.ReportMetric(float64(sim.ContactEntries), "contacts")
				b.ReportMetric(float64(sim.ProjectilesLive()), "projectiles")
			})
		}
	}
}

// weaponsSchedule presses the buttons the swarm's weapons pattern presses:
// the gun for the first quarter of every 4 s, a store in the first 0.5 s of
// every 10 s, phase-shifted per peer.
func weaponsSchedule(sim *Sim, vs []*Viewer, tick uint32) {
	t := float64(tick) / TickHz
	for i, v := range vs {
		off := frac(float64(i) * 0.6180339887498949)
		var b uint32
		if frac(t/4+off) < 0.25 {
			b |= proto.ButtonGun
		}
		if frac(t/10+off) < 0.05 {
			b |= proto.ButtonStoreRelease
		}
		sim.World.At(v.Slot).Ctl.Buttons = b
	}
}

func frac(x float64) float64 { return x - math.Floor(x) }

// BenchmarkTickDelta is the reference profiles' world (128 sensor-fighter
// peers, 512 loiter AI within 20 km) ticked whole, with version-2 peers and
// with delta peers that acknowledge every snapshot three ticks late (a
// loopback round trip at 60 Hz), so the cost deltas add to the serialize
// phase is measured beside the cost they replace.
func BenchmarkTickDelta(b *testing.B) {
	for _, deltas := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("deltas=%v/peers=128/ai=512/workers=%d", deltas, workers), func(b *testing.B) {
				sim, vs := referenceWorld(b, workers, deltas, false)
				var ph [numPhases]time.Duration
				tick, bytes := uint32(0), 0
				step := func() {
					tick++
					benchTick(sim, vs, tick, &ph)
					for _, v := range vs {
						bytes += len(v.In.Msg)
					}
					ackLate(vs, tick)
				}
				for range 2 * TickHz {
					step()
				}
				ph, bytes = [numPhases]time.Duration{}, 0
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					step()
				}
				reportPhases(b, &ph)
				b.ReportMetric(float64(bytes)/float64(b.N)/128, "msgB/peer")
			})
		}
	}
}

// BenchmarkTickPaced is BenchmarkTickDelta's tick (deltas, 2 workers) at
// a live server's cadence: each tick followed by 12 ms of sleep (untimed),
// as between 60 Hz ticks, with the workers unpinned (parked between passes,
// woken for each) and pinned (world.pin_sim_workers: spinning between a
// tick's passes, woken by their own timer 1 ms before the next tick). The
// back-to-back benchmark hides what the wake-ups cost a paced tick. It also
// reports the ticks' p50 and p99 (tick-p50-ms, tick-p99-ms): the live
// server's tail, less the network and the swarm beside it.
func BenchmarkTickPaced(b *testing.B) {
	const gap = 12 * time.Millisecond
	for _, pinned := range []bool{false, true} {
		b.Run(fmt.Sprintf("pinned=%v", pinned), func(b *testing.B) {
			sim, vs := referenceWorld(b, 2, true, pinned)
			unpin, _, _ := sim.PinCaller()
			defer unpin()
			var ph [numPhases]time.Duration
			tick := uint32(0)
			var took []float64
			step := func() {
				tick++
				sim.Warm()
				start := time.Now()
				benchTick(sim, vs, tick, &ph)
				took = append(took, ms(time.Since(start)))
				sim.Cool(time.Now().Add(gap))
				ackLate(vs, tick)
			}
			for range 2 * TickHz {
				step()
				time.Sleep(gap)
			}
			ph = [numPhases]time.Duration{}
			took = took[:0]
			b.ResetTimer()
			for b.Loop() {
				step()
				b.StopTimer()
				time.Sleep(gap)
				b.StartTimer()
			}
			reportPhases(b, &ph)
			sum := stats.SummarizeInPlace(took)
			b.ReportMetric(sum.P50, "tick-p50-ms")
			b.ReportMetric(sum.P99, "tick-p99-ms")
		})
	}
}

// BenchmarkWriteMetrics is one write of the metrics document (build,
// encode, the atomic file write) for the bite tests' world: 8 joined
// peers, 100 AI, 100 ticks into the run. Its allocation is what sets how
// often a small server collects garbage at ten writes a second.
func BenchmarkWriteMetrics(b *testing.B) {
	ts := newTestServer(b, func(c *Config) {
		c.World.TestSpawnAICount = 100
		c.Security.MaxConnectionsPerIP = 0
		c.Metrics.TickJSONPath = filepath.Join(b.TempDir(), "m.json")
	})
	for p := transport.PeerID(1); p <= 8; p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
		ts.h.recv(p, joinMsg(b, "builtin:sensor-fighter"))
	}
	for range 100 {
		ts.realTick()
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := ts.WriteMetrics(); err != nil {
			b.Fatal(err)
		}
	}
}
