package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// FaultConfig is [faults]: deliberate defects that exist to prove the
// gates bite (docs/faults.md). All are off by default; every one that is on
// is logged at startup and listed in the metrics file's "faults" array.
type FaultConfig struct {
	RSSLeakKBPerMin      float64  `toml:"rss_leak_kb_per_min"`    // steady leak, touched memory
	RSSStepKB            int      `toml:"rss_step_kb"`            // one-off allocation of this size…
	RSSStepAtS           float64  `toml:"rss_step_at_s"`          // …this many seconds after start
	ExtraTickMs          float64  `toml:"extra_tick_ms"`          // busy work added to every tick
	SlowIntegrateMs      float64  `toml:"slow_integrate_ms"`      // busy work added to every tick's integrate phase
	RefuseEveryNthJoin   int      `toml:"refuse_every_nth_join"`  // Refuse(server_full) every Nth valid Join
	InflateSnapshotBytes int      `toml:"inflate_snapshot_bytes"` // incompressible padding per snapshot body
	ReportTransport      string   `toml:"report_transport"`       // lie about the transport in Welcome and metrics
	OmitMetrics          []string `toml:"omit_metrics"`           // metrics-file fields left out
	AIDecayPerMin        float64  `toml:"ai_decay_per_min"`       // AI entities removed per minute
	FattenRecordsBytes   int      `toml:"fatten_records_bytes"`   // padding paid for out of the snapshot budget
	IgnoreInputs         bool     `toml:"ignore_inputs"`          // drop every Input unapplied, uncounted, unrecorded
	InputDelayMs         float64  `toml:"input_delay_ms"`         // apply each Input this much later than it arrived
	HollowSensors        bool     `toml:"hollow_sensors"`         // sensors are checked but detect nothing
	DisableDatalink      bool     `toml:"disable_datalink"`       // no track is shared: each table is its owner's own
	IgnoreFireButtons    bool     `toml:"ignore_fire_buttons"`    // the gun and store buttons do nothing
	// IgnoreSnapshotAcks: the snapshot acknowledgements in Inputs are read
	// and dropped, so a peer that asked for deltas gets full version-3
	// bodies only: what a harness that never acknowledges costs.
	IgnoreSnapshotAcks bool `toml:"ignore_snapshot_acks"`
	// CorruptDeltaEveryNth: every Nth delta body built for a peer has one
	// bit of its entity section flipped: the corruption a client must count
	// as a decode failure, never pass.
	CorruptDeltaEveryNth int `toml:"corrupt_delta_every_nth"`
	// DisableCongestionControl turns the congestion controller off whatever
	// [network] says: a server that never backs off on a bad link.
	DisableCongestionControl bool `toml:"disable_congestion_control"`
	// CongestionStuckAtFloor: the controller backs off but never adds
	// back, so a peer that was congested stays slow (recovery never comes).
	CongestionStuckAtFloor bool    `toml:"congestion_stuck_at_floor"`
	AllocChurnMBPerS       float64 `toml:"alloc_churn_mb_per_s"` // short-lived garbage allocated per second
	// ExitAfterS: this many seconds after the bind the server stops dead,
	// without a shutdown (no Notice, no final metrics write): a crash, the
	// server death a leg must end on at once.
	ExitAfterS float64 `toml:"exit_after_s"`
	// SnapshotsThenSilent: each joined peer is sent this many snapshots
	// after its Welcome, then nothing at all (no Snapshot, no PeerDelay):
	// the server that answers the join and falls silent.
	SnapshotsThenSilent int `toml:"snapshots_then_silent"`
	// SnapshotIntervalMs: each joined peer is sent a snapshot only every
	// this many milliseconds of wall time; the tick numbers in them still
	// advance at the tick rate, so the observed tick-Hz stays at 60 while
	// almost nothing is delivered.
	SnapshotIntervalMs float64 `toml:"snapshot_interval_ms"`
	// SlowStretch: for a stretch of the run every tick spins ExtraMs more
	// (CPU busy work, as extra_tick_ms): a server slow, and busy, in the
	// middle of a run and healthy before and after it, which a figure read
	// at the end alone never sees.
	SlowStretch SlowStretch `toml:"slow_stretch"`
	// StdoutFloodMBPerS: the server writes this many MiB of log lines a
	// second to its stdout, on a goroutine of its own: the chatty server
	// whose output must neither fill the disk nor stall the run.
	StdoutFloodMBPerS float64 `toml:"stdout_flood_mb_per_s"`
	// DelayMode is how extra_tick_ms, slow_integrate_ms and slow_stretch
	// make a tick slower: "spin" (the default) burns the CPU, as a slow
	// simulation does; "sleep" waits with the core free, as a tick blocked
	// on a lock, a disk or a synchronous call does. The tick and phase
	// figures see the same delay either way; only the process's CPU
	// (server_cpu_pct_max) tells them apart. The end-to-end suite runs its
	// tick bites side by side on two cores, where a spinning fault would
	// take a neighbouring leg's core.
	DelayMode string `toml:"delay_mode"`
	// OnlyOnTransport scopes every fault above to a server speaking this
	// transport: on another, New turns them all off. A profile that runs
	// each leg on several transports passes one [faults] table to all of
	// them; this makes a defect of one transport's legs only.
	OnlyOnTransport string `toml:"only_on_transport"`
}

// SlowStretch is [faults.slow_stretch]: ExtraMs of busy work added to
// every tick from AtS to AtS + ForS seconds after the bind. Off when ForS
// or ExtraMs is 0.
type SlowStretch struct {
	AtS     float64 `toml:"at_s"`
	ForS    float64 `toml:"for_s"`
	ExtraMs float64 `toml:"extra_ms"`
}

// on reports whether the stretch is set.
func (s SlowStretch) on() bool { return s.ForS > 0 && s.ExtraMs > 0 }

// extraAt is the busy work owed to a tick uptime after the bind.
func (s SlowStretch) extraAt(uptime time.Duration) time.Duration {
	at := uptime.Seconds()
	if !s.on() || at < s.AtS || at >= s.AtS+s.ForS {
		return 0
	}
	return time.Duration(s.ExtraMs * float64(time.Millisecond))
}

// scoped is the faults as they apply to a server speaking transport: all
// of them, or none when they are scoped to another transport.
func (f FaultConfig) scoped(transport string) FaultConfig {
	if f.OnlyOnTransport == "" || f.OnlyOnTransport == transport {
		return f
	}
	return FaultConfig{OnlyOnTransport: f.OnlyOnTransport}
}

// CrashFault is what Run returns when the exit_after_s fault fires: the
// server stopped on purpose, mid-run, without a shutdown.
type CrashFault struct {
	// After is the time since the bind at which it fired.
	After time.Duration
}

func (e *CrashFault) Error() string {
	return fmt.Sprintf("fault exit_after_s: stopped dead %.1fs after the bind (a deliberate crash, no shutdown)", e.After.Seconds())
}

func (f *FaultConfig) checks() []check {
	bad := ""
	for _, name := range f.OmitMetrics {
		if !metricFieldNames[name] {
			bad = name
			break
		}
	}
	return []check{
		{"faults.rss_leak_kb_per_min", f.RSSLeakKBPerMin >= 0 && f.RSSLeakKBPerMin <= 1<<20, "must be 0..1048576"},
		{"faults.rss_step_kb", f.RSSStepKB >= 0 && f.RSSStepKB <= 4<<20, "must be 0..4194304"},
		{"faults.rss_step_at_s", f.RSSStepAtS >= 0 && f.RSSStepAtS <= 86400, "must be 0..86400"},
		{"faults.extra_tick_ms", f.ExtraTickMs >= 0 && f.ExtraTickMs <= 1000, "must be 0..1000"},
		{"faults.slow_integrate_ms", f.SlowIntegrateMs >= 0 && f.SlowIntegrateMs <= 1000, "must be 0..1000"},
		{"faults.refuse_every_nth_join", f.RefuseEveryNthJoin >= 0, "must be ≥ 0 (0 off)"},
		{"faults.inflate_snapshot_bytes", f.InflateSnapshotBytes >= 0 && f.InflateSnapshotBytes <= 65535, "must be 0..65535"},
		{"faults.report_transport", len(f.ReportTransport) <= 255, "must be at most 255 bytes"},
		{"faults.omit_metrics", bad == "", fmt.Sprintf("%q is not a metrics-file field", bad)},
		{"faults.ai_decay_per_min", f.AIDecayPerMin >= 0 && f.AIDecayPerMin <= 1e6, "must be 0..1000000"},
		{"faults.fatten_records_bytes", f.FattenRecordsBytes >= 0 && f.FattenRecordsBytes <= 65535, "must be 0..65535"},
		{"faults.fatten_records_bytes", f.FattenRecordsBytes == 0 || f.InflateSnapshotBytes == 0, "cannot be combined with inflate_snapshot_bytes"},
		{"faults.input_delay_ms", f.InputDelayMs >= 0 && f.InputDelayMs <= 10000, "must be 0..10000"},
		{"faults.alloc_churn_mb_per_s", f.AllocChurnMBPerS >= 0 && f.AllocChurnMBPerS <= 4096, "must be 0..4096"},
		{"faults.exit_after_s", f.ExitAfterS >= 0 && f.ExitAfterS <= 86400, "must be 0..86400"},
		{"faults.snapshots_then_silent", f.SnapshotsThenSilent >= 0, "must be ≥ 0 (0 off)"},
		{"faults.corrupt_delta_every_nth", f.CorruptDeltaEveryNth >= 0, "must be ≥ 0 (0 off)"},
		{"faults.snapshot_interval_ms", f.SnapshotIntervalMs >= 0 && f.SnapshotIntervalMs <= 60000, "must be 0..60000"},
		{"faults.slow_stretch.at_s", f.SlowStretch.AtS >= 0 && f.SlowStretch.AtS <= 86400, "must be 0..86400"},
		{"faults.slow_stretch.for_s", f.SlowStretch.ForS >= 0 && f.SlowStretch.ForS <= 86400, "must be 0..86400"},
		{"faults.slow_stretch.extra_ms", f.SlowStretch.ExtraMs >= 0 && f.SlowStretch.ExtraMs <= 1000, "must be 0..1000"},
		{"faults.delay_mode", f.DelayMode == "" || f.DelayMode == DelaySpin || f.DelayMode == DelaySleep, `must be "spin" or "sleep"`},
		{"faults.stdout_flood_mb_per_s", f.StdoutFloodMBPerS >= 0 && f.StdoutFloodMBPerS <= 1024, "must be 0..1024"},
		{"faults.only_on_transport", len(f.OnlyOnTransport) <= 64 && strings.TrimSpace(f.OnlyOnTransport) == f.OnlyOnTransport, "must be a transport name (\"enet\", \"quic\") or empty"},
	}
}

// Active lists the faults that are on, as "key=value", in a stable order.
func (f *FaultConfig) Active() []string {
	var out []string
	add := func(on bool, key string, v any) {
		if on {
			out = append(out, fmt.Sprintf("%s=%v", key, v))
		}
	}
	add(f.RSSLeakKBPerMin > 0, "rss_leak_kb_per_min", f.RSSLeakKBPerMin)
	add(f.RSSStepKB > 0, "rss_step_kb", f.RSSStepKB)
	add(f.RSSStepKB > 0, "rss_step_at_s", f.RSSStepAtS)
	add(f.ExtraTickMs > 0, "extra_tick_ms", f.ExtraTickMs)
	add(f.SlowIntegrateMs > 0, "slow_integrate_ms", f.SlowIntegrateMs)
	add(f.RefuseEveryNthJoin > 0, "refuse_every_nth_join", f.RefuseEveryNthJoin)
	add(f.InflateSnapshotBytes > 0, "inflate_snapshot_bytes", f.InflateSnapshotBytes)
	add(f.ReportTransport != "", "report_transport", f.ReportTransport)
	add(len(f.OmitMetrics) > 0, "omit_metrics", strings.Join(f.OmitMetrics, ","))
	add(f.AIDecayPerMin > 0, "ai_decay_per_min", f.AIDecayPerMin)
	add(f.FattenRecordsBytes > 0, "fatten_records_bytes", f.FattenRecordsBytes)
	add(f.IgnoreInputs, "ignore_inputs", true)
	add(f.InputDelayMs > 0, "input_delay_ms", f.InputDelayMs)
	add(f.HollowSensors, "hollow_sensors", true)
	add(f.DisableDatalink, "disable_datalink", true)
	add(f.IgnoreFireButtons, "ignore_fire_buttons", true)
	add(f.IgnoreSnapshotAcks, "ignore_snapshot_acks", true)
	add(f.CorruptDeltaEveryNth > 0, "corrupt_delta_every_nth", f.CorruptDeltaEveryNth)
	add(f.DisableCongestionControl, "disable_congestion_control", true)
	add(f.CongestionStuckAtFloor, "congestion_stuck_at_floor", true)
	add(f.AllocChurnMBPerS > 0, "alloc_churn_mb_per_s", f.AllocChurnMBPerS)
	add(f.ExitAfterS > 0, "exit_after_s", f.ExitAfterS)
	add(f.SnapshotsThenSilent > 0, "snapshots_then_silent", f.SnapshotsThenSilent)
	add(f.SnapshotIntervalMs > 0, "snapshot_interval_ms", f.SnapshotIntervalMs)
	ss := f.SlowStretch
	add(ss.on(), "slow_stretch", fmt.Sprintf("{at_s:%g,for_s:%g,extra_ms:%g}", ss.AtS, ss.ForS, ss.ExtraMs))
	add(f.StdoutFloodMBPerS > 0, "stdout_flood_mb_per_s", f.StdoutFloodMBPerS)
	add(f.DelayMode != "" && f.delaysTick(), "delay_mode", f.DelayMode)
	return out
}

// deliveryFault is the snapshots_then_silent and snapshot_interval_ms
// faults: which joined peers may be sent a snapshot this tick, and which
// are sent nothing at all any more.
type deliveryFault struct {
	silentAfter int64         // snapshots per peer, then silence (0: off)
	every       time.Duration // wall time between two snapshots to a peer (0: off)
}

func newDeliveryFault(f *FaultConfig) deliveryFault {
	return deliveryFault{silentAfter: int64(f.SnapshotsThenSilent), every: time.Duration(f.SnapshotIntervalMs * float64(time.Millisecond))}
}

func (d deliveryFault) on() bool { return d.silentAfter > 0 || d.every > 0 }

// silent reports whether p is sent nothing any more.
func (d deliveryFault) silent(p *peer) bool {
	return d.silentAfter > 0 && p.faultSnaps >= d.silentAfter
}

// allow decides whether p, owed a snapshot now, is sent one, and counts it
// when it is. The interval is wall time, not ticks: a server that falls
// behind and runs its late ticks back to back must not shorten it.
func (d deliveryFault) allow(p *peer, now time.Time) bool {
	if !d.on() {
		return true
	}
	if d.silent(p) || (d.every > 0 && p.faultSnaps > 0 && now.Sub(p.faultLastAt) < d.every) {
		return false
	}
	p.faultSnaps++
	p.faultLastAt = now
	return true
}

// metricFieldNames are the JSON names of report.ServerTick, the only names
// omit_metrics accepts.
var metricFieldNames = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(report.ServerTick{})
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	return m
}()

// leaker implements the RSS faults: it allocates memory and writes to every
// page so the kernel must back it (untouched allocations do not move RSS).
type leaker struct {
	bytesPerSec float64
	last        time.Duration // uptime of the previous tick
	owed        float64
	stepBytes   int
	stepAt      time.Duration
	stepped     bool
	held        [][]byte
}

func newLeaker(f *FaultConfig) *leaker {
	return &leaker{
		bytesPerSec: f.RSSLeakKBPerMin * 1024 / 60,
		stepBytes:   f.RSSStepKB * 1024,
		stepAt:      time.Duration(f.RSSStepAtS * float64(time.Second)),
	}
}

// tick leaks what the wall-clock rate owes since the previous tick (per
// minute of wall time, not per tick: a server starved of CPU ticks less
// often and must still leak at the rate the fault names), and takes the
// one-off step when it is due.
func (l *leaker) tick(uptime time.Duration) {
	elapsed := uptime - l.last
	l.last = uptime
	if l.bytesPerSec > 0 && elapsed > 0 {
		l.owed += l.bytesPerSec * elapsed.Seconds()
		if l.owed >= 4096 { // whole pages, so each one is touched
			n := int(l.owed) &^ 4095
			l.owed -= float64(n)
			l.held = append(l.held, touched(n))
		}
	}
	if l.stepBytes > 0 && !l.stepped && uptime >= l.stepAt {
		l.stepped = true
		l.held = append(l.held, touched(l.stepBytes))
	}
}

// churner implements alloc_churn_mb_per_s: garbage. Every tick allocates
// its share of the rate in 64 KiB blocks, writes every page of each (the
// allocation must be real work, not a reservation) and drops them — the
// allocation-heavy server whose collector runs often, which gc_count and
// gc_pause_ms exist to show. RSS stays flat: nothing is held.
type churner struct {
	perTick float64
	owed    float64
}

// churnBlock is one churn allocation: large enough to be heap-allocated
// without question, small enough that each tick's share is many of them.
const churnBlock = 64 << 10

func newChurner(f *FaultConfig) *churner {
	return &churner{perTick: f.AllocChurnMBPerS * (1 << 20) / TickHz}
}

// tick allocates and drops this tick's whole blocks.
func (c *churner) tick() {
	if c.perTick <= 0 {
		return
	}
	c.owed += c.perTick
	for ; c.owed >= churnBlock; c.owed -= churnBlock {
		b := make([]byte, churnBlock)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		churnSink = b // escapes: the compiler cannot keep it on the stack
	}
	churnSink = nil
}

// churnSink is written and never read on purpose: storing each block in a
// package variable makes it escape, so the fault churns the heap (a 64 KiB
// make that stayed local could live on the stack and churn nothing).
//
//lint:ignore U1000 a write-only sink is the point (see above)
var churnSink []byte

// decayer implements ai_decay_per_min: test-spawned AI entities disappear
// at a steady rate — the world that shrinks while it is measured, which
// makes every figure a function of run length and luck and is what the
// entities_min gate exists to catch.
type decayer struct {
	perTick float64
	owed    float64
}

func newDecayer(f *FaultConfig) *decayer {
	return &decayer{perTick: f.AIDecayPerMin / 60 / TickHz}
}

// tick removes this tick's whole AI entities (newest slots first) and
// returns how many it removed.
func (d *decayer) tick(w *World) int {
	if d.perTick <= 0 {
		return 0
	}
	d.owed += d.perTick
	removed := 0
	live := w.Live()
	for i := len(live) - 1; i >= 0 && d.owed >= 1; i-- {
		if w.At(live[i]).AI {
			w.Remove(live[i])
			d.owed--
			removed++
		}
	}
	if d.owed >= 1 {
		d.owed = 0 // no AI left: nothing more is owed
	}
	return removed
}

func touched(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 4096 {
		b[i] = 1
	}
	return b
}

// The two values of FaultConfig.DelayMode.
const (
	DelaySpin  = "spin"
	DelaySleep = "sleep"
)

// delaysTick reports whether a fault that DelayMode governs is on.
func (f *FaultConfig) delaysTick() bool {
	return f.ExtraTickMs > 0 || f.SlowIntegrateMs > 0 || f.SlowStretch.on()
}

// delayTick makes the calling tick d longer: slept when mode is
// DelaySleep, spun otherwise (FaultConfig.DelayMode).
func delayTick(mode string, d time.Duration) {
	if mode == DelaySleep {
		time.Sleep(d)
		return
	}
	busyWork(d)
}

// busyWork spins for d: a delay fault's default, the CPU a slower
// simulation burns inside the tick (server_cpu_pct_max sees it; a sleep
// would not).
func busyWork(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 256; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sinkU64 = x
}

// floodLine is one line of the stdout_flood_mb_per_s fault: a log line of
// realistic length.
var floodLine = []byte("scalegate serve: FAULT stdout_flood_mb_per_s: a chatty server's debug line, written as fast as the fault's rate says ........................\n")

// flood writes rate MiB/s of floodLine to w until ctx ends: every 10 ms
// what the time since the last slice owes, in as few writes as a 64 KiB
// block allows (one line
// a write would cost the fault a core in syscalls before it cost the log
// anything). A write that fails (the reader went away) ends it: a server
// does not die of its own log.
func flood(ctx context.Context, w io.Writer, rateMBPerS float64) {
	const slice = 10 * time.Millisecond
	block := bytes.Repeat(floodLine, (64<<10)/len(floodLine))
	perSec := rateMBPerS * (1 << 20)
	t := time.NewTicker(slice)
	defer t.Stop()
	owed, last := 0.0, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			// Owed by the wall time since the last slice, not per slice: a
			// ticker delayed on a loaded machine must not slow the flood.
			owed += perSec * now.Sub(last).Seconds()
			last = now
		}
		for owed >= float64(len(floodLine)) {
			n := min(len(block), int(owed)/len(floodLine)*len(floodLine))
			if _, err := w.Write(block[:n]); err != nil {
				return
			}
			owed -= float64(n)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// sinkU64 is written and never read on purpose: it keeps busyWork's
// arithmetic live, so the spin costs the CPU time the fault promises.
//
//lint:ignore U1000 a write-only sink is the point (see above)
var sinkU64 uint64

// padBytes returns n deterministic, incompressible bytes (an xorshift
// stream), so the inflate_snapshot_bytes fault survives zstd.
func padBytes(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x >> 32)
	}
	return b
}
