package htmlreport

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/testkit/browsertest"
)

// The browser test renders report.html in a real headless Chromium, the
// way people read it: a page that is valid HTML to a parser can still draw
// its charts at zero size or hide its verdict. It does not skip without
// Chromium: the test command (scripts/test.sh) installs it.
//
// SCALEGATE_REPORT_DIR=results/pr_… checks that run directory's report.html
// and leaves the screenshot (report.png) beside it; by default the test
// renders the real pr run in testdata into a temporary directory.

// pageCheck is what the browser saw of a page.
type pageCheck struct {
	Problems []string // console errors, exceptions, log errors, fetches
	Verdict  struct {
		Text    string
		Visible bool
	}
	Charts  []chartBox
	Missing []string // figures drawn as "not drawn: …"
	PNG     []byte
}

type chartBox struct {
	Title string
	W, H  float64
}

// layoutJS measures the verdict banner and every chart as laid out.
const layoutJS = `(() => {
  const v = document.getElementById('verdict');
  const r = v ? v.getBoundingClientRect() : null;
  const st = v ? getComputedStyle(v) : null;
  return {
    Verdict: {
      Text: v ? v.querySelector('.big').textContent : '',
      Visible: !!r && r.width > 0 && r.height > 0 && r.top >= 0 && r.top < innerHeight &&
        st.visibility !== 'hidden' && st.display !== 'none'
    },
    Charts: [...document.querySelectorAll('figure[data-chart]')].filter(f => !f.querySelector('.missing')).map(f => {
      const s = f.querySelector('svg.chart');
      const b = s ? s.getBoundingClientRect() : {width: 0, height: 0};
      return {Title: f.dataset.chart, W: b.width, H: b.height};
    }),
    Missing: [...document.querySelectorAll('figure[data-chart] .missing')].map(m => m.closest('figure').dataset.chart)
  };
})()`

// checkPage opens path in the browser and measures the report's layout.
func checkPage(t *testing.T, browser context.Context, path string) pageCheck {
	t.Helper()
	page, lay := browsertest.Open[pageCheck](t, browser, path, layoutJS)
	lay.Problems, lay.PNG = page.Problems, page.PNG
	return lay
}

// TestReportInBrowser renders a real pr run's report.html and requires:
// no console error, exception or fetch; the verdict visible in the first
// screen; every chart laid out at a non-zero size; a screenshot saved.
func TestReportInBrowser(t *testing.T) {
	if dir := os.Getenv("SCALEGATE_REPORT_DIR"); dir != "" {
		checkReport(t, browsertest.New(t), dir)
		return
	}
	browser := browsertest.New(t)
	for _, tc := range []struct {
		name string
		edit func(*testing.T, string)
	}{
		{"pr run", func(*testing.T, string) {}},
		{"capacity curve", withCapacity},
		{"server diagnostics", withDiagnostics},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyRun(t, fixture)
			tc.edit(t, dir)
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			checkReport(t, browser, dir)
		})
	}
}

// checkReport checks dir/report.html in the browser and saves
// dir/report.png.
func checkReport(t *testing.T, browser context.Context, dir string) {
	t.Helper()
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	pc := checkPage(t, browser, filepath.Join(dir, FileName))
	for _, p := range pc.Problems {
		t.Errorf("browser: %s", p)
	}
	if want := strings.ToUpper(string(run.Summary.Verdict)); pc.Verdict.Text != want || !pc.Verdict.Visible {
		t.Errorf("verdict %q visible %v, want %q visible in the first screen", pc.Verdict.Text, pc.Verdict.Visible, want)
	}
	want := strings.Count(string(html), `<svg class="chart"`)
	if len(pc.Charts) != want || want == 0 {
		t.Errorf("browser laid out %d charts, the page has %d", len(pc.Charts), want)
	}
	for _, c := range pc.Charts {
		if c.W < 100 || c.H < 50 {
			t.Errorf("chart %q laid out at %.0f×%.0f px", c.Title, c.W, c.H)
		}
	}
	shot := filepath.Join(dir, "report.png")
	if err := os.WriteFile(shot, pc.PNG, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(pc.PNG))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	t.Logf("%s: %s, %d charts, not drawn: %v; screenshot %s (%dx%d)", dir, pc.Verdict.Text, len(pc.Charts),
		pc.Missing, shot, img.Bounds().Dx(), img.Bounds().Dy())
}

// TestBrowserCheckBites: the same checks on a broken page find every fault,
// so a passing TestReportInBrowser means something.
func TestBrowserCheckBites(t *testing.T) {
	page := `<!DOCTYPE html><html><body>
<div id="verdict" style="display:none"><div class="big">FAILED</div></div>
<figure data-chart="flat"><svg class="chart" width="0" height="0"></svg></figure>
<script>console.error("boom"); null.x;</script>
<img src="http://127.0.0.1:9/x.png">
</body></html>`
	path := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	pc := checkPage(t, browsertest.New(t), path)
	all := strings.Join(pc.Problems, "\n")
	for _, want := range []string{"console.error: boom", "exception:", "fetched http://127.0.0.1:9/x.png"} {
		if !strings.Contains(all, want) {
			t.Errorf("problem %q not caught; caught:\n%s", want, all)
		}
	}
	if pc.Verdict.Visible {
		t.Error("a hidden verdict counted as visible")
	}
	if len(pc.Charts) != 1 || pc.Charts[0].W != 0 {
		t.Errorf("zero-size chart not measured as such: %+v", pc.Charts)
	}
}
