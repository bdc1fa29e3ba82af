package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthetic returns a history of values, one record per commit c0, c1, …
func synthetic(values []float64, better Better) []Record {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	out := make([]Record, len(values))
	for i, v := range values {
		out[i] = Record{SchemaVersion: SchemaVersion, ID: fmt.Sprintf("run%d/weave", i), Time: t0.Add(time.Duration(i) * time.Hour).Format(time.RFC3339),
			Commit: fmt.Sprintf("c%d", i), Profile: "pr", ProfileHash: "h", Leg: "pr/weave", RunnerClass: "vm · 2 cores · 6.1", Verdict: "passed",
			Figures: map[string]Value{"tick_ms_p99": {Value: v, Unit: "ms", Better: better, Level: "hard"}}}
	}
	return out
}

func steps(r *rand.Rand, n int, sigma float64, at []int, pct float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		level := 100.0
		for _, a := range at {
			if i >= a {
				level += pct
			}
		}
		x[i] = level * (1 + sigma*r.NormFloat64())
	}
	return x
}

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	recs := synthetic([]float64{1, 2, 3}, Lower)
	if err := Append(dir, recs[:2]); err != nil {
		t.Fatal(err)
	}
	f, _ := FileFor(dir, recs[0])
	// A killed writer's unfinished line, a merge conflict and a record
	// merged in twice: each is reported or folded, the rest loads.
	raw, _ := os.ReadFile(f)
	first := strings.SplitN(string(raw), "\n", 2)[0]
	bad := string(raw) + "<<<<<<< HEAD\n" + first + "\n=======\n>>>>>>> other\n{\"schema_version\":1,\"id\":\"x\""
	if err := os.WriteFile(f, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(dir, recs[2:]); err != nil {
		t.Fatal(err)
	}
	got, problems, err := Load(context.Background(), dir, "pr")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Commit != "c2" {
		t.Fatalf("loaded %d records (%+v), want 3", len(got), got)
	}
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.String())
	}
	want := []string{":3: a git conflict marker", ":5: a git conflict marker", ":6: a git conflict marker", ":7: not a record"}
	if len(problems) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d", strings.Join(lines, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], filepath.Base(f)+w) {
			t.Errorf("problem %d = %q, want it to name %q", i, lines[i], w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".gitattributes")); err != nil || !strings.Contains(string(b), "merge=union") {
		t.Errorf(".gitattributes: %q, %v", b, err)
	}
}

func TestLoadRefuses(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"schema_version":2,"id":"a"}`, "schema_version 2"},
		{`{"schema_version":1,"id":"a","time":"t","commit":"c","profile":"p","leg":"l","runner_class":"r","figures":{"f":{"value":1,"better":"up"}}}`, `better "up"`},
		{`{"schema_version":1,"id":"a","time":"t","commit":"","profile":"p","leg":"l","runner_class":"r"}`, "commit is empty"},
		{`[1,2]`, "not a record"},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "p"), 0o755)
		os.WriteFile(filepath.Join(dir, "p", "2026-12.jsonl"), []byte(tc.line+"\n"), 0o644)
		recs, problems, err := Load(context.Background(), dir, "")
		if err != nil || len(recs) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Why, tc.want) {
			t.Errorf("%s: %v %v %v, want one problem naming %q", tc.line, recs, problems, err, tc.want)
		}
	}
	if recs, problems, err := Load(context.Background(), filepath.Join(t.TempDir(), "none"), "pr"); err != nil || recs != nil || problems != nil {
		t.Errorf("a missing directory: %v %v %v, want an empty history", recs, problems, err)
	}
}

// A +4 % step at run 50 of 80 (σ 2 %) is named by the commit of run 50 ± 2.
func TestAnalyzeNamesTheCommit(t *testing.T) {
	r := rand.New(rand.NewPCG(50, 80))
	s := Build(synthetic(steps(r, 80, 0.02, []int{50}, 4), Lower), Filter{})
	if len(s) != 1 || len(s[0].Points) != 80 {
		t.Fatalf("series: %+v", s)
	}
	cs := Analyze(s[0], 0)
	if len(cs) != 1 {
		t.Fatalf("change points: %+v", cs)
	}
	c := cs[0]
	var at int
	fmt.Sscanf(c.Commit, "c%d", &at)
	if at < 48 || at > 52 || !c.Worse || c.ChangePct < 2 || c.ChangePct > 6 {
		t.Errorf("change %+v, want it named at c50 ± 2, worse, about +4 %%", c)
	}
}

// Five +3 % steps, each under the 10 % tolerance, fail the gate at the run
// where their sum crosses it (the fourth step, run 40), and not before. At
// σ 0.3 % (a byte figure's noise: bytes per entity moved 0.13 % between
// runs here) the run that crosses fails itself; at σ 2 % (a timing figure)
// the steps are 1.5 σ each, and the gate fails a few runs later, never
// earlier.
func TestGateCatchesCreep(t *testing.T) {
	tests := []struct {
		sigma    float64
		seed     uint64
		from, to int
	}{{0.003, 5, 40, 40}, {0.02, 6, 40, 49}}
	for _, tc := range tests {
		r := rand.New(rand.NewPCG(3, tc.seed))
		recs := synthetic(steps(r, 60, tc.sigma, []int{10, 20, 30, 40, 50}, 3), Lower)
		g := Gate{MaxChangePct: 10}
		first := -1
		for n := 2; n <= len(recs) && first < 0; n++ {
			if j := g.Judge(Build(recs[:n], Filter{})[0]); j.Breach {
				first = n - 1
				t.Logf("σ %g: run %d: %s", tc.sigma, first, j.Text(g))
			}
		}
		if first < tc.from || first > tc.to {
			t.Errorf("σ %g: the gate first failed at run %d, want %d–%d (4 × 3 %% crosses 10 %% at run 40)", tc.sigma, first, tc.from, tc.to)
		}
	}
}

// An accepted record (a baseline update) moves the reference: the same
// creep measured from the accepted level passes.
func TestGateReferenceIsTheAcceptedLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	x := steps(r, 50, 0.005, []int{10, 20, 30, 40}, 3)
	recs := synthetic(x, Lower)
	recs[25].Accepted = true
	j := Gate{MaxChangePct: 10}.Judge(Build(recs, Filter{})[0])
	if j.Breach || j.RefStart != 20 {
		t.Errorf("judgement %+v: want the reference at the accepted segment (run 20) and no breach (+6 %% since)", j)
	}
}

// Higher-is-better figures get worse downwards; improvements never breach.
func TestGateDirection(t *testing.T) {
	x := make([]float64, 40)
	for i := range x {
		x[i] = 60 + 0.1*float64(i%3)
		if i >= 30 {
			x[i] = 45
		}
	}
	for _, tc := range []struct {
		better Better
		breach bool
	}{{Higher, true}, {Lower, false}} {
		j := Gate{}.Judge(Build(synthetic(x, tc.better), Filter{})[0])
		if j.Breach != tc.breach {
			t.Errorf("better %s: breach %v (%.1f %% worse), want %v", tc.better, j.Breach, j.WorsePct, tc.breach)
		}
	}
}

func TestGateNeedsMinRuns(t *testing.T) {
	j := Gate{MinRuns: 10}.Judge(Build(synthetic([]float64{1, 1, 1, 1, 1, 2}, Lower), Filter{})[0])
	if j.Enough || j.Runs != 6 {
		t.Errorf("judgement %+v: 6 runs are not enough for min_runs 10", j)
	}
}

func TestBuildSkipsInconclusiveAndOtherClasses(t *testing.T) {
	recs := synthetic([]float64{1, 2, 3, 4}, Lower)
	recs[1].Verdict = "inconclusive"
	recs[2].RunnerClass = "other"
	s := Build(recs, Filter{RunnerClass: ClassID("vm · 2 cores · 6.1")})
	if len(s) != 1 || len(s[0].Points) != 2 || s[0].Skipped != 1 {
		t.Fatalf("series %+v: want 2 points of the class, 1 skipped", s)
	}
}

func TestCPUModel(t *testing.T) {
	for info, want := range map[string]string{
		"processor\t: 0\nmodel name\t: AMD EPYC  7763 64-Core Processor\nmodel name\t: x\n": "AMD EPYC 7763 64-Core Processor",
		"processor\t: 0\nCPU part\t: 0xd0c\n":                                               "CPU part 0xd0c",
		"":                                                                                  "unknown",
	} {
		if got := cpuModel(info); got != want {
			t.Errorf("cpuModel = %q, want %q", got, want)
		}
	}
}
