package serverwindow

import (
	"math"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// rows is a timeline of n seconds from t=1, each holding 60 ticks of
// msAt(second) ms.
func rows(n int, msAt func(s int) float64) []report.TimelinePoint {
	out := make([]report.TimelinePoint, n)
	for i := range out {
		l := stats.NewLogLinear()
		for range 60 {
			l.Record(msAt(i + 1))
		}
		out[i] = report.TimelinePoint{TS: float64(i + 1), TickHist: l.Snapshot()}
	}
	return out
}

// TestWorstWindowFindsTheStretch: a 90 s hold with a 20 ms stretch from
// 30 to 50 s and 2 ms elsewhere: the worst 10 s window lies inside the
// stretch and says where, while the whole hold's p99 is diluted.
func TestWorstWindowFindsTheStretch(t *testing.T) {
	tl := rows(90, func(s int) float64 {
		if s > 30 && s <= 50 {
			return 20
		}
		return 2
	})
	w, err := WorstWindow(tl, 0, 90, 10, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if w.Value < 19.5 || w.Value > 20.4 {
		t.Errorf("worst p99 %g, want ≈ 20", w.Value)
	}
	if w.FromS < 30 || w.ToS > 50 || w.ToS-w.FromS != 10 {
		t.Errorf("worst window t=%g–%g, want a 10 s window inside 30–50", w.FromS, w.ToS)
	}
	if w.Ticks != 600 {
		t.Errorf("ticks %d, want 600", w.Ticks)
	}
	if w.Windows != 81 {
		t.Errorf("windows %d, want 81 (90 s of rows, 10 s wide, a second apart)", w.Windows)
	}
	// A window as long as the hold is the hold's own p99.
	whole, err := WorstWindow(tl, 0, 90, 90, 0.99)
	if err != nil || whole.Windows != 1 {
		t.Fatalf("%+v %v", whole, err)
	}
}

func TestWorstWindowHoldBounds(t *testing.T) {
	tl := rows(60, func(s int) float64 {
		if s <= 10 {
			return 40 // the ramp, before the hold
		}
		return 3
	})
	w, err := WorstWindow(tl, 10, 60, 10, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if w.Value > 3.1 {
		t.Errorf("worst %g: the ramp before the hold leaked in", w.Value)
	}
}

func TestWorstWindowUnevaluable(t *testing.T) {
	tl := rows(20, func(int) float64 { return 2 })
	if _, err := WorstWindow(tl, 0, 20, 30, 0.99); err == nil || !strings.Contains(err.Error(), "less than the 30 s window") {
		t.Errorf("a hold shorter than the window: %v", err)
	}
	bare := make([]report.TimelinePoint, 20)
	for i := range bare {
		bare[i].TS = float64(i + 1)
	}
	if _, err := WorstWindow(bare, 0, 20, 5, 0.99); err == nil || !strings.Contains(err.Error(), "no timeline row in the hold has a tick histogram") {
		t.Errorf("rows without histograms: %v", err)
	}
	open := rows(20, func(int) float64 { return 1e6 })
	if _, err := WorstWindow(open, 0, 20, 5, 0.99); err == nil || !strings.Contains(err.Error(), "unbounded") {
		t.Errorf("ticks above the layout: %v", err)
	}
}

// TestWorstWindowSkipsMissingRows: a second whose reading failed has no
// histogram; its ticks are in the next row's, and the window still
// slides.
func TestWorstWindowSkipsMissingRows(t *testing.T) {
	tl := rows(30, func(int) float64 { return 4 })
	tl[10].TickHist = nil
	w, err := WorstWindow(tl, 0, 30, 5, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w.Value-4) > 0.07 {
		t.Errorf("worst %g", w.Value)
	}
}

func BenchmarkWorstWindowDay(b *testing.B) {
	tl := rows(86400, func(s int) float64 { return 3 + float64(s%17)/4 })
	b.ResetTimer()
	for range b.N {
		if _, err := WorstWindow(tl, 0, 86400, 60, 0.99); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWorstWindowSpansUnreadRows: when reads lapse, a histogram holds the
// ticks since the last row that had one, so its interval starts there. A
// 10 s window must then not be read as covering fewer seconds than it
// does, and the lapse is counted.
func TestWorstWindowSpansUnreadRows(t *testing.T) {
	tl := rows(40, func(int) float64 { return 2 })
	// Reads at t=12, 13 and 14 failed: the row at 15 holds 4 s of ticks.
	for s := 12; s <= 14; s++ {
		tl[s-1].TickHist = nil
	}
	l := stats.NewLogLinear()
	for range 240 {
		l.Record(30) // the lapse held a slow stretch
	}
	tl[14].TickHist = l.Snapshot()
	w, err := WorstWindow(tl, 0, 40, 10, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if w.Unread != 3 {
		t.Errorf("unread rows %d, want 3", w.Unread)
	}
	// Every window holding the row at 15 covers its interval t=11–15.
	if w.FromS > 11 || w.ToS < 15 || w.ToS-w.FromS > 10.5 {
		t.Errorf("worst window t=%g–%g: it must cover the lapse's interval 11–15 and span at most 10.5 s", w.FromS, w.ToS)
	}
	if w.Windows != 28 {
		t.Errorf("windows %d, want 28 (31 starts a second apart, less the 3 unread)", w.Windows)
	}
}
