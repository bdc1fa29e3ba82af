package hostload

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// sec is the sample of the second that ends at t0+end s, with raw figures: other and own CPU
// seconds over a 1 s wall (NaN: missing), steal ticks of 100, pressure (NaN: missing).
func sec(end int, other, own float64, steal int, pressure float64) Sample {
	s := Sample{From: t0.Add(time.Duration(end-1) * time.Second), At: t0.Add(time.Duration(end) * time.Second), wall: 1, CPUs: 2}
	if math.IsNaN(other) {
		s.why[figOther] = "no /proc/stat"
	} else {
		s.otherCPU, s.OtherCores = other, ptr(max(0, other))
	}
	if math.IsNaN(own) {
		s.why[figOwn] = "no /proc"
	} else {
		s.ownCPU, s.OwnCores = own, ptr(own)
	}
	if steal < 0 {
		s.why[figSteal] = reasonNoSteal
	} else {
		s.stealTicks, s.totalTicks, s.StealPct = uint64(steal), 100, ptr(float64(steal))
	}
	if math.IsNaN(pressure) {
		s.why[figPressure] = reasonNoPSI
	} else {
		s.CPUPressureAvg10 = ptr(pressure)
	}
	return s
}

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestSeriesHost(t *testing.T) {
	nan := math.NaN()
	s := Series{CPUs: 2, Samples: []Sample{
		sec(1, 1.9, 0.1, 0, 10),   // ramp: outside the hold
		sec(2, 1.0, 1.0, 2, 20),   // hold
		sec(3, -0.02, 1.5, 4, 30), // hold: shown 0, summed raw
		sec(4, 0.3, 1.2, 0, 40),   // hold
		sec(5, nan, nan, -1, nan), // hold: nothing read
		sec(6, 1.5, 0.2, 50, 90),  // after the hold
	}}
	// The hold is [1.5 s, 5 s]: the samples whose midpoints (1.5, 2.5, 3.5, 4.5) lie in it.
	h := s.Host(t0, at(1.5), at(5))
	if h.HoldSamples != 4 || h.HoldFromS != 1.5 || h.HoldToS != 5 || h.CPUs != 2 {
		t.Fatalf("hold %d samples [%v, %v] cpus %d, want 4 [1.5, 5] 2", h.HoldSamples, h.HoldFromS, h.HoldToS, h.CPUs)
	}
	// (1.0 − 0.02 + 0.3) / 3 s: the negative second counts raw in the mean, 0 in the max.
	wantMM(t, "other_cores", h.OtherCores, 0.427, 1.0)
	wantMM(t, "own_cores", h.OwnCores, 1.233, 1.5)
	wantMM(t, "steal_pct", h.StealPct, 2, 4)
	wantMM(t, "cpu_pressure_avg10", h.CPUPressureAvg10, 30, 40)
	for _, k := range []string{"other_cores", "own_cores", "steal_pct", "cpu_pressure_avg10"} {
		if !strings.HasPrefix(h.Missing[k], "missing in 1 of 4 samples of the hold: ") {
			t.Errorf("missing[%s] = %q", k, h.Missing[k])
		}
	}
	if len(h.Series) != 6 || h.Series[2].TS != 3 || h.Series[2].OtherCores == nil || *h.Series[2].OtherCores != 0 ||
		h.Series[4].OtherCores != nil || h.Series[4].StealPct != nil {
		b, _ := json.Marshal(h.Series)
		t.Errorf("series %s", b)
	}
}

func TestSeriesHostAllMissing(t *testing.T) {
	nan := math.NaN()
	s := Series{Samples: []Sample{sec(1, nan, nan, -1, nan), sec(2, nan, nan, -1, nan)}}
	h := s.Host(t0, t0, at(2))
	if h.OtherCores != nil || h.OwnCores != nil || h.StealPct != nil || h.CPUPressureAvg10 != nil {
		t.Fatalf("figures from nothing: %+v", h)
	}
	want := map[string]string{"other_cores": "no /proc/stat", "own_cores": "no /proc", "steal_pct": reasonNoSteal, "cpu_pressure_avg10": reasonNoPSI}
	for k, w := range want {
		if h.Missing[k] != w {
			t.Errorf("missing[%s] = %q, want %q", k, h.Missing[k], w)
		}
	}
	// null, not 0, in JSON.
	b, _ := json.Marshal(h)
	for _, k := range []string{`"other_cores":null`, `"steal_pct":null`, `"cpu_pressure_avg10":null`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
}

func TestSeriesHostEmptyHold(t *testing.T) {
	s := Series{Samples: []Sample{sec(1, 0.1, 0.1, 0, 1)}}
	h := s.Host(t0, at(10), at(20))
	if h.HoldSamples != 0 || h.OtherCores != nil || h.Missing["other_cores"] != "no sample in the hold" {
		t.Fatalf("empty hold: %+v", h)
	}
	if len(h.Series) != 1 {
		t.Errorf("series %d points, want the leg's 1", len(h.Series))
	}
}

// TestSeriesHostWeighted: the hold mean is CPU-seconds over wall seconds, not a mean of
// per-second figures: a 2 s interval at 1 core and a 1 s interval at 0 cores are 2/3 core.
func TestSeriesHostWeighted(t *testing.T) {
	a := sec(2, 2.0, 0, 0, 0)
	a.From, a.wall = t0, 2
	a.OtherCores = ptr(1.0)
	b := sec(3, 0, 0, 0, 0)
	h := Series{Samples: []Sample{a, b}}.Host(t0, t0, at(3))
	wantMM(t, "other_cores", h.OtherCores, 0.667, 1)
}

func wantMM(t *testing.T, name string, got *report.MeanMax, mean, hi float64) {
	t.Helper()
	if got == nil {
		t.Errorf("%s missing, want mean %v max %v", name, mean, hi)
		return
	}
	if got.Mean != mean || got.Max != hi {
		t.Errorf("%s mean %v max %v, want %v %v", name, got.Mean, got.Max, mean, hi)
	}
}
