package htmlreport

import (
	"math"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestKBsChartHasNoReadingWithoutClients: a second with no client
// connected is a gap in the payload chart, never a rate of 0 (the gate
// calls it no reading).
func TestKBsChartHasNoReadingWithoutClients(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    report.TimelinePoint
		want float64 // NaN: no reading
	}{
		{"nobody connected", report.TimelinePoint{Connected: 0, KBs: 0}, math.NaN()},
		{"connected, idle link", report.TimelinePoint{Connected: 4, KBs: 0}, 0},
		{"connected", report.TimelinePoint{Connected: 4, KBs: 71.9}, 71.9},
	} {
		got := kbsPerClient(tc.p)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
