package swarm

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Replay pacing. A record plays at (its tick − the file's first tick) /
// tick rate seconds of trace time, and trace time runs with the wall clock
// from the client's Welcome, whatever the swarm's own --rate. Each Input
// carries the oldest record that is due and not yet sent, so a worker
// iteration that runs late catches up in order rather than skipping; only
// when the cursor falls more than maxReplayLag behind (the swarm cannot keep
// up with the recording's input density) does it jump to the newest due
// record, counting what it skipped.
const (
	maxReplayLag = 1.0 // seconds of trace time
	// replayKeepalive: with no record due for this long (a recording with a
	// pause in it), the last record is sent again so the server does not
	// time the client out; counted apart from replayed records.
	replayKeepalive = 2.0
)

// replayFile is one loaded FLIT file, shared read-only by every client
// replaying it.
type replayFile struct {
	path      string
	tickRate  uint32
	recs      []trace.Record
	at        []float64 // at[i]: seconds from record 0 to record i
	period    float64   // one loop: the span plus one tick
	truncated int       // bytes of a partial last record, ignored
}

// replaySet is one "trace:PATH" pattern: its files and the clients'
// cursors (read after the run for the report).
type replaySet struct {
	name    string
	files   []*replayFile
	clients []*replay
}

// loadReplay loads PATH (a file, or every *.flit of a directory in name
// order), charging what it reads to budget (the trace files of the whole
// swarm together). Every problem that would make the replay measure nothing
// or something else is an error naming the file; a FIFO or device is
// refused without blocking, and a read stops when ctx ends.
func loadReplay(ctx context.Context, name, path string, budget *boundedfile.Budget) (*replaySet, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("pattern %s: %w", name, err)
	}
	paths := []string{path}
	if st.IsDir() {
		if paths, err = filepath.Glob(filepath.Join(path, "*.flit")); err != nil {
			return nil, fmt.Errorf("pattern %s: %w", name, err)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("pattern %s: directory %s holds no .flit file: nothing to replay", name, path)
		}
		sort.Strings(paths)
	}
	rs := &replaySet{name: name}
	for _, p := range paths {
		f, err := loadReplayFile(ctx, p, budget)
		if err != nil {
			return nil, fmt.Errorf("pattern %s: %w", name, err)
		}
		rs.files = append(rs.files, f)
	}
	return rs, nil
}

func loadReplayFile(ctx context.Context, path string, budget *boundedfile.Budget) (*replayFile, error) {
	tr, err := trace.ReadFileBudget(ctx, path, budget)
	if err != nil {
		return nil, err
	}
	// The one validation trace inspect and the gate's vet use too.
	if err := tr.Validate(); err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	f := &replayFile{path: path, tickRate: tr.TickRate, recs: tr.Records, at: make([]float64, len(tr.Records)), truncated: tr.TruncatedBytes}
	first := tr.Records[0].ServerTick
	for i := range tr.Records {
		f.at[i] = float64(tr.Records[i].ServerTick-first) / float64(tr.TickRate)
	}
	f.period = f.at[len(f.at)-1] + 1/float64(tr.TickRate)
	return f, nil
}

// factory makes client index's cursor: file index mod the file count, its
// start offset spread over the file by the client's rank among the clients
// sharing that file (client 0 starts at record 0), so the swarm does not
// fly in lockstep.
func (rs *replaySet) factory(index, _ int) Pattern {
	f := rs.files[index%len(rs.files)]
	rank := index / len(rs.files)
	offset := int(frac(float64(rank)*goldenFrac) * float64(len(f.recs)))
	p := &replay{f: f, offset: offset, idx: offset, lastSent: math.Inf(-1)}
	rs.clients = append(rs.clients, p)
	return p
}

// replay is one client's cursor over a shared file.
type replay struct {
	f        *replayFile
	offset   int
	idx      int     // next record to send
	lap      int     // completed passes past the end of the file
	lastSent float64 // wall seconds of the last Input sent
	last     trace.Record
	started  bool

	sent, skipped, keepalives int64
}

// due is the trace time, relative to the client's start, of the next record.
func (p *replay) due() float64 { return p.dueAt(p.idx, p.lap) }

// dueAt is the trace time of record idx on pass lap.
func (p *replay) dueAt(idx, lap int) float64 {
	return float64(lap)*p.f.period + p.f.at[idx] - p.f.at[p.offset]
}

// following is the position after (idx, lap).
func (p *replay) following(idx, lap int) (int, int) {
	if idx+1 == len(p.f.recs) {
		return 0, lap + 1
	}
	return idx + 1, lap
}

func (p *replay) advance() { p.idx, p.lap = p.following(p.idx, p.lap) }

// Control implements Pattern.
func (p *replay) Control(t float64, c *Control) bool {
	if p.due() > t {
		if !p.started || t-p.lastSent < replayKeepalive {
			return false
		}
		p.keepalives++
		p.put(t, c)
		return true
	}
	// Too far behind: skip to the newest record that is due (never past it).
	if p.due() < t-maxReplayLag {
		p.skipTo(t)
	}
	p.last = p.f.recs[p.idx]
	p.advance()
	p.sent++
	p.started = true
	p.put(t, c)
	return true
}

func (p *replay) put(t float64, c *Control) {
	p.lastSent = t
	*c = Control{Throttle: p.last.Throttle, Elevator: p.last.Elevator, Aileron: p.last.Aileron, Rudder: p.last.Rudder, Buttons: p.last.Buttons}
}

// skipTo moves the cursor to the newest record due at t, counting every
// record passed as skipped. The work is bounded whatever the recording: the
// whole passes over the file in between are counted arithmetically and the
// record within the last pass is found by binary search, so a file of
// millions of records on one tick (every one due at once, a pass lasting
// one tick) costs one step O(log n), never a walk over the records.
func (p *replay) skipTo(t float64) {
	n := len(p.f.recs)
	x := t + p.f.at[p.offset] // trace time of the file, counted from pass 0
	lap := int(math.Floor(x / p.f.period))
	idx := sort.Search(n, func(i int) bool { return p.f.at[i] > x-float64(lap)*p.f.period }) - 1
	if idx < 0 { // rounding put x just before this pass: the last record of the previous one
		lap, idx = lap-1, n-1
	}
	// Float rounding may land one record off: correct it (bounded).
	for range 2 {
		if ni, nl := p.following(idx, lap); p.dueAt(ni, nl) <= t {
			idx, lap = ni, nl
		}
	}
	for range 2 {
		if p.dueAt(idx, lap) > t {
			if idx == 0 {
				idx, lap = n-1, lap-1
			} else {
				idx--
			}
		}
	}
	if lap < p.lap || lap == p.lap && idx <= p.idx {
		return // never backwards
	}
	// Records passed: the rest of the current pass, the whole passes
	// between, and the last pass up to idx (each term non-negative).
	passed := int64(idx - p.idx)
	if lap > p.lap {
		passed = satAdd(satMul(int64(lap-p.lap-1), int64(n)), int64(n-p.idx+idx))
	}
	p.skipped = satAdd(p.skipped, passed)
	p.idx, p.lap = idx, lap
}

// satMul and satAdd saturate at MaxInt64 (non-negative operands): a count
// of skipped records past it means the same thing (the swarm could not
// keep up) and must not wrap.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// addTraceReport adds one traces[] entry per replayed pattern and a warning
// per truncated file. It runs after every worker has returned.
func addTraceReport(r *report.Report, sets []*replaySet, workers []*worker) {
	joined := map[Pattern]bool{}
	for _, w := range workers {
		for _, c := range w.clients {
			if !c.welcomedAt.IsZero() {
				joined[c.pattern] = true
			}
		}
	}
	for _, rs := range sets {
		tr := report.TraceReplay{Pattern: rs.name, Clients: len(rs.clients)}
		for _, f := range rs.files {
			tr.Files = append(tr.Files, f.path)
			tr.Records += int64(len(f.recs))
			if f.truncated > 0 {
				tr.TruncatedFiles++
				r.Warnings = append(r.Warnings, fmt.Sprintf("trace %s: last record truncated (%d byte(s) ignored); its %d complete record(s) replayed", f.path, f.truncated, len(f.recs)))
			}
		}
		tr.RecordsCovered = rs.covered()
		for _, p := range rs.clients {
			tr.RecordsReplayed += p.sent
			tr.RecordsSkipped += p.skipped
			tr.Keepalives += p.keepalives
			if joined[p] {
				tr.ClientsJoined++
			}
			if p.sent > 0 {
				tr.ClientsReplayed++
			}
		}
		r.Traces = append(r.Traces, tr)
	}
	sort.Strings(r.Warnings)
}

// covered counts the distinct records some client's cursor passed: each
// client's span runs from its offset over sent + skipped records, wrapping.
// The spans are merged as intervals (sorted by start), so the cost is in
// the number of clients, never in the records of the file.
func (rs *replaySet) covered() int64 {
	spans := map[*replayFile][][2]int64{}
	for _, p := range rs.clients {
		n := int64(len(p.f.recs))
		span := min(satAdd(p.sent, p.skipped), n)
		if span == 0 {
			continue
		}
		from, to := int64(p.offset), int64(p.offset)+span
		if to > n { // wraps past the end: two intervals
			spans[p.f] = append(spans[p.f], [2]int64{from, n}, [2]int64{0, to - n})
		} else {
			spans[p.f] = append(spans[p.f], [2]int64{from, to})
		}
	}
	var total int64
	for _, iv := range spans {
		sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
		end := int64(0)
		for _, s := range iv {
			from := max(s[0], end)
			if s[1] > from {
				total += s[1] - from
			}
			end = max(end, s[1])
		}
	}
	return total
}
