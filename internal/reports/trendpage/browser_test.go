package trendpage

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/testkit/browsertest"
)

type layout struct {
	Charts []struct {
		Title string
		W, H  float64
	}
	Points int
	Marks  int
}

const layoutJS = `(() => ({
  Charts: [...document.querySelectorAll('svg.chart')].map(s => {
    const b = s.getBoundingClientRect();
    return {Title: s.getAttribute('aria-label'), W: b.width, H: b.height};
  }),
  Points: document.querySelectorAll('svg.chart circle title').length,
  Marks: document.querySelectorAll('svg.chart line.change').length
}))()`

// TestTrendPageInBrowser opens the trend page in headless Chromium: no
// console error, exception or fetch; every chart laid out at a readable
// size; every point carrying its hover text; the change point marked. With
// SCALEGATE_TREND_SHOT=PATH the screenshot is kept there
// (docs/img/trend-page.png was made so).
func TestTrendPageInBrowser(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trend.html")
	if err := Write(path, analyses(t, 80)); err != nil {
		t.Fatal(err)
	}
	page, lay := browsertest.Open[layout](t, browsertest.New(t), path, layoutJS)
	for _, p := range page.Problems {
		t.Errorf("browser: %s", p)
	}
	if len(lay.Charts) != 2 {
		t.Fatalf("laid out %d charts, want 2", len(lay.Charts))
	}
	for _, c := range lay.Charts {
		if c.W < 300 || c.H < 100 {
			t.Errorf("chart %q laid out at %.0f×%.0f px", c.Title, c.W, c.H)
		}
	}
	if lay.Points != 160 || lay.Marks != 1 {
		t.Errorf("%d points with hover text (want 160), %d change marks (want 1)", lay.Points, lay.Marks)
	}
	img, err := png.Decode(bytes.NewReader(page.PNG))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if shot := os.Getenv("SCALEGATE_TREND_SHOT"); shot != "" {
		if err := os.WriteFile(shot, page.PNG, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d charts, screenshot %dx%d", len(lay.Charts), img.Bounds().Dx(), img.Bounds().Dy())
}
