package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/rundir"
)

// DefaultBaselinePath is the committed baseline, relative to the repository
// root (the working directory of a CI run).
const DefaultBaselinePath = "baselines/scale-gate-baseline.json"

// BaselineEntry is the committed figure of one <profile>/<pattern>: the
// machine-independent byte metrics only (CPU timings are too noisy to
// baseline on shared runners).
type BaselineEntry struct {
	// KBs is the swarm's downstream_kbs_per_client mean (payload).
	KBs float64 `json:"kbs"`
	// WireKBs is the server's wire_out_kbs_per_client.
	WireKBs float64 `json:"wire_kbs"`
	// BytesPerEntity is the swarm's snapshot_bytes_per_entity: Snapshot
	// bytes per decoded entity record. Under a binding snapshot budget the
	// payload KB/s is pinned at the budget, and a fatter record encoding
	// moves this figure instead. Absent for servers whose bodies are not
	// decoded (body_format "opaque").
	BytesPerEntity *float64 `json:"bytes_per_entity,omitempty"`
	// Transport, Clients, UpdatedAt and GitHead say where the figure came
	// from; they are not compared.
	Transport string `json:"transport,omitempty"`
	Clients   int    `json:"clients,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	GitHead   string `json:"git_head,omitempty"`
}

// Baseline is baselines/scale-gate-baseline.json.
type Baseline struct {
	SchemaVersion int                      `json:"schema_version"`
	Comment       string                   `json:"comment,omitempty"`
	Entries       map[string]BaselineEntry `json:"baselines"`

	// Path is where it was read from; Raw its bytes (nil when the file did
	// not exist).
	Path string `json:"-"`
	Raw  []byte `json:"-"`
}

// ReadBaseline reads the baseline file. A file that does not exist is an
// empty baseline (every key is then missing, which fails a baselined leg);
// a file that exists but does not parse is an error.
func ReadBaseline(path string) (*Baseline, error) {
	b := &Baseline{SchemaVersion: 1, Entries: map[string]BaselineEntry{}, Path: path}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return b, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	if err := json.Unmarshal(raw, b); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	if b.Entries == nil {
		b.Entries = map[string]BaselineEntry{}
	}
	b.Path, b.Raw = path, raw
	return b, nil
}

// Lookup returns the entry for key.
func (b *Baseline) Lookup(key string) (BaselineEntry, bool) {
	if b == nil {
		return BaselineEntry{}, false
	}
	e, ok := b.Entries[key]
	return e, ok
}

// ErrBaselineNotUpdated is returned by UpdateBaseline for a run that did
// not pass in full.
var ErrBaselineNotUpdated = errors.New("baseline not updated: not every leg passed")

// UpdateBaseline writes the run's figures for its keys into the baseline
// file, keeping every other key, atomically (temp file + rename). It refuses
// unless every leg passed, so a failed run never commits a partial baseline
// and the file stays byte-identical. A profile with baselined false never
// touches it.
func UpdateBaseline(b *Baseline, run *rundir.RunResult, now time.Time, gitHead string) (bool, error) {
	if !run.Profile.Baselined {
		return false, nil
	}
	if run.Verdict != rundir.VerdictPassed || run.Interrupted {
		return false, ErrBaselineNotUpdated
	}
	next := map[string]BaselineEntry{}
	for k, v := range b.Entries {
		next[k] = v
	}
	for _, leg := range run.Legs {
		if leg.Report == nil {
			return false, fmt.Errorf("%w: leg %s has no report", ErrBaselineNotUpdated, leg.Leg.ID)
		}
		entry := BaselineEntry{Transport: run.Profile.Transport, Clients: run.Profile.Clients,
			UpdatedAt: now.UTC().Format(time.RFC3339), GitHead: gitHead}
		if err := recordEntry(leg.Report, &entry); err != nil {
			return false, fmt.Errorf("%w: leg %s: %v", ErrBaselineNotUpdated, leg.Leg.ID, err)
		}
		next[leg.Leg.BaselineKey] = entry
	}
	out := Baseline{SchemaVersion: 1, Comment: b.Comment, Entries: next}
	if out.Comment == "" {
		out.Comment = "payload kbs (swarm downstream_kbs_per_client mean), wire_kbs (server wire_out_kbs_per_client) and bytes_per_entity (swarm snapshot_bytes_per_entity, when bodies are decoded) keyed PROFILE/PATTERN; regenerate with scalegate --profile NAME --update-baseline"
	}
	// A fresh repository (or --baseline in a new place) has no directory for
	// the file yet: recording the first baseline creates it.
	if err := os.MkdirAll(filepath.Dir(b.Path), 0o755); err != nil {
		return false, fmt.Errorf("write baseline %s: %w", b.Path, err)
	}
	// encoding/json sorts map keys, so the file diffs stably. The lock
	// tells CleanBaselineTemps that this write's temp file is live.
	unlock, err := lockDir(filepath.Dir(b.Path), true)
	if err != nil {
		return false, fmt.Errorf("write baseline %s: %w", b.Path, err)
	}
	defer unlock()
	if err := report.WriteJSONAtomic(b.Path, out); err != nil {
		return false, fmt.Errorf("write baseline: %w", err)
	}
	return true, nil
}

// CleanBaselineTemps removes the temp files an --update-baseline killed
// between writing its temp file and renaming it left beside path (only
// names report.WriteFileAtomic makes for path: "."+base+".tmp"+digits).
// While another scalegate is writing the baseline (it holds the
// directory's lock) nothing is touched: its temp file is live. It returns
// the paths removed; a missing directory is not an error.
func CleanBaselineTemps(path string) ([]string, error) {
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

// CheckBaselineWritable creates the baseline's directory and proves a file
// can be created in it (the same temp file + rename path UpdateBaseline
// takes), so --update-baseline fails before a long run rather than after it.
func CheckBaselineWritable(path string) error {
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

// baselinedFigures are what a baseline entry records, each read through
// the gate table (the gate's own reader, with its rule for missing: a wire
// rate with wire_peers 0 measured nothing and is never recorded or
// passed), in the summary's order.
var baselinedFigures = []struct {
	gate, title string
	fig         gatetable.Figure
	// entry is the entry's field for the figure (nil: not recorded).
	entry func(*BaselineEntry) *float64
	// optional: recorded only when the run has it (opaque bodies have no
	// bytes per entity).
	optional bool
}{
	{"baseline_kbs", "payload KB/s vs baseline", gatetable.KBsMean, func(e *BaselineEntry) *float64 { return &e.KBs }, false},
	{"baseline_wire_kbs", "wire KB/s vs baseline", gatetable.WireKBs, func(e *BaselineEntry) *float64 { return &e.WireKBs }, false},
	{"baseline_bytes_per_entity", "snapshot bytes per entity vs baseline", gatetable.BytesPerEntity, func(e *BaselineEntry) *float64 { return e.BytesPerEntity }, true},
}

// recordEntry reads a passing leg's baselined figures into entry; a
// required figure that is missing refuses the update.
func recordEntry(r *report.Report, entry *BaselineEntry) error {
	m := gatetable.FromReport(r)
	for _, f := range baselinedFigures {
		v, err := f.fig.Read(m)
		switch {
		case err != nil && f.optional:
			continue
		case err != nil:
			return err
		}
		v = round3(v)
		if f.optional {
			entry.BytesPerEntity = &v
			continue
		}
		*f.entry(entry) = v
	}
	return nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
