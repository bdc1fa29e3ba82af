package baseline

import (
	"encoding/json"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// runLeg is one passing leg's result with the given figures.
func runLeg(t *testing.T, id string, kbs, wire, latencyP95 float64) rundir.LegResult {
	t.Helper()
	tick, err := json.Marshal(map[string]any{"wire_out_kbs_per_client": wire, "wire_peers": 8})
	if err != nil {
		t.Fatal(err)
	}
	r := &report.Report{DownstreamKBsPerClient: &report.MeanMax{Mean: kbs, Max: kbs}, ServerTick: tick}
	if latencyP95 > 0 {
		r.InputLatencyMs = &report.Percentiles{P50: latencyP95 / 2, P95: latencyP95, P99: latencyP95, Max: latencyP95}
		r.InputsAcked = 100
	}
	return rundir.LegResult{Leg: profile.Leg{ID: id}, Report: r}
}

// TestTimingFigureNeedsRuns: input latency p95 is recorded only from
// MinRuns or more runs, as a spread; a single-run update records the
// bandwidth figures and leaves it out (one run has no spread to judge a
// timing figure by), and runs that disagree on having it refuse the update.
func TestTimingFigureNeedsRuns(t *testing.T) {
	var one Entry
	if err := recordEntry([]rundir.LegResult{runLeg(t, "w", 60, 61, 15)}, nil, &one); err != nil {
		t.Fatal(err)
	}
	if _, ok := one.Reference(FigureInputLatencyP95); ok {
		t.Errorf("a single-run entry recorded %s: %+v", FigureInputLatencyP95, one)
	}
	if one.KBs != 60 || one.WireKBs != 61 {
		t.Errorf("single run: kbs %v wire %v, want 60 61", one.KBs, one.WireKBs)
	}

	var three Entry
	legs := []rundir.LegResult{runLeg(t, "w1", 60, 61, 15.2), runLeg(t, "w2", 60, 61, 15.9), runLeg(t, "w3", 60, 61, 15.4)}
	if err := recordEntry(legs, nil, &three); err != nil {
		t.Fatal(err)
	}
	ref, ok := three.Reference(FigureInputLatencyP95)
	if !ok || ref.Spread == nil || ref.Value != 15.4 || ref.Spread.N != 3 {
		t.Errorf("3 runs: reference %+v (recorded %v), want the median 15.4 of 3 samples", ref, ok)
	}

	var mixed Entry
	legs[1] = runLeg(t, "w2", 60, 61, 0)
	if err := recordEntry(legs, nil, &mixed); err == nil {
		t.Errorf("runs with and without input latency were recorded: %+v", mixed)
	}

	var none Entry
	legs = []rundir.LegResult{runLeg(t, "w1", 60, 61, 0), runLeg(t, "w2", 60, 61, 0), runLeg(t, "w3", 60, 61, 0)}
	if err := recordEntry(legs, nil, &none); err != nil {
		t.Fatalf("a v1.0 server's runs (no input latency): %v", err)
	}
	if _, ok := none.Reference(FigureInputLatencyP95); ok {
		t.Errorf("recorded input latency that no run measured")
	}
}
