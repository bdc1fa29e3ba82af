package htmlreport

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser test renders report.html in a real headless Chromium, the
// way people read it: a page that is valid HTML to a parser can still draw
// its charts at zero size or hide its verdict. It does not skip without
// Chromium: the test command (scripts/test.sh) installs it.
//
// SCALEGATE_REPORT_DIR=results/pr_… checks that run directory's report.html
// and leaves the screenshot (report.png) beside it; by default the test
// renders the real pr run in testdata into a temporary directory.

// chromiumPath finds the browser: $CHROMIUM, else Debian's chromium.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium on PATH (looked for chromium, chromium-browser): run scripts/test.sh, or " +
		"SCALEGATE_NEED_CHROMIUM=1 bash scripts/deps.sh, which install Debian's chromium with apt-get; " +
		"or set CHROMIUM=/path/to/chrome")
	return ""
}

// newBrowser starts one headless Chromium for the test (root-safe flags, a
// fresh profile, no background traffic) and returns a tab context.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	parent, cancelTimeout := context.WithTimeout(context.Background(), 3*time.Minute)
	alloc, cancelAlloc := chromedp.NewExecAllocator(parent,
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc(); cancelTimeout() })
	return ctx
}

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

// checkPage opens path in a new tab, collects every problem the browser
// reports while loading it, measures the layout and takes a full-page
// screenshot.
func checkPage(t *testing.T, browser context.Context, path string) pageCheck {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	var mu sync.Mutex
	var pc pageCheck
	add := func(format string, args ...any) {
		mu.Lock()
		pc.Problems = append(pc.Problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				add("console.%s: %s", e.Type, consoleArgs(e.Args))
			}
		case *runtime.EventExceptionThrown:
			add("exception: %s", (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				add("log error (%s): %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
				add("fetched %s (the page must be self-contained)", u)
			}
		}
	})
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatalf("open %s: %v", u, err)
	}
	lay, err := chromedp.Run(ctx, chromedp.Evaluate[pageCheck](layoutJS))
	if err != nil {
		t.Fatalf("measure %s: %v", u, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", u, err)
	}
	mu.Lock()
	defer mu.Unlock()
	lay.Problems, lay.PNG = pc.Problems, png
	return lay
}

func consoleArgs(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, strings.Trim(string(a.Value), `"`)+a.Description)
	}
	return strings.Join(parts, " ")
}

// TestReportInBrowser renders a real pr run's report.html and requires:
// no console error, exception or fetch; the verdict visible in the first
// screen; every chart laid out at a non-zero size; a screenshot saved.
func TestReportInBrowser(t *testing.T) {
	if dir := os.Getenv("SCALEGATE_REPORT_DIR"); dir != "" {
		checkReport(t, newBrowser(t), dir)
		return
	}
	browser := newBrowser(t)
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
	pc := checkPage(t, newBrowser(t), path)
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
