package gatetable

import (
	"math"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

func deliveryReport(minRate, gapMs float64) *report.Report {
	hz := 60.0
	return &report.Report{Clients: 4, ClientsConnected: 4, SnapshotsReceived: 100,
		ObservedServerTickHz: &report.MinMeanMax{Min: 59, Mean: 59.5, Max: 60},
		Delivery: &report.Delivery{AnnouncedHz: &hz, UpdatesPerS: &report.MinMeanMax{Min: minRate, Mean: minRate, Max: minRate},
			Clients: 4, SlowestClient: new(int), MaxGapMs: &gapMs, GapClient: new(int)}}
}

// The delivery rule at its edges: a client exactly at the fraction of the
// reference and a gap exactly at the limit hold; just under and just over
// fail, each with its own reason.
func TestDeliveredEdges(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rate, gap    float64
		p            DeliveryPolicy
		ok           bool
		problem      string
		measuredFrac float64
	}{
		{"at the fraction and the gap", 3, 4000, DeliveryPolicy{}, true, "", 0.05},
		{"just under the fraction", 2.99, 100, DeliveryPolicy{}, false, "under 0.05 × 60 Hz (announced by the server) = 3", 2.99 / 60},
		{"just over the gap", 60, 4000.5, DeliveryPolicy{}, false, "went 4001 ms without a state update, over 4000 ms", 1},
		{"declared rate wins", 19, 100, DeliveryPolicy{RateHz: 20, MinRateFraction: 0.95}, true, "", 0.95},
		{"declared gap", 60, 300, DeliveryPolicy{MaxGapMs: 250}, false, "over 250 ms", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Delivered(deliveryReport(tc.rate, tc.gap), tc.p)
			if d.OK() != tc.ok || !strings.Contains(d.Why(), tc.problem) {
				t.Fatalf("ok=%v why=%q, want ok=%v with %q", d.OK(), d.Why(), tc.ok, tc.problem)
			}
			if d.Measured == nil || math.Abs(*d.Measured-tc.measuredFrac) > 1e-9 {
				t.Errorf("measured %v, want the slowest client's share %v", d.Measured, tc.measuredFrac)
			}
		})
	}
}

func TestDeliveryPolicyValidate(t *testing.T) {
	if err := (DeliveryPolicy{}).Validate(); err != nil {
		t.Errorf("the zero policy (defaults) is valid: %v", err)
	}
	err := DeliveryPolicy{RateHz: math.NaN(), MinRateFraction: 1.5, MaxGapMs: -1}.Validate()
	for _, want := range []string{"rate_hz", "min_rate_fraction", "max_gap_ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v, want %s named", err, want)
		}
	}
}

// TestAnnouncedRateHint: a join that announces its 40 Hz tick rate while
// state goes out at 20 Hz passes delivery against 40 Hz; the detail says
// the announcement may be the wrong rate. Clients near the announced rate,
// or a declared rate, say nothing.
func TestAnnouncedRateHint(t *testing.T) {
	const hint = "if the server announces its tick rate rather than the rate it sends state at, declare that rate (delivery.rate_hz)"
	for _, tc := range []struct {
		name     string
		min, max float64
		p        DeliveryPolicy
		want     bool
	}{
		{"every client at half the announced rate", 19.8, 20.1, DeliveryPolicy{}, true},
		{"slowest throttled, fastest at the rate", 12, 59, DeliveryPolicy{}, false},
		{"at the suspect line", 30, 36, DeliveryPolicy{}, false},
		{"a declared rate", 19.8, 20.1, DeliveryPolicy{RateHz: 20}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := deliveryReport(tc.min, 100)
			r.Delivery.UpdatesPerS.Max = tc.max
			d := Delivered(r, tc.p)
			if got := strings.Contains(d.Text, hint); got != tc.want {
				t.Errorf("hint %v, want %v: %q", got, tc.want, d.Text)
			}
			if !d.OK() {
				t.Errorf("the hint is a word, not a verdict: %q", d.Why())
			}
		})
	}
}
