package gatetable

import (
	"slices"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

func abortGate(t *testing.T, name string) Gate {
	t.Helper()
	g, ok := Lookup(name)
	if !ok {
		t.Fatalf("no gate %s", name)
	}
	return g
}

func f(v float64) *float64 { return &v }

// The gates that can end a leg early are exactly those with a per-second
// figure: the tick-Hz tripwire and the two byte ceilings.
func TestAbortable(t *testing.T) {
	if got, want := Abortable(), []string{"wire_kbs_max", "kbs_max", "tick_hz_min"}; !slices.Equal(got, want) {
		t.Fatalf("Abortable() = %v, want %v", got, want)
	}
}

func TestAbortRuleBound(t *testing.T) {
	for _, tc := range []struct {
		gate      string
		thr, m, v float64
		breach    bool
	}{
		{"tick_hz_min", 30, 20, 24, false}, // on the bound holds
		{"tick_hz_min", 30, 20, 23.9, true},
		{"tick_hz_min", 30, 0, 29.9, true},
		{"tick_hz_min", 30, 0, 30, false},
		{"kbs_max", 100, 20, 120, false},
		{"kbs_max", 100, 20, 120.1, true},
		{"wire_kbs_max", 150, 0, 150.5, true},
	} {
		r := AbortRule{Gate: abortGate(t, tc.gate), Threshold: tc.thr, AfterS: 3, MarginPct: tc.m}
		if got := r.Breaches(tc.v); got != tc.breach {
			t.Errorf("%s %g ±%g%%: %g breaches = %v, want %v (bound %g)", tc.gate, tc.thr, tc.m, tc.v, got, tc.breach, r.Bound())
		}
	}
}

func TestAbortRuleValidate(t *testing.T) {
	for _, tc := range []struct {
		r    AbortRule
		want string
	}{
		{AbortRule{Gate: abortGate(t, "entities_min"), Threshold: 1, AfterS: 3}, "entities_min cannot end a run early"},
		{AbortRule{Gate: abortGate(t, "tick_hz_min"), Threshold: 30, AfterS: 0}, "want at least 1 second"},
		{AbortRule{Gate: abortGate(t, "kbs_max"), Threshold: 30, AfterS: 2, MarginPct: -1}, "want 0..100"},
		{AbortRule{Gate: abortGate(t, "kbs_max"), Threshold: 30, AfterS: 2, MarginPct: 101}, "want 0..100"},
	} {
		if err := tc.r.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
	if err := (AbortRule{Gate: abortGate(t, "tick_hz_min"), Threshold: 30, AfterS: 1, MarginPct: 100}).Validate(); err != nil {
		t.Errorf("a good rule: %v", err)
	}
}

// A streak of breaching seconds ends the run at its AfterS-th second; a
// second that holds or has no figure starts the count again.
func TestAbortWatch(t *testing.T) {
	tick := AbortRule{Gate: abortGate(t, "tick_hz_min"), Threshold: 30, AfterS: 3, MarginPct: 20}
	kbs := AbortRule{Gate: abortGate(t, "kbs_max"), Threshold: 100, AfterS: 2, MarginPct: 20}
	wire := AbortRule{Gate: abortGate(t, "wire_kbs_max"), Threshold: 150, AfterS: 2, MarginPct: 0}
	hz := func(ts float64, v *float64) report.TimelinePoint { return report.TimelinePoint{TS: ts, TickHzMin: v} }
	for _, tc := range []struct {
		name   string
		rules  []AbortRule
		rows   []report.TimelinePoint
		gate   string
		at     float64
		reason string
	}{
		{"collapse", []AbortRule{tick}, []report.TimelinePoint{hz(1, f(60)), hz(2, f(16)), hz(3, f(15)), hz(4, f(17))},
			"tick_hz_min", 4, "17 Hz under 24 Hz (threshold 30 Hz −20 %) for 3 consecutive seconds (t=2.0–4.0 s; worst 15 Hz)"},
		{"a holding second restarts", []AbortRule{tick}, []report.TimelinePoint{hz(1, f(16)), hz(2, f(16)), hz(3, f(59)), hz(4, f(16)), hz(5, f(16))}, "", 0, ""},
		{"a missing second restarts", []AbortRule{tick}, []report.TimelinePoint{hz(1, f(16)), hz(2, f(16)), hz(3, nil), hz(4, f(16)), hz(5, f(16))}, "", 0, ""},
		{"within the margin", []AbortRule{tick}, []report.TimelinePoint{hz(1, f(25)), hz(2, f(25)), hz(3, f(25)), hz(4, f(25))}, "", 0, ""},
		{"payload over", []AbortRule{tick, kbs}, []report.TimelinePoint{
			{TS: 1, KBs: 130, KBsClients: 4}, {TS: 2, KBs: 0, KBsClients: 0}, {TS: 3, KBs: 130, KBsClients: 4}, {TS: 4, KBs: 140, KBsClients: 4}},
			"kbs_max", 4, "for 2 consecutive seconds (t=3.0–4.0 s; worst 140 KB/s)"},
		{"wire over", []AbortRule{wire}, []report.TimelinePoint{{TS: 1, TimelineServer: report.TimelineServer{WireKBsPerClient: f(151)}}, {TS: 2, TimelineServer: report.TimelineServer{WireKBsPerClient: f(160)}}},
			"wire_kbs_max", 2, "wire_kbs_max: wire KB/s per client 160 KB/s over 150 KB/s"},
		{"no rules", nil, []report.TimelinePoint{hz(1, f(0)), hz(2, f(0)), hz(3, f(0))}, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewAbortWatch(tc.rules)
			var got *Abort
			for _, p := range tc.rows {
				if got = w.Observe(p); got != nil {
					break
				}
			}
			switch {
			case tc.gate == "" && got != nil:
				t.Fatalf("aborted: %+v", got)
			case tc.gate == "":
			case got == nil:
				t.Fatal("no abort")
			case got.Gate != tc.gate || got.AtS != tc.at || !strings.Contains(got.Reason, tc.reason):
				t.Fatalf("abort %+v, want %s at %g with %q", got, tc.gate, tc.at, tc.reason)
			}
		})
	}
	var nilWatch *AbortWatch
	if nilWatch.Observe(hz(1, f(0))) != nil {
		t.Fatal("a nil watch aborted")
	}
}

func TestHarnessShort(t *testing.T) {
	lim := &report.FDLimit{Soft: 256, Hard: 256, SoftBefore: 256, Needed: 1064, Clients: 1000, PerClient: 1, Spare: 64}
	for _, tc := range []struct {
		name    string
		r       report.Report
		why     []string
		excused bool
	}{
		{"none", report.Report{Clients: 8, HarnessErrors: &report.HarnessErrors{FDLimit: lim}}, nil, false},
		{"no block", report.Report{Clients: 8}, nil, false},
		{"fd limit", report.Report{Clients: 1000, ClientsNeverConnected: 800,
			HarnessErrors: &report.HarnessErrors{Socket: 800, FDExhausted: 800, FirstError: "enet: dial: too many open files", FDLimit: lim}},
			[]string{"could not start 800 of 1000 clients", "ulimit -n 256 < 1064 needed for 1000 clients (hard limit 256)", "first error: enet: dial: too many open files"}, true},
		{"server refused too", report.Report{Clients: 10, ClientsRefused: 2, HarnessErrors: &report.HarnessErrors{Dial: 1}},
			[]string{"could not start 1 of 10 clients itself (0 no socket, 1 connect not issued)"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why, ok := HarnessShort(&tc.r)
			if ok != tc.excused || (len(tc.why) == 0) != (why == "") {
				t.Fatalf("HarnessShort = %q, %v", why, ok)
			}
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("%q lacks %q", why, w)
				}
			}
		})
	}
}
