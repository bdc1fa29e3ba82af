package compare

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testdata/a and testdata/b are the artifacts of two real `pr` runs on the
// same machine: a passed, b was inconclusive (the machine was busy: the
// swarm's worker dt p99 crossed its bound and the server tick p99 rose).

func load(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func row(t *testing.T, l Leg, metric string) Row {
	t.Helper()
	for _, r := range l.Rows {
		if r.Metric == metric {
			return r
		}
	}
	t.Fatalf("leg %s has no row %q", l.ID, metric)
	return Row{}
}

func TestCompareFixedRuns(t *testing.T) {
	res := Compare(load(t, "testdata/a"), load(t, "testdata/b"))
	if len(res.Legs) != 1 || res.Legs[0].ID != "weave" || res.Legs[0].Refused != "" {
		t.Fatalf("legs %+v", res.Legs)
	}
	leg := res.Legs[0]
	tests := []struct {
		metric     string
		a, b, dpct float64
	}{
		{"observed tick-Hz min", 59.1232, 58.0505, -1.81},
		{"wire KB/s per client", 70.8346, 69.5027, -1.88},
		{"server tick ms p99", 7.8074, 39.1006, 400.8},
		{"swarm worker dt p99 ms", 6.2574, 15.4552, 147},
		{"server slow ticks (since start)", 8, 98, 1125},
	}
	for _, tc := range tests {
		r := row(t, leg, tc.metric)
		if r.A == nil || r.B == nil || !near(*r.A, tc.a, 0.01) || !near(*r.B, tc.b, 0.01) {
			t.Errorf("%s: A %v B %v, want %g %g", tc.metric, r.A, r.B, tc.a, tc.b)
			continue
		}
		if d := r.Delta(); d == nil || !near(*d, tc.b-tc.a, 0.02) {
			t.Errorf("%s: delta %v, want %g", tc.metric, d, tc.b-tc.a)
		}
		if p := r.DeltaPct(); p == nil || !near(*p, tc.dpct, 1) {
			t.Errorf("%s: delta %% %v, want about %g", tc.metric, p, tc.dpct)
		}
	}
	if r := row(t, leg, "server RSS slope KB/min"); r.A != nil || r.Delta() != nil {
		t.Errorf("a slope neither run fitted must stay missing: %+v", r)
	}
	// The fixtures predate the CPU window and the other diagnostics: their
	// rows are there, missing on both sides, with no delta.
	for _, f := range []string{"server CPU % of one core, mean over the tick window", "server GC cycles (since start)", "datalink-fused contacts"} {
		if r := row(t, leg, f); r.A != nil || r.B != nil || r.Delta() != nil {
			t.Errorf("%s: a figure neither run's server wrote must stay missing: %+v", f, r)
		}
	}
	if r := row(t, leg, "leg verdict"); r.AText != "passed" || r.BText != "inconclusive" {
		t.Errorf("verdicts %q %q", r.AText, r.BText)
	}
	if r := row(t, leg, "gate tick_ms_p99_max"); !strings.HasPrefix(r.AText, "pass") || !strings.HasPrefix(r.BText, "fail") {
		t.Errorf("tick_ms_p99_max statuses %q %q", r.AText, r.BText)
	}
}

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }

// TestRefusesDifferentLoad: a leg whose load differs is named with the
// reason, never given deltas.
func TestRefusesDifferentLoad(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(sum map[string]any)
		refuse string
	}{
		{"clients", func(s map[string]any) { s["profile"].(map[string]any)["clients"] = 32 }, "different load: clients 64 vs 32"},
		{"transport", func(s map[string]any) { s["profile"].(map[string]any)["transport"] = "quic" }, "different load: transport enet vs quic"},
		{"profile", func(s map[string]any) { s["profile"].(map[string]any)["name"] = "reference-enet" }, "different load: profile pr vs reference-enet (--legs-by name compares the legs of two profiles by name)"},
		// A leg of a profile with transports carries its own transport.
		{"leg transport", func(s map[string]any) { s["profile"].(map[string]any)["transport"] = ""; leg(s)["transport"] = "quic" }, "different load: transport enet vs quic"},
		{"pattern", func(s map[string]any) { leg(s)["pattern"] = "idle" }, "different load: pattern weave vs idle"},
		{"only in A", func(s map[string]any) { leg(s)["id"] = "weave2" }, "only in run A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := editedCopy(t, "testdata/b", tc.edit)
			res := Compare(load(t, "testdata/a"), load(t, b))
			if got := res.Legs[0].Refused; got != tc.refuse {
				t.Errorf("refused %q, want %q", got, tc.refuse)
			}
			if len(res.Legs[0].Rows) != 0 || len(res.Refused()) == 0 {
				t.Errorf("a refused leg must have no rows and be listed: %+v", res.Legs[0])
			}
		})
	}
}

// TestLegsByName: --legs-by name compares the legs of two profiles by
// name (with a note that the profiles differ), and still refuses a leg whose
// load differs.
func TestLegsByName(t *testing.T) {
	renamed := editedCopy(t, "testdata/b", func(s map[string]any) { s["profile"].(map[string]any)["name"] = "entity-churn" })
	res := CompareWith(load(t, "testdata/a"), load(t, renamed), Options{LegsBy: LegsByName})
	l := res.Legs[0]
	if l.Refused != "" || len(l.Rows) == 0 || !strings.Contains(l.Note, "legs matched by name across profiles pr and entity-churn") {
		t.Fatalf("leg %+v", l)
	}
	other := editedCopy(t, "testdata/b", func(s map[string]any) {
		s["profile"].(map[string]any)["name"] = "entity-churn"
		s["profile"].(map[string]any)["clients"] = 32
	})
	res = CompareWith(load(t, "testdata/a"), load(t, other), Options{LegsBy: LegsByName})
	if got := res.Legs[0].Refused; got != "different load: clients 64 vs 32" {
		t.Errorf("refused %q", got)
	}
}

func leg(sum map[string]any) map[string]any {
	return sum["legs"].([]any)[0].(map[string]any)["leg"].(map[string]any)
}

// editedCopy copies a run's summary.json (and its leg reports) into a
// temporary run directory after applying edit.
func editedCopy(t *testing.T, src string, edit func(map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	edit(sum)
	out, _ := json.Marshal(sum)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWriteTableAndMarkdown(t *testing.T) {
	res := Compare(load(t, "testdata/a"), load(t, "testdata/b"))
	var tb, md strings.Builder
	if err := res.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	cell := func(s string) string { return `\s*` + regexp.QuoteMeta(s) + `\s*` }
	line := cell("server tick ms p99") + "[│|]" + cell("7.81") + "[│|]" + cell("39.10") + "[│|]" + cell("+31.29") + "[│|]" + cell("+400.7%")
	for name, out := range map[string]string{"table": tb.String(), "markdown": md.String()} {
		if !regexp.MustCompile(line).MatchString(out) {
			t.Errorf("%s lacks the tick p99 row A 7.81 B 39.10 +31.29 +400.7%%:\n%s", name, out)
		}
	}
	if !strings.Contains(md.String(), "## Leg weave") || !strings.Contains(md.String(), "|:---") {
		t.Errorf("markdown has no leg section or table:\n%s", md.String())
	}
	refused := Compare(load(t, "testdata/a"), load(t, editedCopy(t, "testdata/b", func(s map[string]any) {
		s["profile"].(map[string]any)["clients"] = 32
	})))
	md.Reset()
	if err := refused.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "**Not compared:** different load: clients 64 vs 32") {
		t.Errorf("refusal missing from markdown:\n%s", md.String())
	}
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("missing summary.json: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"legs": []}`), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "not a scalegate summary") {
		t.Errorf("summary without a profile: %v", err)
	}
}

// TestMissingServerFieldIsMissing: a server that leaves a field out of its
// metrics (here tick_ms and entities) compares as missing in that run,
// never as 0 (the struct would read it as 0 and show a -100 % delta).
func TestMissingServerFieldIsMissing(t *testing.T) {
	a := load(t, "testdata/a")
	b := load(t, "testdata/b")
	rep := b.Reports["weave"]
	var tick map[string]any
	if err := json.Unmarshal(rep.ServerTick, &tick); err != nil {
		t.Fatal(err)
	}
	delete(tick, "tick_ms")
	delete(tick, "entities")
	rep.ServerTick, _ = json.Marshal(tick)
	l := Compare(a, b).Legs[0]
	for _, m := range []string{"server tick ms p99", "server tick ms mean", "server entities"} {
		r := row(t, l, m)
		if r.A == nil || r.B != nil || r.Delta() != nil {
			t.Errorf("%s: A %v B %v delta %v; want B missing and no delta", m, r.A, r.B, r.Delta())
		}
	}
	var md strings.Builder
	if err := Compare(a, b).WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`server entities\s*\|\s*[0-9.]+\s*\|\s*(—|missing)`).MatchString(md.String()) {
		t.Errorf("markdown does not show the missing figure as missing:\n%s", md.String())
	}
}
