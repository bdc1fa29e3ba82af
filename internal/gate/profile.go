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
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/scalegate/scalegate/profiles"
	"github.com/scalegate/scalegate/schema"
)

// Profile is a resolved profile: the CUE file unified with #Profile, every
// default filled. Field names are the CUE names.
type Profile struct {
	Name               string         `json:"name"`
	Description        string         `json:"description"`
	Tier               string         `json:"tier"`
	Transport          string         `json:"transport"`
	Clients            int            `json:"clients"`
	DurationS          float64        `json:"duration_s"`
	RateHz             float64        `json:"rate_hz"`
	RampMs             int            `json:"ramp_ms"`
	Threads            int            `json:"threads"`
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
	Impairment         *Impairment    `json:"impairment,omitempty"`
	Harness            Harness        `json:"harness"`
	Gates              Gates          `json:"gates"`

	// Source is the file the profile came from ("embedded:pr.cue" or a path).
	Source string `json:"-"`
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
}

// Sweep multiplies legs by client count × entity count × sim worker
// threads; an absent axis keeps the profile's single value.
type Sweep struct {
	Clients          []int `json:"clients,omitempty"`
	EntityCounts     []int `json:"entity_counts,omitempty"`
	SimWorkerThreads []int `json:"sim_worker_threads,omitempty"`
}

// Impairment is a declared lossy-link window.
type Impairment struct {
	StartS    float64 `json:"start_s"`
	DurationS float64 `json:"duration_s"`
	Loss      float64 `json:"loss"`
	DelayMs   float64 `json:"delay_ms"`
}

// Harness bounds the swarm's own cadence.
type Harness struct {
	WorkerDtP99MaxMs float64 `json:"worker_dt_p99_max_ms"`
}

// GateSpec is one gate as a profile declares it: a threshold gate carries
// Threshold, a switch gate (admission, spawn_took) does not.
type GateSpec struct {
	Threshold *float64 `json:"threshold,omitempty"`
	Level     string   `json:"level"`
}

// Gates is what a profile requires to hold, keyed by the gate's name in
// the gate table (internal/gatetable); an absent gate is not evaluated.
type Gates map[string]GateSpec

// Has reports whether the profile declares the gate.
func (g Gates) Has(name string) bool {
	_, ok := g[name]
	return ok
}

// ProfileError is an invalid profile (or schema). Print it with Details: it
// carries every error with its file:line:col at once.
type ProfileError struct {
	Err cueerrors.Error
}

func (e *ProfileError) Error() string { return cueerrors.Details(e.Err, nil) }

// Unwrap returns the CUE error list.
func (e *ProfileError) Unwrap() error { return e.Err }

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
	c := &Catalog{ctx: ctx, def: sch.LookupPath(cue.ParsePath("#Profile")), fsys: profiles.FS, prefix: "profiles/"}
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
			return cue.Value{}, &ProfileError{Err: cueerrors.Promote(err, "schema")}
		}
		if err := inst.AddSyntax(f); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return cue.Value{}, &ProfileError{Err: cueerrors.Promote(err, "schema")}
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

// Load resolves one profile by name.
func (c *Catalog) Load(name string) (*Profile, cue.Value, error) {
	file := name + ".cue"
	src, err := fs.ReadFile(c.fsys, file)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := c.Names()
		return nil, cue.Value{}, &UnknownProfileError{Name: name, Available: names}
	}
	if err != nil {
		return nil, cue.Value{}, fmt.Errorf("read profile %s: %w", c.prefix+file, err)
	}
	return c.resolve(name, c.prefix+file, src)
}

// resolve unifies the file with #Profile, validates it completely and
// decodes it. Every error is collected, not just the first.
func (c *Catalog) resolve(name, path string, src []byte) (*Profile, cue.Value, error) {
	v := c.ctx.CompileBytes(src, cue.Filename(path))
	if err := v.Err(); err != nil {
		return nil, v, &ProfileError{Err: cueerrors.Promote(err, path)}
	}
	u := c.def.Unify(v)
	var errs cueerrors.Error
	if err := u.Validate(cue.Concrete(true), cue.All()); err != nil {
		errs = cueerrors.Append(errs, cueerrors.Promote(err, path))
		return nil, u, &ProfileError{Err: errs}
	}
	var p Profile
	if err := u.Decode(&p); err != nil {
		return nil, u, &ProfileError{Err: cueerrors.Promote(err, path)}
	}
	var extra struct {
		World map[string]any `json:"world"`
	}
	if err := u.Decode(&extra); err != nil {
		return nil, u, &ProfileError{Err: cueerrors.Promote(err, path)}
	}
	p.World.Extra = extra.World
	for _, k := range []string{"overrun_governor", "sim_worker_threads", "test_spawn_ai_count"} {
		delete(p.World.Extra, k)
	}
	p.Source = path
	for _, e := range p.crossCheck(name, u) {
		errs = cueerrors.Append(errs, e)
	}
	if errs != nil {
		return nil, u, &ProfileError{Err: errs}
	}
	return &p, u, nil
}

// crossCheck enforces the rules the schema cannot state, each error at the
// position of the offending field.
func (p *Profile) crossCheck(name string, v cue.Value) []cueerrors.Error {
	var out []cueerrors.Error
	at := func(field, format string, args ...any) {
		fv := v.LookupPath(cue.ParsePath(field))
		out = append(out, cueerrors.Newf(fv.Pos(), "%s: "+format, append([]any{field}, args...)...))
	}
	if p.Name != name {
		at("name", "is %q but the file is %s.cue: they must match", p.Name, name)
	}
	switch {
	case len(p.Patterns) == 0 && p.PatternMix == "":
		at("name", "profile declares neither patterns nor pattern_mix: exactly one is required")
	case len(p.Patterns) > 0 && p.PatternMix != "":
		at("pattern_mix", "profile declares both patterns and pattern_mix: exactly one is allowed")
	}
	seen := map[string]bool{}
	for _, pat := range p.Patterns {
		if seen[pat] {
			at("patterns", "pattern %q listed twice (one leg per pattern)", pat)
		}
		seen[pat] = true
	}
	if p.Sweep != nil && len(p.Sweep.Clients)+len(p.Sweep.EntityCounts)+len(p.Sweep.SimWorkerThreads) == 0 {
		at("sweep", "needs at least one axis: clients, entity_counts or sim_worker_threads")
	}
	if p.Server.Kind == "custom" && p.Server.Faults != nil {
		at("server.faults", "fault knobs exist only on the built-in server")
	}
	return out
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

// FormatError renders a profile error as one line per problem,
// "file:line:col: field: message", positions in the profile file first, so
// an editor can jump to it. Disjunction noise ("conflicting values "pr" and
// "nightly"", one per alternative) collapses into one "is not one of" line.
func FormatError(err error) string {
	var pe *ProfileError
	if err == nil {
		return ""
	}
	if !errors.As(err, &pe) {
		return err.Error()
	}
	type group struct {
		pos, path string
		alts      []string
		value     string
		msgs      []string
	}
	var order []string
	groups := map[string]*group{}
	for _, e := range cueerrors.Errors(pe.Err) {
		format, args := e.Msg()
		if strings.Contains(format, "errors in empty disjunction") {
			continue
		}
		path := strings.Join(e.Path(), ".")
		for _, d := range []string{"#Profile.", "#Report.", "#ServerTick."} {
			path = strings.TrimPrefix(path, d)
		}
		pos := bestPos(e)
		key := pos + "\x00" + path
		g, ok := groups[key]
		if !ok {
			g = &group{pos: pos, path: path}
			groups[key] = g
			order = append(order, key)
		}
		if format == "conflicting values %s and %s" && len(args) == 2 {
			g.alts = append(g.alts, fmt.Sprint(args[0]))
			g.value = fmt.Sprint(args[1])
			continue
		}
		g.msgs = append(g.msgs, fmt.Sprintf(format, args...))
	}
	var b strings.Builder
	for _, k := range order {
		g := groups[k]
		prefix := g.pos + ": "
		if g.path != "" {
			prefix += g.path + ": "
		}
		if len(g.alts) > 1 {
			fmt.Fprintf(&b, "%s%s is not one of %s\n", prefix, g.value, strings.Join(g.alts, ", "))
		} else if len(g.alts) == 1 {
			fmt.Fprintf(&b, "%sconflicting values %s and %s\n", prefix, g.alts[0], g.value)
		}
		for _, m := range g.msgs {
			fmt.Fprintf(&b, "%s%s\n", prefix, m)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// bestPos picks the position inside the user's file over the schema's.
func bestPos(e cueerrors.Error) string {
	ps := append([]token.Pos{e.Position()}, e.InputPositions()...)
	var first string
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		s := p.String()
		if first == "" {
			first = s
		}
		if !strings.HasPrefix(p.Filename(), "schema/") {
			return s
		}
	}
	if first == "" {
		return "(no position)"
	}
	return first
}
