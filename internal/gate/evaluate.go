package gate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/relay"
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
	// Phase is the stretch of the run a phase-scoped gate read.
	Phase string `json:"phase,omitempty"`
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
// server_tick with the gate table's rule (the one the swarm's asserts use),
// and any swarm assert that failed is carried as well.
func Evaluate(in Input) []Check {
	if in.Report == nil {
		return unreadReport(in)
	}
	e := &evaluator{in: in, r: in.Report, m: gatetable.FromReport(in.Report), tier: EffectiveTier(in.Profile, in.Strict)}
	e.transport()
	e.loadHappened()
	e.impaired()
	e.shards()
	for _, g := range gatetable.All {
		if spec, ok := in.Profile.Gates[g.Name]; ok {
			e.declared(g, spec)
		}
	}
	if in.Profile.Baselined {
		e.baseline()
	}
	e.swarmAsserts()
	e.harness()
	e.harnessBoundTiming()
	e.partialLoad()
	return e.out
}

// isTiming: the gate's figure shares the CPU with the swarm (the server's
// tick time, the client-observed tick rate), per the gate table. Byte
// counts, admission and transport are facts whatever the harness did. A
// carried swarm assert is judged by the gate its flag belongs to.
func isTiming(c Check) bool {
	if g, ok := gatetable.Lookup(c.Gate); ok {
		return g.Timing
	}
	if c.Gate == "swarm_assert" {
		if g, ok := gatetable.ByFlag(strings.TrimPrefix(c.Title, "swarm ")); ok {
			return g.Timing
		}
	}
	return false
}

// harnessBoundTiming: on a harness-bound leg a failed timing gate, hard or
// advisory, is inconclusive, not failed — the leg cannot say whether the
// server or the harness was slow. Every other failure stands.
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
		if c.Status == StatusFail && isTiming(c) {
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

// declaredGates lists the checks a profile asks for, in the summary's
// order: the built-in checks, the declared gates in table order, the
// baseline figures.
func declaredGates(p *Profile) []string {
	names := []string{"transport", "load"}
	if len(p.Impairment) > 0 {
		names = append(names, "impairment")
	}
	if p.Shards > 1 {
		names = append(names, "shards")
	}
	for _, g := range gatetable.All {
		if p.Gates.Has(g.Name) {
			names = append(names, g.Name)
		}
	}
	if p.Baselined {
		names = append(names, "baseline_kbs", "baseline_wire_kbs")
	}
	return names
}

type evaluator struct {
	in   Input
	r    *report.Report
	m    *gatetable.Metrics
	tier string
	out  []Check
}

func (e *evaluator) add(c Check) { e.out = append(e.out, c) }

// measure returns a value or why it is missing.
type measure func() (float64, error)

// Level is the level a declared gate is evaluated at in tier, and why it
// differs from the declaration ("" when it does not). The gate's evaluation
// and the flags it forwards to the swarm both use it.
func Level(g gatetable.Gate, spec GateSpec, tier string) (level, why string) {
	if g.Tier == gatetable.StrictOnly && spec.Level == LevelHard && tier != "strict" {
		return LevelAdvisory, "advisory in the " + tier + " tier (machine-dependent); hard in the strict tier (--strict)"
	}
	return spec.Level, ""
}

// Threshold is the threshold a declared gate is checked against on a leg;
// ok is false when the gate does not apply to the leg (spawn_took outside
// an entity sweep).
func Threshold(g gatetable.Gate, spec GateSpec, p *Profile, leg Leg) (thr float64, ok bool) {
	switch g.Source {
	case gatetable.SweepEntities:
		if leg.EntityCount == nil {
			return 0, false
		}
		return float64(*leg.EntityCount), true
	case gatetable.Clients:
		return float64(p.ClientsFor(leg)), true
	}
	if spec.Threshold == nil {
		return 0, false
	}
	return *spec.Threshold, true
}

// declared evaluates one gate the profile declares.
func (e *evaluator) declared(g gatetable.Gate, spec GateSpec) {
	thr, ok := Threshold(g, spec, e.in.Profile, e.in.Leg)
	if !ok {
		return
	}
	level, why := Level(g, spec, e.tier)
	c := Check{Gate: g.Name, Title: g.Title, Level: level, Threshold: g.Bound(thr), Detail: why, Phase: spec.Phase}
	m := e.m
	if spec.Phase != "" {
		c.Title += " [" + spec.Phase + "]"
		var err error
		if m, err = e.m.Narrow(spec.Phase); err != nil {
			c.Status, c.MeasuredText, c.Detail = StatusUnevaluable, "missing", joinDetail(err.Error(), why)
			e.add(c)
			return
		}
	}
	o := g.Evaluate(m, thr)
	c.Measured, c.MeasuredText = o.Measured, o.Text
	if o.Measured != nil && g.Unit != "" {
		c.MeasuredText += " " + g.Unit
	}
	switch {
	case o.Err != nil:
		c.Status, c.Detail = StatusUnevaluable, joinDetail(o.Err.Error(), c.Detail)
	case o.Pass:
		c.Status, c.Detail = StatusPass, joinDetail(c.Detail, o.Detail)
	default:
		why := o.Detail
		if why == "" || g.Explain != nil {
			why = joinDetail(fmt.Sprintf("%s = %s, must be %s", g.Metric, c.MeasuredText, c.Threshold), o.Detail)
		}
		c.Status, c.Detail = StatusFail, joinDetail(why, c.Detail)
	}
	e.add(c)
}

// transport: both ends must have spoken the profile's transport, and both
// must have said which. Always hard: a run on the wrong transport measured
// something else, and a side that did not say (an empty Welcome transport, a
// metrics file without "transport") is unevaluable, never a pass.
func (e *evaluator) transport() {
	want := e.in.Profile.Transport
	c := Check{Gate: "transport", Title: "transport identity", Level: LevelHard, Threshold: "= " + want}
	serverSide, err := e.m.TickString("transport")
	c.MeasuredText = fmt.Sprintf("swarm %s, Welcome %s, server %s", orMissing(e.r.Transport), orMissing(e.r.ServerTransport), orMissing(serverSide))
	var problems, unread []string
	for _, side := range []struct{ who, got string }{
		{"swarm spoke", e.r.Transport}, {"server Welcome says", e.r.ServerTransport},
	} {
		switch {
		case side.got == "":
			unread = append(unread, side.who+" nothing (empty)")
		case side.got != want:
			problems = append(problems, fmt.Sprintf("%s %s", side.who, side.got))
		}
	}
	switch {
	case err != nil:
		unread = append(unread, err.Error())
	case serverSide != want:
		problems = append(problems, fmt.Sprintf("server metrics say %s", serverSide))
	}
	switch {
	case len(problems) > 0:
		c.Status, c.Detail = StatusFail, strings.Join(append(problems, unread...), "; ")+"; the profile pins "+want
	case len(unread) > 0:
		c.Status, c.Detail = StatusUnevaluable, strings.Join(unread, "; ")+": transport identity cannot be shown"
	default:
		c.Status = StatusPass
	}
	e.add(c)
}

// loadHappened is checked on every leg whatever gates the profile
// declares: the swarm admitted at least one client and clients received
// snapshots. Without it a profile whose gates all read the server's own
// file (a wire ceiling, say) passes against a server that never let a
// client in.
func (e *evaluator) loadHappened() {
	r := e.r
	c := Check{Gate: "load", Title: "load happened (clients admitted, snapshots received)", Level: LevelHard,
		Threshold: "≥ 1 admitted, ≥ 1 snapshot"}
	admitted := float64(r.ClientsConnected)
	c.Measured = &admitted
	c.MeasuredText = fmt.Sprintf("%d/%d admitted, %d snapshots", r.ClientsConnected, r.Clients, r.SnapshotsReceived)
	var why []string
	if r.Clients < 1 {
		why = append(why, "the swarm ran no clients")
	}
	if r.ClientsConnected < 1 {
		why = append(why, fmt.Sprintf("no client was admitted (refused %d %v, never connected %d %v)",
			r.ClientsRefused, r.RefusedByReason, r.ClientsNeverConnected, r.NeverConnectedByReason))
	}
	if r.SnapshotsReceived < 1 {
		why = append(why, "no client received a snapshot")
	}
	c.Status = StatusPass
	if len(why) > 0 {
		c.Status, c.Detail = StatusFail, strings.Join(why, "; ")+": the load this leg names did not happen"
	}
	e.add(c)
}

// impaired is checked on every leg of a profile that declares an
// impairment: the swarm ran the declared schedule through the relay, and
// the relay actually dropped, held or duplicated datagrams. A relay that
// impaired nothing means the leg measured a clean link under the name of a
// bad one: unread is not clean. Drops the relay made on its own (it fell
// behind) make the leg inconclusive: the link was worse than declared.
func (e *evaluator) impaired() {
	want := e.in.Profile.Impairment
	if len(want) == 0 {
		return
	}
	c := Check{Gate: "impairment", Title: "impairment applied (relay dropped/held datagrams)", Level: LevelHard,
		Threshold: fmt.Sprintf("%d phase(s) applied, > 0 impaired, 0 overflow", len(want))}
	rs := e.r.Relay
	switch {
	case rs == nil:
		c.Status, c.MeasuredText = StatusUnevaluable, "no relay block"
		c.Detail = "report.relay missing: the swarm did not route its clients through the impairment relay"
	case !sameSchedule(want, e.r.Impairment):
		c.Status, c.MeasuredText = StatusFail, fmt.Sprintf("%d phase(s) echoed", len(e.r.Impairment))
		c.Detail = "report.impairment differs from the profile's schedule: the swarm applied another impairment"
	default:
		impaired := float64(rs.DroppedDown + rs.DroppedUp + rs.Delayed + rs.Duplicated)
		c.Measured = &impaired
		c.MeasuredText = fmt.Sprintf("dropped %d down / %d up, held %d, duplicated %d, overflow %d",
			rs.DroppedDown, rs.DroppedUp, rs.Delayed, rs.Duplicated, rs.Overflow)
		switch {
		case !rs.Impaired():
			c.Status = StatusFail
			c.Detail = fmt.Sprintf("the relay saw %d datagrams down and %d up and impaired none of them: the declared impairment never happened", rs.DatagramsDown, rs.DatagramsUp)
		case rs.Overflow > 0:
			c.Status = StatusInconclusive
			c.Detail = fmt.Sprintf("the relay dropped %d datagrams on its own (fell behind): the link was worse than declared", rs.Overflow)
		default:
			c.Status = StatusPass
		}
	}
	e.add(c)
}

// shards is checked on every report of a sharded run: a merged report
// must hold every shard exactly once, and a single shard's own report
// holds part of the load. Either falls short of the load the leg names, so
// it is inconclusive, never passed (see partialLoad).
func (e *evaluator) shards() {
	r := e.r
	if r.Shards == nil && (r.Shard == nil || r.Shard.Count <= 1) && e.in.Profile.Shards <= 1 {
		return
	}
	c := Check{Gate: "shards", Title: "every shard merged exactly once", Level: LevelHard, Threshold: "complete"}
	switch {
	case r.Shards != nil:
		s := r.Shards
		c.MeasuredText = fmt.Sprintf("%d of %d merged %v", len(s.Merged), s.Count, s.Merged)
		c.Status = StatusPass
		if !s.Complete {
			c.Status = StatusInconclusive
			var gaps []string
			if len(s.Missing) > 0 {
				gaps = append(gaps, fmt.Sprintf("missing shards %v", s.Missing))
			}
			if len(s.Duplicated) > 0 {
				gaps = append(gaps, fmt.Sprintf("shards given twice %v", s.Duplicated))
			}
			c.Detail = strings.Join(gaps, ", ") + ": the merged report does not describe the run's load once"
		}
	case r.Shard != nil && r.Shard.Count > 1:
		c.MeasuredText = fmt.Sprintf("shard %d of %d only", r.Shard.Index, r.Shard.Count)
		c.Status = StatusInconclusive
		c.Detail = "one shard's report holds part of the load: gate the report `scalegate merge` makes of all of them"
	default:
		c.MeasuredText = "no shards block"
		c.Status = StatusUnevaluable
		c.Detail = fmt.Sprintf("the profile runs %d shards but the report says nothing of them", e.in.Profile.Shards)
	}
	e.add(c)
}

// sameSchedule compares the profile's schedule with the report's echo.
func sameSchedule(a, b relay.Schedule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// partialLoad: on a report of part of the load (the shards check is
// inconclusive) a failed check is inconclusive too; it was measured under
// less load than the leg names, so it says neither pass nor fail.
// Unevaluable checks stay: what could not be read still fails.
func (e *evaluator) partialLoad() {
	partial := false
	for _, c := range e.out {
		if c.Gate == "shards" && c.Status == StatusInconclusive {
			partial = true
		}
	}
	if !partial {
		return
	}
	for i, c := range e.out {
		if c.Status == StatusFail {
			e.out[i].Status = StatusInconclusive
			e.out[i].Detail = joinDetail(c.Detail, "measured on part of the load (shards incomplete)")
		}
	}
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
		{"baseline_wire_kbs", "wire KB/s vs baseline", func() (float64, error) { return e.m.Tick("wire_out_kbs_per_client") }, entry.WireKBs, have},
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
// the leg is inconclusive, never passed. The rule is per client: each
// joined client's time between two services of its host, against the
// period of the swarm's own input rate. The worker paces with a ticker
// that drops ticks when an iteration overruns, so a swarm that cannot keep
// up shows a mean interval above the period, and one that stalls now and
// then (GC, descheduling) a long p99. The worker's own loop dt is not the
// rule: one iteration over 1,000 clients may take longer than the period
// while every client is still serviced once per period (docs/gate.md).
func (e *evaluator) harness() {
	h := e.in.Profile.Harness
	c := Check{Gate: "harness", Title: "per-client service interval (harness-bound?)", Level: LevelHard,
		Threshold: fmt.Sprintf("p99 ≤ %s periods, mean ≤ period +%s %%", fmtNum(h.ServiceIntervalP99MaxPeriods), fmtNum(h.ServiceIntervalMeanMaxPct))}
	var missing []string
	if !(e.r.RateHz > 0) {
		missing = append(missing, fmt.Sprintf("report.rate_hz is %s, so there is no period to measure against", fmtNum(e.r.RateHz)))
	}
	if e.r.ServiceIntervalMs == nil {
		missing = append(missing, "report.service_interval_ms missing (no client was serviced twice while joined)")
	}
	if len(missing) > 0 {
		c.Status, c.MeasuredText = StatusUnevaluable, "missing"
		c.Detail = strings.Join(missing, "; ") + ": cannot show the harness kept its cadence"
		e.add(c)
		return
	}
	period := 1000 / e.r.RateHz
	p99Max := h.ServiceIntervalP99MaxPeriods * period
	meanMax := period * (1 + h.ServiceIntervalMeanMaxPct/100)
	c.Threshold = fmt.Sprintf("p99 ≤ %s ms (%s periods), mean ≤ %s ms (period +%s %%)",
		fmtMs(p99Max), fmtNum(h.ServiceIntervalP99MaxPeriods), fmtMs(meanMax), fmtNum(h.ServiceIntervalMeanMaxPct))
	si := e.r.ServiceIntervalMs
	p99 := si.P99
	c.Measured = &p99
	c.MeasuredText = fmt.Sprintf("p99 %s ms, mean %s ms", fmtMs(si.P99), fmtMs(si.Mean))
	c.Status = StatusPass
	var over []string
	if si.P99 > p99Max {
		over = append(over, fmt.Sprintf("p99 %s ms is %s ms over its bound (%s periods of %s ms)",
			fmtMs(si.P99), fmtMs(si.P99-p99Max), fmtNum(si.P99/period), fmtMs(period)))
	}
	if si.Mean > meanMax {
		over = append(over, fmt.Sprintf("mean %s ms is %s ms over its bound (%+.1f %% against the %s ms period: clients were serviced %s times a second, not %s)",
			fmtMs(si.Mean), fmtMs(si.Mean-meanMax), (si.Mean/period-1)*100, fmtMs(period), fmtNum(1000/si.Mean), fmtNum(e.r.RateHz)))
	}
	if len(over) > 0 {
		c.Status = StatusInconclusive
		c.Detail = strings.Join(over, "; ") + "; the swarm was the bottleneck (harness-bound): the leg's figures describe the harness, not the server"
	}
	e.add(c)
}

// fmtMs shows a millisecond figure to 0.01 ms, enough to tell a mean
// 1 % over a 16.67 ms period from one on it.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func fmtNum(v float64) string { return gatetable.FormatNumber(v) }

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
