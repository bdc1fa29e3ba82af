package merge

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// clientData is what one synthetic client measured.
type clientData struct {
	hz, kbs float64
	rtt     []float64
}

// run is a synthetic C-client run: per-client figures drawn once, so the
// unsharded "truth" is known exactly.
func run(c int) []clientData {
	rng := rand.New(rand.NewPCG(7, 9))
	out := make([]clientData, c)
	for i := range out {
		d := clientData{hz: 59 + rng.Float64()*2, kbs: 20 + rng.ExpFloat64()*5}
		for range 50 {
			if i%7 == 0 { // a slow minority: bimodal RTT
				d.rtt = append(d.rtt, 180+rng.NormFloat64()*10)
			} else {
				d.rtt = append(d.rtt, math.Exp(rng.NormFloat64()*0.5+1))
			}
		}
		out[i] = d
	}
	return out
}

// shardReport is the report shard i of n writes for clients [lo, hi),
// through a JSON round trip like a file on disk.
func shardReport(t *testing.T, all []clientData, i, n int) Input {
	t.Helper()
	lo, hi := i*len(all)/n, (i+1)*len(all)/n
	var hz, kbs, rtt []float64
	var svcSum float64 // each client's 60 service intervals of the second, 16 ms + kbs/1000
	for _, d := range all[lo:hi] {
		hz, kbs, rtt = append(hz, d.hz), append(kbs, d.kbs), append(rtt, d.rtt...)
		svcSum += 60 * (16 + d.kbs/1000)
	}
	svcMean := svcSum / float64(60*(hi-lo))
	s := stats.Summarize(rtt)
	hzLo, hzMean, hzHi, _ := stats.MinMeanMax(hz)
	_, kMean, kHi, _ := stats.MinMeanMax(kbs)
	r := &report.Report{
		SchemaVersion: report.ReportSchemaVersion, Transport: "enet", Pattern: "weave", RateHz: 60,
		Clients: hi - lo, ClientsConnected: hi - lo, SnapshotsReceived: int64(100 * (hi - lo)), PatternCounts: map[string]int{"weave": hi - lo},
		RefusedByReason: map[string]int{}, DisconnectedByReason: map[string]int{}, NeverConnectedByReason: map[string]int{},
		ObservedServerTickHz:   &report.MinMeanMax{Min: hzLo, Mean: hzMean, Max: hzHi},
		DownstreamKBsPerClient: &report.MeanMax{Mean: kMean, Max: kHi},
		RTTMs:                  &report.Percentiles{Min: s.Min, Mean: s.Mean, P50: s.P50, P95: s.P95, P99: s.P99, Max: s.Max},
		Histograms:             &report.Histograms{RTTMs: stats.HistogramOf(rtt), TickHzPerClient: stats.HistogramOf(hz), KBsPerClient: stats.HistogramOf(kbs)},
		Shard:                  &report.ShardInfo{Index: i, Count: n, ClientsTotal: len(all), FirstClient: lo, StartAt: "2026-12-01T00:00:00Z", StartLateMs: float64(i)},
		Passed:                 true,
		WorkerPacing:           "held",
		Timeline: []report.TimelinePoint{
			{TS: 1.004, Connected: hi - lo, KBs: kMean, KBsClients: hi - lo, TickHzMin: &hzLo, RTTHist: encoded(t, stats.HistogramOf(rtt)), WorkerDtP99: float64(i),
				ServiceIntervalMeanMs: &svcMean, ServiceIntervals: int64(60 * (hi - lo))},
		},
	}
	for c := hi - 1; c >= lo; c-- { // out of order on purpose
		r.Players = append(r.Players, report.Player{Index: c, Pattern: "weave", Outcome: report.OutcomeConnected})
	}
	r.Traces = []report.TraceReplay{{Pattern: "trace:t.flit", Files: []string{"t.flit"}, Records: 1000, Clients: hi - lo, ClientsJoined: hi - lo,
		ClientsReplayed: hi - lo, RecordsReplayed: int64(10 * (hi - lo)), RecordsCovered: int64(500 + i)}}
	if i == 1 {
		r.ServerTick = json.RawMessage(`{"schema_version":6}`)
	} else {
		r.ServerMetricsError = "shard could not read"
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := report.ParseReport(b)
	if err != nil {
		t.Fatal(err)
	}
	return Input{Name: "shard" + string(rune('0'+i)) + ".json", Report: back}
}

func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= stats.HistogramRelError*math.Abs(want)+stats.HistogramAbsError+1e-9
}

// TestMergeEqualsUnsharded: 4 shards of a 130-client run merge into what
// one process would report: exact counts, exact means and extremes of the
// per-client figures, RTT percentiles within the histogram's error.
func TestMergeEqualsUnsharded(t *testing.T) {
	all := run(130)
	var in []Input
	for i := range 4 {
		in = append(in, shardReport(t, all, i, 4))
	}
	whole := shardReport(t, all, 0, 1).Report
	m, err := Reports(in)
	if err != nil {
		t.Fatal(err)
	}
	if m.Clients != 130 || m.ClientsConnected != 130 || m.SnapshotsReceived != whole.SnapshotsReceived || m.PatternCounts["weave"] != 130 {
		t.Fatalf("counts: clients %d connected %d snapshots %d patterns %v", m.Clients, m.ClientsConnected, m.SnapshotsReceived, m.PatternCounts)
	}
	if !m.Shards.Complete || !slices.Equal(m.Shards.Merged, []int{0, 1, 2, 3}) || m.Shards.StartLateMsMax != 3 || !m.Passed {
		t.Fatalf("shards %+v passed %v", m.Shards, m.Passed)
	}
	hz, w := m.ObservedServerTickHz, whole.ObservedServerTickHz
	if hz.Min != w.Min || hz.Max != w.Max || math.Abs(hz.Mean-w.Mean) > 1e-9 {
		t.Errorf("tick Hz %+v, unsharded %+v", hz, w)
	}
	if k := m.DownstreamKBsPerClient; k.Max != whole.DownstreamKBsPerClient.Max || math.Abs(k.Mean-whole.DownstreamKBsPerClient.Mean) > 1e-9 {
		t.Errorf("KB/s %+v, unsharded %+v", k, whole.DownstreamKBsPerClient)
	}
	g, u := m.RTTMs, whole.RTTMs
	if g.Min != u.Min || g.Max != u.Max || !closeTo(g.P50, u.P50) || !closeTo(g.P95, u.P95) || !closeTo(g.P99, u.P99) {
		t.Errorf("rtt %+v, unsharded %+v", g, u)
	}
	if len(m.Timeline) != 1 {
		t.Fatalf("timeline %d rows, want 1 (one shared second)", len(m.Timeline))
	}
	p := m.Timeline[0]
	if p.TS != 1 || p.Connected != 130 || p.KBsClients != 130 || math.Abs(p.KBs-whole.DownstreamKBsPerClient.Mean) > 1e-9 ||
		*p.TickHzMin != w.Min || p.WorkerDtP99 != 3 || !closeTo(*p.RTTP95Ms, u.P95) {
		t.Errorf("timeline row %+v (rtt p95 %v), unsharded kbs %g rtt p95 %g", p, *p.RTTP95Ms, whole.DownstreamKBsPerClient.Mean, u.P95)
	}
	if ws := whole.Timeline[0]; p.ServiceIntervals != ws.ServiceIntervals || p.ServiceIntervalMeanMs == nil ||
		math.Abs(*p.ServiceIntervalMeanMs-*ws.ServiceIntervalMeanMs) > 1e-9 {
		t.Errorf("timeline service interval mean %v over %d, unsharded %v over %d", p.ServiceIntervalMeanMs, p.ServiceIntervals, *ws.ServiceIntervalMeanMs, ws.ServiceIntervals)
	}
	if len(m.Players) != 130 || !slices.IsSortedFunc(m.Players, func(a, b report.Player) int { return a.Index - b.Index }) || m.Players[129].Index != 129 {
		t.Errorf("players: %d, sorted by index %v", len(m.Players), slices.IsSortedFunc(m.Players, func(a, b report.Player) int { return a.Index - b.Index }))
	}
	if len(m.Traces) != 1 || m.Traces[0].Clients != 130 || m.Traces[0].RecordsReplayed != 1300 || m.Traces[0].Records != 1000 || m.Traces[0].RecordsCovered != 503 {
		t.Errorf("traces %+v", m.Traces)
	}
	if string(m.ServerTick) != `{"schema_version":6}` || m.ServerMetricsError != "" {
		t.Errorf("server block from shard 1: %s / %q", m.ServerTick, m.ServerMetricsError)
	}
}

// Workers' pacing survives a merge when every shard paced alike and is
// "mixed" when they differed: harness CPU from differently paced shards
// is not one figure.
func TestMergeWorkerPacing(t *testing.T) {
	all := run(12)
	for _, tc := range []struct{ second, want string }{{"held", "held"}, {"ticker", "mixed"}} {
		in := []Input{shardReport(t, all, 0, 2), shardReport(t, all, 1, 2)}
		in[1].Report.WorkerPacing = tc.second
		m, err := Reports(in)
		if err != nil {
			t.Fatal(err)
		}
		if m.WorkerPacing != tc.want {
			t.Errorf("held + %s: merged worker_pacing %q, want %q", tc.second, m.WorkerPacing, tc.want)
		}
	}
}

func TestMergeMissingAndDuplicateAreIncomplete(t *testing.T) {
	all := run(40)
	s := func(i int) Input { return shardReport(t, all, i, 4) }
	for _, tc := range []struct {
		name    string
		in      []Input
		merged  []int
		missing []int
		dup     []int
		clients int
	}{
		{"missing", []Input{s(0), s(1), s(3)}, []int{0, 1, 3}, []int{2}, nil, 30},
		{"duplicate", []Input{s(0), s(1), s(2), s(3), s(2)}, []int{0, 1, 2, 3}, nil, []int{2}, 40},
		{"both", []Input{s(1), s(1)}, []int{1}, []int{0, 2, 3}, []int{1}, 10},
	} {
		m, err := Reports(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sh := m.Shards
		if sh.Complete || m.Passed || !slices.Equal(sh.Merged, tc.merged) || !slices.Equal(sh.Missing, tc.missing) || !slices.Equal(sh.Duplicated, tc.dup) {
			t.Errorf("%s: shards %+v passed %v", tc.name, sh, m.Passed)
		}
		if m.Clients != tc.clients {
			t.Errorf("%s: clients %d, want %d (a duplicate must not count twice)", tc.name, m.Clients, tc.clients)
		}
		// A partial merge is still a report the gate reads: its players keep
		// their run-wide indices, read against the run's clients_total.
		if err := m.Validate(); err != nil {
			t.Errorf("%s: the partial merge does not validate: %v", tc.name, err)
		}
	}
}

func TestMergeRefusesOtherRuns(t *testing.T) {
	all := run(40)
	a, b := shardReport(t, all, 0, 4), shardReport(t, all, 1, 4)
	mut := func(f func(r *report.Report)) Input {
		c := *b.Report
		sh := *c.Shard
		c.Shard = &sh
		f(&c)
		return Input{Name: "other.json", Report: &c}
	}
	for name, in := range map[string]Input{
		"shard count":   mut(func(r *report.Report) { r.Shard.Count = 5 }),
		"clients_total": mut(func(r *report.Report) { r.Shard.ClientsTotal = 41 }),
		"start_at":      mut(func(r *report.Report) { r.Shard.StartAt = "2026-12-02T00:00:00Z" }),
		"transport":     mut(func(r *report.Report) { r.Transport = "quic" }),
		"not a shard":   mut(func(r *report.Report) { r.Shard = nil }),
		"histograms":    mut(func(r *report.Report) { r.Histograms = nil }),
	} {
		_, err := Reports([]Input{a, in})
		if err == nil || !strings.Contains(err.Error(), "other.json") {
			t.Errorf("%s: err %v, want a refusal naming other.json", name, err)
		}
	}
	if _, err := Reports(nil); err == nil {
		t.Error("no reports must be an error")
	}
}

// TestMergeImpairment: the relay counts of shards of one impaired run add
// up, field by field; shards that ran another schedule are refused.
func TestMergeImpairment(t *testing.T) {
	all := run(20)
	a, b := shardReport(t, all, 0, 2), shardReport(t, all, 1, 2)
	sched := []impairment.Phase{{Name: "loss", StartS: 1, DurationS: 2, Direction: "both"}}
	a.Report.Impairment, b.Report.Impairment = sched, sched
	a.Report.Relay = &report.RelayStats{Seed: 7, Stats: impairment.Stats{DatagramsDown: 100, DroppedDown: 3, Overflow: 1}}
	b.Report.Relay = &report.RelayStats{Seed: 7, Stats: impairment.Stats{DatagramsDown: 50, DroppedDown: 4}}
	m, err := Reports([]Input{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Relay; r == nil || r.Seed != 7 || r.DatagramsDown != 150 || r.DroppedDown != 7 || r.Overflow != 1 || len(m.Impairment) != 1 {
		t.Fatalf("relay %+v impairment %+v", m.Relay, m.Impairment)
	}
	other := []impairment.Phase{{Name: "loss", StartS: 5, DurationS: 2, Direction: "both"}}
	b.Report.Impairment = other
	if _, err := Reports([]Input{a, b}); err == nil || !strings.Contains(err.Error(), "impairment") {
		t.Fatalf("another schedule: %v", err)
	}
}

// fold takes in an optional figure shard by shard: nil changes nothing,
// the first present is copied, a later one replaces it only by the rule.
func TestFold(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name        string
		kept, v     *float64
		replace     func(v, kept float64) bool
		want        *float64
		copiedFromV bool
	}{
		{"nothing yet, nothing new", nil, nil, greater[float64], nil, false},
		{"nothing new keeps", f(3), nil, greater[float64], f(3), false},
		{"first is copied", nil, f(5), never[float64], f(5), true},
		{"max: larger replaces", f(3), f(5), greater[float64], f(5), true},
		{"max: smaller kept", f(5), f(3), greater[float64], f(5), false},
		{"max: equal kept", f(5), f(5), greater[float64], f(5), false},
		{"min: smaller replaces", f(5), f(3), less[float64], f(3), true},
		{"min: larger kept", f(3), f(5), less[float64], f(3), false},
		{"first: later kept out", f(3), f(5), never[float64], f(3), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fold(tc.kept, tc.v, tc.replace)
			switch {
			case (got == nil) != (tc.want == nil):
				t.Fatalf("got %v, want %v", got, tc.want)
			case got == nil:
				return
			case *got != *tc.want:
				t.Fatalf("got %v, want %v", *got, *tc.want)
			case got == tc.v:
				t.Fatal("the merged figure aliases the shard's")
			case !tc.copiedFromV && got != tc.kept:
				t.Fatal("a kept figure was reallocated")
			}
		})
	}
}

// A merged timeline row takes the server's figures (tick ms p99, RSS) from
// the first shard that read them, as copies.
func TestMergeRowServerFiguresFirstShard(t *testing.T) {
	p99a, p99b, rss := 4.5, 9.0, int64(1000)
	rows := []report.TimelinePoint{{TS: 1}, {TS: 1, TickMsP99: &p99a}, {TS: 1, TickMsP99: &p99b, RSSKB: &rss}}
	m, err := mergeRow(1, rows)
	if err != nil {
		t.Fatal(err)
	}
	if m.TickMsP99 == nil || *m.TickMsP99 != 4.5 || m.TickMsP99 == &p99a {
		t.Errorf("tick_ms_p99 %v, want a copy of 4.5", m.TickMsP99)
	}
	if m.RSSKB == nil || *m.RSSKB != 1000 || m.RSSKB == &rss {
		t.Errorf("rss_kb %v, want a copy of 1000", m.RSSKB)
	}
}

// TestMergeKeepsEarliestAbortAndSumsHarnessErrors: the merged run ended when
// its first shard ended, for that shard's reason; the harness failures of
// every shard count, and the tightest descriptor limit is the one shown.
func TestMergeKeepsEarliestAbortAndSumsHarnessErrors(t *testing.T) {
	all := run(40)
	in := make([]Input, 4)
	for i := range in {
		in[i] = shardReport(t, all, i, 4)
	}
	at := func(s float64) *float64 { return &s }
	in[1].Report.AbortedAtS, in[1].Report.AbortReason, in[1].Report.AbortGate = at(7), "tick collapsed", "tick_hz_min"
	in[3].Report.AbortedAtS, in[3].Report.AbortReason, in[3].Report.AbortGate = at(3), "server died", "server"
	in[0].Report.HarnessErrors = &report.HarnessErrors{Socket: 2, FDExhausted: 2, FirstError: "too many open files",
		FDLimit: &report.FDLimit{Soft: 256, Needed: 300}}
	in[2].Report.HarnessErrors = &report.HarnessErrors{Dial: 1, FDLimit: &report.FDLimit{Soft: 1024, Needed: 30}}
	m, err := Reports(in)
	if err != nil {
		t.Fatal(err)
	}
	if m.AbortedAtS == nil || *m.AbortedAtS != 3 || m.AbortGate != "server" || m.AbortReason != "shard 3/4: server died" {
		t.Errorf("abort: at %v gate %q reason %q, want the earliest (shard 3 at 3 s, server)", m.AbortedAtS, m.AbortGate, m.AbortReason)
	}
	h := m.HarnessErrors
	if h == nil || h.Socket != 2 || h.Dial != 1 || h.FDExhausted != 2 || h.FirstError != "too many open files" || h.FDLimit.Soft != 256 {
		t.Errorf("harness errors %+v, want socket 2, dial 1, fd_exhausted 2, the first error and the 256 limit", h)
	}
	if in[0].Report.HarnessErrors.Dial != 0 {
		t.Error("the merge wrote into a shard's own report")
	}
}

// TestMergeSumsLeave: the goodbyes of every shard that said any count; the
// wait is the slowest shard's; a shard without a Leaver adds nothing, and
// no shard's own report is written into.
func TestMergeSumsLeave(t *testing.T) {
	all := run(30)
	in := make([]Input, 3)
	for i := range in {
		in[i] = shardReport(t, all, i, 3)
	}
	in[0].Report.Leave = &report.Leave{Sent: 10, Answered: 9, WaitedMs: 1000, TimeoutMs: 1000}
	in[2].Report.Leave = &report.Leave{Sent: 8, Answered: 8, Errors: 2, WaitedMs: 40, TimeoutMs: 1000}
	m, err := Reports(in)
	if err != nil {
		t.Fatal(err)
	}
	want := report.Leave{Sent: 18, Answered: 17, Errors: 2, WaitedMs: 1000, TimeoutMs: 1000}
	if m.Leave == nil || *m.Leave != want {
		t.Errorf("leave %+v, want %+v", m.Leave, want)
	}
	if in[0].Report.Leave.Sent != 10 {
		t.Error("the merge wrote into a shard's own report")
	}
}

// encoded is h as a timeline row holds it.
func encoded(t testing.TB, h *stats.Histogram) *stats.Encoded {
	t.Helper()
	e, err := stats.Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
