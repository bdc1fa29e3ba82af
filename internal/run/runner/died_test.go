package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// A server that dies mid-run ends the leg there: the wait stops the swarm
// at once, the leg is a launch failure, and the leg result and the report
// (which had no early end of its own) say when, relative to the swarm's
// start, and why.
func TestServerDeathIsTheLegsEarlyEnd(t *testing.T) {
	r := overrunLeg(t)
	r.zero = time.Now()
	server := startSleep(t, "server", r.res.Dir, "1")
	swarm := startSleep(t, "swarm", r.res.Dir, "60")
	r.waitSwarms(context.Background(), []*launcher.Process{swarm}, server, time.Minute)
	if !swarm.Exited() || r.serverGone.IsZero() {
		t.Fatalf("the wait did not end on the server's exit (swarm exited %v)", swarm.Exited())
	}
	r.recordDeath(server.ExitCode())
	r.facts.NotRun = "server exited"
	writeReport(t, r.report, &report.Report{SchemaVersion: report.ReportSchemaVersion, Transport: "enet",
		Clients: 2, ClientsConnected: 2, SnapshotsReceived: 100, Aborted: "interrupted"})
	r.stopServer(server)
	r.evaluate(context.Background())
	r.decide()
	lr := r.res
	if lr.Verdict != rundir.VerdictLaunchFailed {
		t.Fatalf("verdict %q", lr.Verdict)
	}
	if lr.AbortedAtS == nil || *lr.AbortedAtS < 0.9 || *lr.AbortedAtS > 30 || !strings.Contains(lr.AbortReason, "server exited (status 0) at") {
		t.Fatalf("aborted at %v: %q", lr.AbortedAtS, lr.AbortReason)
	}
	rep, err := report.ReadReport(r.report)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AbortedAtS == nil || *rep.AbortedAtS != *lr.AbortedAtS || rep.AbortGate != report.AbortServer || rep.AbortReason != lr.AbortReason {
		t.Fatalf("report abort %v %q %q", rep.AbortedAtS, rep.AbortGate, rep.AbortReason)
	}
	if c, ok := findCheck(lr.Checks, "abort"); !ok || c.Status != rundir.StatusFail {
		t.Fatalf("abort check %+v", c)
	}
}

// The swarm's own early end stays in its report; the leg result carries it.
func TestSwarmEarlyEndReachesTheLegResult(t *testing.T) {
	r := overrunLeg(t)
	at := 3.0
	writeReport(t, r.report, &report.Report{SchemaVersion: report.ReportSchemaVersion, Transport: "enet",
		Clients: 2, ClientsConnected: 2, SnapshotsReceived: 100, AbortedAtS: &at, AbortGate: "tick_hz_min", AbortReason: "tick_hz_min: under"})
	r.evaluate(context.Background())
	if r.res.AbortedAtS == nil || *r.res.AbortedAtS != 3 || r.res.AbortReason != "tick_hz_min: under" {
		t.Fatalf("leg result abort %v %q", r.res.AbortedAtS, r.res.AbortReason)
	}
}

func findCheck(cs []rundir.Check, gate string) (rundir.Check, bool) {
	for _, c := range cs {
		if c.Gate == gate {
			return c, true
		}
	}
	return rundir.Check{}, false
}
