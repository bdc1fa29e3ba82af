package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// An early end fails the check it names, even when that gate's figure
// over the shortened run holds; softened exactly as that gate's own
// failure would be (a tick-Hz abort on a busy host is inconclusive, a byte
// one is not); a gate the leg does not check still fails the leg.
func TestEarlyAbortFailsTheGateItNames(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gate    string
		busy    bool
		check   string
		status  rundir.Status
		verdict rundir.Verdict
	}{
		{"tick-Hz", "tick_hz_min", false, "tick_hz_min", rundir.StatusFail, rundir.VerdictFailed},
		{"tick-Hz on a busy host", "tick_hz_min", true, "tick_hz_min", rundir.StatusInconclusive, rundir.VerdictInconclusive},
		{"payload on a busy host", "kbs_max", true, "kbs_max", rundir.StatusFail, rundir.VerdictFailed},
		{"wire", "wire_kbs_max", false, "wire_kbs_max", rundir.StatusFail, rundir.VerdictFailed},
		{"every client ended", report.AbortLoad, false, "load", rundir.StatusFail, rundir.VerdictFailed},
		{"a gate the leg lacks", "despawns_min", false, "abort", rundir.StatusFail, rundir.VerdictFailed},
		{"the server", report.AbortServer, true, "abort", rundir.StatusFail, rundir.VerdictFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Host.MaxOtherCores = 0.25
			r := healthyReport(healthyTick())
			at := 4.0
			r.AbortedAtS, r.AbortGate, r.AbortReason = &at, tc.gate, tc.gate+": beyond its bound for 3 consecutive seconds"
			if tc.busy {
				r.Host = hostBlock(0.9)
			}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			c, ok := find(checks, tc.check)
			if !ok {
				t.Fatalf("no %s check in %+v", tc.check, checks)
			}
			if c.Status != tc.status || !strings.Contains(c.Detail, tc.gate+": beyond its bound") {
				t.Errorf("%s: %s (%s), want %s with the reason", tc.check, c.Status, c.Detail, tc.status)
			}
			if v := LegVerdict(checks, Facts{}); v != tc.verdict {
				t.Errorf("verdict %s, want %s", v, tc.verdict)
			}
			// Nothing else was failed by the abort.
			for _, o := range checks {
				if o.Gate != tc.check && o.Failed() {
					t.Errorf("%s failed too: %s", o.Gate, o.Detail)
				}
			}
		})
	}
}

// Clients the swarm could not start itself: the leg is inconclusive,
// naming the limit; the load and admission failures on the partial load
// are softened with the rest. When the server refused a client too, the
// refusal stands.
func TestHarnessErrorsMakeTheLegInconclusive(t *testing.T) {
	lim := &report.FDLimit{Soft: 256, Hard: 256, SoftBefore: 256, Needed: 1064, Clients: 1000, PerClient: 1, Spare: 64}
	short := func(r *report.Report) {
		r.Clients, r.ClientsConnected, r.ClientsNeverConnected = 1000, 190, 810
		r.NeverConnectedByReason = map[string]int{"dial_error": 810}
		r.HarnessErrors = &report.HarnessErrors{Socket: 810, FDExhausted: 810, FirstError: "enet: dial: too many open files", FDLimit: lim}
	}
	for _, tc := range []struct {
		name    string
		mut     func(*report.Report)
		verdict rundir.Verdict
		status  map[string]rundir.Status
	}{
		{"descriptor limit", short, rundir.VerdictInconclusive, map[string]rundir.Status{
			"harness_errors": rundir.StatusInconclusive, "admission": rundir.StatusInconclusive}},
		{"nobody started", func(r *report.Report) {
			short(r)
			r.ClientsConnected, r.ClientsNeverConnected, r.SnapshotsReceived, r.HarnessErrors.Socket, r.HarnessErrors.FDExhausted = 0, 1000, 0, 1000, 1000
		}, rundir.VerdictInconclusive, map[string]rundir.Status{"harness_errors": rundir.StatusInconclusive, "load": rundir.StatusInconclusive}},
		{"the server refused too", func(r *report.Report) {
			short(r)
			r.ClientsConnected, r.ClientsRefused = 189, 1
		}, rundir.VerdictFailed, map[string]rundir.Status{"harness_errors": rundir.StatusRecorded, "admission": rundir.StatusFail}},
		{"a wrong transport stays hard", func(r *report.Report) { short(r); r.ServerTransport = "quic" }, rundir.VerdictFailed,
			map[string]rundir.Status{"transport": rundir.StatusFail}},
		{"none", func(r *report.Report) { r.HarnessErrors = &report.HarnessErrors{FDLimit: lim} }, rundir.VerdictPassed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			r := healthyReport(healthyTick())
			tc.mut(r)
			p.Clients = r.Clients
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			if v := LegVerdict(checks, Facts{}); v != tc.verdict {
				t.Errorf("verdict %s, want %s: %+v", v, tc.verdict, checks)
			}
			for gate, want := range tc.status {
				if c, _ := find(checks, gate); c.Status != want {
					t.Errorf("%s: %s (%s), want %s", gate, c.Status, c.Detail, want)
				}
			}
			if c, ok := find(checks, "harness_errors"); ok && !strings.Contains(c.Detail, "ulimit -n 256 < 1064 needed for 1000 clients") {
				t.Errorf("harness_errors detail %q does not name the limit", c.Detail)
			}
			if _, ok := find(checks, "harness_errors"); ok == (tc.verdict == rundir.VerdictPassed) {
				t.Errorf("harness_errors check present: %v", ok)
			}
		})
	}
}
