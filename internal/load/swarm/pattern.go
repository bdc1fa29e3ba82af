package swarm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/load/mix"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// Control is one frame of flight controls a pattern produces; the client adds
// the sequence number and sends it as a proto.Input.
type Control struct {
	Throttle, Elevator, Aileron, Rudder float32
	Buttons                             uint32
	// Seq numbers the Input (1, 2, …, wrapping at 2³²); the engine sets it
	// after the pattern. A state update that acknowledges Input N
	// (Msg.HasInputAck) names this number.
	Seq uint32
}

// Pattern is a flight pattern: what one synthetic pilot does. Each client
// owns its own instance, so a pattern may keep state (random does).
type Pattern interface {
	// Control fills c for time t (seconds since the client joined) and
	// reports whether an Input should be sent at all this tick; idle sends
	// nothing.
	Control(t float64, c *Control) bool
}

// PatternFactory makes the instance for client index of a swarm of n.
type PatternFactory func(index, n int) Pattern

// patterns is the registry of built-in patterns. Adding a pattern is a new
// type and one line here; nothing else in the harness changes.
var patterns = map[string]PatternFactory{
	"weave":      func(i, _ int) Pattern { return weave{phase: clientPhase(i)} },
	"level":      func(int, int) Pattern { return level{} },
	"aggressive": func(i, _ int) Pattern { return aggressive{phase: clientPhase(i)} },
	"idle":       func(int, int) Pattern { return &idle{lastS: -1} },
	"random":     func(i, _ int) Pattern { return newRandomWalk(uint64(i)) },
	"weapons": func(i, _ int) Pattern {
		return weapons{weave: weave{phase: clientPhase(i)}, offset: frac(float64(i) * goldenFrac)}
	},
}

// PatternNames lists the registered patterns, sorted.
func PatternNames() []string {
	names := make([]string, 0, len(patterns))
	for n := range patterns {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// goldenFrac spreads per-client offsets evenly over [0,1) for any N, so a
// swarm never moves in lockstep.
const goldenFrac = 0.6180339887498949

func frac(x float64) float64 { return x - math.Floor(x) }

// clientPhase is client i's phase offset in radians.
func clientPhase(i int) float64 { return 2 * math.Pi * frac(float64(i)*goldenFrac) }

func sinT(t, period, phase float64) float32 {
	return float32(math.Sin(2*math.Pi*t/period + phase))
}

// weave is a gentle turn and climb with a per-client phase: entities spread
// out and keep moving (physics and interest management).
type weave struct{ phase float64 }

// Control implements Pattern.
func (p weave) Control(t float64, c *Control) bool {
	*c = Control{Throttle: 0.7, Aileron: 0.5 * sinT(t, 8, p.phase), Elevator: 0.2 * sinT(t, 5, p.phase), Rudder: 0.1 * sinT(t, 11, p.phase)}
	return true
}

// level is straight and level flight: near-idle movement.
type level struct{}

// Control implements Pattern.
func (level) Control(_ float64, c *Control) bool {
	*c = Control{Throttle: 0.6}
	return true
}

// aggressive is high-rate rolls and pulls on afterburner: maximum entity
// churn.
type aggressive struct{ phase float64 }

// Control implements Pattern.
func (p aggressive) Control(t float64, c *Control) bool {
	*c = Control{
		Throttle: 1,
		Aileron:  sinT(t, 1.5, p.phase),
		Elevator: 0.9 * sinT(t, 2.1, p.phase),
		Rudder:   0.4 * sinT(t, 0.9, p.phase),
		Buttons:  proto.ButtonAfterburner,
	}
	return true
}

// idle flies no input: pure connection and snapshot overhead. It still
// sends one all-neutral Input a second as a keepalive, because a server may
// (the reference server does, idle_timeout_s) kick a joined peer it has not
// heard from; a kicked swarm would measure nothing.
type idle struct{ lastS int64 }

// acksEveryUpdate is a Pattern whose client sends an Input for every state
// update it has to acknowledge, on the ticks the pattern itself sends none
// (client.buildInput, Acker). idle is one: a real client's input stream
// goes out every tick whatever its pilot does, and one Input a second would
// leave a delta server's baselines past its ring. A trace replay is not: it
// sends the recording's input stream exactly, at the recorded client's
// own rate.
type acksEveryUpdate interface {
	acksEveryUpdate()
}

func (*idle) acksEveryUpdate() {}

// Control implements Pattern.
func (p *idle) Control(t float64, c *Control) bool {
	s := int64(math.Floor(t))
	if s == p.lastS {
		return false
	}
	p.lastS = s
	*c = Control{}
	return true
}

// randomWalk is a per-client seeded random walk of the controls, for
// heterogeneity that still reproduces run to run.
type randomWalk struct {
	rng *rand.Rand
	c   Control
}

// randomSeed is fixed so a run reproduces; the client index is the stream.
const randomSeed = 0x5ca1e6a7e

func newRandomWalk(index uint64) *randomWalk {
	return &randomWalk{rng: rand.New(rand.NewPCG(randomSeed, index)), c: Control{Throttle: 0.7}}
}

func (p *randomWalk) step(v float32, lo, hi float32) float32 {
	v += float32(p.rng.Float64()*0.2 - 0.1)
	return min(max(v, lo), hi)
}

// Control implements Pattern.
func (p *randomWalk) Control(_ float64, c *Control) bool {
	p.c.Throttle = p.step(p.c.Throttle, 0, 1)
	p.c.Elevator = p.step(p.c.Elevator, -1, 1)
	p.c.Aileron = p.step(p.c.Aileron, -1, 1)
	p.c.Rudder = p.step(p.c.Rudder, -1, 1)
	*c = p.c
	return true
}

// weapons is weave flight plus duty-cycled gun fire and staggered store
// releases. The schedule is a function of (t, client index) only, so a swarm
// fires smeared across the window and a run reproduces.
type weapons struct {
	weave
	offset float64 // [0,1), from the client index
}

// Weapons schedule: the gun fires for the first quarter of every 4 s cycle,
// a store is released during the first 0.5 s of every 10 s cycle.
const (
	gunPeriodS   = 4.0
	gunDuty      = 0.25
	storePeriodS = 10.0
	storeHoldS   = 0.5
)

// Control implements Pattern.
func (p weapons) Control(t float64, c *Control) bool {
	p.weave.Control(t, c)
	if frac(t/gunPeriodS+p.offset) < gunDuty {
		c.Buttons |= proto.ButtonGun
	}
	if frac(t/storePeriodS+p.offset) < storeHoldS/storePeriodS {
		c.Buttons |= proto.ButtonStoreRelease
	}
	return true
}

// MixEntry is one weighted pattern of a mix.
type MixEntry = mix.Entry

// MaxMixWeight bounds one weight, so clients × total weight cannot overflow.
const MaxMixWeight = mix.MaxWeight

// Mix is a weighted pattern mix, in the order given. Parsing and the
// assignment of clients (Assign, Counts) are internal/load/mix's, shared with the
// reference server's AI-controller mix.
type Mix []MixEntry

// ParseMix parses "weave:80,aggressive:20". Weights are positive integers
// after the last colon ("trace:PATH:20" is a trace); names must be
// registered patterns or trace:PATH and may not repeat.
func ParseMix(spec string) (Mix, error) {
	m, err := mix.Parse(spec, "pattern mix", checkPatternName)
	return Mix(m), err
}

// SinglePattern is the mix of one pattern, after checking its name.
func SinglePattern(name string) (Mix, error) {
	if err := checkPatternName(name); err != nil {
		return nil, err
	}
	return Mix{{Name: name, Weight: 1}}, nil
}

// TracePrefix names a replayed recording: "trace:PATH", PATH a FLIT file or
// a directory of them (tracepattern.go).
const TracePrefix = "trace:"

// TracePath returns PATH of a "trace:PATH" pattern name.
func TracePath(name string) (string, bool) {
	path, ok := strings.CutPrefix(name, TracePrefix)
	return path, ok
}

// checkPatternName accepts a registered pattern or "trace:PATH" with a
// non-empty PATH. Whether PATH holds a usable recording is checked when the
// run loads it (loadReplay), once.
func checkPatternName(name string) error {
	if path, ok := TracePath(name); ok {
		if strings.TrimSpace(path) == "" {
			return fmt.Errorf("pattern %q: trace: needs a path (trace:FILE.flit or trace:DIR)", name)
		}
		return nil
	}
	if _, ok := patterns[name]; !ok {
		return fmt.Errorf("unknown pattern %q (known: %s, trace:PATH)", name, strings.Join(PatternNames(), ", "))
	}
	return nil
}

// TraceError is a "trace:PATH" pattern whose recording cannot be replayed
// (unreadable, not FLIT v1, no records, a directory without .flit files).
type TraceError struct{ Err error }

// Error is the load error, which names the file.
func (e *TraceError) Error() string { return e.Err.Error() }

// Unwrap returns the load error.
func (e *TraceError) Unwrap() error { return e.Err }

// factories resolves every pattern of the mix to its factory, loading each
// trace once (all of them together at most trace.MaxSetBytes of files);
// every client replaying it shares the loaded records read-only.
func (m Mix) factories(ctx context.Context) (map[string]PatternFactory, []*replaySet, error) {
	out := make(map[string]PatternFactory, len(m))
	var sets []*replaySet
	budget := trace.NewSetBudget("the trace files of this swarm")
	for _, e := range m {
		if err := checkPatternName(e.Name); err != nil {
			return nil, nil, err
		}
		path, ok := TracePath(e.Name)
		if !ok {
			out[e.Name] = patterns[e.Name]
			continue
		}
		rs, err := loadReplay(ctx, e.Name, path, budget)
		if err != nil {
			return nil, nil, &TraceError{Err: err}
		}
		sets = append(sets, rs)
		out[e.Name] = rs.factory
	}
	return out, sets, nil
}

// String is the canonical spec: the bare name for a single pattern,
// "a:w,b:w" otherwise. It is what the report's pattern field echoes.
func (m Mix) String() string { return mix.Mix(m).String() }

// Assign returns the pattern name of client i of n (internal/load/mix: the
// cumulative-weight bucket containing floor(i·W/n); deterministic, the
// counts match the weight fractions and reproduce on every platform).
func (m Mix) Assign(i, n int) string { return mix.Mix(m).Assign(i, n) }

// Counts returns how many of n clients get each pattern.
func (m Mix) Counts(n int) map[string]int { return mix.Mix(m).Counts(n) }
