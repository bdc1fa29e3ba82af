// Package merge combines a sharded swarm run's reports into one report of
// the same schema.
//
// A sharded run (`scalegate swarm --shard I/N`) leaves one report per
// process or machine; the merged report reads as if one process had run
// every client. Counts and sums add up; every distribution is merged from
// its mergeable form (the report's histograms), so merged percentiles equal
// a single process's within stats.HistogramRelError; per-second timelines
// merge by the shared clock (--start-at), second by second.
//
// A merge never hides a gap: a shard that is missing or given twice leaves
// the result's shards.complete false, and the gate never passes such a
// report. Reports of different runs (another shard count, client total,
// start instant, transport, pattern or rate) are refused.
package merge

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Input is one shard report and where it came from (for messages).
type Input struct {
	Name   string
	Report *report.Report
}

// Reports merges shard reports into one. The result's Shards block says
// which shards were merged and whether the set is complete.
func Reports(in []Input) (*report.Report, error) {
	if len(in) == 0 {
		return nil, errors.New("merge: no reports")
	}
	if err := sameRun(in); err != nil {
		return nil, err
	}
	if err := sameImpairment(in); err != nil {
		return nil, err
	}
	picked, info := pick(in)
	out := skeleton(picked[0].Report)
	out.Shards = info
	for _, s := range picked {
		add(out, s)
		if err := addRelay(out, s.Report, s.Name); err != nil {
			return nil, err
		}
	}
	if out.Impairment = picked[0].Report.Impairment; out.Relay != nil {
		// Per-stretch figures are summaries without a mergeable form: each
		// shard's report keeps its own; a gate reading them from the merge
		// finds them missing (never a made-up figure).
		out.Warnings = append(out.Warnings, "impairment phases (per-stretch figures) are not merged: see each shard's report")
	}
	if err := finish(out, picked); err != nil {
		return nil, err
	}
	return out, nil
}

// sameRun checks every report is a shard of one run.
func sameRun(in []Input) error {
	first := in[0]
	for _, s := range in {
		r := s.Report
		if r.Shard == nil {
			return fmt.Errorf("merge: %s is not a shard report (no shard block: run the swarm with --shard I/N)", s.Name)
		}
		if r.Histograms == nil {
			return fmt.Errorf("merge: %s carries no histograms (written by a swarm without mergeable distributions)", s.Name)
		}
		f := first.Report
		for _, d := range []struct {
			what string
			a, b any
		}{
			{"shard count", r.Shard.Count, f.Shard.Count},
			{"clients_total", r.Shard.ClientsTotal, f.Shard.ClientsTotal},
			{"start_at", r.Shard.StartAt, f.Shard.StartAt},
			{"transport", r.Transport, f.Transport},
			{"protocol", r.Protocol, f.Protocol},
			{"pattern", r.Pattern, f.Pattern},
			{"rate_hz", r.RateHz, f.RateHz},
			{"run_id", r.RunID, f.RunID},
			{"server_addr", r.ServerAddr, f.ServerAddr},
		} {
			if d.a != d.b {
				return fmt.Errorf("merge: %s has %s %v but %s has %v: not shards of one run", s.Name, d.what, d.a, first.Name, d.b)
			}
		}
	}
	return nil
}

// pick keeps the first report of each shard index, in index order, and
// says which indices are missing or were given more than once.
func pick(in []Input) ([]Input, *report.ShardsInfo) {
	n := in[0].Report.Shard.Count
	byIndex := map[int]Input{}
	dup := map[int]bool{}
	for _, s := range in {
		i := s.Report.Shard.Index
		if _, seen := byIndex[i]; seen {
			dup[i] = true
			continue
		}
		byIndex[i] = s
	}
	info := &report.ShardsInfo{Count: n, Merged: []int{}, ClientsTotal: in[0].Report.Shard.ClientsTotal}
	var picked []Input
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		info.Merged = append(info.Merged, i)
		picked = append(picked, byIndex[i])
		info.StartLateMsMax = max(info.StartLateMsMax, byIndex[i].Report.Shard.StartLateMs)
	}
	for i := range n {
		if _, ok := byIndex[i]; !ok {
			info.Missing = append(info.Missing, i)
		}
	}
	info.Duplicated = slices.Sorted(maps.Keys(dup))
	info.Complete = len(info.Missing) == 0 && len(info.Duplicated) == 0
	return picked, info
}

// skeleton is an empty merged report with the run's identity.
func skeleton(f *report.Report) *report.Report {
	return &report.Report{
		SchemaVersion: report.ReportSchemaVersion, Transport: f.Transport, Protocol: f.Protocol, Pattern: f.Pattern, RateHz: f.RateHz,
		RunID: f.RunID, StartedAt: f.StartedAt, ServerAddr: f.ServerAddr,
		PatternCounts: map[string]int{}, RefusedByReason: map[string]int{}, DisconnectedByReason: map[string]int{},
		NeverConnectedByReason: map[string]int{}, Asserts: []report.AssertResult{}, Passed: true,
		Histograms: &report.Histograms{},
	}
}

// add folds one shard's counts, sums and histograms into out.
func add(out *report.Report, s Input) {
	r := s.Report
	if out.ServerTransport == "" {
		out.ServerTransport, out.BodyFormat = r.ServerTransport, r.BodyFormat
	}
	addCounts(out, r)
	out.WorkerPacing = addPacing(out.WorkerPacing, r.WorkerPacing)
	addOutcome(out, r)
	addHistograms(out.Histograms, r.Histograms)
	out.Players = append(out.Players, r.Players...)
	out.Traces = addTraces(out.Traces, r.Traces)
}

// addCounts sums one shard's client and message counts, by reason where
// the report breaks them down; the figures the shards share (duration,
// worst snapshot gap) take the largest.
func addCounts(out, r *report.Report) {
	addMap(out.PatternCounts, r.PatternCounts)
	addMap(out.RefusedByReason, r.RefusedByReason)
	addMap(out.DisconnectedByReason, r.DisconnectedByReason)
	addMap(out.NeverConnectedByReason, r.NeverConnectedByReason)
	out.Clients += r.Clients
	out.Threads += r.Threads
	out.DurationS = max(out.DurationS, r.DurationS)
	out.ClientsConnected += r.ClientsConnected
	out.ClientsRefused += r.ClientsRefused
	out.ClientsDisconnected += r.ClientsDisconnected
	out.ClientsNeverConnected += r.ClientsNeverConnected
	out.SnapshotsReceived += r.SnapshotsReceived
	out.SnapshotDecodeErrors += r.SnapshotDecodeErrors
	out.SnapshotsDecoded += r.SnapshotsDecoded
	out.InputsSent += r.InputsSent
	out.InputsAcked += r.InputsAcked
	out.InputsUnanswered += r.InputsUnanswered
	out.RTTSource = addRTTSource(out.RTTSource, r.RTTSource)
	out.ProtocolErrors += r.ProtocolErrors
	out.Leave = addLeave(out.Leave, r.Leave)
	out.ClientTicks += r.ClientTicks
	out.MaxSnapshotGapMs = fold(out.MaxSnapshotGapMs, r.MaxSnapshotGapMs, greater)
	if r.HarnessCPUS != nil {
		out.HarnessCPUS = ptr(deref(out.HarnessCPUS) + *r.HarnessCPUS)
	}
}

// addRTTSource is the merged rtt_source: the shards' common one, or
// "mixed" once two that measured differ.
func addRTTSource(kept, src string) string {
	switch {
	case kept == "" || kept == src:
		return src
	case src == "":
		return kept
	}
	return report.RTTSourceMixed
}

// addPacing is the merged worker pacing: the shards' common one, or
// PacingMixed once two differ.
func addPacing(kept, p string) string {
	switch kept {
	case "":
		return p
	case p:
		return kept
	default:
		return report.PacingMixed
	}
}

// addOutcome folds in how one shard's run went: its asserts and early
// end, named by shard so the merged report says whose they were, its
// harness errors and its warnings (each listed once).
func addOutcome(out, r *report.Report) {
	for _, a := range r.Asserts {
		a.Detail = joinNonEmpty(fmt.Sprintf("shard %d/%d", r.Shard.Index, r.Shard.Count), a.Detail)
		out.Asserts = append(out.Asserts, a)
	}
	out.Passed = out.Passed && r.Passed
	if r.Aborted != "" {
		out.Aborted = joinNonEmpty(out.Aborted, fmt.Sprintf("shard %d/%d: %s", r.Shard.Index, r.Shard.Count, r.Aborted))
	}
	addAbort(out, r)
	out.HarnessErrors = addHarnessErrors(out.HarnessErrors, r.HarnessErrors)
	for _, w := range r.Warnings {
		if !slices.Contains(out.Warnings, w) {
			out.Warnings = append(out.Warnings, w)
		}
	}
}

// addTraces folds one shard's trace replay blocks into out's, by pattern:
// what the files hold is the same in every shard; what the clients did
// adds up. RecordsCovered (distinct records some client played) cannot be
// unioned from counts; the merge keeps the largest shard's, a lower bound,
// so a coverage gate can fail on a merge but never pass one falsely.
func addTraces(out, in []report.TraceReplay) []report.TraceReplay {
	for _, t := range in {
		i := slices.IndexFunc(out, func(o report.TraceReplay) bool { return o.Pattern == t.Pattern })
		if i < 0 {
			out = append(out, t)
			continue
		}
		o := &out[i]
		o.Clients += t.Clients
		o.ClientsJoined += t.ClientsJoined
		o.ClientsReplayed += t.ClientsReplayed
		o.RecordsReplayed += t.RecordsReplayed
		o.RecordsSkipped += t.RecordsSkipped
		o.Keepalives += t.Keepalives
		o.RecordsCovered = max(o.RecordsCovered, t.RecordsCovered)
	}
	return out
}

func addHistograms(dst, src *report.Histograms) {
	for _, p := range []struct {
		d **stats.Histogram
		s *stats.Histogram
	}{
		{&dst.RTTMs, src.RTTMs}, {&dst.PeerDelayMs, src.PeerDelayMs}, {&dst.ConnectMs, src.ConnectMs},
		{&dst.WorkerLoopDtMs, src.WorkerLoopDtMs}, {&dst.TickHzPerClient, src.TickHzPerClient}, {&dst.KBsPerClient, src.KBsPerClient},
		{&dst.ServiceIntervalMs, src.ServiceIntervalMs}, {&dst.StateIntervalMs, src.StateIntervalMs},
		{&dst.InputLatencyMs, src.InputLatencyMs}, {&dst.TransportRTTMs, src.TransportRTTMs},
	} {
		if p.s == nil {
			continue
		}
		if *p.d == nil {
			*p.d = stats.NewHistogram()
		}
		(*p.d).Merge(p.s)
	}
}

// finish derives the summaries from the merged histograms and sums, and
// takes the server's figures from one shard.
func finish(out *report.Report, picked []Input) error {
	h := out.Histograms
	out.RTTMs, out.PeerDelayMs = percentiles(h.RTTMs), percentiles(h.PeerDelayMs)
	out.ConnectMs, out.WorkerLoopDtMs = percentiles(h.ConnectMs), percentiles(h.WorkerLoopDtMs)
	out.ServiceIntervalMs = percentiles(h.ServiceIntervalMs)
	out.StateIntervalMs = percentiles(h.StateIntervalMs)
	out.InputLatencyMs, out.TransportRTTMs = percentiles(h.InputLatencyMs), percentiles(h.TransportRTTMs)
	if s := h.TickHzPerClient.Summary(); s.Count > 0 {
		out.ObservedServerTickHz = &report.MinMeanMax{Min: s.Min, Mean: s.Mean, Max: s.Max}
	}
	if s := h.KBsPerClient.Summary(); s.Count > 0 {
		out.DownstreamKBsPerClient = &report.MeanMax{Mean: s.Mean, Max: s.Max}
	}
	entityMeans(out, picked)
	if out.HarnessCPUS != nil && out.ClientTicks > 0 {
		out.CPUUsPerClientTick = ptr(*out.HarnessCPUS / float64(out.ClientTicks) * 1e6)
	}
	serverFigures(out, picked)
	tl, err := mergeTimelines(picked)
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	out.Timeline = tl
	if !out.Shards.Complete {
		out.Passed = false
	}
	sort.Strings(out.Warnings)
	// Each shard lists its own clients; the merged run lists them all in
	// client index order, as one process would.
	slices.SortFunc(out.Players, func(a, b report.Player) int { return a.Index - b.Index })
	out.InputsPerSPerClient = report.InputRates(out.Players)
	out.DownstreamLinkKBsPerClient = report.LinkKBsOf(out.Players)
	// Delivery is its players' (every shard lists its own), with the rate
	// the server announced to the first shard that says one.
	var announced *float64
	for _, s := range picked {
		if d := s.Report.Delivery; d != nil && d.AnnouncedHz != nil {
			announced = d.AnnouncedHz
			break
		}
	}
	out.Delivery = report.DeliveryOf(out.Players, announced)
	// Every shard ran the same warm-up on the shared clock.
	out.WarmupS, out.WarmupEndS = picked[0].Report.WarmupS, picked[0].Report.WarmupEndS
	return nil
}

// entityMeans recombines the per-snapshot and per-entity means, weighting
// each shard by the snapshots (entities) its mean is over.
func entityMeans(out *report.Report, picked []Input) {
	var snaps, ents, bytes float64
	for _, s := range picked {
		r := s.Report
		if r.EntitiesPerSnapshot == nil || r.SnapshotsDecoded == 0 {
			continue
		}
		e := *r.EntitiesPerSnapshot * float64(r.SnapshotsDecoded)
		snaps += float64(r.SnapshotsDecoded)
		ents += e
		if r.SnapshotBytesPerEntity != nil {
			bytes += *r.SnapshotBytesPerEntity * e
		}
	}
	if snaps > 0 && ents > 0 {
		out.EntitiesPerSnapshot = ptr(ents / snaps)
		out.SnapshotBytesPerEntity = ptr(bytes / ents)
	}
	deltaMeans(out, picked)
}

// deltaMeans recombines the delta figures: counts add up, and each kind's
// bytes per entity is weighted by the entities it is over.
func deltaMeans(out *report.Report, picked []Input) {
	var fullB, fullE, deltaB, deltaE, stateB, received float64
	out.SnapshotsDelta, out.SnapshotEntitiesDelta, out.SnapshotEntitiesFull = 0, 0, 0
	for _, s := range picked {
		r := s.Report
		out.SnapshotsDelta += r.SnapshotsDelta
		out.SnapshotEntitiesDelta += r.SnapshotEntitiesDelta
		out.SnapshotEntitiesFull += r.SnapshotEntitiesFull
		if de := float64(r.SnapshotEntitiesDelta); r.SnapshotBytesPerEntityDelta != nil {
			deltaB, deltaE = deltaB+*r.SnapshotBytesPerEntityDelta*de, deltaE+de
		}
		if fe := float64(r.SnapshotEntitiesFull); r.SnapshotBytesPerEntityFull != nil {
			fullB, fullE = fullB+*r.SnapshotBytesPerEntityFull*fe, fullE+fe
		}
		if r.BytesPerSnapshot != nil {
			stateB, received = stateB+*r.BytesPerSnapshot*float64(r.SnapshotsReceived), received+float64(r.SnapshotsReceived)
		}
	}
	if out.SnapshotsDecoded > 0 {
		out.DeltaSnapshotShare = ptr(float64(out.SnapshotsDelta) / float64(out.SnapshotsDecoded))
	}
	if fullE > 0 {
		out.SnapshotBytesPerEntityFull = ptr(fullB / fullE)
	}
	if deltaE > 0 {
		out.SnapshotBytesPerEntityDelta = ptr(deltaB / deltaE)
	}
	if received > 0 {
		out.BytesPerSnapshot = ptr(stateB / received)
	}
}

// serverFigures copies the server-side block (metrics file, RSS series and
// fit) from the lowest-index shard that read it. Every shard sampled the
// same server over the same shared-clock window and captured it at the
// same end instant, so one copy is the server's story; when none could
// read it, every shard's reason is kept.
func serverFigures(out *report.Report, picked []Input) {
	var errs []string
	for _, s := range picked {
		r := s.Report
		if len(r.ServerTick) > 0 && string(r.ServerTick) != "null" {
			out.ServerMetricsPath, out.ServerTick = r.ServerMetricsPath, r.ServerTick
			out.RSSSeries, out.RSSSlopeKBPerMin, out.RSSStepMaxKB, out.RSSStepAtS = r.RSSSeries, r.RSSSlopeKBPerMin, r.RSSStepMaxKB, r.RSSStepAtS
			out.RSSSlopeMethod = r.RSSSlopeMethod
			out.ServerMetricsError = ""
			return
		}
		if r.ServerMetricsError != "" {
			errs = append(errs, fmt.Sprintf("shard %d: %s", r.Shard.Index, r.ServerMetricsError))
		}
		if out.ServerMetricsPath == "" {
			out.ServerMetricsPath = r.ServerMetricsPath
		}
	}
	if len(errs) > 0 {
		out.ServerMetricsError = joinNonEmpty(errs...)
	}
}

func percentiles(h *stats.Histogram) *report.Percentiles { return report.PercentilesOf(h.Summary()) }

func addMap(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

// fold is how the merge takes in one shard's optional figure: a figure a
// shard lacks (nil) changes nothing, the first one present is copied (the
// merged report never aliases a shard's), and a later one replaces it only
// when replace(later, kept) says so.
func fold[T cmp.Ordered](kept, v *T, replace func(v, kept T) bool) *T {
	if v == nil || (kept != nil && !replace(*v, *kept)) {
		return kept
	}
	c := *v
	return &c
}

// Replace rules for fold: keep the largest, the smallest, or the first.
func greater[T cmp.Ordered](v, kept T) bool { return v > kept }
func less[T cmp.Ordered](v, kept T) bool    { return v < kept }
func never[T cmp.Ordered](T, T) bool        { return false }

func ptr(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func joinNonEmpty(parts ...string) string {
	out := ""
	for _, p := range parts {
		switch {
		case p == "":
		case out == "":
			out = p
		default:
			out += "; " + p
		}
	}
	return out
}

// Files reads the shard reports at paths and merges them. A file that
// cannot be read or parsed is an error naming it: the caller decides
// whether to leave it out (the shard is then missing, and the merge says
// so).
func Files(paths []string) (*report.Report, error) {
	in := make([]Input, 0, len(paths))
	for _, p := range paths {
		r, err := report.ReadReport(p)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		in = append(in, Input{Name: p, Report: r})
	}
	return Reports(in)
}

// addAbort keeps the earliest early end of any shard: the run ended when its
// first shard stopped driving load, for the reason that shard gave.
func addAbort(out, r *report.Report) {
	if r.AbortedAtS == nil || (out.AbortedAtS != nil && *out.AbortedAtS <= *r.AbortedAtS) {
		return
	}
	out.AbortedAtS = ptr(*r.AbortedAtS)
	out.AbortReason = fmt.Sprintf("shard %d/%d: %s", r.Shard.Index, r.Shard.Count, r.AbortReason)
	out.AbortGate = r.AbortGate
}

// addHarnessErrors sums the shards' harness failures; the first error text
// is the first shard's that had one, and the descriptor limit is the
// tightest shard's (each shard is its own process with its own limit).
func addHarnessErrors(kept, h *report.HarnessErrors) *report.HarnessErrors {
	if h == nil {
		return kept
	}
	if kept == nil {
		c := *h
		return &c
	}
	kept.Socket += h.Socket
	kept.Dial += h.Dial
	kept.FDExhausted += h.FDExhausted
	if kept.FirstError == "" {
		kept.FirstError = h.FirstError
	}
	if h.FDLimit != nil && (kept.FDLimit == nil || h.FDLimit.Soft-h.FDLimit.Needed < kept.FDLimit.Soft-kept.FDLimit.Needed) {
		kept.FDLimit = h.FDLimit
	}
	return kept
}

// addLeave sums the shards' goodbyes; the wait is the slowest shard's.
func addLeave(kept, l *report.Leave) *report.Leave {
	if l == nil {
		return kept
	}
	if kept == nil {
		c := *l
		return &c
	}
	kept.Sent += l.Sent
	kept.Answered += l.Answered
	kept.Errors += l.Errors
	kept.WaitedMs = max(kept.WaitedMs, l.WaitedMs)
	kept.TimeoutMs = max(kept.TimeoutMs, l.TimeoutMs)
	return kept
}
