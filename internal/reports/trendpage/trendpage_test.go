package trendpage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/history"
)

// analyses builds the trend page's input from seeded records: pr/weave's
// tick p99 with a +4 % step at run 50 of 80, and its wire KB/s flat, both
// with a threshold and the wire one with a baseline.
func analyses(t testing.TB, runs int) []history.Analysis {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	thr, base := 130.0, 70.6
	var recs []history.Record
	for i := range runs {
		level := 100.0
		if i >= 49 {
			level = 104
		}
		recs = append(recs, history.Record{SchemaVersion: history.SchemaVersion, ID: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Hour).Format(time.RFC3339),
			Commit: fmt.Sprintf("%02dabcdef0123", i+1), Profile: "pr", ProfileHash: "h", Leg: "pr/weave", RunnerClass: "ci", Verdict: "passed",
			Figures: map[string]history.Value{
				"tick_ms_p99_max":     {Value: level * (1 + 0.02*r.NormFloat64()), Unit: "ms", Better: history.Lower, Level: "hard", Threshold: &thr},
				"wire_kbs_per_client": {Value: 70.6 * (1 + 0.001*r.NormFloat64()), Unit: "KB/s", Better: history.Lower, Baseline: &base},
			}})
	}
	recs[runs-1].Commit = `<script>alert(1)</script>`
	return history.AnalyzeAll(history.Build(recs, history.Filter{}), 0)
}

func TestRender(t *testing.T) {
	as := analyses(t, 80)
	b, err := Render(as)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		`<h2>pr/weave · tick_ms_p99_max</h2>`, `<h2>pr/weave · wire_kbs_per_client</h2>`,
		`threshold 130`, `baseline 70.6`, `class="change worse"`, `run 50 · 50abcdef01 · 2026-11-03T01:00:00Z`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 2 {
		t.Errorf("%d charts, want 2", n)
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page has a script or fetches something: it must be self-contained and inert")
	}
}

func TestRenderListsAtMostMaxRows(t *testing.T) {
	b, err := Render(analyses(t, maxTableRows+30))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "(30 older not listed)") {
		t.Error("a long history's table does not say how many runs it left out")
	}
}

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trend.html")
	if err := Write(path, analyses(t, 10)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.HasPrefix(string(b), "<!DOCTYPE html>") {
		t.Fatalf("wrote %q, %v", b, err)
	}
}
