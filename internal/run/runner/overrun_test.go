package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// startSleep starts `sleep S` as a launcher process the test stops at its
// end (a no-op when the code under test already stopped it).
func startSleep(t *testing.T, name, dir, seconds string) *launcher.Process {
	t.Helper()
	p, err := launcher.Start(context.Background(), launcher.Spec{Name: name, Path: "sleep", Args: []string{seconds},
		LogPath: filepath.Join(dir, name+".log"), Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func overrunLeg(t *testing.T) *legRun {
	t.Helper()
	dir := t.TempDir()
	p := &profile.Profile{Name: "t", Tier: "pr", Transport: "enet", Clients: 2, DurationS: 1, Patterns: []string{"weave"}, Gates: profile.Gates{}}
	return &legRun{o: Options{Profile: p}, leg: p.Legs()[0], res: &rundir.LegResult{Dir: dir},
		report: filepath.Join(dir, "report.json"), metrics: filepath.Join(dir, "server_metrics.json")}
}

// A swarm still running at its time limit is stopped, and the leg is a
// launch failure (exit 5) whether or not the swarm, stopped, left a report:
// never "gate failed", which would send the user looking for a server
// regression when the harness did not finish.
func TestSwarmOverrunIsLaunchFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		aborted bool // the swarm wrote its report, marked aborted, when stopped
	}{
		{"no report", false},
		{"aborted report", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := overrunLeg(t)
			server := startSleep(t, "server", r.res.Dir, "60")
			swarm := startSleep(t, "swarm", r.res.Dir, "60")
			start := time.Now()
			r.waitSwarms(context.Background(), []*launcher.Process{swarm}, server, 200*time.Millisecond)
			if !swarm.Exited() {
				t.Fatalf("swarm still running after waitSwarms returned (%s)", time.Since(start))
			}
			if r.facts.NotRun == "" || !strings.Contains(r.res.Error, "swarm still running 200ms after start") {
				t.Fatalf("not run %q, error %q", r.facts.NotRun, r.res.Error)
			}
			if tc.aborted {
				writeReport(t, r.report, &report.Report{SchemaVersion: report.ReportSchemaVersion, Transport: "enet",
					Clients: 2, ClientsConnected: 2, SnapshotsReceived: 100, Aborted: "interrupted"})
			}
			r.stopServer(server)
			r.evaluate(context.Background())
			r.decide()
			lr := *r.res
			if lr.Verdict != rundir.VerdictLaunchFailed {
				t.Fatalf("verdict %q, want %q (error %q)", lr.Verdict, rundir.VerdictLaunchFailed, lr.Error)
			}
			if got := gate.RunVerdict(&rundir.RunResult{Legs: []rundir.LegResult{lr}}); got != rundir.VerdictLaunchFailed {
				t.Fatalf("run verdict %q", got)
			}
		})
	}
}

// A swarm that ends within its limit is not an overrun.
func TestSwarmWithinLimitIsNotOverrun(t *testing.T) {
	r := overrunLeg(t)
	server := startSleep(t, "server", r.res.Dir, "60")
	swarm := startSleep(t, "swarm", r.res.Dir, "0")
	r.waitSwarms(context.Background(), []*launcher.Process{swarm}, server, time.Minute)
	if r.facts.NotRun != "" || r.res.Error != "" {
		t.Fatalf("not run %q, error %q", r.facts.NotRun, r.res.Error)
	}
}

func writeReport(t *testing.T, path string, r *report.Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
