// Package baseline is the committed baseline file: format, reading, update and limit.
//
// The file is baselines/scale-gate-baseline.json (DefaultPath). Read loads
// it bounded in size and time; Update rewrites it atomically, under a lock
// on its directory, only from a run where every leg passed; Limit is what
// a baseline gate compares a run's figure with.
//
// A version-1 entry holds one run's figures. A version-2 entry recorded
// from N ≥ 3 runs (--update-baseline --runs N) also holds, per figure, the
// N samples and their spread (median, raw MAD, min, max), and the host the
// runs were taken on. The scalar fields version 1 had (kbs, wire_kbs,
// bytes_per_entity) stay, holding the median: a version-1 file loads as
// before, and an older scalegate reading a version-2 file (it ignores
// fields it does not know) compares against the median.
//
// The limit of a figure whose direction is "at most" (every baselined
// figure: bytes moved up, or input latency, is the regression) is
//
//	median + max(tolerance_pct/100 · |median|, k · σ̂, worst run − median)
//
// with σ̂ = 1.4826 · MAD (see Limit for why each term is there and
// DefaultK for the false-alarm rates k implies). A single-run entry has no
// spread, so its limit is today's: figure · (1 + tolerance_pct/100).
package baseline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// Schema versions: 1 = one run per key; 2 = per-figure spread from N runs.
const (
	SchemaVersion1 = 1
	SchemaVersion  = 2
)

// MaxFileBytes bounds a baseline file read: an entry is a few hundred
// bytes with its spread (under 2 KB with ten runs' samples), so 16 MiB is
// thousands of keys more than any repository gates; past it the file is
// not a baseline (a symlink to /dev/zero, a runaway generator).
const MaxFileBytes = 16 << 20

// MinRuns is the fewest runs a spread is recorded from: with two the MAD is
// half the distance between them whatever the runner does, and with one
// there is no spread at all.
const MinRuns = 3

// The baselined figures' names: the scalar fields of Entry and the keys of
// Entry.Spread.
const (
	FigureKBs            = "kbs"
	FigureWireKBs        = "wire_kbs"
	FigureBytesPerEntity = "bytes_per_entity"
	// FigureInputLatencyP95 is the swarm's input_latency_ms p95 (protocol
	// v1.1): recorded only from MinRuns or more runs, as a spread, since
	// one run of a timing figure says nothing of how far it moves alone.
	FigureInputLatencyP95 = "input_latency_p95_ms"
)

// File is baselines/scale-gate-baseline.json.
type File struct {
	SchemaVersion int              `json:"schema_version"`
	Comment       string           `json:"comment,omitempty"`
	Entries       map[string]Entry `json:"baselines"`
}

// Entry is the committed figures of one PROFILE/PATTERN key.
type Entry struct {
	// KBs is the swarm's downstream_kbs_per_client mean (payload): the one
	// run's figure, or the median of Runs runs.
	KBs float64 `json:"kbs"`
	// WireKBs is the server's wire_out_kbs_per_client, likewise.
	WireKBs float64 `json:"wire_kbs"`
	// BytesPerEntity is the swarm's snapshot_bytes_per_entity, likewise;
	// absent for servers whose bodies are not decoded.
	BytesPerEntity *float64 `json:"bytes_per_entity,omitempty"`
	// Transport, Clients, UpdatedAt, GitHead and Host say where the figures
	// came from; they are not compared.
	Transport string `json:"transport,omitempty"`
	Clients   int    `json:"clients,omitempty"`
	UpdatedAt string `json:"updated_at,omitempty"`
	GitHead   string `json:"git_head,omitempty"`
	// Host is the machine the runs were taken on (version 2): a spread
	// measured on one runner says little about another.
	Host string `json:"host,omitempty"`
	// Runs is how many runs the figures summarise; 0 (absent, version 1)
	// means one.
	Runs int `json:"runs,omitempty"`
	// Spread holds, per figure name, the runs' samples and their spread;
	// absent for a single-run entry.
	Spread map[string]Spread `json:"spread,omitempty"`
	// Own holds the profile's own baselined figures ("physics_ms.p99",
	// OwnName): the one run's value, or the median of the runs (whose
	// spread is under Spread, by the same name).
	Own map[string]float64 `json:"own,omitempty"`
}

// OwnName is the name a baseline entry records a statistic of the
// profile's own figure under: "physics_ms.p99". The dot keeps it apart
// from the built-in figures' names.
func OwnName(figure, stat string) string { return figure + "." + stat }

// IsOwn reports whether a figure name is an own figure's (OwnName).
func IsOwn(name string) bool { return strings.Contains(name, ".") }

// ownNameRe is OwnName's shape: a figure's name (gatetable's rule for
// one) and a statistic.
var ownNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]*\.[a-z][a-z0-9]*$`)

// checkOwnNames refuses an own value whose key no gate could name: a
// hand-edited "physics_ms_p99" would otherwise never be read, and the
// check on physics_ms.p99 would report the figure as never recorded.
func (e Entry) checkOwnNames() error {
	names := make([]string, 0, len(e.Own))
	for n := range e.Own {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !ownNameRe.MatchString(n) {
			return fmt.Errorf("own[%q]: not a figure's NAME.STAT (physics_ms.p99)", n)
		}
	}
	return nil
}

// Spread is one figure over N runs of the same code on the same host.
type Spread struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	// MAD is the raw median absolute deviation, median(|x − median|), in
	// the figure's unit: the fact anyone can recompute from Samples. The
	// limit scales it to σ̂ = 1.4826·MAD (a normal distribution's σ) so
	// that k reads in standard deviations.
	MAD     float64   `json:"mad"`
	Min     float64   `json:"min"`
	Max     float64   `json:"max"`
	Samples []float64 `json:"samples"`
}

// NewSpread summarises samples (N ≥ MinRuns, every one a finite number:
// a run that did not measure the figure is not recorded as anything).
func NewSpread(samples []float64) (Spread, error) {
	if len(samples) < MinRuns {
		return Spread{}, fmt.Errorf("%d run(s): a spread needs at least %d", len(samples), MinRuns)
	}
	for i, v := range samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Spread{}, fmt.Errorf("run %d: figure is %v (missing), not a sample", i+1, v)
		}
	}
	return Spread{
		N: len(samples), Median: tidy(stats.Median(samples)), MAD: tidy(stats.MAD(samples)),
		Min: slices.Min(samples), Max: slices.Max(samples), Samples: slices.Clone(samples),
	}, nil
}

// tidy rounds a derived figure to 10 significant digits, so that the MAD
// of 24.44 and 24.43 is written 0.01 and not 0.010000000000001563; Decode
// compares stored summaries with recomputed ones to 1e-9, well above what
// the rounding moves.
func tidy(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	if err != nil {
		return v
	}
	return r
}

// Sigma is σ̂ = MADScale·MAD.
func (s Spread) Sigma() float64 { return stats.MADScale * s.MAD }

// Record sets one figure of the entry from its runs' samples: one sample
// is a single-run figure (no spread, as in version 1); MinRuns or more
// record the spread and set the scalar field (for the three scalar
// figures) to the median. Runs is set to the sample count; every figure of
// one entry must come from the same runs, so record a new baseline into a
// fresh Entry (as --update-baseline builds one per key).
func (e *Entry) Record(figure string, samples []float64) error {
	n := len(samples)
	scalar := figure == FigureKBs || figure == FigureWireKBs || figure == FigureBytesPerEntity || IsOwn(figure)
	switch {
	case n != 1 && n < MinRuns:
		return fmt.Errorf("figure %s: %d runs: record 1, or at least %d for a spread", figure, n, MinRuns)
	case n == 1 && !scalar:
		return fmt.Errorf("figure %s: only %s, %s, %s and own figures have a single-run field; record it from at least %d runs",
			figure, FigureKBs, FigureWireKBs, FigureBytesPerEntity, MinRuns)
	case e.Runs > 0 && e.Runs != n:
		return fmt.Errorf("figure %s: %d samples, but the entry's other figures came from %d runs", figure, n, e.Runs)
	}
	v := samples[0]
	if n == 1 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("figure %s: %v is not a figure", figure, v)
		}
		delete(e.Spread, figure)
	} else {
		s, err := NewSpread(samples)
		if err != nil {
			return fmt.Errorf("figure %s: %w", figure, err)
		}
		if e.Spread == nil {
			e.Spread = map[string]Spread{}
		}
		e.Spread[figure] = s
		v = s.Median
	}
	e.Runs = n
	switch figure {
	case FigureKBs:
		e.KBs = v
	case FigureWireKBs:
		e.WireKBs = v
	case FigureBytesPerEntity:
		e.BytesPerEntity = &v
	}
	if IsOwn(figure) {
		if e.Own == nil {
			e.Own = map[string]float64{}
		}
		e.Own[figure] = v
	}
	return nil
}

// Reference is what a figure is compared against.
type Reference struct {
	// Value is the single run's figure, or the median of the runs.
	Value float64
	// Spread is nil for a single-run figure.
	Spread *Spread
}

// Reference returns the entry's reference for a figure; false when the
// entry does not record it (a missing baseline figure, which fails the
// gate as unevaluable).
func (e Entry) Reference(figure string) (Reference, bool) {
	if s, ok := e.Spread[figure]; ok {
		return Reference{Value: s.Median, Spread: &s}, true
	}
	switch figure {
	case FigureKBs:
		return Reference{Value: e.KBs}, true
	case FigureWireKBs:
		return Reference{Value: e.WireKBs}, true
	case FigureBytesPerEntity:
		if e.BytesPerEntity != nil {
			return Reference{Value: *e.BytesPerEntity}, true
		}
	}
	if v, ok := e.Own[figure]; ok && IsOwn(figure) {
		return Reference{Value: v}, true
	}
	return Reference{}, false
}

// Decode parses and checks a baseline file. A missing schema_version is
// version 1 (the first files had it, but a hand-made one may not); a
// version this code does not know, a spread whose summary does not match
// its samples, or a scalar that is not its spread's median is an error
// naming the key and field: a hand-edited median would otherwise move the
// limit silently.
func Decode(raw []byte) (*File, error) {
	f := &File{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(f); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	if f.SchemaVersion == 0 {
		f.SchemaVersion = SchemaVersion1
	}
	if f.SchemaVersion != SchemaVersion1 && f.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("schema_version %d: this scalegate reads %d and %d (a newer scalegate wrote it?)",
			f.SchemaVersion, SchemaVersion1, SchemaVersion)
	}
	if f.Entries == nil {
		f.Entries = map[string]Entry{}
	}
	keys := make([]string, 0, len(f.Entries))
	for k := range f.Entries {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := f.Entries[k].check(); err != nil {
			return nil, fmt.Errorf("baselines[%q]: %w", k, err)
		}
	}
	return f, nil
}

// check validates one entry's spreads against their samples and scalars.
func (e Entry) check() error {
	if e.Runs < 0 {
		return fmt.Errorf("runs %d: must be ≥ 1", e.Runs)
	}
	if err := e.checkOwnNames(); err != nil {
		return err
	}
	names := make([]string, 0, len(e.Spread))
	for n := range e.Spread {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		s := e.Spread[name]
		want, err := NewSpread(s.Samples)
		if err != nil {
			return fmt.Errorf("spread.%s.samples: %w", name, err)
		}
		for _, f := range []struct {
			field     string
			got, want float64
		}{{"median", s.Median, want.Median}, {"mad", s.MAD, want.MAD}, {"min", s.Min, want.Min}, {"max", s.Max, want.Max}, {"n", float64(s.N), float64(want.N)}} {
			if !same(f.got, f.want) {
				return fmt.Errorf("spread.%s.%s is %v but its samples give %v", name, f.field, f.got, f.want)
			}
		}
		if e.Runs != s.N {
			return fmt.Errorf("runs is %d but spread.%s has %d samples", e.Runs, name, s.N)
		}
		scalar, err := e.scalar(name)
		if err != nil {
			return err
		}
		if scalar != nil && !same(*scalar, s.Median) {
			return fmt.Errorf("%s is %v but spread.%s.median is %v (the scalar must be the median: older readers compare against it)",
				scalarField(name), *scalar, name, s.Median)
		}
	}
	return nil
}

// scalar is the value the entry keeps beside figure name's spread (nil
// for a figure with a spread only, the input latency), or the error of a
// spread whose value is missing.
func (e Entry) scalar(name string) (*float64, error) {
	switch {
	case name == FigureKBs:
		return &e.KBs, nil
	case name == FigureWireKBs:
		return &e.WireKBs, nil
	case name == FigureBytesPerEntity:
		if e.BytesPerEntity == nil {
			return nil, fmt.Errorf("spread.%s is recorded but %s is missing", name, name)
		}
		return e.BytesPerEntity, nil
	case IsOwn(name):
		v, ok := e.Own[name]
		if !ok {
			return nil, fmt.Errorf("spread.%s is recorded but own.%s is missing", name, name)
		}
		return &v, nil
	}
	return nil, nil
}

// scalarField is where an entry keeps a figure's value beside its spread.
func scalarField(name string) string {
	if IsOwn(name) {
		return "own." + name
	}
	return name
}

// same compares a stored summary with the recomputed one, allowing for the
// last bits a decimal round trip can change.
func same(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// Encode is the file's JSON as written: indented, map keys sorted (by
// encoding/json) so the file diffs stably, newline-terminated.
func Encode(f *File) ([]byte, error) {
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(raw, '\n'), nil
}

// DescribeRuns says where an entry's figures came from, for a summary's
// baseline column ("median of 10 runs on host-1", "1 run").
func (e Entry) DescribeRuns() string {
	if e.Runs <= 1 {
		return "1 run"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "median of %d runs", e.Runs)
	if e.Host != "" {
		fmt.Fprintf(&b, " on %s", e.Host)
	}
	return b.String()
}
