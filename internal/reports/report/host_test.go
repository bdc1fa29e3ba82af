package report

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"

	"github.com/scalegate/scalegate/schema"
)

// schemaDef compiles schema/*.cue and returns definition def.
func schemaDef(t *testing.T, def string) cue.Value {
	t.Helper()
	names, err := fs.Glob(schema.FS, "*.cue")
	if err != nil {
		t.Fatal(err)
	}
	inst := build.NewContext().NewInstance("schema", nil)
	for _, n := range names {
		src, err := fs.ReadFile(schema.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile("schema/"+n, src)
		if err != nil {
			t.Fatal(err)
		}
		if err := inst.AddSyntax(f); err != nil {
			t.Fatal(err)
		}
	}
	v := cuecontext.New().BuildInstance(inst)
	if err := v.Err(); err != nil {
		t.Fatal(err)
	}
	d := v.LookupPath(cue.ParsePath(def))
	if !d.Exists() {
		t.Fatalf("schema has no %s", def)
	}
	return d
}

func validate(d cue.Value, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return d.Unify(cuecontext.New().CompileBytes(b)).Validate(cue.Concrete(true), cue.All())
}

func fp(v float64) *float64 { return &v }

// TestHostSchema: the blocks Host and TimelinePoint encode match schema/report.cue's #Report,
// with figures measured and with figures missing (null, reason in missing), and the schema
// refuses what the type cannot mean.
func TestHostSchema(t *testing.T) {
	d := schemaDef(t, "#Report")
	measured := &Host{OtherCores: &MeanMax{Mean: 0.9, Max: 1.2}, StealPct: &MeanMax{Mean: 0.5, Max: 2},
		CPUPressureAvg10: &MeanMax{Mean: 40, Max: 80}, OwnCores: &MeanMax{Mean: 1.1, Max: 1.4}, CPUs: 2,
		HoldFromS: 2, HoldToS: 62, HoldSamples: 60,
		Series: []HostPoint{{TS: 1, OtherCores: fp(0.9), StealPct: fp(0), CPUPressureAvg10: fp(12.5), OwnCores: fp(1)}}}
	missing := &Host{CPUs: 0, HoldFromS: 0, HoldToS: 10, HoldSamples: 10,
		Missing: map[string]string{HostOtherCores: "no /proc/stat", HostOwnCores: "no /proc/stat",
			HostStealPct: "no /proc/stat", HostCPUPressureAvg10: "no /proc/pressure/cpu"},
		Series: []HostPoint{{TS: 1}}}
	rep := func(h *Host, tl ...TimelinePoint) map[string]any {
		b, _ := json.Marshal(Report{SchemaVersion: ReportSchemaVersion, Transport: "enet", Clients: 1, Host: h, Timeline: tl})
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	ok := []struct {
		name string
		rep  map[string]any
	}{
		{"measured", rep(measured, TimelinePoint{TS: 1, HostOtherCores: fp(0.9), HostStealPct: fp(0), HostCPUPressureAvg10: fp(12.5)})},
		{"missing", rep(missing, TimelinePoint{TS: 1})},
		{"no host block", rep(nil)},
	}
	for _, c := range ok {
		if err := validate(d, c.rep); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if b, _ := json.Marshal(missing); !strings.Contains(string(b), `"other_cores":null`) {
		t.Errorf("a missing figure must encode as null: %s", b)
	}
	bad := []struct {
		name string
		edit func(h map[string]any)
	}{
		{"negative others", func(h map[string]any) { h["other_cores"] = map[string]any{"mean": -0.1, "max": 0} }},
		{"steal over 100", func(h map[string]any) { h["steal_pct"] = map[string]any{"mean": 101, "max": 101} }},
		{"others absent", func(h map[string]any) { delete(h, "other_cores") }},
		{"unknown figure missing", func(h map[string]any) { h["missing"] = map[string]any{"load": "x"} }},
		{"empty reason", func(h map[string]any) { h["missing"] = map[string]any{"steal_pct": ""} }},
		{"pressure over 100 in a second", func(h map[string]any) {
			h["series"] = []any{map[string]any{"t_s": 1, "other_cores": 0, "steal_pct": 0, "cpu_pressure_avg10": 120}}
		}},
	}
	for _, c := range bad {
		m := rep(measured)
		c.edit(m["host"].(map[string]any))
		if err := validate(d, m); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
}
