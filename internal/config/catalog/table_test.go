package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

func schemaDef(t *testing.T, name string) cue.Value {
	t.Helper()
	sch, err := compileSchema(cuecontext.New())
	if err != nil {
		t.Fatal(err)
	}
	v := sch.LookupPath(cue.ParsePath(name))
	if !v.Exists() {
		t.Fatalf("schema has no %s", name)
	}
	return v
}

// The CUE #Gates fields and the gate table must name the same gates, and a
// field takes a threshold exactly when its table entry is a threshold gate.
// A gate added to one and not the other fails here.
func TestSchemaGatesMatchTable(t *testing.T) {
	it, err := schemaDef(t, "#Gates").Fields(cue.Optional(true))
	if err != nil {
		t.Fatal(err)
	}
	var schemaNames []string
	for it.Next() {
		name := it.Selector().Unquoted()
		if _, shorthand := gatetable.Budgets()[name]; shorthand {
			continue
		}
		schemaNames = append(schemaNames, name)
		g, ok := gatetable.Lookup(name)
		if !ok {
			t.Errorf("schema #Gates.%s has no entry in the gate table", name)
			continue
		}
		hasThreshold := it.Value().LookupPath(cue.ParsePath("threshold")).Exists()
		if hasThreshold != (g.Kind == gatetable.Threshold) {
			t.Errorf("#Gates.%s: schema threshold field %v, table kind threshold %v", name, hasThreshold, g.Kind == gatetable.Threshold)
		}
	}
	var tableNames []string
	for _, g := range gatetable.All() {
		tableNames = append(tableNames, g.Name)
	}
	sort.Strings(schemaNames)
	sort.Strings(tableNames)
	if !slices.Equal(schemaNames, tableNames) {
		t.Errorf("schema #Gates %v\n  gate table %v", schemaNames, tableNames)
	}
}

// Every literal alternative of the CUE #Pattern is a swarm pattern and
// every swarm pattern is allowed by #Pattern.
func TestSchemaPatternsMatchSwarm(t *testing.T) {
	op, alts := schemaDef(t, "#Pattern").Expr()
	if op != cue.OrOp {
		t.Fatalf("#Pattern is not a disjunction (%v)", op)
	}
	var literal []string
	for _, a := range alts {
		if s, err := a.String(); err == nil {
			literal = append(literal, s)
		}
	}
	sort.Strings(literal)
	reg := swarm.PatternNames()
	sort.Strings(reg)
	if !slices.Equal(literal, reg) {
		t.Errorf("schema #Pattern %v\n  swarm registry %v", literal, reg)
	}
}

// The table itself is well formed: unique names and flags, a measure or a
// judge for every entry, titles present, flags spelled as swarm flags.
func TestTableWellFormed(t *testing.T) {
	names, flags := map[string]bool{}, map[string]bool{}
	for _, g := range gatetable.All() {
		if names[g.Name] {
			t.Errorf("gate %s declared twice", g.Name)
		}
		names[g.Name] = true
		if g.Title == "" || g.Metric == "" {
			t.Errorf("gate %s: title and metric are required", g.Name)
		}
		if (g.Measure == nil) == (g.Judge == nil) {
			t.Errorf("gate %s: exactly one of Measure and Judge", g.Name)
		}
		for _, f := range append([]string{g.Flag}, g.Aliases...) {
			if f == "" {
				continue
			}
			if !strings.HasPrefix(f, "assert-") || flags[f] {
				t.Errorf("gate %s: flag %q is not a unique assert-* name", g.Name, f)
			}
			flags[f] = true
		}
	}
}

// The profile schema bounds clients (and every client sweep point) at the
// project's one client cap, proto.MaxClients: the cap the server, the ENet
// host and the runner's max_peers use.
func TestSchemaClientCapIsMaxClients(t *testing.T) {
	ctx := cuecontext.New()
	def := schemaDef(t, "#Profile")
	for _, form := range []string{"clients: %d", "sweep: clients: [%d]"} {
		at := func(n int) error {
			return def.Unify(ctx.CompileString(fmt.Sprintf(form, n))).Validate()
		}
		if err := at(proto.MaxClients); err != nil {
			t.Errorf("%q rejects proto.MaxClients %d: %v", form, proto.MaxClients, err)
		}
		if err := at(proto.MaxClients + 1); err == nil {
			t.Errorf("%q accepts %d, above proto.MaxClients", form, proto.MaxClients+1)
		}
	}
}

// The report schema's schema_version bound is the report package's own:
// a report of a newer schema is refused by both the parser and the schema.
func TestSchemaReportVersionIsTheReaders(t *testing.T) {
	ctx := cuecontext.New()
	def := schemaDef(t, "#Report").LookupPath(cue.ParsePath("schema_version"))
	at := func(v int) error { return def.Unify(ctx.CompileString(fmt.Sprint(v))).Validate() }
	if err := at(report.ReportSchemaVersion); err != nil {
		t.Errorf("#Report refuses schema_version %d, the current one: %v", report.ReportSchemaVersion, err)
	}
	if err := at(report.ReportSchemaVersion + 1); err == nil {
		t.Errorf("#Report accepts schema_version %d, above the reader's", report.ReportSchemaVersion+1)
	}
}

// The schema's delivery defaults are the gate's (gatetable's constants,
// which the swarm's flags default to): a profile that leaves the block out
// is judged by the same policy on both sides.
func TestSchemaDeliveryDefaultsMatchGatetable(t *testing.T) {
	d := schemaDef(t, "#Profile").LookupPath(cue.ParsePath("delivery"))
	for _, f := range []struct {
		path string
		want float64
	}{{"min_rate_fraction", gatetable.DefaultMinRateFraction}, {"max_gap_ms", gatetable.DefaultMaxGapMs}} {
		v, ok := d.LookupPath(cue.ParsePath(f.path)).Default()
		if !ok {
			t.Errorf("#Profile.delivery.%s has no default", f.path)
			continue
		}
		got, err := v.Float64()
		if err != nil || got != f.want {
			t.Errorf("#Profile.delivery.%s default %v (%v), gatetable %v", f.path, got, err, f.want)
		}
	}
}

// A percentile budget's shorthand declares one gate per statistic it gives,
// at its level, and is not a gate itself; declaring a statistic twice with
// two thresholds is refused, naming both.
func TestBudgetShorthand(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "budget", goodAs("budget")+"gates: tick_ms: {p95: 16.6, p99: 33, max: 100}\n"+
		"gates: state_interval_ms: {p99: 40, level: \"advisory\"}\n")
	writeProfile(t, dir, "clash", goodAs("clash")+"gates: tick_ms: {p99: 33}\ngates: tick_ms_p99_max: threshold: 20\n")
	c, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := c.Load("budget")
	if err != nil {
		t.Fatal(FormatError(err))
	}
	want := map[string]struct {
		thr   float64
		level gatetable.Level
	}{"tick_ms_p95_max": {16.6, ""}, "tick_ms_p99_max": {33, ""}, "tick_ms_max_max": {100, ""}, // unset: the tier rule
		"state_interval_ms_p99_max": {40, "advisory"}}
	for name, w := range want {
		g, ok := p.Gates[name]
		if !ok || g.Threshold == nil || *g.Threshold != w.thr || g.Level != w.level {
			t.Errorf("gate %s: %+v, want threshold %v level %s", name, g, w.thr, w.level)
		}
	}
	for _, name := range []string{"tick_ms", "state_interval_ms", "tick_ms_p50_max", "state_interval_ms_p50_max"} {
		if p.Gates.Has(name) {
			t.Errorf("gates has %s", name)
		}
	}
	if _, _, err := c.Load("clash"); err == nil || !strings.Contains(FormatError(err), "gates.tick_ms_p99_max.threshold: must be 33, not 20") {
		t.Errorf("p99 given twice: %v, want a conflict", err)
	}
}
