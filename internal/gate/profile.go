// Package gate is scalegate's gate runner: it loads CUE profiles against the
// schema, expands them into legs, evaluates every gate of a leg from the swarm
// report and the server's metrics, compares with the committed baseline and
// renders the verdict (terminal table, Markdown, summary.json).
package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/ast/astutil"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/scalegate/scalegate/internal/relay"
	"github.com/scalegate/scalegate/profiles"
	"github.com/scalegate/scalegate/schema"
)

// Profile is a resolved profile: the CUE file unified with #Profile, every
// default filled. Field names are the CUE names.
type Profile struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Tier        string  `json:"tier"`
	Transport   string  `json:"transport"`
	Clients     int     `json:"clients"`
	DurationS   float64 `json:"duration_s"`
	RateHz      float64 `json:"rate_hz"`
	RampMs      int     `json:"ramp_ms"`
	Threads     int     `json:"threads"`
	// Shards is how many swarm processes share each leg's clients.
	Shards             int            `json:"shards"`
	Patterns           []string       `json:"patterns,omitempty"`
	PatternMix         string         `json:"pattern_mix,omitempty"`
	EntityType         string         `json:"entity_type"`
	Baselined          bool           `json:"baselined"`
	Baseline           BaselinePolicy `json:"baseline"`
	RSSSampleIntervalS float64        `json:"rss_sample_interval_s"`
	Server             Server         `json:"server"`
	World              World          `json:"world"`
	Network            Network        `json:"network"`
	Sweep              *Sweep         `json:"sweep,omitempty"`
	Impairment         relay.Schedule `json:"impairment,omitempty"`
	ImpairmentSeed     uint64         `json:"impairment_seed,omitempty"`
	Harness            Harness        `json:"harness"`
	Gates              Gates          `json:"gates"`

	// TraceSHA256 is the SHA-256 of every recording a trace pattern
	// replays, keyed by its path relative to the profile directory.
	TraceSHA256 map[string]string `json:"trace_sha256,omitempty"`

	// Source is the file the profile came from ("embedded:pr.cue" or a path).
	Source string `json:"-"`
	// Overrides are the --set PATH=VALUE applied on top of Source, in order
	// ("clients=4"); the fields above already carry their values.
	Overrides []string `json:"-"`
	// traces holds the recordings of the trace patterns, by pattern.
	traces map[string][]traceFile
}

// BaselinePolicy is the profile's baseline tolerance.
type BaselinePolicy struct {
	TolerancePct float64 `json:"tolerance_pct"`
}

// Server is the server under test.
type Server struct {
	Kind               string         `json:"kind"`
	ReadyTimeoutS      float64        `json:"ready_timeout_s"`
	TickJSONIntervalMs int            `json:"tick_json_interval_ms,omitempty"`
	Faults             map[string]any `json:"faults,omitempty"`
	Command            []string       `json:"command,omitempty"`
	ConfigFormat       string         `json:"config_format,omitempty"`
	Config             map[string]any `json:"config,omitempty"`
}

// World holds the built-in server's [world] knobs. Optional knobs are kept
// as a map so only what the profile set reaches the server's config.
type World struct {
	OverrunGovernor  bool `json:"overrun_governor"`
	SimWorkerThreads int  `json:"sim_worker_threads"`
	TestSpawnAICount int  `json:"test_spawn_ai_count"`
	// Extra is every other [world] key the profile set.
	Extra map[string]any `json:"-"`
}

// Network holds the built-in server's [network] knobs.
type Network struct {
	CompressSnapshots bool `json:"compress_snapshots"`
	CongestionControl bool `json:"congestion_control"`
}

// Sweep multiplies legs by client count × entity count × sim worker
// threads; an absent axis keeps the profile's single value.
type Sweep struct {
	Clients          []int `json:"clients,omitempty"`
	EntityCounts     []int `json:"entity_counts,omitempty"`
	SimWorkerThreads []int `json:"sim_worker_threads,omitempty"`
}

// Harness bounds the swarm's own cadence, per joined client: the time
// between two services of its host, in periods of the input rate.
type Harness struct {
	// ServiceIntervalP99MaxPeriods bounds the interval's p99, in periods.
	ServiceIntervalP99MaxPeriods float64 `json:"service_interval_p99_max_periods"`
	// ServiceIntervalMeanMaxPct bounds the interval's mean, in percent over
	// the period (1 % at 60 Hz: at least 59.4 services a second).
	ServiceIntervalMeanMaxPct float64 `json:"service_interval_mean_max_pct"`
	// TestBusyUsPerClient slows the swarm on purpose (forwarded as the
	// swarm's --test-busy-us): a test knob for the harness-bound bite test.
	TestBusyUsPerClient float64 `json:"test_busy_us_per_client,omitempty"`
}

// GateSpec is one gate as a profile declares it: a threshold gate carries
// Threshold, a switch gate (admission, spawn_took) does not.
type GateSpec struct {
	Threshold *float64 `json:"threshold,omitempty"`
	Level     string   `json:"level"`
	// Phase scopes the gate to one stretch of an impaired run ("" = the
	// whole run); see gatetable.Metrics.Narrow.
	Phase string `json:"phase,omitempty"`
}

// Gates is what a profile requires to hold, keyed by the gate's name in
// the gate table (internal/gatetable); an absent gate is not evaluated.
type Gates map[string]GateSpec

// Has reports whether the profile declares the gate.
func (g Gates) Has(name string) bool {
	_, ok := g[name]
	return ok
}

// UnknownProfileError names a profile that no file defines.
type UnknownProfileError struct {
	Name      string
	Available []string
}

func (e *UnknownProfileError) Error() string {
	return fmt.Sprintf("unknown profile %q (available: %s)", e.Name, strings.Join(e.Available, ", "))
}

// Catalog is a set of profile sources validated against the schema.
type Catalog struct {
	ctx    *cue.Context
	schema cue.Value
	def    cue.Value
	fsys   fs.FS
	prefix string // shown before file names: "profiles/" or the user's dir
}

// NewCatalog compiles the embedded schema and reads profiles from dir, or
// from the embedded profiles when dir is "".
func NewCatalog(dir string) (*Catalog, error) {
	ctx := cuecontext.New()
	sch, err := compileSchema(ctx)
	if err != nil {
		return nil, err
	}
	c := &Catalog{ctx: ctx, schema: sch, def: sch.LookupPath(cue.ParsePath("#Profile")), fsys: profiles.FS, prefix: "profiles/"}
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("--profiles %s: not a directory", dir)
		}
		c.fsys, c.prefix = os.DirFS(dir), filepath.Clean(dir)+string(filepath.Separator)
	}
	return c, nil
}

// Schema compiles the embedded schema package; exported for the report and
// metrics-file validators.
func compileSchema(ctx *cue.Context) (cue.Value, error) {
	names, err := fs.Glob(schema.FS, "*.cue")
	if err != nil {
		return cue.Value{}, err
	}
	inst := build.NewContext().NewInstance("schema", nil)
	for _, n := range names {
		src, err := fs.ReadFile(schema.FS, n)
		if err != nil {
			return cue.Value{}, err
		}
		f, err := parser.ParseFile("schema/"+n, src, parser.ParseComments)
		if err != nil {
			return cue.Value{}, syntaxError(err)
		}
		if err := inst.AddSyntax(f); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return cue.Value{}, syntaxError(err)
	}
	return v, nil
}

// Names lists the profiles of the catalog (file base names), sorted.
func (c *Catalog) Names() ([]string, error) {
	files, err := fs.Glob(c.fsys, "*.cue")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".cue"))
	}
	sort.Strings(names)
	return names, nil
}

// Load resolves one profile by name, with sets applied on top of its file
// (in order; a later one for the same path wins).
func (c *Catalog) Load(name string, sets ...Override) (*Profile, cue.Value, error) {
	file := name + ".cue"
	src, err := fs.ReadFile(c.fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := c.Names()
		return nil, cue.Value{}, &UnknownProfileError{Name: name, Available: names}
	}
	if err != nil {
		return nil, cue.Value{}, fmt.Errorf("read profile %s: %w", c.prefix+file, err)
	}
	return c.resolve(name, c.prefix+file, src, sets)
}

// resolve applies the overrides to the file, unifies it with #Profile,
// checks it completely and decodes it. Every problem is collected, not just
// the first: the schema's, the unknown fields', and the rules across fields,
// each whatever the others found.
func (c *Catalog) resolve(name, path string, src []byte, sets []Override) (*Profile, cue.Value, error) {
	f, err := parser.ParseFile(path, src)
	if err != nil {
		return nil, cue.Value{}, syntaxError(err)
	}
	if len(sets) > 0 {
		if probs := applyOverrides(f, sets); len(probs) > 0 {
			return nil, cue.Value{}, &ProfileError{Problems: probs}
		}
		reresolve(f)
	}
	v := c.ctx.BuildFile(f)
	// An error of the file alone (two values for one field, a reference
	// to nothing) is reported with the rest, not instead of it.
	errs := rawErrors(v.Err(), nil)
	ch := &checker{file: path, name: name, schema: c.schema, def: c.def, user: v,
		unified: c.def.Unify(v), fields: map[string]fieldPos{}, flags: map[string]int{}}
	for i, o := range sets {
		ch.flags[o.source()] = i
	}
	ch.index(f.Decls, "")
	ch.unknownFields(f.Decls, "", c.def)
	ch.crossCheck()
	if probs := ch.finish(append(errs, ch.schemaErrors()...)); len(probs) > 0 {
		return nil, ch.unified, &ProfileError{Problems: probs}
	}
	p, err := decodeProfile(ch.unified)
	if err != nil {
		return nil, ch.unified, &ProfileError{Problems: []Problem{{File: path, Msg: err.Error()}}}
	}
	p.Source = path
	for _, o := range sets {
		p.Overrides = append(p.Overrides, o.String())
	}
	if msgs := p.loadTraces(c.fsys, c.prefix); len(msgs) > 0 {
		var probs []Problem
		for _, m := range msgs {
			probs = append(probs, problemAt(ch.posOf("patterns"), "patterns", m))
		}
		return nil, ch.unified, &ProfileError{Problems: probs}
	}
	return p, ch.unified, nil
}

// reresolve binds every identifier again after overrides replaced fields:
// the parser bound `clients` in `test_spawn_ai_count: clients * 10` to the
// declaration the override removed, and must bind it to the override.
func reresolve(f *ast.File) {
	ast.Walk(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			id.Node, id.Scope = nil, nil
		}
		return true
	}, nil)
	f.Unresolved = nil
	astutil.Resolve(f, func(token.Pos, string, ...any) {})
}

// decodeProfile decodes a valid unified profile, keeping the optional
// [world] knobs the struct does not name.
func decodeProfile(u cue.Value) (*Profile, error) {
	var p Profile
	if err := u.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	var extra struct {
		World map[string]any `json:"world"`
	}
	if err := u.Decode(&extra); err != nil {
		return nil, fmt.Errorf("decode profile world: %w", err)
	}
	p.World.Extra = extra.World
	for _, k := range []string{"overrun_governor", "sim_worker_threads", "test_spawn_ai_count"} {
		delete(p.World.Extra, k)
	}
	if len(p.Impairment) > 0 {
		norm, err := p.Impairment.Normalize()
		if err != nil {
			return nil, fmt.Errorf("impairment: %w", err)
		}
		p.Impairment = norm
	}
	return &p, nil
}

// syntaxError turns a CUE parse or build error into problems at their
// positions.
func syntaxError(err error) *ProfileError {
	var probs []Problem
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		probs = append(probs, problemAt(e.Position(), "", fmt.Sprintf(format, args...)))
	}
	if len(probs) == 0 {
		probs = append(probs, Problem{File: "(no position)", Msg: err.Error()})
	}
	return &ProfileError{Problems: probs}
}

func sortedGateNames(g Gates) []string {
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Canonical renders the resolved profile as JSON (stable key order), the
// form hashed into metadata.json and printed by `profiles show`.
func (p *Profile) Canonical() ([]byte, error) {
	var buf bytes.Buffer
	enc := jsonEncoder(&buf)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc
}

// MarshalJSON merges the optional knobs back into the [world] table.
func (w World) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range w.Extra {
		m[k] = v
	}
	m["overrun_governor"] = w.OverrunGovernor
	m["sim_worker_threads"] = w.SimWorkerThreads
	m["test_spawn_ai_count"] = w.TestSpawnAICount
	return json.Marshal(m)
}
