package swarmcli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/swarm"
	_ "github.com/scalegate/scalegate/internal/load/transport/ws" // registers "ws" and "wss": swarmcli itself links no transport
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// TestUnlinkedTransportSaysWhatToLink: a --transport the binary does not
// link is a usage error naming what it can speak and, when the command
// says (a bot: Missing), what to add; it is never run on another.
func TestUnlinkedTransportSaysWhatToLink(t *testing.T) {
	link := func(name string) string {
		if name == "nope" {
			return "import the nope package"
		}
		return ""
	}
	for _, tc := range []struct {
		name      string
		missing   func(string) string
		transport string
		want      []string
		not       string
	}{
		{"with a hint", link, "nope", []string{`transport "nope" is not available in this build`, "[ws wss]", ": import the nope package"}, ""},
		{"hint says nothing", link, "other", []string{`transport "other" is not available`}, "import"},
		{"no hint", nil, "nope", []string{`transport "nope" is not available`}, "import"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
			cmd := Command{Name: "tinybot", Missing: tc.missing}
			err := cmd.Run(context.Background(), env, []string{"127.0.0.1", "1", "--transport", tc.transport, "--duration", "1"})
			if exitcode.Of(err) != exitcode.Usage || err == nil {
				t.Fatalf("%v (exit %d), want a usage error", err, exitcode.Of(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("%q says %q", err, tc.not)
			}
		})
	}
}

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
		// An early end on a breach is a failure of the gate it names.
		{"ended early", func(r *report.Report) {
			r.AbortedAtS, r.AbortGate, r.AbortReason = ptr(4.0), "tick_hz_min", "tick_hz_min: 3 s under 24 Hz"
		}, 0,
			exitcode.GateFailed, "ended early at 4.0s: tick_hz_min: 3 s under 24 Hz"},
		{"every client ended", func(r *report.Report) {
			r.ClientsConnected, r.ClientsRefused = 0, 4
			r.AbortedAtS, r.AbortGate, r.AbortReason = ptr(0.5), report.AbortLoad, "every client ended by 0.5s"
		}, 0, exitcode.GateFailed, "no client was admitted (refused 4"},
		// The harness failing to start clients is inconclusive, even with
		// the asserts and the load failing for it; not when the server also
		// refused clients.
		{"harness short", func(r *report.Report) {
			r.ClientsConnected, r.ClientsNeverConnected = 1, 3
			r.HarnessErrors = &report.HarnessErrors{Socket: 3, FDExhausted: 3, FDLimit: &report.FDLimit{Soft: 5, Hard: 5, Needed: 68, Clients: 4, PerClient: 1, Spare: 64}}
		}, 1, exitcode.Inconclusive, "ulimit -n 5 < 68 needed for 4 clients"},
		{"harness short and refused", func(r *report.Report) {
			r.ClientsConnected, r.ClientsNeverConnected, r.ClientsRefused = 2, 1, 1
			r.HarnessErrors = &report.HarnessErrors{Socket: 1}
		}, 1, exitcode.GateFailed, ""},
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

func ptr[T any](v T) *T { return &v }

// --abort-on-breach: GATE:AFTER_S[:MARGIN_PCT] on a gate that can end a
// run, beside its assert (whose threshold it watches).
func TestAbortOnBreachFlag(t *testing.T) {
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
	f, err := Scalegate.Parse(env, []string{"127.0.0.1", "7777", "--assert-min-tick-hz", "30", "--assert-max-kbs", "80",
		"--abort-on-breach", "tick_hz_min:3", "--abort-on-breach", "kbs_max:2:0"})
	if err != nil {
		t.Fatal(err)
	}
	if a := f.Cfg.Abort; len(a) != 2 || a[0].Gate.Name != "tick_hz_min" || a[0].Threshold != 30 || a[0].AfterS != 3 || a[0].MarginPct != 20 ||
		a[1].Gate.Name != "kbs_max" || a[1].Threshold != 80 || a[1].AfterS != 2 || a[1].MarginPct != 0 {
		t.Fatalf("rules %+v", a)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--abort-on-breach", "tick_hz_min:3"}, "needs --assert-min-tick-hz"},
		{[]string{"--assert-min-entities", "3", "--abort-on-breach", "entities_min:3"}, "entities_min cannot end a run early"},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "tick_hz_min"}, "want GATE:AFTER_S[:MARGIN_PCT]"},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "tick_hz_min:1.5"}, "not a whole number"},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "tick_hz_min:0"}, "want at least 1 second"},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "tick_hz_min:3:x"}, "MARGIN_PCT \"x\""},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "nope:3"}, "GATE one of wire_kbs_max, kbs_max, tick_hz_min"},
	} {
		_, err := Scalegate.Parse(env, append([]string{"127.0.0.1", "7777"}, tc.args...))
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want a usage error with %q", tc.args, err, exitcode.Of(err), tc.want)
		}
	}
}

// --server-figures: the profile's own figures, the source this swarm reads
// of each kept for the monitor; a gate on one can end a run early with its
// threshold in the --abort-on-breach value (it has no assert).
func TestServerFiguresFlag(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"physics_ms": {"unit": "ms", "better": "lower",
		"file": {"histogram": "cumulative.phase_ms.integrate_ms"},
		"prometheus": {"histogram": "scalegate_phase_duration_seconds", "labels": {"phase": "integrate"}, "scale": 1000}}}`)
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
	f, err := Scalegate.Parse(env, []string{"127.0.0.1", "7777", "--server-metrics", "m.json", "--server-figures", good,
		"--abort-on-breach", "physics_ms_p99_max:2:20:4"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Cfg.OwnFile["physics_ms"].Histogram != "cumulative.phase_ms.integrate_ms" || f.Cfg.OwnPrometheus != nil {
		t.Errorf("file source: own %+v, prometheus %+v", f.Cfg.OwnFile, f.Cfg.OwnPrometheus)
	}
	if a := f.Cfg.Abort; len(a) != 1 || a[0].Gate.Name != "physics_ms_p99_max" || a[0].Threshold != 4 || a[0].AfterS != 2 {
		t.Errorf("abort rules %+v", a)
	}
	f, err = Scalegate.Parse(env, []string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://127.0.0.1:9/metrics", "--server-figures", good})
	if err != nil {
		t.Fatal(err)
	}
	if f.Cfg.OwnPrometheus["physics_ms"].Histogram != "scalegate_phase_duration_seconds" || f.Cfg.OwnFile != nil {
		t.Errorf("prometheus source: own %+v, file %+v", f.Cfg.OwnPrometheus, f.Cfg.OwnFile)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server-figures", write("unknown.json", `{"x_ms": {"unit": "ms", "better": "lower", "fle": {}}}`)}, `unknown field "fle"`},
		{[]string{"--server-figures", write("nofile.json", `{"x_ms": {"unit": "ms", "better": "lower", "prometheus": {"gauge": "x"}}}`)}, "figures.x_ms: declares no file source"},
		{[]string{"--server-figures", good, "--abort-on-breach", "physics_ms_p99_max:2:20"}, "OWN_GATE:AFTER_S:MARGIN_PCT:THRESHOLD"},
		{[]string{"--server-figures", good, "--abort-on-breach", "physics_ms_p99_max:2:20:x"}, `THRESHOLD "x"`},
		{[]string{"--assert-min-tick-hz", "30", "--abort-on-breach", "tick_hz_min:3:20:30"}, "want GATE:AFTER_S[:MARGIN_PCT]"},
	} {
		_, err := Scalegate.Parse(env, append([]string{"127.0.0.1", "7777", "--server-metrics", "m.json"}, tc.args...))
		if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v (exit %d), want a usage error with %q", tc.args, err, exitcode.Of(err), tc.want)
		}
	}
}
