// Package gatetable declares, once, every gate a profile can name. Each
// entry gives the profile field, the title, the metric it reads, its
// direction and unit, how its level follows the tier, and the swarm
// --assert-* flag that checks the same thing from inside the swarm. The
// gate's evaluation, the swarm's asserts and flags, the flags the gate
// forwards, and the summary's order and titles are all read from All, so the
// two evaluation paths cannot disagree. Adding a gate is one entry here, its
// field in schema/profile.cue (a test fails when the two differ) and a bite
// test.
package gatetable

import (
	"fmt"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// Direction says which side of the threshold holds.
type Direction int

// Directions.
const (
	AtMost  Direction = iota // measured ≤ threshold holds
	AtLeast                  // measured ≥ threshold holds
)

// Holds reports whether v is on the holding side of thr.
func (d Direction) Holds(v, thr float64) bool {
	if d == AtLeast {
		return v >= thr
	}
	return v <= thr
}

// Symbol is "≤" or "≥".
func (d Direction) Symbol() string {
	if d == AtLeast {
		return "≥"
	}
	return "≤"
}

// Kind is what a profile writes for the gate.
type Kind int

// Kinds: a threshold gate is `{threshold: N, level: ...}`; a switch is
// `{level: ...}` and takes its threshold from the run (see Source).
const (
	Threshold Kind = iota
	Switch
)

// TierRule is how a gate's level follows the tier.
type TierRule int

// Tier rules.
const (
	// AsDeclared: the profile's level stands in every tier.
	AsDeclared TierRule = iota
	// StrictOnly: a gate declared without a level is hard only in the
	// strict tier (the profile's tier "strict", or --strict); in the pr
	// tier it is shown as advisory, because the figure depends on the
	// machine. A declared level stands in every tier: neither the tier nor
	// --strict overrides a level the profile's author wrote down.
	StrictOnly
)

// Level is how a check counts: a hard check fails its leg, an advisory
// one never does.
type Level string

// Levels.
const (
	LevelHard     Level = "hard"
	LevelAdvisory Level = "advisory"
)

// Tier decides which gates are hard (the profile's tier, or --strict).
type Tier string

// Tiers: "pr" hard-gates what does not depend on the machine; "strict"
// also the machine-dependent gates (TierRule StrictOnly).
const (
	TierPR     Tier = "pr"
	TierStrict Tier = "strict"
)

// LevelIn is the level the gate is evaluated at in tier when the profile
// declares it at declared, and why that is not what the profile wrote (""
// when it is). A declared level is honoured in every tier; an unset one
// ("") takes the gate's tier rule: hard, except a StrictOnly gate outside
// the strict tier, which is advisory. The gate's evaluation and the flags
// forwarded to the swarm both use it, so they cannot disagree.
func (g Gate) LevelIn(declared Level, tier Tier) (level Level, why string) {
	switch {
	case declared == LevelHard || declared == LevelAdvisory:
		return declared, ""
	case g.Tier == StrictOnly:
		level, why = StrictOnlyLevel(tier)
		if why != "" {
			why += `, or in every tier with level: "hard"`
		}
		return level, why
	}
	return LevelHard, ""
}

// StrictOnlyLevel is the tier rule of a machine-dependent figure: hard in
// the strict tier, advisory in any other, with why ("" when hard). Gates
// marked StrictOnly and the baseline's timing figures both follow it.
func StrictOnlyLevel(tier Tier) (level Level, why string) {
	if tier == TierStrict {
		return LevelHard, ""
	}
	return LevelAdvisory, "advisory in the " + string(tier) + " tier (machine-dependent); hard in the strict tier (--strict)"
}

// Source is where a gate's threshold comes from.
type Source int

// Threshold sources.
const (
	// Declared: the profile's threshold.
	Declared Source = iota
	// SweepEntities: the leg's entity count of an entity sweep (a leg
	// without one does not evaluate the gate).
	SweepEntities
	// Clients: the client count the run asked for.
	Clients
	// AcrossTransports: the profile's threshold, checked once for the run
	// on the difference of Measure between the QUIC and the ENet leg of
	// each load (internal/judge/gate TransportOverhead), never on one leg.
	AcrossTransports
)

// Gate is one entry of the table.
type Gate struct {
	// Name is the field under the profile's gates: (and the check's id).
	Name string
	// Title is the row title in the summary.
	Title string
	// Metric names what is read, as a path into the report or server_tick.
	Metric string
	// Unit of the threshold and measured value ("" for counts).
	Unit string
	Dir  Direction
	Kind Kind
	Tier TierRule
	// Source of the threshold.
	Source Source
	// Timing: the figure shares the CPU with the swarm, so on a
	// harness-bound leg a failure cannot be attributed to the server.
	Timing bool
	// Flag is the swarm's --assert-* flag (without the dashes) checking the
	// same thing; "" = the gate is not forwarded to the swarm.
	Flag string
	// Aliases are further flag names accepted for Flag.
	Aliases []string
	// ZeroIsOff: the swarm flag is off at 0 instead of below 0 (the seed's
	// congestion pair: a 0 Hz send rate is not a meaningful bound).
	ZeroIsOff bool
	// Measure reads the figure; an error means the gate is unevaluable.
	Measure func(*Metrics) (float64, error)
	// Judge replaces the threshold comparison for gates whose verdict is
	// more than one comparison (admission). want is the threshold.
	Judge func(m *Metrics, want float64) Outcome
	// Explain adds context to a measured check (e.g. the largest RSS step).
	Explain func(*Metrics) string
	// PerSecond reads the gate's figure in one second of a run (a timeline
	// row), false when that second does not have it; nil: the gate has no
	// per-second figure and cannot end a leg early (abort.go).
	PerSecond func(report.TimelinePoint) (float64, bool)
	// ServerFields are the server_tick fields the gate reads (paths as
	// "tick_ms.p99"): a metrics source that cannot produce one makes the
	// gate unevaluable on every run, which vet reports up front.
	ServerFields []string
	// Doc is what docs/gate.md says after the bound in its "passes when"
	// column (the table there is generated from All: go generate).
	Doc string
	// Window is the stretch of the run the figure covers (window.go).
	Window Window
	// Windowed: the gate takes window_s (the width of the window it
	// slides); it is not forwarded to the swarm.
	Windowed bool
	// Own: the gate is on a figure the profile declares (declared.go),
	// not an entry of the table.
	Own bool
}

// Outcome is one gate evaluated against one threshold.
type Outcome struct {
	// Measured is nil when the figure is missing (Err says why).
	Measured *float64
	// Text is the measured value as shown.
	Text string
	// Err: the gate is unevaluable, which fails like a failed gate.
	Err error
	// Pass is meaningful only when Err is nil.
	Pass   bool
	Detail string
}

// Evaluate checks the gate against thr. It is the one rule both the swarm's
// asserts and the gate use.
func (g Gate) Evaluate(m *Metrics, thr float64) Outcome {
	if g.Judge != nil {
		return g.Judge(m, thr)
	}
	v, err := g.Measure(m)
	if err != nil {
		return Outcome{Text: "missing", Err: err}
	}
	o := Outcome{Measured: &v, Text: FormatNumber(v), Pass: g.Dir.Holds(v, thr)}
	if g.Explain != nil {
		o.Detail = g.Explain(m)
	}
	return o
}

// Bound is the threshold as shown ("≤ 150 KB/s").
func (g Gate) Bound(thr float64) string {
	if g.Source == Clients {
		n := int(thr)
		return fmt.Sprintf("%d/%d connected, 0 refused, 0 dropped", n, n)
	}
	s := g.Dir.Symbol() + " " + FormatNumber(thr)
	if g.Unit != "" {
		s += " " + g.Unit
	}
	return s
}

// SwarmUsage is the swarm flag's help line, derived from the entry.
func (g Gate) SwarmUsage() string {
	if g.Kind == Switch {
		return "fail unless " + g.Title + " holds (" + g.Metric + ")"
	}
	op := map[Direction]string{AtMost: ">", AtLeast: "<"}[g.Dir]
	s := fmt.Sprintf("fail if %s %s X", g.Metric, op)
	if g.Unit != "" {
		s += " (" + g.Unit + ")"
	}
	if g.ZeroIsOff {
		return s + "; 0 = off"
	}
	return s + "; < 0 = off"
}

// Names of the gates that code outside the table looks up by name (the
// HTML report draws their thresholds, the run-level and vet checks find
// theirs): a constant, so a misspelt name does not compile, and
// TestNamedGatesExist holds each to an entry of All.
const (
	TickP99WorstGate = "tick_ms_p99_worst_window_max"
	TickP99Gate      = "tick_ms_p99_max"
	TickHzMinGate    = "tick_hz_min"
	ServerCPUGate    = "server_cpu_pct_max"
	WireKBsGate      = "wire_kbs_max"
	// KBsMaxGate's per-second figure is report.html's payload chart.
	KBsMaxGate = "kbs_max"
	// InputLatencyP95Gate is drawn on report.html's input latency chart.
	InputLatencyP95Gate = "input_latency_ms_p95_max"
	// TransportOverheadGate is checked once per run (internal/judge/gate).
	TransportOverheadGate = "transport_overhead_kbs_max"
	// RecoverSGate needs an impairment schedule (vet says so).
	RecoverSGate = "recover_s_max"
)

// namedGates are the constants above, for the test that holds them to All.
func namedGates() []string {
	return []string{TickP99WorstGate, TickP99Gate, TickHzMinGate, ServerCPUGate, WireKBsGate, KBsMaxGate,
		InputLatencyP95Gate, TransportOverheadGate, RecoverSGate}
}

// MustLookup is the table's gate of one of the constants above. A name the
// table does not hold is a bug of the caller, so it panics rather than
// hand back a gate that would silently draw or check nothing: any test
// that reaches the call fails.
func MustLookup(name string) Gate {
	g, ok := Lookup(name)
	if !ok {
		panic(fmt.Sprintf("gatetable: no gate %q in the table", name))
	}
	return g
}

// All is every gate, in the order the summary shows them.
func All() []Gate { return slices.Clone(table) }

// table backs All; never handed out itself, so no caller can change it.
var table = []Gate{
	{Name: "admission", Window: WindowRun, Title: "admission", Metric: "report.clients_connected/refused/disconnected",
		Kind: Switch, Source: Clients, Dir: AtLeast, Flag: "assert-admission", Aliases: []string{"assert-no-refused"},
		Judge: admission, Doc: "all the profile's clients connected; none refused; none dropped"},
	{Name: "wire_kbs_max", Window: WindowServerHold, Title: "wire KB/s per client", Metric: "server_tick.wire_out_kbs_per_client",
		Unit: "KB/s", Dir: AtMost, Flag: "assert-max-wire-kbs", Measure: WireKBs.Read, PerSecond: wireSecond, Doc: "(150 KB/s/client in the shipped profiles); `wire_peers` missing or 0 is unevaluable", ServerFields: []string{"wire_out_kbs_per_client", "wire_peers"}},
	{Name: "kbs_max", Window: WindowClients, Title: "payload KB/s per client (max)", Metric: "report.downstream_kbs_per_client.max",
		Unit: "KB/s", Dir: AtMost, Flag: "assert-max-kbs", Measure: KBsMax.Read, PerSecond: kbsSecond},
	{Name: "tick_hz_min", Window: WindowClients, Title: "observed server tick-Hz (min)", Metric: "report.observed_server_tick_hz.min",
		Unit: "Hz", Dir: AtLeast, Timing: true, Flag: "assert-min-tick-hz", Measure: TickHzMin.Read, PerSecond: tickHzSecond, Doc: "(the collapse tripwire, 30)"},
	// Percentile budgets of the server's tick time: one gate per
	// statistic, named as every gate is, the figure's path plus its
	// direction (server_tick.tick_ms.max → tick_ms_max_max), so a budget
	// reads "p95 ≤ 16.6, p99 ≤ 33, max ≤ 100" as three gates with their
	// own rows, levels and swarm flags. tick_ms_p99_max keeps its flag.
	{Name: "tick_ms_p50_max", Window: WindowServerHold, Title: "server tick ms p50", Metric: "server_tick.tick_ms.p50",
		Unit: "ms", Dir: AtMost, Tier: StrictOnly, Timing: true, Flag: "assert-max-tick-ms-p50", Measure: TickMsP50.Read, Doc: "tiered like `tick_ms_p99_max`; a server that does not write `tick_ms.p50` is unevaluable", ServerFields: []string{"tick_ms.p50"}},
	{Name: "tick_ms_p95_max", Window: WindowServerHold, Title: "server tick ms p95", Metric: "server_tick.tick_ms.p95",
		Unit: "ms", Dir: AtMost, Tier: StrictOnly, Timing: true, Flag: "assert-max-tick-ms-p95", Measure: TickMsP95.Read, Doc: "tiered like `tick_ms_p99_max`", ServerFields: []string{"tick_ms.p95"}},
	{Name: "tick_ms_p99_max", Window: WindowServerHold, Title: "server tick ms p99", Metric: "server_tick.tick_ms.p99",
		Unit: "ms", Dir: AtMost, Tier: StrictOnly, Timing: true, Flag: "assert-max-tick-ms", Measure: TickMsP99.Read, Doc: "over the hold: from the server's cumulative tick histogram (docs/metrics.md, \"Cumulative state\"), or a Prometheus source's bucket increases; a metrics file without cumulative state is read over its own last 600 ticks and the summary says so. For a slow stretch inside a long hold see `tick_ms_p99_worst_window_max`; see \"Tiers\" below", ServerFields: []string{"tick_ms.p99"}},
	{Name: "tick_ms_max_max", Window: WindowServerHold, Title: "server tick ms max", Metric: "server_tick.tick_ms.max",
		Unit: "ms", Dir: AtMost, Tier: StrictOnly, Timing: true, Flag: "assert-max-tick-ms-max", Measure: TickMsMax.Read, Doc: "the longest tick of the hold: the upper bound of the histogram bucket it lies in (a ceiling, at most 1/64 above it in the reference server's layout); tiered like `tick_ms_p99_max`", ServerFields: []string{"tick_ms.max"}},
	// The worst stretch of a long hold: a p99 over the whole hold dilutes
	// a 30 s stall in a 2 h soak to nothing, which is the regression a
	// stability gate exists for.
	{Name: TickP99WorstGate, Window: WindowWorst, Windowed: true, Title: "server tick ms p99, worst window", Metric: "the tick p99 of the worst window_s window (timeline[].tick_hist)",
		Unit: "ms", Dir: AtMost, Tier: StrictOnly, Timing: true, Measure: TickP99Worst.Read, ServerFields: []string{"tick_ms"},
		Doc: "the highest tick p99 of any `window_s`-second window of the hold (`window_s` required, ≥ 1), slid a second at a time over the timeline's per-second tick histograms; the summary and report.html name the window. A server without cumulative tick state (or a Prometheus histogram) is unevaluable; tiered like `tick_ms_p99_max`; not forwarded to the swarm"},
	// The client-observed time between two consecutive state updates,
	// pooled over the joined clients after the warm-up: the "ms per step"
	// a player sees, which the server's own tick time does not show (a
	// server that ticks on time and sends late, or drops, is caught here).
	// It shares the CPU with the swarm: a timing figure.
	{Name: "state_interval_ms_p50_max", Window: WindowClients, Title: "state update interval ms p50", Metric: "report.state_interval_ms.p50",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-state-interval-ms-p50", Measure: StateIntervalP50.Read, Doc: "the client-observed time between two state updates, pooled over the clients (after the warm-up); phase-scopable"},
	{Name: "state_interval_ms_p95_max", Window: WindowClients, Title: "state update interval ms p95", Metric: "report.state_interval_ms.p95",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-state-interval-ms-p95", Measure: StateIntervalP95.Read, Doc: "as `state_interval_ms_p50_max`"},
	{Name: "state_interval_ms_p99_max", Window: WindowClients, Title: "state update interval ms p99", Metric: "report.state_interval_ms.p99",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-state-interval-ms-p99", Measure: StateIntervalP99.Read, Doc: "as `state_interval_ms_p50_max`"},
	// Input latency: from each Input to the first state update that
	// acknowledges it (docs/protocol.md, "The input acknowledgement").
	{Name: "input_latency_ms_p50_max", Window: WindowClients, Title: "input latency ms p50", Metric: "report.input_latency_ms.p50",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-input-latency-ms-p50", Measure: InputLatencyP50.Read, Doc: "from each Input to the first state update acknowledging it, pooled over the clients (after the warm-up); a server that does not acknowledge inputs (v1.1, or a bot's `Msg.InputAck`) is unevaluable; phase-scopable"},
	{Name: "input_latency_ms_p95_max", Window: WindowClients, Title: "input latency ms p95", Metric: "report.input_latency_ms.p95",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-input-latency-ms-p95", Measure: InputLatencyP95.Read, Doc: "as `input_latency_ms_p50_max`"},
	{Name: "input_latency_ms_p99_max", Window: WindowClients, Title: "input latency ms p99", Metric: "report.input_latency_ms.p99",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-input-latency-ms-p99", Measure: InputLatencyP99.Read, Doc: "as `input_latency_ms_p50_max`"},
	{Name: "max_snapshot_gap_ms_max", Window: WindowClients, Title: "max snapshot gap ms", Metric: "report.max_snapshot_gap_ms",
		Unit: "ms", Dir: AtMost, Timing: true, Flag: "assert-max-snapshot-gap-ms", Measure: MaxGap.Read, Doc: "the longest time between two consecutive state updates of any client (after the warm-up); phase-scopable; the built-in `delivery` check also bounds the time from a client's admission to its first update and from its last to its end"},
	{Name: "rss_growth_kb_max", Window: WindowRun, Title: "server RSS growth KB", Metric: "server_tick.rss_kb - server_tick.rss_startup_kb",
		Unit: "KB", Dir: AtMost, Flag: "assert-max-rss-growth-kb", Measure: RSSGrowth.Read, Doc: "either field ≤ 0 (unavailable) is unevaluable", ServerFields: []string{"rss_kb", "rss_startup_kb"}},
	{Name: "rss_slope_kb_per_min_max", Window: WindowTail, Title: "server RSS slope KB/min", Metric: "report.rss_slope_kb_per_min",
		Unit: "KB/min", Dir: AtMost, Flag: "assert-max-rss-slope-kb-per-min", Measure: RSSSlope.Read, Explain: rssStep, Doc: "`null` (series too short) is unevaluable; the largest RSS step is shown beside it", ServerFields: []string{"rss_kb"}},
	{Name: "entities_min", Window: WindowReadings, Title: "server entities", Metric: "server_tick.entities (lowest reading of the hold)",
		Dir: AtLeast, Flag: "assert-min-entities", Measure: Entities.Read, Doc: "the lowest entity count of the hold's readings: the world never shrank below it", ServerFields: []string{"entities"}},
	{Name: "contacts_min", Window: WindowReadings, Title: "sensor contacts", Metric: "server_tick.contacts (lowest reading of the hold)",
		Dir: AtLeast, Flag: "assert-min-contacts", Measure: Contacts.Read, Doc: "the bots' sensors see the world: the lowest contact-table count of the hold's readings (a hollow world has 0)", ServerFields: []string{"contacts"}},
	// Contacts alone pass with each owner's own tracks: a datalink that
	// shares nothing leaves most of them in place.
	{Name: "fused_contacts_min", Window: WindowReadings, Title: "datalink-fused contacts", Metric: "server_tick.fused_contacts (lowest reading of the hold)",
		Dir: AtLeast, Flag: "assert-min-fused-contacts", Measure: FusedContacts.Read, Doc: "the team datalink shared tracks: contact-table entries their owner knows only from a teammate (a datalink that fuses nothing has 0 while `contacts_min` still passes); a server that does not write `fused_contacts` is unevaluable", ServerFields: []string{"fused_contacts"}},
	{Name: "shots_min", Window: WindowRun, Title: "shots fired", Metric: "server_tick.shots_fired_total",
		Dir: AtLeast, Flag: "assert-min-shots", Measure: tick("shots_fired_total"), Doc: "the server fired the guns the swarm pressed", ServerFields: []string{"shots_fired_total"}},
	// Projectiles despawned since the server started (expired, struck
	// something or the ground): proof the churn a profile names ran, since
	// a server that spawns none, or never frees what it spawned, stays at 0.
	{Name: "despawns_min", Window: WindowRun, Title: "projectiles despawned", Metric: "server_tick.despawns_total",
		Dir: AtLeast, Flag: "assert-min-despawns", Measure: tick("despawns_total"), Doc: "projectiles were spawned and freed again — the `test_projectile_rate` churn ran (a server that spawned none, or never frees one, has 0)", ServerFields: []string{"despawns_total"}},
	{Name: "inputs_accepted_ratio_min", Window: WindowRun, Title: "inputs accepted / sent", Metric: "server_tick.inputs_accepted / report.inputs_sent",
		Dir: AtLeast, Flag: "assert-min-inputs-accepted-ratio", Measure: InputsAccepted.Read,
		Doc: "the server applied the Inputs the swarm sent: a server that ignores them still sends snapshots and passes every other gate; `inputs_accepted` missing or 0 Inputs sent is unevaluable", ServerFields: []string{"inputs_accepted"}},
	{Name: "transport_overhead_kbs_max", Window: WindowServerHold, Title: "QUIC − ENet wire KB/s per client", Metric: "server_tick.wire_out_kbs_per_client (quic leg − enet leg)",
		Unit: "KB/s", Dir: AtMost, Source: AcrossTransports, Measure: WireKBs.Read, ServerFields: wireKBsFields,
		Doc: "(a profile with `transports: [\"enet\", \"quic\"]`; checked once per pattern and sweep point after both legs ran: QUIC's per-client wire rate minus ENet's at the same load); inconclusive when the two legs' observed tick-Hz means are more than 2 % apart (not the same payload); either leg's figure missing is unevaluable"},
	{Name: "spawn_took", Window: WindowReadings, Title: "server entities ≥ sweep point", Metric: "server_tick.entities (lowest reading of the hold)",
		Kind: Switch, Source: SweepEntities, Dir: AtLeast, Measure: Entities.Read, Doc: "the sweep point's entity count", ServerFields: []string{"entities"}},
	// The governor's load factor is the tick's work over its period: a
	// server starved of CPU by the swarm or a neighbour reads higher for
	// the same work, so it is a timing figure.
	{Name: "load_factor_max", Window: WindowReadings, Title: "governor load_factor", Metric: "server_tick.load_factor (highest reading of the hold)",
		Dir: AtMost, Timing: true, Flag: "assert-max-load-factor", Measure: LoadFactorMax.Read, Doc: "the highest load_factor of the hold's readings: below 1, the overrun governor stayed engaged through the hold (docs/server.md)", ServerFields: []string{"load_factor"}},
	{Name: "load_factor_mean_max", Window: WindowServerHold, Title: "governor load_factor, time-weighted mean", Metric: "server_tick.load_factor_mean",
		Dir: AtMost, Timing: true, Flag: "assert-max-load-factor-mean", Measure: LoadFactorMean.Read, Doc: "the governor's load_factor averaged over the hold's wall time (cumulative `load_factor_s`): how much it shed on the whole, not at one instant", ServerFields: []string{"load_factor_mean"}},
	{Name: "degraded_ticks_share_min", Window: WindowServerHold, Title: "share of hold ticks run degraded", Metric: "server_tick.degraded_ticks_share",
		Dir: AtLeast, Timing: true, Flag: "assert-min-degraded-ticks-share", Measure: DegradedShare.Read, Doc: "the overrun governor was engaged (load_factor < 1) for at least this share of the hold's ticks: an overload it did not answer has 0", ServerFields: []string{"degraded_ticks_share"}},
	// dropped_ticks counts ticks the loop skipped because it fell more than
	// four periods behind wall time, which a process starved of CPU does
	// whatever its own work: a timing figure.
	{Name: "dropped_ticks_max", Window: WindowServerHold, Title: "dropped ticks", Metric: "server_tick.dropped_ticks",
		Dir: AtMost, Timing: true, Flag: "assert-max-dropped-ticks", Measure: tick("dropped_ticks"), Doc: "ticks dropped during the hold: the overrun governor kept the loop from falling four periods behind (docs/server.md); a file without cumulative state counts since the server started", ServerFields: []string{"dropped_ticks"}},
	// CPU per unit of work is the machine's (clock, turbo, SMT siblings, a
	// debug build), so a hard ceiling binds only in the strict tier; and a
	// swarm sharing the cores inflates the server's CPU for the same work
	// (cache and memory-bandwidth contention), so on a harness-bound leg a
	// failure is inconclusive.
	{Name: "server_cpu_pct_max", Window: WindowServerHold, Title: "server CPU % of one core", Metric: "server_tick.cpu_pct",
		Unit: "%", Dir: AtMost, Tier: StrictOnly, Timing: true, Flag: "assert-max-server-cpu-pct", Measure: tick("cpu_pct"), Doc: "% of one core over the hold (the difference of the server's cumulative CPU seconds; a file without them: its last metrics-write window, named in the summary); a server that writes neither is unevaluable; tiered like `tick_ms_p99_max`", ServerFields: []string{"cpu_pct"}},
	{Name: "recover_s_max", Window: WindowPhase, Title: "recovery after the last impairment phase", Metric: "report.phases[after].recover_s",
		Unit: "s", Dir: AtMost, Flag: "assert-max-recover-s", Measure: recoverS, Doc: "`null` (never recovered) is unevaluable; needs an impairment"},
	{Name: "congestion_engaged_hz", Window: WindowRun, Title: "congestion min send Hz", Metric: "server_tick.congestion_min_send_hz",
		Unit: "Hz", Dir: AtMost, Timing: true, Flag: "assert-congestion-engaged-hz", ZeroIsOff: true, Measure: tick("congestion_min_send_hz"), Doc: "the controller backed off (a run-long watermark)", ServerFields: []string{"congestion_min_send_hz"}},
	{Name: "congestion_recovered_hz", Window: WindowRun, Title: "congestion recovered send Hz", Metric: "server_tick.congestion_recovered_send_hz",
		Unit: "Hz", Dir: AtLeast, Timing: true, Flag: "assert-congestion-recovered-hz", ZeroIsOff: true, Measure: tick("congestion_recovered_send_hz"), Doc: "the controller recovered (a run-long watermark)", ServerFields: []string{"congestion_recovered_send_hz"}},
}

// Budgets are the profile's percentile-budget shorthands (schema #Gates):
// each names the gates its statistics declare, so `tick_ms: {p95: 16.6}`
// is the tick_ms_p95_max gate. A shorthand is not a gate itself.
// Each call returns a new map with new slices.
func Budgets() map[string][]string {
	out := make(map[string][]string, len(budgets))
	for k, v := range budgets {
		out[k] = slices.Clone(v)
	}
	return out
}

// budgets backs Budgets; never handed out itself, so no caller can change it.
var budgets = map[string][]string{
	"tick_ms":           {"tick_ms_p50_max", "tick_ms_p95_max", "tick_ms_p99_max", "tick_ms_max_max"},
	"state_interval_ms": {"state_interval_ms_p50_max", "state_interval_ms_p95_max", "state_interval_ms_p99_max"},
	"input_latency_ms":  {"input_latency_ms_p50_max", "input_latency_ms_p95_max", "input_latency_ms_p99_max"},
}

// Lookup finds a gate by profile name.
func Lookup(name string) (Gate, bool) {
	for _, g := range table {
		if g.Name == name {
			return g, true
		}
	}
	return Gate{}, false
}

// ByFlag finds a gate by its swarm flag (or an alias), with or without dashes.
func ByFlag(flag string) (Gate, bool) {
	flag = strings.TrimLeft(flag, "-")
	for _, g := range table {
		if g.Flag != "" && g.Flag == flag {
			return g, true
		}
		for _, a := range g.Aliases {
			if a == flag {
				return g, true
			}
		}
	}
	return Gate{}, false
}

// FormatNumber shows a figure the way every table of the project does:
// integers bare, ≥ 100 with one decimal, smaller with two.
func FormatNumber(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e12 && v > -1e12:
		return fmt.Sprintf("%d", int64(v))
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
