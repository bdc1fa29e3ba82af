package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/load/swarm/hold"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// checker collects every problem of one profile. It looks at the user's
// input alone (what they wrote, with positions), at the input unified with
// #Profile (what it means, defaults filled), and at the schema, so that
// each mistake is reported once, in the user's terms, at the user's file —
// and so that no check is skipped because another one failed.
type checker struct {
	file    string    // the profile's path as shown ("profiles/pr.cue")
	name    string    // the profile name the file name implies
	schema  cue.Value // the schema package (#Builtin, #Custom)
	def     cue.Value // #Profile
	user    cue.Value // the file with overrides, without the schema
	unified cue.Value // user & #Profile
	fields  map[string]fieldPos
	flags   map[string]int // "--set PATH=VALUE" → its place on the command line

	problems []Problem
	// owned are field paths a problem of the checker's own covers: CUE's
	// errors at or under them are the same mistake said worse.
	owned []string
}

// fieldPos is where the user's input declares a field.
type fieldPos struct{ label, value token.Pos }

// index records every field declaration of the syntax tree by path.
func (c *checker) index(decls []ast.Decl, prefix string) {
	for _, d := range decls {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		path := joinPath(prefix, fieldName(f))
		if _, seen := c.fields[path]; !seen {
			c.fields[path] = fieldPos{label: f.Label.Pos(), value: f.Value.Pos()}
		}
		if s, ok := f.Value.(*ast.StructLit); ok {
			c.index(s.Elts, path)
		}
	}
}

func joinPath(prefix, label string) string {
	if prefix == "" {
		return label
	}
	return prefix + "." + label
}

// posOf places a field: its value's position, else its label's, else the
// nearest declared parent's, else the file's first line (a field the user
// left out belongs to the file, not to the schema that requires it).
func (c *checker) posOf(path string) token.Pos {
	for p := path; p != ""; p = parentPath(p) {
		if fp, ok := c.fields[p]; ok {
			if p == path && fp.value.IsValid() {
				return fp.value
			}
			if fp.label.IsValid() {
				return fp.label
			}
		}
	}
	return token.NewFile(c.file, -1, 1).Pos(0, token.NoRelPos)
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// at reports a problem of the checker's own at a field, beside whatever
// CUE says about that field.
func (c *checker) at(path, format string, args ...any) {
	c.problems = append(c.problems, problemAt(c.posOf(path), path, fmt.Sprintf(format, args...)))
}

// instead reports a problem that says better what CUE says at the field
// (or under it): CUE's errors there are dropped.
func (c *checker) instead(path, format string, args ...any) {
	c.insteadAt(c.posOf(path), path, format, args...)
}

func (c *checker) insteadAt(pos token.Pos, path, format string, args ...any) {
	c.problems = append(c.problems, problemAt(pos, path, fmt.Sprintf(format, args...)))
	c.owned = append(c.owned, path)
}

func (c *checker) isOwned(path string) bool {
	for _, o := range c.owned {
		if path == o || strings.HasPrefix(path, o+".") {
			return true
		}
	}
	return false
}

// serverBranch is the #Server alternative the user's server.kind selects
// (absent means builtin, the default), or false for a kind that is neither.
// #Server is a disjunction: unified whole, a custom server's mistake comes
// back as "conflicting values builtin and custom" from the branch the user
// never meant. Checking the chosen branch alone says what is wrong.
func (c *checker) serverBranch() (cue.Value, bool) {
	kind := "builtin"
	if k := c.user.LookupPath(cue.ParsePath("server.kind")); k.Exists() {
		s, err := k.String()
		if err != nil {
			return cue.Value{}, false
		}
		kind = s
	}
	switch kind {
	case "builtin":
		return c.schema.LookupPath(cue.ParsePath("#Builtin")), true
	case "custom":
		return c.schema.LookupPath(cue.ParsePath("#Custom")), true
	}
	return cue.Value{}, false
}

// schemaAt is the schema's constraint for a field path, following the
// user's server branch; an invalid value when the schema has no such field.
func (c *checker) schemaAt(path string) cue.Value {
	v := c.def
	for i, label := range strings.Split(path, ".") {
		if i == 0 && label == "server" {
			b, ok := c.serverBranch()
			if !ok {
				return cue.Value{}
			}
			v = b
			continue
		}
		v = v.LookupPath(cue.MakePath(cue.Str(label).Optional()))
		if !v.Exists() {
			return cue.Value{}
		}
	}
	return v
}

// schemaErrors validates the profile against #Profile, the server against
// its own branch, and returns CUE's errors.
func (c *checker) schemaErrors() []cueError {
	var out []cueError
	serverSeparately := false
	if srv := c.user.LookupPath(cue.ParsePath("server")); srv.Exists() {
		if b, ok := c.serverBranch(); ok {
			serverSeparately = true
			out = append(out, validateEach(b.Unify(srv), []string{"server"})...)
		}
	}
	for _, e := range validateEach(c.unified, nil) {
		if serverSeparately && (e.path == "server" || strings.HasPrefix(e.path, "server.")) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// validateEach validates v whole and then every field on its own, down to
// the leaves. The whole alone drops errors: once any field has a real
// error, CUE leaves out the "incomplete value" of a required field missing
// elsewhere, so the user would fix one mistake only to meet the next. The
// same error found twice is one line (the translator groups by field).
func validateEach(v cue.Value, prefix []string) []cueError {
	out := rawErrors(v.Validate(cue.Concrete(true), cue.All()), prefix)
	return append(out, validateFields(v, prefix)...)
}

func validateFields(v cue.Value, prefix []string) []cueError {
	it, err := v.Fields()
	if err != nil { // not a struct: a leaf
		return rawErrors(v.Validate(cue.Concrete(true), cue.All()), prefix)
	}
	var out []cueError
	for it.Next() {
		out = append(out, validateFields(it.Value(), prefix)...)
	}
	return out
}

// unknownFields reports every field the schema does not have, at its label,
// with the nearest real name. CUE reports these too, but not when the same
// struct holds another error — and a misspelt field is exactly the mistake
// that must never be dropped.
func (c *checker) unknownFields(decls []ast.Decl, prefix string, schema cue.Value) {
	allowed := schemaFields(schema)
	for _, d := range decls {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		label := fieldName(f)
		path := joinPath(prefix, label)
		sub, known := allowed[label]
		if !known {
			if !schema.Allows(cue.Str(label)) {
				c.insteadAt(f.Label.Pos(), path, "field not allowed%s", suggest(label, allowed, c.structName(prefix)))
			}
			continue // an open struct (server.config) is the user's own
		}
		s, isStruct := f.Value.(*ast.StructLit)
		if !isStruct {
			continue
		}
		if path == "server" {
			if sub, ok = c.serverBranch(); !ok {
				continue
			}
		}
		c.unknownFields(s.Elts, path, sub)
	}
}

// structName names a struct of the profile for "… has: a, b" hints; the
// server's fields depend on its kind, so the kind is named too.
func (c *checker) structName(prefix string) string {
	switch prefix {
	case "":
		return "a profile"
	case "server":
		if k, ok := c.concrete("server.kind"); ok {
			if s, err := k.String(); err == nil {
				return fmt.Sprintf("a %q server", s)
			}
		}
		return `a "builtin" server`
	}
	return prefix
}

// schemaFields maps a schema struct's field names (optional ones too) to
// their constraints.
func schemaFields(v cue.Value) map[string]cue.Value {
	out := map[string]cue.Value{}
	it, err := v.Fields(cue.Optional(true))
	if err != nil {
		return out
	}
	for it.Next() {
		out[it.Selector().Unquoted()] = it.Value()
	}
	return out
}

// suggest names the closest real field, or lists a small struct's fields.
func suggest(label string, allowed map[string]cue.Value, where string) string {
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		names = append(names, n)
	}
	sort.Strings(names)
	best := gatetable.Nearest(label, names)
	switch {
	case best != "":
		return " (did you mean " + best + "?)"
	case len(names) > 0 && len(names) <= 16:
		return " (" + where + " has: " + strings.Join(names, ", ") + ")"
	}
	return ""
}

// concrete is the value at path if it is concrete and error-free: the
// user's own value first (so a field the schema rejects is still seen as
// written), else the unified one (defaults filled).
func (c *checker) concrete(path string) (cue.Value, bool) {
	p := fieldPath(path)
	for _, v := range []cue.Value{c.user.LookupPath(p), c.unified.LookupPath(p)} {
		if v.Exists() && v.Err() == nil && v.IsConcrete() {
			return v, true
		}
	}
	return cue.Value{}, false
}

// valid is the unified value at path when the schema accepts it: a rule
// across fields runs only on fields that are individually right, so one
// mistake is not reported twice.
func (c *checker) valid(path string) (cue.Value, bool) {
	v := c.unified.LookupPath(fieldPath(path))
	if !v.Exists() || v.Validate(cue.Concrete(true)) != nil {
		return cue.Value{}, false
	}
	return v, true
}

func (c *checker) has(path string) bool { return c.user.LookupPath(fieldPath(path)).Exists() }

// crossCheck enforces the rules the schema cannot state (or states in words
// nobody would recognise). Each rule runs whatever else is wrong.
func (c *checker) crossCheck() {
	if v, ok := c.concrete("name"); ok {
		if s, err := v.String(); err == nil && s != c.name {
			c.at("name", "is %q but the file is %s.cue: they must match", s, c.name)
		}
	}
	c.checkPatterns()
	c.checkTransports()
	c.checkSweep()
	c.checkRamp()
	c.checkWarmup()
	c.checkShards()
	c.checkCommand()
	c.checkImpairment()
	c.checkGatePhases()
	c.checkMetrics()
	c.checkRSSInterval()
	c.checkOwnFigures()
	c.checkAbort()
}

// checkImpairment applies the relay's own schedule rules (phases in order,
// not overlapping, each impairing something, names unique) and requires
// the first phase to start inside the run.
func (c *checker) checkImpairment() {
	v, ok := c.valid("impairment")
	if !ok {
		return
	}
	var s impairment.Schedule
	if v.Decode(&s) != nil || len(s) == 0 {
		return
	}
	norm, err := s.Normalize()
	if err != nil {
		c.at("impairment", "%v", err)
		return
	}
	if dv, ok := c.valid("duration_s"); ok {
		if d, err := dv.Float64(); err == nil && norm[0].StartS >= d {
			c.at("impairment", "the first phase starts at %gs, at or after the run ends (duration_s %g): it would impair nothing", norm[0].StartS, d)
		}
	}
	if tv, ok := c.concrete("transport"); ok {
		name, _ := tv.String()
		// Only a transport this build knows can be judged; the swarm
		// refuses an unimpairable one at run time as well.
		if _, known := transport.CapabilitiesOf(name); known == nil {
			if err := transport.CheckImpairable(name); err != nil {
				c.at("impairment", "%v", err)
			}
		}
	}
}

// checkGatePhases: a gate's phase must name a stretch of the run, which
// needs an impairment; so does recover_s_max.
func (c *checker) checkGatePhases() {
	var sched impairment.Schedule
	if c.has("impairment") {
		v, ok := c.valid("impairment")
		if !ok || v.Decode(&sched) != nil {
			return // the impairment itself is wrong: reported there
		}
		var err error
		if sched, err = sched.Normalize(); err != nil {
			return
		}
	}
	gv, ok := c.valid("gates")
	var gates profile.Gates
	if !ok || gv.Decode(&gates) != nil {
		return
	}
	names := sched.StretchNames()
	stretches := map[string]bool{}
	for _, n := range names {
		stretches[n] = true
	}
	for _, name := range sortedGateNames(gates) {
		ph := gates[name].Phase
		switch {
		case ph == "":
		case len(sched) == 0:
			c.at("gates."+name+".phase", "%q: the profile declares no impairment, so the run has no phases", ph)
		case !stretches[ph]:
			c.at("gates."+name+".phase", "%q is not a stretch of this profile's run (%s)", ph, strings.Join(names, ", "))
		}
	}
	if gates.Has(gatetable.RecoverSGate) && len(sched) == 0 {
		c.at("gates."+gatetable.RecoverSGate, "needs an impairment: recovery is measured from the end of the last phase")
	}
}

func (c *checker) checkPatterns() {
	pats, mix := c.has("patterns"), c.has("pattern_mix")
	switch {
	case !pats && !mix:
		c.at("patterns", "the profile declares neither patterns nor pattern_mix: exactly one is required")
	case pats && mix:
		c.at("pattern_mix", "the profile declares both patterns and pattern_mix: exactly one is allowed")
	}
	var list []string
	if v, ok := c.concrete("patterns"); ok && v.Decode(&list) == nil {
		seen := map[string]bool{}
		for _, p := range list {
			if seen[p] {
				c.at("patterns", "pattern %q listed twice (one leg per pattern)", p)
			}
			seen[p] = true
		}
	}
	c.checkPatternNames()
}

// checkPatternNames names the choices for a pattern that is neither built
// in nor "trace:PATH": CUE would report only the trace alternative's regular
// expression.
func (c *checker) checkPatternNames() {
	builtin := schemaStrings(c.schema.LookupPath(cue.ParsePath("#Pattern")))
	list := c.user.LookupPath(cue.ParsePath("patterns"))
	it, err := list.List()
	if err != nil {
		return
	}
	for i := 0; it.Next(); i++ {
		s, err := it.Value().String()
		if err != nil || strings.HasPrefix(s, profile.TracePrefix) || slices.Contains(builtin, strconv.Quote(s)) {
			continue
		}
		path, pos := fmt.Sprintf("patterns.%d", i), it.Value().Pos()
		if !pos.IsValid() {
			pos = c.posOf(path)
		}
		c.insteadAt(pos, path, "%q is not one of %s, or \"trace:PATH\" (a recording relative to the profile directory)", s, strings.Join(builtin, ", "))
	}
}

// schemaStrings lists the quoted string alternatives of a disjunction.
func schemaStrings(v cue.Value) []string {
	op, args := v.Expr()
	if op != cue.OrOp {
		return nil
	}
	var out []string
	for _, a := range args {
		if s, err := a.String(); err == nil {
			out = append(out, strconv.Quote(s))
		}
	}
	return out
}

// checkTransports: exactly one of transport and transports, no transport
// twice, and the cross-transport gate only where both legs exist. A
// profile with transports compares, it never baselines (the schema's own
// rule says only "conflicting values").
func (c *checker) checkTransports() {
	one, many := c.has("transport"), c.has("transports")
	switch {
	case !one && !many:
		c.at("transport", `the profile declares neither transport nor transports: exactly one is required (transport: "enet", or transports: ["enet", "quic"] to run every leg on each)`)
	case one && many:
		c.at("transports", "the profile declares both transport and transports: exactly one is allowed (transports runs every leg on each of its transports; transport pins one)")
	}
	var list []string
	if v, ok := c.concrete("transports"); ok && v.Decode(&list) == nil {
		seen := map[string]bool{}
		for _, t := range list {
			if seen[t] {
				c.at("transports", "transport %q listed twice (one leg per transport)", t)
			}
			seen[t] = true
		}
		if many && c.has("baselined") {
			if v, ok := c.concrete("baselined"); ok {
				if b, err := v.Bool(); err == nil && b {
					c.instead("baselined", "must be false in a profile with transports: it compares transports, it never baselines")
				}
			}
		}
	}
	if c.has("gates.transport_overhead_kbs_max") && !(slices.Contains(list, "enet") && slices.Contains(list, "quic")) {
		c.at("gates.transport_overhead_kbs_max", `needs transports: ["enet", "quic"]: it compares the wire bytes of the two legs of each load`)
	}
	if c.has("server.faults.only_on_transport") && !many {
		c.at("server.faults.only_on_transport", "needs transports: with one transport the faults apply to every leg or none")
	}
}

// checkSweep: a sweep needs points, and is a characterisation, never a
// baseline (the schema's own rule says only "conflicting values").
func (c *checker) checkSweep() {
	if !c.has("sweep") {
		return
	}
	var s profile.Sweep
	if v, ok := c.concrete("sweep"); ok && v.Decode(&s) == nil && len(s.Clients)+len(s.EntityCounts)+len(s.SimWorkerThreads)+len(s.SnapshotBudgetBytes) == 0 {
		c.at("sweep", "needs at least one axis: clients, entity_counts, sim_worker_threads or snapshot_budget_bytes")
	}
	if v, ok := c.concrete("baselined"); ok {
		if b, err := v.Bool(); err == nil && b {
			c.instead("baselined", "must be false in a profile with a sweep: a sweep is a characterisation, never a baseline")
		}
	}
}

// checkShards: every shard of every leg needs at least one client (the
// swarm refuses more shards than clients).
func (c *checker) checkShards() {
	sv, ok := c.valid("shards")
	if !ok {
		return
	}
	shards, _ := sv.Int64()
	if shards <= 1 {
		return
	}
	what, counts := "clients", []int{}
	if v, ok := c.valid("sweep.clients"); ok && v.Decode(&counts) == nil && len(counts) > 0 {
		what = "sweep.clients"
	} else if v, ok := c.valid("clients"); ok {
		n, _ := v.Int64()
		counts = []int{int(n)}
	}
	if len(counts) > 0 && int64(slices.Min(counts)) < shards {
		c.at("shards", "is %d but %s goes down to %d: every shard needs at least one client", shards, what, slices.Min(counts))
	}
}

// checkRamp applies the swarm's own rule: the last client must connect
// before the run ends, or the swarm refuses to start at launch. A client
// sweep runs its own counts instead of clients, so each is checked.
func (c *checker) checkRamp() {
	rv, ok1 := c.valid("ramp_ms")
	dv, ok2 := c.valid("duration_s")
	if !ok1 || !ok2 {
		return
	}
	ramp, _ := rv.Int64()
	dur, _ := dv.Float64()
	rampD, durD := time.Duration(ramp)*time.Millisecond, time.Duration(dur*float64(time.Second))
	path, counts := "clients", []int{}
	if sv, ok := c.valid("sweep.clients"); ok && sv.Decode(&counts) == nil && len(counts) > 0 {
		path = "sweep.clients"
	} else if cv, ok := c.valid("clients"); ok {
		n, _ := cv.Int64()
		counts = []int{int(n)}
	}
	worst := 0
	for _, n := range counts {
		if !hold.RampFits(n, rampD, durD) && n > worst {
			worst = n
		}
	}
	if worst == 0 {
		return
	}
	if path == "clients" {
		path = c.rampBlame()
	}
	c.at(path, "the connect ramp does not fit duration_s: %d clients %d ms apart connect the last at %s, not before the %s run ends; lower clients or ramp_ms, or raise duration_s",
		worst, ramp, time.Duration(worst-1)*rampD, durD)
}

// checkWarmup applies the swarm's own rule (hold.WarmupFits): the
// warm-up must leave at least report.MinDeliveryWindowS of the hold (the
// duration after the last connect slot) to measure, for every leg's
// client count.
func (c *checker) checkWarmup() {
	wv, ok := c.valid("warmup_s")
	rv, ok1 := c.valid("ramp_ms")
	dv, ok2 := c.valid("duration_s")
	if !ok || !ok1 || !ok2 {
		return
	}
	warm, _ := wv.Float64()
	ramp, _ := rv.Int64()
	dur, _ := dv.Float64()
	rampD, durD, warmD := time.Duration(ramp)*time.Millisecond, time.Duration(dur*float64(time.Second)), time.Duration(warm*float64(time.Second))
	counts := []int{}
	if sv, ok := c.valid("sweep.clients"); !ok || sv.Decode(&counts) != nil || len(counts) == 0 {
		if cv, ok := c.valid("clients"); ok {
			n, _ := cv.Int64()
			counts = []int{int(n)}
		}
	}
	for _, n := range counts {
		if !hold.RampFits(n, rampD, durD) {
			return // the ramp itself does not fit: reported there
		}
		if !hold.WarmupFits(n, rampD, warmD, durD) {
			hold := durD - time.Duration(max(n-1, 0))*rampD
			c.at("warmup_s", "%gs leaves under %gs of the %s hold (duration_s after the last of %d clients' connect slots) to measure; lower warmup_s or raise duration_s",
				warm, report.MinDeliveryWindowS, hold, n)
			return
		}
	}
}

// rampBlame picks the field to report a ramp that does not fit at: one a
// --set changed, else ramp_ms when the file sets it, else clients.
func (c *checker) rampBlame() string {
	for _, p := range []string{"ramp_ms", "clients", "duration_s"} {
		if fp, ok := c.fields[p]; ok && strings.HasPrefix(fp.value.Filename(), "--set ") {
			return p
		}
	}
	if c.has("ramp_ms") {
		return "ramp_ms"
	}
	return "clients"
}

// checkCommand: a custom server's command must name a program.
func (c *checker) checkCommand() {
	v, ok := c.concrete("server.kind")
	if !ok {
		return
	}
	if kind, _ := v.String(); kind != "custom" {
		return
	}
	cmd, ok := c.concrete("server.command")
	if !ok {
		return // missing or not a list: the schema says so
	}
	var args []any
	if cmd.Decode(&args) != nil {
		return
	}
	if len(args) == 0 {
		c.instead("server.command", `is empty: give the program to run and its arguments, e.g. ["./bin/my-server", "--port", "{port}"]`)
		return
	}
	if s, ok := args[0].(string); ok && strings.TrimSpace(s) == "" {
		c.instead("server.command", "the first element is empty: it must be the program to run")
	}
}

// finish translates CUE's errors the checker's own problems do not cover
// and returns everything in input order.
func (c *checker) finish(errs []cueError) []Problem {
	var rest []cueError
	for _, e := range errs {
		if !c.isOwned(e.path) {
			rest = append(rest, e)
		}
	}
	t := &translator{file: c.file, user: c.user, schema: c.schemaAt, pos: c.posOf}
	out := append(c.problems, t.translate(rest)...)
	for i := range out {
		out[i].seq = c.flags[out[i].File]
	}
	sortProblems(out)
	return out
}
