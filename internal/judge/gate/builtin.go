package gate

import (
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/hostload"
)

// The built-in checks: every leg carries them whatever the profile
// declares, and they are always hard (soften never touches them): a run on
// the wrong transport, without load, without the declared impairment, or
// with a report that breaks its contract measured something other than
// what the leg names.

// transport: both ends must have spoken the profile's transport, and both
// must have said which (the server's side may be declared by the profile,
// server.metrics.transport_declared, and is then shown as such). Always hard: a run on the wrong transport measured
// something else, and a side that did not say (an empty Welcome transport, a
// metrics file without "transport") is unevaluable, never a pass.
func (e *evaluator) transport() {
	want := e.in.Profile.TransportFor(e.in.Leg)
	c := rundir.Check{Gate: gatetable.CheckTransport, Title: "transport identity", Level: gatetable.LevelHard, Threshold: "= " + want}
	serverSide, err := e.m.TickString("transport")
	// A profile may say its server cannot name its transport: that side is
	// then the profile's word, and the check says so; the swarm's side is
	// still the measurement.
	declared := err != nil && e.in.Profile.Server.TransportDeclared()
	serverText := orMissing(serverSide)
	if declared {
		serverText = want + " (declared, not observed)"
		c.Detail = "the server's transport is declared by the profile (server.metrics.transport_declared), not observed"
	}
	c.MeasuredText = fmt.Sprintf("swarm %s, Welcome %s, server %s", orMissing(e.r.Transport), orMissing(e.r.ServerTransport), serverText)
	var problems, unread []string
	sides := []struct{ who, got string }{{"swarm spoke", e.r.Transport}, {"server Welcome says", e.r.ServerTransport}}
	if ownProtocol(e.r) {
		// A team's own protocol says nothing of its transport in its join
		// answer: the swarm's side and the server's metrics must agree.
		sides = sides[:1]
		c.MeasuredText = fmt.Sprintf("swarm %s (protocol %s), server %s", orMissing(e.r.Transport), e.r.Protocol, serverText)
	}
	for _, side := range sides {
		switch {
		case side.got == "":
			unread = append(unread, side.who+" nothing (empty)")
		case side.got != want:
			problems = append(problems, fmt.Sprintf("%s %s", side.who, side.got))
		}
	}
	switch {
	case declared: // nothing of the server's to compare
	case err != nil:
		unread = append(unread, err.Error())
	case serverSide != want:
		problems = append(problems, fmt.Sprintf("server metrics say %s", serverSide))
	}
	switch {
	case len(problems) > 0:
		c.Status, c.Detail = rundir.StatusFail, strings.Join(append(problems, unread...), "; ")+"; the profile pins "+want
	case len(unread) > 0:
		c.Status, c.Detail = rundir.StatusUnevaluable, strings.Join(unread, "; ")+": transport identity cannot be shown"
	default:
		c.Status = rundir.StatusPass
	}
	e.add(c)
}

// ownProtocol reports whether the swarm spoke a team's own protocol (a
// bot built with the bot package), not load protocol v1.
func ownProtocol(r *report.Report) bool {
	return r.Protocol != "" && r.Protocol != report.ProtocolLoadV1
}

// loadHappened is checked on every leg whatever gates the profile
// declares, with the one rule the swarm's exit status and the report's
// `passed` use (gatetable.LoadHappened). Without it a profile whose gates
// all read the server's own file (a wire ceiling, say) passes against a
// server that never let a client in.
func (e *evaluator) loadHappened() {
	r := e.r
	c := rundir.Check{Gate: gatetable.CheckLoad, Title: "load happened (clients admitted and held, snapshots received)", Level: gatetable.LevelHard,
		Threshold: "≥ 1 admitted, 0 lost mid-run, ≥ 1 snapshot"}
	admitted := float64(r.ClientsConnected)
	c.Measured = &admitted
	c.MeasuredText = fmt.Sprintf("%d/%d admitted, %d lost, %d snapshots", r.ClientsConnected, r.Clients, r.ClientsDisconnected, r.SnapshotsReceived) + e.in.Witness.text()
	c.Status = rundir.StatusPass
	why := gatetable.LoadHappened(r)
	// The report against the run the gate saw: a report that is not this
	// leg's, or describes traffic its server never counted, shows no load.
	why = append(why, witnessed(e.in.Witness, r)...)
	if len(why) > 0 {
		c.Status, c.Detail = rundir.StatusFail, strings.Join(why, "; ")+": the load this leg names did not happen"
		if h := builtinSwarmHint(e.in.Profile, r); h != "" {
			c.Detail += "; " + h
		}
	}
	e.endedOn(&c)
	e.add(c)
}

// builtinSwarmHint says what is most likely wrong when the built-in swarm
// got no client into a team's own server: it speaks scalegate's load
// protocol, and a server with a protocol of its own never answers it.
// Without the hint the run reads "16 never connected" and no more.
func builtinSwarmHint(p *profile.Profile, r *report.Report) string {
	if p.Server.Kind != "custom" || p.Swarm != nil || r.ClientsConnected > 0 || r.ClientsRefused > 0 {
		return ""
	}
	return "the built-in swarm speaks scalegate's load protocol v1 (docs/protocol.md); a server that speaks its own protocol needs its own bot, swarm: {command: [...]} (docs/own-protocol.md)"
}

// delivery is checked on every leg with the loadHappened: the admitted
// clients kept receiving state through the hold (gatetable.Delivered, the
// rule the swarm's `passed` and exit status use, with the profile's
// delivery policy). Without it a server that answers the join and then
// falls silent, or sends one snapshot every few seconds with tick numbers
// that advance as if at full rate, passes a profile that gates only bytes
// or the tick rate.
func (e *evaluator) delivery() {
	d := gatetable.Delivered(e.r, e.in.Profile.Delivery)
	c := rundir.Check{Gate: gatetable.CheckDelivery, Title: "state delivered (per-client rate and gaps, none lost to silence)", Level: gatetable.LevelHard,
		Threshold: d.Threshold, Measured: d.Measured, MeasuredText: d.Text}
	switch {
	case len(d.Problems) > 0:
		c.Status, c.Detail = rundir.StatusFail, d.Why()+": the admitted clients did not keep receiving state"
	case len(d.Unread) > 0:
		c.Status, c.Detail = rundir.StatusUnevaluable, d.Why()+": delivery cannot be shown"
	default:
		c.Status = rundir.StatusPass
	}
	e.add(c)
}

// snapshotDecode is checked on every leg whose snapshot bodies the swarm
// decoded: a body that did not decode is a server bug (a delta against a
// baseline the client does not hold, a corrupted one, a record out of its
// format) that no byte or rate figure shows, so one fails the leg. A leg
// whose bodies were not decoded (an opaque format) has no such check.
func (e *evaluator) snapshotDecode() {
	r := e.r
	if r.SnapshotsDecoded == 0 && r.SnapshotDecodeErrors == 0 {
		return
	}
	bad := float64(r.SnapshotDecodeErrors)
	c := rundir.Check{Gate: gatetable.CheckSnapshotDecode, Title: "snapshot bodies decoded", Level: gatetable.LevelHard,
		Threshold: "0 decode errors", Measured: &bad,
		MeasuredText: fmt.Sprintf("%d errors, %d decoded", r.SnapshotDecodeErrors, r.SnapshotsDecoded), Status: rundir.StatusPass}
	if r.SnapshotDecodeErrors > 0 {
		c.Status = rundir.StatusFail
		c.Detail = fmt.Sprintf("%d of %d snapshot bodies did not decode (%s): the server sent bodies its announced format rejects",
			r.SnapshotDecodeErrors, r.SnapshotDecodeErrors+r.SnapshotsDecoded, r.BodyFormat)
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
	c := rundir.Check{Gate: gatetable.CheckImpairment, Title: "impairment applied (relay dropped/held datagrams)", Level: gatetable.LevelHard,
		Threshold: fmt.Sprintf("%d phase(s) applied, > 0 impaired, 0 overflow", len(want))}
	rs := e.r.Relay
	switch {
	case rs == nil:
		c.Status, c.MeasuredText = rundir.StatusUnevaluable, "no relay block"
		c.Detail = "report.relay missing: the swarm did not route its clients through the impairment relay"
	case !sameSchedule(want, e.r.Impairment):
		c.Status, c.MeasuredText = rundir.StatusFail, fmt.Sprintf("%d phase(s) echoed", len(e.r.Impairment))
		c.Detail = "report.impairment differs from the profile's schedule: the swarm applied another impairment"
	default:
		impaired := float64(rs.DroppedDown + rs.DroppedUp + rs.Delayed + rs.Duplicated)
		c.Measured = &impaired
		c.MeasuredText = fmt.Sprintf("dropped %d down / %d up, held %d, duplicated %d, overflow %d, stray %d",
			rs.DroppedDown, rs.DroppedUp, rs.Delayed, rs.Duplicated, rs.Overflow, rs.Stray)
		switch {
		case !rs.Impaired():
			c.Status = rundir.StatusFail
			c.Detail = fmt.Sprintf("the relay saw %d datagrams down and %d up and impaired none of them: the declared impairment never happened", rs.DatagramsDown, rs.DatagramsUp)
		case rs.Overflow > 0:
			c.Status = rundir.StatusInconclusive
			c.Detail = fmt.Sprintf("the relay dropped %d datagrams on its own (fell behind): the link was worse than declared", rs.Overflow)
		default:
			c.Status = rundir.StatusPass
		}
		if rs.Stray > 0 {
			// Datagrams from neither the swarm's client socket nor the
			// server: someone else's, dropped by the relay, never a
			// finding about the server.
			c.Detail = rundir.JoinDetail(c.Detail, fmt.Sprintf("the relay dropped %d stray datagram(s) from neither the swarm nor the server (not the server's doing)", rs.Stray))
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
	c := rundir.Check{Gate: gatetable.CheckShards, Title: "every shard merged exactly once", Level: gatetable.LevelHard, Threshold: "complete"}
	switch {
	case r.Shards != nil:
		s := r.Shards
		c.MeasuredText = fmt.Sprintf("%d of %d merged %v", len(s.Merged), s.Count, s.Merged)
		c.Status = rundir.StatusPass
		if !s.Complete {
			c.Status = rundir.StatusInconclusive
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
		c.Status = rundir.StatusInconclusive
		c.Detail = "one shard's report holds part of the load: gate the report `scalegate merge` makes of all of them"
	default:
		c.MeasuredText = "no shards block"
		c.Status = rundir.StatusUnevaluable
		c.Detail = fmt.Sprintf("the profile runs %d shards but the report says nothing of them", e.in.Profile.Shards)
	}
	e.add(c)
}

// sameSchedule compares the profile's schedule with the report's echo.
func sameSchedule(a, b impairment.Schedule) bool {
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
		e.add(rundir.Check{Gate: gatetable.CheckSwarmAssert, Title: "swarm " + a.Name, Level: gatetable.LevelHard, Threshold: fmtNum(a.Threshold),
			Measured: a.Measured, MeasuredText: measured, Status: rundir.StatusFail, Detail: rundir.JoinDetail("the swarm's own assert failed", a.Detail)})
	}
	if e.r.Aborted != "" {
		e.add(rundir.Check{Gate: gatetable.CheckSwarmRun, Title: "swarm ran to the end", Level: gatetable.LevelHard, Threshold: "not aborted",
			MeasuredText: "aborted", Status: rundir.StatusFail, Detail: e.r.Aborted})
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
	c := rundir.Check{Gate: gatetable.CheckHarness, Title: "per-client service interval (harness-bound?)", Level: gatetable.LevelHard,
		Threshold: fmt.Sprintf("p99 ≤ %s periods, mean ≤ period +%s %%", fmtNum(h.ServiceIntervalP99MaxPeriods), fmtNum(h.ServiceIntervalMeanMaxPct))}
	var missing []string
	if !(e.r.RateHz > 0) {
		missing = append(missing, fmt.Sprintf("report.rate_hz is %s, so there is no period to measure against", fmtNum(e.r.RateHz)))
	}
	if e.r.ServiceIntervalMs == nil {
		missing = append(missing, "report.service_interval_ms missing (no client was serviced twice while joined)")
	}
	if len(missing) > 0 {
		c.Status, c.MeasuredText = rundir.StatusUnevaluable, "missing"
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
	c.Status = rundir.StatusPass
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
		c.Status = rundir.StatusInconclusive
		c.Detail = strings.Join(over, "; ") + "; the swarm was the bottleneck (harness-bound): the leg's figures describe the harness, not the server"
	}
	e.add(c)
}

// schema: the report file must match schema/report.cue #Report; a report
// that breaks the contract is not evidence. The runner validates the file
// (that needs the CUE schema); a report nobody validated is unevaluable.
func (e *evaluator) schema() {
	c := rundir.Check{Gate: gatetable.CheckReportSchema, Title: "report matches schema #Report", Level: gatetable.LevelHard,
		Threshold: "valid", MeasuredText: "valid", Status: rundir.StatusPass}
	switch {
	case !e.in.SchemaValidated:
		c.MeasuredText, c.Status, c.Detail = "not validated", rundir.StatusUnevaluable, "the report was not validated against #Report: an unchecked report is not a valid one"
	case e.in.SchemaErr != nil:
		c.MeasuredText, c.Status, c.Detail = "invalid", rundir.StatusFail, e.in.SchemaErr.Error()
	}
	e.add(c)
}

// hostBusyPrefix starts the host check's detail on a busy host; the
// host-busy softener keys on it.
const hostBusyPrefix = "host busy: "

// hostCheck records what else the machine did during the leg (the report's
// host block, written by the runner's sampler) and decides, with the
// profile's host policy, whether it was busy. It never fails or passes a
// leg by itself (status recorded): a busy host turns the leg's failed
// timing gates inconclusive (softeners), and a host that could not be
// measured changes nothing and says so. Only legs the runner sampled have
// the block; a report without one (made elsewhere) gets no host check.
func (e *evaluator) hostCheck() {
	h := e.r.Host
	if h == nil {
		return
	}
	pol := e.in.Profile.Host
	d := hostload.Decide(h, hostload.Policy{MaxOtherCores: pol.MaxOtherCores,
		MaxCPUPressureAvg10: pol.MaxCPUPressureAvg10, MaxStealPct: pol.MaxStealPct})
	c := rundir.Check{Gate: gatetable.CheckHost, Title: "host contention (other processes' CPU over the hold)", Level: gatetable.LevelAdvisory,
		Threshold: fmt.Sprintf("others ≤ %s cores", fmtNum(pol.MaxOtherCores)), Status: rundir.StatusRecorded, MeasuredText: "unmeasured"}
	if h.OtherCores != nil {
		mean := h.OtherCores.Mean
		c.Measured = &mean
		c.MeasuredText = fmt.Sprintf("others %.2f cores (max %.2f)", h.OtherCores.Mean, h.OtherCores.Max)
	}
	if h.StealPct != nil {
		c.MeasuredText += fmt.Sprintf(", steal %.1f %%", h.StealPct.Mean)
	}
	if h.CPUPressureAvg10 != nil {
		c.MeasuredText += fmt.Sprintf(", pressure %.1f", h.CPUPressureAvg10.Mean)
	}
	c.Detail = d.Reason
	if d.Busy() && !strings.HasPrefix(c.Detail, hostBusyPrefix) {
		c.Detail = hostBusyPrefix + c.Detail
	}
	for _, n := range d.Notes {
		c.Detail = rundir.JoinDetail(c.Detail, n)
	}
	e.add(c)
}

// realtimePriority is checked on a leg whose profile asks the built-in
// server for [world] realtime_priority: the pinned sim workers ran at that
// SCHED_FIFO priority. Refused (no CAP_SYS_NICE, as in a default
// container) or not applied (the workers were not pinned), the server ran
// at normal priority beside the swarm, and its tick figures are those of
// that setup: a tick gate that fails then fails for a reason no figure
// names, so this check names it. Advisory: the tick gates judge the tick,
// whatever the priority; a server that meets its budget without the
// priority has met it.
func (e *evaluator) realtimePriority() {
	asked := e.in.Profile.World.RealtimePriority()
	if asked <= 0 || e.in.Profile.Server.Kind == "custom" {
		return
	}
	c := rundir.Check{Gate: gatetable.CheckRealtimePriority, Title: "sim workers' real-time priority ([world] realtime_priority)",
		Level: gatetable.LevelAdvisory, Threshold: fmt.Sprintf("SCHED_FIFO %d", asked), Status: rundir.StatusPass}
	got, err := e.m.Tick("realtime_priority")
	if err != nil {
		c.MeasuredText, c.Status = "missing", rundir.StatusUnevaluable
		c.Detail = err.Error() + ": the server cannot say whether its workers ran at the priority asked"
		e.add(c)
		return
	}
	c.Measured = &got
	c.MeasuredText = fmt.Sprintf("SCHED_FIFO %g", got)
	if got == 0 {
		c.MeasuredText = "normal priority"
	}
	if got != float64(asked) {
		c.Status = rundir.StatusFail
		c.Detail = fmt.Sprintf("the sim workers ran at %s, not SCHED_FIFO %d, so the tick figures are those of workers the swarm and every other thread can preempt", c.MeasuredText, asked)
		if why, _ := e.m.TickString("realtime_priority_error"); why != "" {
			c.Detail += ": " + why
		}
	}
	e.add(c)
}
