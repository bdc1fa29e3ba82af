package baseline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// DefaultPath is the committed baseline, relative to the repository
// root (the working directory of a CI run).
const DefaultPath = "baselines/scale-gate-baseline.json"

// Committed is the committed baseline file as read: its content (the
// format File decodes: version 1, one run per key, and version 2,
// which adds each figure's spread over N runs) and where it came from.
type Committed struct {
	File

	// Path is where it was read from; Raw its bytes (nil when the file did
	// not exist).
	Path string
	Raw  []byte
}

// readTimeout bounds the baseline read: a file on a hung network
// share must not hold the run.
const readTimeout = 10 * time.Second

// Read reads the baseline file. A file that does not exist is an
// empty baseline (every key is then missing, which fails a baselined leg);
// a file that exists but does not decode (Decode: bad JSON, an
// unknown schema_version, a spread that disagrees with its samples) is an
// error naming the file.
func Read(path string) (*Committed, error) {
	b := &Committed{File: File{SchemaVersion: SchemaVersion1, Entries: map[string]Entry{}}, Path: path}
	// Bounded in size and time, and only a regular file: a pull request can
	// turn the committed baseline into a symlink to /dev/zero or a FIFO.
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	raw, err := boundedfile.ReadFile(ctx, path, MaxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	f, err := Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	b.File, b.Raw = *f, raw
	return b, nil
}

// Lookup returns the entry for key.
func (b *Committed) Lookup(key string) (Entry, bool) {
	if b == nil {
		return Entry{}, false
	}
	e, ok := b.Entries[key]
	return e, ok
}

// ErrNotUpdated is returned by Update for a run that did
// not pass in full.
var ErrNotUpdated = errors.New("baseline not updated: not every leg passed")

// defaultComment heads a baseline file that has none.
const defaultComment = "payload kbs (swarm downstream_kbs_per_client mean), wire_kbs (server wire_out_kbs_per_client) and bytes_per_entity " +
	"(swarm snapshot_bytes_per_entity, when bodies are decoded) keyed PROFILE/PATTERN: one run's figures, or with runs ≥ 3 the median " +
	"of the runs and each figure's spread; regenerate with scalegate --profile NAME --update-baseline [--runs N]"

// Update writes the run's figures for its keys into the baseline
// file (schema version 2), keeping every other key, atomically (temp file
// + rename). The legs of run that share a baseline key are that key's
// runs (--update-baseline --runs N runs every leg N times): one leg
// records its figures as before; N ≥ MinRuns record the median
// and the spread of the N samples, each rounded to 3 decimals first. Host
// is the machine the runs were taken on.
//
// It refuses unless every leg passed, so a failed run never commits a
// partial baseline and the file stays byte-identical. A profile with
// baselined false never touches it.
func Update(b *Committed, run *rundir.RunResult, now time.Time, gitHead, host string) (bool, error) {
	if !run.Profile.Baselined {
		return false, nil
	}
	if run.Verdict != rundir.VerdictPassed || run.Interrupted {
		return false, ErrNotUpdated
	}
	keys, legs := byKey(run.Legs)
	next := map[string]Entry{}
	for k, v := range b.Entries {
		next[k] = v
	}
	for _, key := range keys {
		entry := Entry{Transport: run.Profile.Transport, Clients: run.Profile.Clients,
			UpdatedAt: now.UTC().Format(time.RFC3339), GitHead: gitHead, Host: host}
		if err := recordEntry(legs[key], OwnFigures(run.Profile), &entry); err != nil {
			return false, fmt.Errorf("%w: key %s: %v", ErrNotUpdated, key, err)
		}
		next[key] = entry
	}
	out := &File{SchemaVersion: SchemaVersion, Comment: b.Comment, Entries: next}
	if out.Comment == "" {
		out.Comment = defaultComment
	}
	raw, err := Encode(out)
	if err != nil {
		return false, fmt.Errorf("encode baseline: %w", err)
	}
	// A fresh repository (or --baseline in a new place) has no directory for
	// the file yet: recording the first baseline creates it.
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o755); err != nil {
		return false, fmt.Errorf("write baseline %s: %w", b.Path, err)
	}
	// The lock tells CleanTemps that this write's temp file is live.
	unlock, err := lockDir(filepath.Dir(b.Path), true)
	if err != nil {
		return false, fmt.Errorf("write baseline %s: %w", b.Path, err)
	}
	defer unlock()
	if err := report.WriteFileAtomic(b.Path, raw); err != nil {
		return false, fmt.Errorf("write baseline: %w", err)
	}
	return true, nil
}

// byKey groups legs by baseline key, keys in first-seen order; a leg
// without a report refuses the update (it is checked in recordEntry).
func byKey(legs []rundir.LegResult) ([]string, map[string][]rundir.LegResult) {
	var keys []string
	out := map[string][]rundir.LegResult{}
	for _, l := range legs {
		k := l.Leg.BaselineKey
		if _, ok := out[k]; !ok {
			keys = append(keys, k)
		}
		out[k] = append(out[k], l)
	}
	return keys, out
}

// CleanTemps removes the temp files an --update-baseline killed
// between writing its temp file and renaming it left beside path (only
// names report.WriteFileAtomic makes for path: "."+base+".tmp"+digits).
// While another scalegate is writing the baseline (it holds the
// directory's lock) nothing is touched: its temp file is live. It returns
// the paths removed; a missing directory is not an error.
func CleanTemps(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean stale baseline temp files: %w", err)
	}
	var stale []string
	for _, e := range ents {
		if e.Type().IsRegular() && isAtomicTemp(base, e.Name()) {
			stale = append(stale, filepath.Join(dir, e.Name()))
		}
	}
	if len(stale) == 0 {
		return nil, nil
	}
	unlock, err := lockDir(dir, false)
	if errors.Is(err, errLocked) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("clean stale baseline temp files: %w", err)
	}
	defer unlock()
	var removed []string
	var errs []error
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("clean stale baseline temp files: %w", err)
	}
	return removed, nil
}

// isAtomicTemp reports whether name is a temp file report.WriteFileAtomic
// makes for base (os.CreateTemp replaces its "*" with decimal digits).
func isAtomicTemp(base, name string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp")
	if !ok || rest == "" {
		return false
	}
	return strings.Trim(rest, "0123456789") == ""
}

// errLocked: another process holds the directory's lock.
var errLocked = errors.New("locked by another scalegate")

// lockDir takes an exclusive flock on dir: waiting for it when wait, else
// errLocked when it is held. The lock lives on the directory itself, so
// nothing is added to baselines/.
func lockDir(dir string, wait bool) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

// CheckWritable creates the baseline's directory and proves a file
// can be created in it (the same temp file + rename path Update
// takes), so --update-baseline fails before a long run rather than after it.
func CheckWritable(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("baseline %s cannot be written: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe*")
	if err != nil {
		return fmt.Errorf("baseline %s cannot be written: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// figures are what a baseline entry records, each read through
// the gate table (the gate's own reader, with its rule for missing: a wire
// rate with wire_peers 0 measured nothing and is never recorded or
// passed), in the summary's order. Each is a "lower is better" figure
// (bytes moved up, or input latency, is the regression): its limit has
// direction AtMost.
var figures = []struct {
	gate, title string
	fig         gatetable.Figure
	// name is the figure's name in a baseline entry.
	name string
	// optional: recorded only when the run has it (opaque bodies have no
	// bytes per entity; a v1.0 server acknowledges no input).
	optional bool
	// timing: a machine-dependent figure. Its check is hard only in the
	// strict tier (elsewhere the absolute budget, ab and the history gate
	// judge it hard), and it is recorded only from MinRuns or more runs,
	// as a spread.
	timing bool
	// moved says what a figure over its limit means, for the check's detail.
	moved string
}{
	{gatetable.CheckBaselineKBs, "payload KB/s vs baseline", gatetable.KBsMean, FigureKBs, false, false, "bytes moved"},
	{gatetable.CheckBaselineWireKBs, "wire KB/s vs baseline", gatetable.WireKBs, FigureWireKBs, false, false, "bytes moved"},
	{gatetable.CheckBaselineBytesPerEntity, "snapshot bytes per entity vs baseline", gatetable.BytesPerEntity, FigureBytesPerEntity, true, false, "bytes moved"},
	{gatetable.CheckBaselineInputLatency, "input latency p95 vs baseline", gatetable.InputLatencyP95, FigureInputLatencyP95, true, true,
		"inputs take longer to show in the state (applied a tick later? queued behind a slow stage?)"},
}

// recordEntry reads the baselined figures of a key's passing legs (one
// per run) into entry. A required figure missing from any run refuses the
// update; an optional one is recorded only when every run has it, and
// refused when some runs have it and some do not (the runs did not
// measure the same thing).
func recordEntry(legs []rundir.LegResult, own []Figure, entry *Entry) error {
	ms := make([]*gatetable.Metrics, len(legs))
	for i, l := range legs {
		if l.Report == nil {
			return fmt.Errorf("leg %s has no report", l.Leg.ID)
		}
		ms[i] = gatetable.FromReport(l.Report)
	}
	for _, f := range append(Figures(), own...) {
		if f.Timing && len(ms) < MinRuns {
			// One run has no spread to judge a timing figure by.
			continue
		}
		samples := make([]float64, 0, len(ms))
		var missing []string
		var firstErr error
		for i, m := range ms {
			v, err := f.Figure.Read(m)
			if err != nil {
				missing = append(missing, legs[i].Leg.ID)
				firstErr = cmp.Or(firstErr, fmt.Errorf("leg %s: %w", legs[i].Leg.ID, err))
				continue
			}
			samples = append(samples, round3(v))
		}
		switch {
		case len(missing) == len(ms) && f.Optional:
			continue
		case len(missing) > 0 && f.Optional:
			return fmt.Errorf("%s measured in %d of %d runs (missing in %s): %w", f.Name, len(samples), len(ms), strings.Join(missing, ", "), firstErr)
		case len(missing) > 0:
			return firstErr
		}
		if err := entry.Record(f.Name, samples); err != nil {
			return err
		}
	}
	return nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Figure is one figure a baseline entry records, and its check.
type Figure struct {
	// Gate and Title are the check's id and row title.
	Gate, Title string
	// Name is the figure's name in a baseline entry (FigureKBs, …;
	// OwnName for the profile's own).
	Name   string
	Figure gatetable.Figure
	// Dir is the direction a regression moves it against: AtMost for
	// every built-in figure (more bytes, a later input), AtLeast for an
	// own figure whose higher values are better.
	Dir gatetable.Direction
	// Optional: recorded and judged only where the run or the entry has it.
	Optional bool
	// Timing: machine-dependent; its check is hard only in the strict
	// tier, and it is recorded only by --update-baseline --runs N with
	// N ≥ MinRuns.
	Timing bool
	// Moved says what a figure over its limit means.
	Moved string
}

// Figures lists the baselined figures in the summary's order (for
// calibrate, which measures each run's against the committed limit).
func Figures() []Figure {
	out := make([]Figure, len(figures))
	for i, f := range figures {
		out[i] = Figure{Gate: f.gate, Title: f.title, Name: f.name, Figure: f.fig, Optional: f.optional, Timing: f.timing, Moved: f.moved}
	}
	return out
}

// OwnFigures lists the baselined figures of the profile's own: every
// statistic of an own figure that the profile gates (physics_ms_p99_max
// baselines physics_ms.p99), in the gate list's order, with the gate's
// direction. A timing figure (declared timing: true) is recorded only
// from MinRuns or more runs and judged hard only in the strict tier, as
// the input latency is.
func OwnFigures(p *profile.Profile) []Figure {
	var out []Figure
	for _, g := range p.GateList() {
		if !g.Own || !p.Gates.Has(g.Name) || len(g.ServerFields) != 1 {
			continue
		}
		fig, stat, _ := strings.Cut(g.ServerFields[0], ".")
		out = append(out, Figure{
			Gate: "baseline_" + fig + "_" + stat, Title: g.Title + " vs baseline", Name: OwnName(fig, stat), Dir: g.Dir,
			Figure: gatetable.Figure{Name: fig + "_" + stat, Title: g.Title, Path: g.Metric, Unit: g.Unit, Read: g.Measure},
			Timing: g.Timing, Moved: "the team's own figure moved",
		})
	}
	return out
}

// Limit is the limit the baseline check of p's leg with baseline key key
// judges figure against (NewLimit with the profile's tolerance
// and spread_k, direction at most); false when the entry or the figure is
// not recorded, which fails the check as unevaluable.
func (b *Committed) Limit(p *profile.Profile, key, figure string) (Limit, bool, error) {
	return b.LimitDir(p, key, figure, gatetable.AtMost)
}

// LimitDir is Limit in the direction dir (an own figure's).
func (b *Committed) LimitDir(p *profile.Profile, key, figure string, dir gatetable.Direction) (Limit, bool, error) {
	entry, ok := b.Lookup(key)
	if !ok {
		return Limit{}, false, nil
	}
	ref, ok := entry.Reference(figure)
	if !ok {
		return Limit{}, false, nil
	}
	lim, err := NewLimit(ref, dir, p.Baseline.TolerancePct, p.Baseline.SpreadK)
	if err != nil {
		return Limit{}, false, fmt.Errorf("baseline key %q: %s: %w", key, figure, err)
	}
	return lim, true, nil
}
