package gate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/report"
)

// Status is the outcome of one check.
type Status string

// Check outcomes. Unevaluable is its own status so the summary can say
// *why* a gate failed, but it counts exactly like Fail.
const (
	StatusPass         Status = "pass"
	StatusFail         Status = "fail"
	StatusUnevaluable  Status = "unevaluable"
	StatusInconclusive Status = "inconclusive"
	// StatusRecorded: a baseline gate under --update-baseline; the figure
	// becomes the new baseline if the whole run passes.
	StatusRecorded Status = "recorded"
)

// Verdict is the outcome of a leg or a run.
type Verdict string

// Leg and run verdicts.
const (
	VerdictPassed       Verdict = "passed"
	VerdictFailed       Verdict = "failed"
	VerdictInconclusive Verdict = "inconclusive"
	VerdictLaunchFailed Verdict = "launch failure"
	VerdictInterrupted  Verdict = "interrupted"
	VerdictNotRun       Verdict = "not run"
)

// Level names: hard gates fail the run, advisory gates never do.
const (
	LevelHard     = "hard"
	LevelAdvisory = "advisory"
)

// Check is one evaluated gate of one leg.
type Check struct {
	Gate      string   `json:"gate"`
	Title     string   `json:"title"`
	Level     string   `json:"level"`
	Threshold string   `json:"threshold"`
	Measured  *float64 `json:"measured"`
	// MeasuredText is the measured value as shown (also for non-numeric
	// checks such as the transport name).
	MeasuredText string `json:"measured_text"`
	// Baseline is the committed value and delta, for baseline gates.
	Baseline string `json:"baseline,omitempty"`
	Status   Status `json:"status"`
	Detail   string `json:"detail,omitempty"`
}

// Failed reports whether the check fails its leg.
func (c Check) Failed() bool {
	return c.Level == LevelHard && (c.Status == StatusFail || c.Status == StatusUnevaluable)
}

// Input is everything a leg's evaluation reads.
type Input struct {
	Profile *Profile
	Leg     Leg
	// Strict forces the strict tier (--strict).
	Strict bool
	// Report is the parsed swarm report; nil when ReportErr says why.
	Report    *report.Report
	ReportErr error
	// Baseline is the committed baseline; UpdateBaseline turns the
	// baseline gates into "recorded".
	Baseline       *Baseline
	UpdateBaseline bool
}

// EffectiveTier is the tier the gates are evaluated in.
func EffectiveTier(p *Profile, strict bool) string {
	if strict {
		return "strict"
	}
	return p.Tier
}

// Evaluate checks every gate of a leg. It never trusts the swarm's own
// verdict alone: each gate is recomputed from the report and the embedded
// server_tick, and any swarm assert that failed is carried as well.
func Evaluate(in Input) []Check {
	if in.Report == nil {
		return unreadReport(in)
	}
	e := &evaluator{in: in, r: in.Report, tier: EffectiveTier(in.Profile, in.Strict)}
	e.st, e.stErr = serverTickRaw(in.Report)
	e.transport()
	g := in.Profile.Gates
	if g.Admission != nil {
		e.admission(g.Admission.Level)
	}
	e.threshold("wire_kbs_max", "wire KB/s per client", g.WireKBsMax, atMost, e.tick("wire_out_kbs_per_client"))
	e.threshold("kbs_max", "payload KB/s per client (max)", g.KBsMax, atMost, e.kbsMax)
	e.threshold("tick_hz_min", "observed server tick-Hz (min)", g.TickHzMin, atLeast, e.tickHzMin)
	e.tickMs(g.TickMsP99Max)
	e.threshold("rss_growth_kb_max", "server RSS growth KB", g.RSSGrowthKBMax, atMost, e.rssGrowth)
	e.threshold("rss_slope_kb_per_min_max", "server RSS slope KB/min", g.RSSSlopeKBPerMinMax, atMost, e.rssSlope)
	e.threshold("entities_min", "server entities", g.EntitiesMin, atLeast, e.tick("entities"))
	e.spawnTook(g.SpawnTook)
	e.threshold("load_factor_max", "governor load_factor", g.LoadFactorMax, atMost, e.tick("load_factor"))
	e.threshold("dropped_ticks_max", "dropped ticks", g.DroppedTicksMax, atMost, e.tick("dropped_ticks"))
	e.threshold("congestion_engaged_hz", "congestion min send Hz", g.CongestionEngagedHz, atMost, e.tick("congestion_min_send_hz"))
	e.threshold("congestion_recovered_hz", "congestion recovered send Hz", g.CongestionRecoveredHz, atLeast, e.tick("congestion_recovered_send_hz"))
	if in.Profile.Baselined {
		e.baseline()
	}
	e.swarmAsserts()
	e.harness()
	e.harnessBoundTiming()
	return e.out
}

// timingChecks are the gates whose figures a starved harness distorts: the
// server's tick time and the client-observed tick rate both share the CPU
// with the swarm. Byte counts, admission and transport are facts whatever
// the harness did.
var timingChecks = map[string]bool{
	"tick_ms_p99_max": true, "tick_hz_min": true,
	"swarm assert-max-tick-ms": true, "swarm assert-min-tick-hz": true,
}

// harnessBoundTiming: on a harness-bound leg a failed timing gate is
// inconclusive, not failed — the leg cannot say whether the server or the
// harness was slow. Every other failure stands.
func (e *evaluator) harnessBoundTiming() {
	bound := false
	for _, c := range e.out {
		if c.Gate == "harness" && c.Status == StatusInconclusive {
			bound = true
		}
	}
	if !bound {
		return
	}
	for i, c := range e.out {
		if c.Failed() && c.Status == StatusFail && (timingChecks[c.Gate] || timingChecks[c.Title]) {
			e.out[i].Status = StatusInconclusive
			e.out[i].Detail = joinDetail(c.Detail, "harness-bound leg: a timing failure here cannot be attributed to the server")
		}
	}
}

// LegVerdict folds a leg's checks: any failed hard check fails it; else an
// inconclusive check makes it inconclusive; else it passed.
func LegVerdict(checks []Check) Verdict {
	inconclusive := false
	for _, c := range checks {
		if c.Failed() {
			return VerdictFailed
		}
		if c.Status == StatusInconclusive {
			inconclusive = true
		}
	}
	if inconclusive {
		return VerdictInconclusive
	}
	return VerdictPassed
}

// unreadReport: without a report nothing is evaluable. Every declared gate
// is listed as unevaluable so the summary shows what was not checked.
func unreadReport(in Input) []Check {
	why := "swarm report not read"
	if in.ReportErr != nil {
		why = in.ReportErr.Error()
	}
	out := []Check{{Gate: "report", Title: "swarm report read", Level: LevelHard, Threshold: "present and valid",
		MeasuredText: "unread", Status: StatusUnevaluable, Detail: why}}
	for _, name := range declaredGates(in.Profile) {
		out = append(out, Check{Gate: name, Title: name, Level: LevelHard, MeasuredText: "—",
			Status: StatusUnevaluable, Detail: "no report: an unread report is not a clean one"})
	}
	return out
}

// declaredGates lists the gate names a profile declares, in a fixed order.
func declaredGates(p *Profile) []string {
	var names []string
	b, _ := json.Marshal(p.Gates)
	var m map[string]json.RawMessage
	_ = json.Unmarshal(b, &m)
	for _, n := range gateOrder {
		if _, ok := m[n]; ok {
			names = append(names, n)
		}
	}
	names = append([]string{"transport"}, names...)
	if p.Baselined {
		names = append(names, "baseline_kbs", "baseline_wire_kbs")
	}
	return names
}

var gateOrder = []string{"admission", "wire_kbs_max", "kbs_max", "tick_hz_min", "tick_ms_p99_max",
	"rss_growth_kb_max", "rss_slope_kb_per_min_max", "entities_min", "spawn_took", "load_factor_max",
	"dropped_ticks_max", "congestion_engaged_hz", "congestion_recovered_hz"}

type evaluator struct {
	in    Input
	r     *report.Report
	tier  string
	st    tickMetrics
	stErr error
	out   []Check
}

type direction int

const (
	atMost direction = iota
	atLeast
)

func (e *evaluator) add(c Check) { e.out = append(e.out, c) }

// measure returns a value or why it is missing.
type measure func() (float64, error)

// tick reads a server_tick number.
func (e *evaluator) tick(path ...string) measure {
	return func() (float64, error) {
		if e.stErr != nil {
			return 0, e.stErr
		}
		return e.st.num(path...)
	}
}

func (e *evaluator) kbsMax() (float64, error) {
	if e.r.DownstreamKBsPerClient == nil {
		return 0, fmt.Errorf("report.downstream_kbs_per_client missing")
	}
	return e.r.DownstreamKBsPerClient.Max, nil
}

func (e *evaluator) tickHzMin() (float64, error) {
	if e.r.ObservedServerTickHz == nil {
		return 0, fmt.Errorf("report.observed_server_tick_hz missing (no client saw two snapshots)")
	}
	return e.r.ObservedServerTickHz.Min, nil
}

// rssGrowth is rss_kb − rss_startup_kb; rss_kb 0 means the platform could
// not read RSS, which is unevaluable, not "no growth".
func (e *evaluator) rssGrowth() (float64, error) {
	cur, err := e.tick("rss_kb")()
	if err != nil {
		return 0, err
	}
	start, err := e.tick("rss_startup_kb")()
	if err != nil {
		return 0, err
	}
	if cur <= 0 || start <= 0 {
		return 0, fmt.Errorf("server reports rss_kb=%g rss_startup_kb=%g: RSS unavailable on this platform", cur, start)
	}
	return cur - start, nil
}

func (e *evaluator) rssSlope() (float64, error) {
	if e.r.RSSSlopeKBPerMin == nil {
		return 0, fmt.Errorf("report.rss_slope_kb_per_min is null: the RSS series (%d samples) is too short to fit", len(e.r.RSSSeries))
	}
	return *e.r.RSSSlopeKBPerMin, nil
}

// threshold evaluates one threshold gate (nil g = not declared).
func (e *evaluator) threshold(name, title string, g *Threshold, dir direction, m measure) {
	if g == nil {
		return
	}
	e.compare(name, title, g.Level, g.Threshold, dir, m, "")
}

func (e *evaluator) compare(name, title, level string, thr float64, dir direction, m measure, detail string) {
	c := Check{Gate: name, Title: title, Level: level, Threshold: bound(dir, thr), Detail: detail}
	v, err := m()
	if err != nil {
		c.Status, c.MeasuredText = StatusUnevaluable, "missing"
		c.Detail = joinDetail(err.Error(), detail)
		e.add(c)
		return
	}
	c.Measured, c.MeasuredText = &v, fmtNum(v)
	ok := v <= thr
	if dir == atLeast {
		ok = v >= thr
	}
	c.Status = StatusFail
	if ok {
		c.Status = StatusPass
	}
	if name == "rss_slope_kb_per_min_max" && e.r.RSSStepMaxKB != nil {
		at := "?"
		if e.r.RSSStepAtS != nil {
			at = fmtNum(*e.r.RSSStepAtS)
		}
		c.Detail = joinDetail(c.Detail, fmt.Sprintf("largest RSS step %s KB at t=%s s", fmtNum(*e.r.RSSStepMaxKB), at))
	}
	e.add(c)
}

// tickMs is the tick-ms p99 gate: hard only in the strict tier.
func (e *evaluator) tickMs(g *Threshold) {
	if g == nil {
		return
	}
	level, detail := g.Level, ""
	if level == LevelHard && e.tier != "strict" {
		level, detail = LevelAdvisory, "advisory in the pr tier (machine-dependent); hard with --strict"
	}
	e.compare("tick_ms_p99_max", "server tick ms p99", level, g.Threshold, atMost, e.tick("tick_ms", "p99"), detail)
}

// transport: both ends must have spoken the profile's transport. Always
// hard: a run on the wrong transport measured something else.
func (e *evaluator) transport() {
	want := e.in.Profile.Transport
	c := Check{Gate: "transport", Title: "transport identity", Level: LevelHard, Threshold: "= " + want}
	var got []string
	var problems []string
	swarmSide := e.r.Transport
	got = append(got, "swarm "+orMissing(swarmSide))
	if swarmSide != want {
		problems = append(problems, fmt.Sprintf("swarm spoke %s", orMissing(swarmSide)))
	}
	if e.r.ServerTransport != "" && e.r.ServerTransport != want {
		problems = append(problems, fmt.Sprintf("server Welcome says %s", e.r.ServerTransport))
	}
	serverSide, err := "", e.stErr
	if err == nil {
		serverSide, err = e.st.str("transport")
	}
	got = append(got, "server "+orMissing(serverSide))
	c.MeasuredText = strings.Join(got, ", ")
	switch {
	case err != nil:
		c.Status, c.Detail = StatusUnevaluable, err.Error()
	case serverSide != want:
		problems = append(problems, fmt.Sprintf("server metrics say %s", serverSide))
	}
	if c.Status == "" {
		c.Status = StatusPass
		if len(problems) > 0 {
			c.Status, c.Detail = StatusFail, strings.Join(problems, "; ")+"; the profile pins "+want
		}
	}
	e.add(c)
}

// admission: every client connected, none refused, none dropped.
func (e *evaluator) admission(level string) {
	r := e.r
	c := Check{Gate: "admission", Title: "admission", Level: level,
		Threshold: fmt.Sprintf("%d/%d connected, 0 refused, 0 dropped", r.Clients, r.Clients)}
	connected := float64(r.ClientsConnected)
	c.Measured = &connected
	c.MeasuredText = fmt.Sprintf("%d/%d connected, %d refused, %d dropped", r.ClientsConnected, r.Clients, r.ClientsRefused, r.ClientsDisconnected)
	c.Status = StatusPass
	var why []string
	if r.Clients != e.in.Profile.Clients {
		why = append(why, fmt.Sprintf("swarm ran %d clients, profile asks %d", r.Clients, e.in.Profile.Clients))
	}
	if r.ClientsConnected < r.Clients || r.ClientsNeverConnected > 0 {
		why = append(why, fmt.Sprintf("%d never connected", r.Clients-r.ClientsConnected))
	}
	if r.ClientsRefused > 0 {
		why = append(why, fmt.Sprintf("%d refused %v", r.ClientsRefused, r.RefusedByReason))
	}
	if r.ClientsDisconnected > 0 {
		why = append(why, fmt.Sprintf("%d dropped mid-run", r.ClientsDisconnected))
	}
	if len(why) > 0 {
		c.Status, c.Detail = StatusFail, strings.Join(why, "; ")
	}
	e.add(c)
}

// spawnTook: in a sweep, the server reached the leg's entity count.
func (e *evaluator) spawnTook(g *Switch) {
	if g == nil || e.in.Leg.EntityCount == nil {
		return
	}
	e.compare("spawn_took", "server entities ≥ sweep point", g.Level, float64(*e.in.Leg.EntityCount), atLeast, e.tick("entities"), "")
}

// baseline compares payload and wire KB/s with the committed keys.
func (e *evaluator) baseline() {
	key := e.in.Leg.BaselineKey
	entry, have := e.in.Baseline.Lookup(key)
	tol := e.in.Profile.Baseline.TolerancePct
	path := DefaultBaselinePath
	if e.in.Baseline != nil && e.in.Baseline.Path != "" {
		path = e.in.Baseline.Path
	}
	type baselined struct {
		gate, title string
		m           measure
		base        float64
		have        bool // the baseline entry carries this figure
	}
	checks := []baselined{
		{"baseline_kbs", "payload KB/s vs baseline", e.kbsMean, entry.KBs, have},
		{"baseline_wire_kbs", "wire KB/s vs baseline", e.tick("wire_out_kbs_per_client"), entry.WireKBs, have},
	}
	// Bytes per entity applies where either side has it: a baseline that
	// recorded it demands it (a swarm that stopped decoding must not pass),
	// and a decoded run whose baseline entry lacks it is a missing key.
	if entry.BytesPerEntity != nil || e.r.SnapshotBytesPerEntity != nil {
		c := baselined{gate: "baseline_bytes_per_entity", title: "snapshot bytes per entity vs baseline", m: e.bytesPerEntity}
		if entry.BytesPerEntity != nil {
			c.base, c.have = *entry.BytesPerEntity, have
		}
		checks = append(checks, c)
	}
	for _, b := range checks {
		c := Check{Gate: b.gate, Title: b.title, Level: LevelHard}
		v, err := b.m()
		if err == nil {
			c.Measured, c.MeasuredText = &v, fmtNum(v)
		} else {
			c.MeasuredText = "missing"
		}
		switch {
		case e.in.UpdateBaseline:
			c.Threshold = "recorded by --update-baseline"
			c.Status = StatusRecorded
			if err != nil {
				c.Status, c.Detail = StatusUnevaluable, err.Error()
			}
			if b.have {
				c.Baseline = fmt.Sprintf("%s → %s", fmtNum(b.base), c.MeasuredText)
			}
		case !b.have:
			c.Threshold = fmt.Sprintf("≤ baseline +%s%%", fmtNum(tol))
			c.Status = StatusUnevaluable
			c.Baseline = "missing"
			c.Detail = fmt.Sprintf("no baseline key %q in %s: run `scalegate --profile %s --update-baseline` on a passing run to record it",
				key, path, e.in.Profile.Name)
			if have {
				c.Detail = fmt.Sprintf("baseline key %q in %s does not record this figure: run `scalegate --profile %s --update-baseline` on a passing run to record it",
					key, path, e.in.Profile.Name)
			}
		default:
			limit := b.base * (1 + tol/100)
			c.Threshold = fmt.Sprintf("≤ %s (baseline %s +%s%%)", fmtNum(limit), fmtNum(b.base), fmtNum(tol))
			if err != nil {
				c.Status, c.Detail = StatusUnevaluable, err.Error()
				break
			}
			c.Baseline = fmt.Sprintf("%s (%s)", fmtNum(b.base), pctDelta(v, b.base))
			c.Status = StatusPass
			if v > limit {
				c.Status, c.Detail = StatusFail, fmt.Sprintf("%s over baseline: bytes moved; fix it, or if intended regenerate with --update-baseline", pctDelta(v, b.base))
			}
		}
		e.add(c)
	}
}

func (e *evaluator) bytesPerEntity() (float64, error) {
	if e.r.SnapshotBytesPerEntity == nil {
		return 0, fmt.Errorf("report.snapshot_bytes_per_entity missing (no snapshot body was decoded)")
	}
	return *e.r.SnapshotBytesPerEntity, nil
}

func (e *evaluator) kbsMean() (float64, error) {
	if e.r.DownstreamKBsPerClient == nil {
		return 0, fmt.Errorf("report.downstream_kbs_per_client missing")
	}
	return e.r.DownstreamKBsPerClient.Mean, nil
}

// swarmAsserts carries every forwarded --assert-* the swarm itself failed.
// The gate recomputes each one above; a disagreement still fails the leg,
// because one of the two readings is wrong and neither may be trusted.
func (e *evaluator) swarmAsserts() {
	for _, a := range e.r.Asserts {
		if a.Passed {
			continue
		}
		measured := "missing"
		if a.Measured != nil {
			measured = fmtNum(*a.Measured)
		}
		e.add(Check{Gate: "swarm_assert", Title: "swarm " + a.Name, Level: LevelHard, Threshold: fmtNum(a.Threshold),
			Measured: a.Measured, MeasuredText: measured, Status: StatusFail, Detail: joinDetail("the swarm's own assert failed", a.Detail)})
	}
	if e.r.Aborted != "" {
		e.add(Check{Gate: "swarm_run", Title: "swarm ran to the end", Level: LevelHard, Threshold: "not aborted",
			MeasuredText: "aborted", Status: StatusFail, Detail: e.r.Aborted})
	}
}

// harness: a swarm that could not keep its own cadence measured itself;
// the leg is inconclusive, never passed.
func (e *evaluator) harness() {
	limit := e.in.Profile.Harness.WorkerDtP99MaxMs
	c := Check{Gate: "harness", Title: "swarm worker loop dt p99 (harness-bound?)", Level: LevelHard, Threshold: bound(atMost, limit)}
	if e.r.WorkerLoopDtMs == nil {
		c.Status, c.MeasuredText = StatusUnevaluable, "missing"
		c.Detail = "report.worker_loop_dt_ms missing: cannot show the harness kept its cadence"
		e.add(c)
		return
	}
	v := e.r.WorkerLoopDtMs.P99
	c.Measured, c.MeasuredText = &v, fmtNum(v)
	c.Status = StatusPass
	if v > limit {
		c.Status = StatusInconclusive
		c.Detail = "the swarm was the bottleneck (harness-bound): the leg's figures describe the harness, not the server"
	}
	e.add(c)
}

func bound(dir direction, v float64) string {
	if dir == atLeast {
		return "≥ " + fmtNum(v)
	}
	return "≤ " + fmtNum(v)
}

func fmtNum(v float64) string {
	switch {
	case v == float64(int64(v)) && v < 1e12 && v > -1e12:
		return fmt.Sprintf("%d", int64(v))
	case v >= 100 || v <= -100:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func pctDelta(v, base float64) string {
	if base == 0 {
		if v == 0 {
			return "±0%"
		}
		return "baseline 0"
	}
	return fmt.Sprintf("%+.1f%%", (v-base)/base*100)
}

func orMissing(s string) string {
	if s == "" {
		return "(missing)"
	}
	return s
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
