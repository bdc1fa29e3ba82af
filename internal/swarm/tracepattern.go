package swarm

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/trace"
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
// order). Every problem that would make the replay measure nothing or
// something else is an error naming the file.
func loadReplay(name, path string) (*replaySet, error) {
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
		f, err := loadReplayFile(p)
		if err != nil {
			return nil, fmt.Errorf("pattern %s: %w", name, err)
		}
		rs.files = append(rs.files, f)
	}
	return rs, nil
}

func loadReplayFile(path string) (*replayFile, error) {
	tr, err := trace.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch {
	case len(tr.Records) == 0:
		return nil, fmt.Errorf("trace %s: no records (header only): nothing to replay", path)
	case tr.TickRate == 0:
		return nil, fmt.Errorf("trace %s: tick rate 0 in the header: replay cannot be paced", path)
	}
	f := &replayFile{path: path, tickRate: tr.TickRate, recs: tr.Records, at: make([]float64, len(tr.Records)), truncated: tr.TruncatedBytes}
	first := tr.Records[0].ServerTick
	for i := range tr.Records {
		r := &tr.Records[i]
		if err := checkRecord(r); err != nil {
			return nil, fmt.Errorf("trace %s: record %d: %w", path, i, err)
		}
		if i > 0 && r.ServerTick < tr.Records[i-1].ServerTick {
			return nil, fmt.Errorf("trace %s: record %d: server tick %d is before the previous record's %d (records must be in tick order)", path, i, r.ServerTick, tr.Records[i-1].ServerTick)
		}
		f.at[i] = float64(r.ServerTick-first) / float64(tr.TickRate)
	}
	f.period = f.at[len(f.at)-1] + 1/float64(tr.TickRate)
	return f, nil
}

// checkRecord refuses controls no server accepts: a NaN or infinite float
// would be dropped as malformed, so the replay would send nothing real.
func checkRecord(r *trace.Record) error {
	for _, v := range []struct {
		name string
		v    float32
	}{{"throttle", r.Throttle}, {"elevator", r.Elevator}, {"aileron", r.Aileron}, {"rudder", r.Rudder}} {
		if f := float64(v.v); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is %v", v.name, f)
		}
	}
	return nil
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
		for {
			ni, nl := p.following(p.idx, p.lap)
			if p.dueAt(ni, nl) > t {
				break
			}
			p.idx, p.lap = ni, nl
			p.skipped++
		}
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
func (rs *replaySet) covered() int64 {
	seen := map[*replayFile][]bool{}
	var n int64
	for _, p := range rs.clients {
		marks := seen[p.f]
		if marks == nil {
			marks = make([]bool, len(p.f.recs))
			seen[p.f] = marks
		}
		span := min(p.sent+p.skipped, int64(len(marks)))
		for k := int64(0); k < span; k++ {
			i := (p.offset + int(k)) % len(marks)
			if !marks[i] {
				marks[i] = true
				n++
			}
		}
	}
	return n
}
