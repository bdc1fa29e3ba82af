package serverwindow

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Worst is the worst window of a figure over a stretch of the timeline.
type Worst struct {
	// WindowS is the window's width asked for; FromS and ToS where the
	// worst one lies on the run's clock (from the reading before its first
	// row to its last row's reading).
	WindowS float64 `json:"window_s"`
	FromS   float64 `json:"from_s"`
	ToS     float64 `json:"to_s"`
	// Value is the figure over that window, Lo and Hi the bucket it lies
	// in (it is off by at most their distance); Ticks how many ticks the
	// window holds.
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Ticks uint64  `json:"ticks"`
	// Windows is how many windows were compared; Unread how many rows of
	// the hold had no histogram (a failed or empty read: their ticks are
	// in the next row's, so windows there are coarser). A run whose reads
	// lapse compares fewer, wider windows, and says so.
	Windows int `json:"windows"`
	Unread  int `json:"unread_rows,omitempty"`
}

// windowSlack is how much longer than asked a window of whole timeline rows
// may be: the rows are a second apart only as far as a ticker on a loaded
// machine keeps them.
const windowSlack = 0.5

// WorstWindow slides a window of windowS seconds over the timeline rows
// whose interval lies within the hold (from < t_s ≤ to; each row's
// tick_hist holds the ticks since the previous reading) and returns the
// window whose q-quantile of tick time is highest. Rows without a
// histogram are skipped (their ticks are in the next row's). It fails when
// no row in the hold has one, or the hold is shorter than the window.
func WorstWindow(rows []report.TimelinePoint, from, to, windowS, q float64) (Worst, error) {
	w := Worst{WindowS: windowS}
	if !(windowS >= 1) {
		return w, fmt.Errorf("window_s %g: a window is at least 1 s, the timeline's resolution", windowS)
	}
	in, starts, unread := holdRows(rows, from, to)
	w.Unread = unread
	if err := fitsHold(in, starts, windowS); err != nil {
		return w, err
	}
	layout, index := unionLayout(in)
	dense := make([]uint64, len(layout))
	var sum float64
	j := 0 // rows [i, j) are in the window
	best, bestSpan := -1.0, 0.0
	for i := range in {
		// Take rows while they fit the window, and past it while the window
		// is still short: after a lapse in the reads one row holds several
		// seconds, and a window of whole rows must then be wider than asked
		// rather than end the scan there.
		for j < len(in) && (j <= i || in[j-1].TS-starts[i] < windowS-windowSlack || in[j].TS-starts[i] <= windowS+windowSlack) {
			add(dense, index[j], in[j].TickHist.N, +1)
			sum += in[j].TickHist.Sum
			j++
		}
		span := in[j-1].TS - starts[i]
		if span < windowS-windowSlack {
			break // the hold's end: no full window starts here
		}
		w.Windows++
		b := fromDense(layout, dense, sum)
		r := b.Quantile(q)
		if !r.OK {
			return w, fmt.Errorf("window t=%.1f–%.1f s: the %s lies above the tick histogram's highest finite bound %g ms: unbounded", starts[i], in[j-1].TS, quantileName(q), r.Lo)
		}
		// Of equal windows the narrowest names the stretch most closely.
		if r.Value > best || (r.Value == best && span < bestSpan) {
			best, bestSpan = r.Value, span
			w.Value, w.Lo, w.Hi, w.Ticks = r.Value, r.Lo, r.Hi, b.Count
			w.FromS, w.ToS = round3(starts[i]), round3(in[j-1].TS)
		}
		add(dense, index[i], in[i].TickHist.N, -1)
		sum -= in[i].TickHist.Sum
	}
	if w.Windows == 0 {
		return w, fmt.Errorf("no %s s window fits the hold's tick histograms", fmtS(windowS))
	}
	return w, nil
}

// fitsHold says why no window of windowS seconds can be slid over the
// hold's rows with a histogram (in, each starting at starts[i]): there is
// none, or they span less than the window. nil when one fits.
func fitsHold(in []report.TimelinePoint, starts []float64, windowS float64) error {
	switch {
	case len(in) == 0:
		return errors.New("no timeline row in the hold has a tick histogram (timeline[].tick_hist): the server writes no cumulative tick_ms (docs/metrics.md, \"Cumulative state\"), or every reading failed")
	case in[len(in)-1].TS-starts[0] < windowS-windowSlack:
		return fmt.Errorf("the hold's tick histograms span %.1f s (t=%.1f–%.1f s), less than the %s s window", in[len(in)-1].TS-starts[0], starts[0], in[len(in)-1].TS, fmtS(windowS))
	}
	return nil
}

// holdRows are the rows of the hold that carry a histogram, where each
// one's interval starts, and how many rows of the hold carry none. A row's
// histogram holds the ticks since the previous row that has one (or the
// hold's start): a row without one is a read that failed or saw no tick,
// whose ticks the next histogram holds, so its interval starts earlier.
func holdRows(rows []report.TimelinePoint, from, to float64) ([]report.TimelinePoint, []float64, int) {
	var in []report.TimelinePoint
	var starts []float64
	unread := 0
	prev := from
	if math.IsInf(from, -1) && len(rows) > 0 {
		prev = rows[0].TS - 1 // a first row covers the second before it
	}
	for _, r := range rows {
		if r.TS <= from || r.TS > to+1e-6 {
			continue
		}
		if r.TickHist == nil || r.TickHist.Empty() {
			unread++
			continue
		}
		in = append(in, r)
		starts = append(starts, prev)
		prev = r.TS
	}
	return in, starts, unread
}

// bound is one bucket of the union layout.
type bound struct{ lo, hi float64 }

// unionLayout is every bucket any row lists, in order, and each row's
// buckets as indices into it: the sliding window then adds and removes
// rows in an array.
func unionLayout(rows []report.TimelinePoint) ([]bound, [][]int) {
	seen := map[bound]bool{}
	var layout []bound
	for _, r := range rows {
		h := r.TickHist
		for k := range h.N {
			b := bound{h.Lo[k], h.Hi[k]}
			if !seen[b] {
				seen[b] = true
				layout = append(layout, b)
			}
		}
	}
	slices.SortFunc(layout, func(a, b bound) int { return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.hi, b.hi)) })
	at := make(map[bound]int, len(layout))
	for i, b := range layout {
		at[b] = i
	}
	index := make([][]int, len(rows))
	for i, r := range rows {
		h := r.TickHist
		index[i] = make([]int, len(h.N))
		for k := range h.N {
			index[i][k] = at[bound{h.Lo[k], h.Hi[k]}]
		}
	}
	return layout, index
}

func add(dense []uint64, idx []int, n []uint64, sign int) {
	for k, i := range idx {
		if sign > 0 {
			dense[i] += n[k]
		} else {
			dense[i] -= n[k]
		}
	}
}

// fromDense is the window's histogram. Overlapping buckets (rows of two
// layouts: the server restarted with another) are merged by their upper
// bound's order, which keeps the quantile a ceiling of the right bucket.
func fromDense(layout []bound, dense []uint64, sum float64) *stats.Buckets {
	b := &stats.Buckets{Sum: sum}
	for i, n := range dense {
		if n == 0 {
			continue
		}
		lo := layout[i].lo
		if k := len(b.Hi); k > 0 && lo < b.Hi[k-1] {
			lo = b.Hi[k-1]
			if !(lo < layout[i].hi) {
				b.N[k-1] += n
				b.Count += n
				continue
			}
		}
		b.Lo, b.Hi, b.N = append(b.Lo, lo), append(b.Hi, layout[i].hi), append(b.N, n)
		b.Count += n
	}
	return b
}

func quantileName(q float64) string {
	if q == 1 {
		return "max"
	}
	return fmt.Sprintf("p%g", math.Round(q*1000)/10)
}

func fmtS(v float64) string { return fmt.Sprintf("%g", v) }

// Point is one second of a rolling figure.
type Point struct {
	TS    float64
	Value float64
	OK    bool // false: the window ending here holds no tick, or its figure is unbounded
}

// Rolling is, for every row with a histogram, the q-quantile of the ticks
// in the windowS seconds ending at it (fewer at the start of the run): the
// curve a worst-window gate takes its maximum of, for a chart.
func Rolling(rows []report.TimelinePoint, windowS, q float64) []Point {
	in, starts, _ := holdRows(rows, math.Inf(-1), math.Inf(1))
	if len(in) == 0 || !(windowS > 0) {
		return nil
	}
	layout, index := unionLayout(in)
	dense := make([]uint64, len(layout))
	var sum float64
	out := make([]Point, 0, len(in))
	i := 0 // rows [i, j] are in the window ending at row j
	for j := range in {
		add(dense, index[j], in[j].TickHist.N, +1)
		sum += in[j].TickHist.Sum
		for i < j && in[j].TS-starts[i] > windowS+windowSlack {
			add(dense, index[i], in[i].TickHist.N, -1)
			sum -= in[i].TickHist.Sum
			i++
		}
		r := fromDense(layout, dense, sum).Quantile(q)
		out = append(out, Point{TS: in[j].TS, Value: r.Value, OK: r.OK})
	}
	return out
}
