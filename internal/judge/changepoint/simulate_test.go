package changepoint

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// The detection tables of docs/history.md are this simulation's output,
// seeded, so the doc cannot drift from the code: the test recomputes them
// and fails on any difference. SCALEGATE_UPDATE_DOCS=1 rewrites them.

const (
	docPath    = "../../../docs/history.md"
	beforeRuns = 30  // runs of the old level before the step
	maxAfter   = 100 // runs after the step before giving up
	histories  = 200
)

// The noise calibrate measured on the development machine (docs/baselines.md):
// bytes per entity, tick-Hz min, wire KB/s, and the 2 % of the acceptance test.
var noises = []struct {
	name  string
	sigma float64
}{{"bytes per entity (σ̂ 0.13 %)", 0.0013}, {"tick-Hz min (σ̂ 1.1 %)", 0.011}, {"wire KB/s (σ̂ 1.7 %)", 0.017}, {"σ 2 %", 0.02}}

var stepSizes = []float64{3, 5, 10}

// runsToDetect is how many runs from the first one at the new level it
// takes until Detect names a change point within 5 runs of the step (a
// 1.5 σ step's maximum-likelihood location is itself uncertain by a few
// runs, however many follow), at
// the median and the 90th percentile of the seeded histories (0: not
// within maxAfter).
func runsToDetect(sigma, stepPct float64, openEnd bool, seed uint64) (p50, p90 int) {
	r := rand.New(rand.NewPCG(seed, uint64(stepPct*100)))
	need := make([]int, histories)
	for h := range need {
		x := noisy(r, beforeRuns+maxAfter, sigma, []int{beforeRuns}, []float64{stepPct})
		need[h] = maxAfter + 1
		for after := 1; after <= maxAfter; after++ {
			if found(Detect(x[:beforeRuns+after], Options{OpenEnd: openEnd}), beforeRuns) {
				need[h] = after
				break
			}
		}
	}
	slices.Sort(need)
	return need[histories/2], need[histories*9/10]
}

func found(cps []ChangePoint, at int) bool {
	for _, c := range cps {
		if c.Index >= at-5 && c.Index <= at+5 {
			return true
		}
	}
	return false
}

func cell(n int) string {
	if n > maxAfter {
		return fmt.Sprintf("> %d", maxAfter)
	}
	return fmt.Sprint(n)
}

func detectionTable() string {
	var b strings.Builder
	b.WriteString("| noise | step | `scalegate history`: runs to find it, median (90th pct) | history gate: median (90th pct) |\n|---|---|---|---|\n")
	for i, n := range noises {
		for _, step := range stepSizes {
			h50, h90 := runsToDetect(n.sigma, step, false, uint64(i))
			g50, g90 := runsToDetect(n.sigma, step, true, uint64(i))
			fmt.Fprintf(&b, "| %s | +%g %% | %s (%s) | %s (%s) |\n", n.name, step, cell(h50), cell(h90), cell(g50), cell(g90))
		}
	}
	return b.String()
}

// falseTable counts false change points in pure-noise histories: per 100
// runs, and the share of histories with any, by history length.
func falseTable() string {
	var b strings.Builder
	b.WriteString("| history length | noise histories | with a false change point | false change points per 100 runs |\n|---|---|---|---|\n")
	for _, n := range []int{20, 50, 80, 200} {
		r := rand.New(rand.NewPCG(11, uint64(n)))
		const count = 1000
		with, total := 0, 0
		for range count {
			k := len(Detect(noisy(r, n, 0.02, nil, nil), Options{}))
			total += k
			if k > 0 {
				with++
			}
		}
		fmt.Fprintf(&b, "| %d runs | %d | %.1f %% | %.3f |\n", n, count, 100*float64(with)/count, 100*float64(total)/float64(count*n))
	}
	return b.String()
}

func TestDocTables(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, tbl := range []struct{ name, body string }{{"detection", detectionTable()}, {"false", falseTable()}} {
		begin, end := "<!-- begin "+tbl.name+" table: go test ./internal/judge/changepoint -run TestDocTables -->\n", "<!-- end "+tbl.name+" table -->"
		i, j := strings.Index(text, begin), strings.Index(text, end)
		if i < 0 || j < i {
			t.Fatalf("%s: no %q … %q markers", docPath, begin, end)
		}
		got := text[i+len(begin) : j]
		if got == tbl.body {
			continue
		}
		if os.Getenv("SCALEGATE_UPDATE_DOCS") == "1" {
			text = text[:i+len(begin)] + tbl.body + text[j:]
			continue
		}
		t.Errorf("%s's %s table is not what the simulation gives (SCALEGATE_UPDATE_DOCS=1 rewrites it):\n%s", docPath, tbl.name, tbl.body)
	}
	if os.Getenv("SCALEGATE_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(docPath, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
