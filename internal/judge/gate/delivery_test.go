package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestDeliveryCheck: the built-in delivery check fails a leg whose clients
// stopped receiving state, with the reason, whatever gates the profile
// declares; is unevaluable without its figures or a reference rate; and is
// never softened (a harness-bound or busy leg still fails it).
func TestDeliveryCheck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(*report.Report)
		policy  gatetable.DeliveryPolicy
		harness bool // make the leg harness-bound (softens timing gates)
		want    rundir.Status
		detail  string
	}{
		{name: "healthy", want: rundir.StatusPass},
		{name: "one snapshot then silence", mutate: func(r *report.Report) {
			r.Delivery.UpdatesPerS = &report.MinMeanMax{Min: 0.34, Mean: 0.34, Max: 0.35}
			r.Delivery.SlowestClient = intp(2)
			r.Delivery.MaxGapMs, r.Delivery.GapClient = f64(2913), intp(1)
		}, want: rundir.StatusFail, detail: "client 2 received 0.34 state updates/s over its joined time, under 0.05 × 60 Hz (announced by the server) = 3"},
		{name: "a snapshot every 4.5 s", mutate: func(r *report.Report) {
			r.Delivery.UpdatesPerS = &report.MinMeanMax{Min: 0.22, Mean: 0.22, Max: 0.23}
			r.Delivery.MaxGapMs, r.Delivery.GapClient = f64(4500), intp(3)
		}, want: rundir.StatusFail, detail: "client 3 went 4500 ms without a state update, over 4000 ms"},
		{name: "lost to silence", mutate: func(r *report.Report) {
			r.ClientsDisconnected, r.DisconnectedByReason = 8, map[string]int{"silent": 8}
		}, want: rundir.StatusFail, detail: "8 of 8 admitted clients lost to silence"},
		{name: "starved on a harness-bound leg stays failed", harness: true, mutate: func(r *report.Report) {
			r.Delivery.UpdatesPerS.Min = 1
		}, want: rundir.StatusFail, detail: "received 1 state updates/s"},
		{name: "the profile's rate is the reference", policy: gatetable.DeliveryPolicy{RateHz: 20}, mutate: func(r *report.Report) {
			r.Delivery.UpdatesPerS = &report.MinMeanMax{Min: 19.5, Mean: 19.8, Max: 20}
		}, want: rundir.StatusPass},
		{name: "a tighter fraction", policy: gatetable.DeliveryPolicy{MinRateFraction: 0.995}, want: rundir.StatusFail,
			detail: "under 0.99 × 60 Hz (announced by the server) = 59.70"},
		{name: "the observed tick rate when nothing is announced", mutate: func(r *report.Report) {
			r.Delivery.AnnouncedHz = nil
			r.Delivery.UpdatesPerS.Min = 2
		}, want: rundir.StatusFail, detail: "60 Hz (the observed server tick rate (the server announced none))"},
		{name: "no reference rate", mutate: func(r *report.Report) {
			r.Delivery.AnnouncedHz, r.ObservedServerTickHz = nil, nil
		}, want: rundir.StatusUnevaluable, detail: "declare the rate the server sends state at"},
		{name: "no delivery figures", mutate: func(r *report.Report) { r.Delivery = nil }, want: rundir.StatusUnevaluable,
			detail: "report.delivery missing"},
		{name: "no client measured", mutate: func(r *report.Report) { r.Delivery.UpdatesPerS = nil }, want: rundir.StatusUnevaluable,
			detail: "report.delivery.updates_per_s missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Delivery = tc.policy
			r := healthyReport(healthyTick())
			if tc.mutate != nil {
				tc.mutate(r)
			}
			if tc.harness {
				r.ServiceIntervalMs.P99 = 200
			}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			c, ok := find(checks, "delivery")
			if !ok {
				t.Fatal("no delivery check")
			}
			if c.Status != tc.want || c.Level != gatetable.LevelHard || !strings.Contains(c.Detail, tc.detail) {
				t.Fatalf("delivery: %s %s (%s), want %s with %q", c.Status, c.Level, c.Detail, tc.want, tc.detail)
			}
			if tc.want != rundir.StatusPass && LegVerdict(checks, Facts{}) != rundir.VerdictFailed {
				t.Errorf("verdict %s, want failed", LegVerdict(checks, Facts{}))
			}
		})
	}
}
