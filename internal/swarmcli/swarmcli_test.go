package swarmcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/exitcode"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/swarm"
)

// TestImpairmentRefusedOnWebSocket: the relay impairs datagrams; a run
// that asks it to impair a WebSocket (TCP) is refused before it connects,
// with the reason, never run unimpaired.
func TestImpairmentRefusedOnWebSocket(t *testing.T) {
	for _, tr := range []string{"ws", "wss"} {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		err := Scalegate.Run(context.Background(), env, []string{"127.0.0.1", "1", "--transport", tr,
			"--duration", "3", "--degrade-start", "1", "--degrade-duration", "1", "--degrade-loss", "0.1"})
		if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "TCP") {
			t.Errorf("%s: %v (exit %d), want a usage error naming TCP", tr, err, exitcode.Of(err))
		}
		if strings.Contains(out.String(), "admitted") {
			t.Errorf("%s: the run went ahead: %s", tr, out.String())
		}
	}
}

// TestOutcomeIsTheLoadRule: the swarm's exit status reads the gate's own
// "load happened" rule, so a run whose clients were admitted but received
// no snapshot exits 1 (it once exited 0 while its report said passed:
// false), as do a run that admitted nobody and one that lost clients; an
// aborted run is interrupted; a failed assert is 1.
func TestOutcomeIsTheLoadRule(t *testing.T) {
	healthy := func() *report.Report {
		hz, gap := 60.0, 40.0
		return &report.Report{Clients: 4, ClientsConnected: 4, SnapshotsReceived: 400,
			Delivery: &report.Delivery{AnnouncedHz: &hz, UpdatesPerS: &report.MinMeanMax{Min: 59, Mean: 59.8, Max: 60}, Clients: 4, MaxGapMs: &gap}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*report.Report)
		failed int
		want   exitcode.Code
		msg    string
	}{
		{"healthy", nil, 0, exitcode.OK, ""},
		{"no snapshots", func(r *report.Report) { r.SnapshotsReceived = 0 }, 0, exitcode.GateFailed, "no client received a snapshot"},
		{"nobody admitted", func(r *report.Report) { r.ClientsConnected = 0 }, 0, exitcode.GateFailed, "no client was admitted"},
		{"clients lost", func(r *report.Report) { r.ClientsDisconnected = 1 }, 0, exitcode.GateFailed, "1 of 4 admitted clients lost mid-run"},
		{"assert failed", nil, 1, exitcode.GateFailed, ""},
		{"starved", func(r *report.Report) { r.Delivery.UpdatesPerS.Min = 0.2 }, 0, exitcode.GateFailed, "delivery: client ? received 0.20 state updates/s"},
		{"silent", func(r *report.Report) {
			r.ClientsDisconnected, r.DisconnectedByReason = 4, map[string]int{"silent": 4}
		}, 0, exitcode.GateFailed, "lost mid-run"},
		{"no delivery figures", func(r *report.Report) { r.Delivery = nil }, 0, exitcode.GateFailed, "report.delivery missing"},
		{"aborted", func(r *report.Report) { r.Aborted = "interrupted" }, 0, exitcode.Interrupted, "interrupted"},
	} {
		r := healthy()
		if tc.mutate != nil {
			tc.mutate(r)
		}
		err := outcome(&swarm.Result{Report: r}, tc.failed)
		if got := exitcode.Of(err); got != tc.want {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, got, err, tc.want)
		}
		if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: error %v lacks %q", tc.name, err, tc.msg)
		}
	}
}
