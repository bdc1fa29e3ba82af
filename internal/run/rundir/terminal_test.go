package rundir

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func num(v float64) *float64 { return &v }

// failingRun is a pr-like run whose checks are every kind the gate makes,
// with the longest texts they carry in practice (the figures and details
// are those of real runs): built-in, declared, phase-scoped, baseline
// (judged, missing, advisory), harness, host, schema, swarm assert and
// history checks, passing, failing, unevaluable, inconclusive and
// recorded; legs that ended early, failed to launch, ran in shards with a
// capped log, or did not run; a capacity curve and the run's notes.
func failingRun() *RunResult {
	at := 5.0
	missingBase := `no baseline key "pr/weave" in /home/runner/work/mygame/mygame/baselines/scale-gate-baseline.json: run ` +
		"`scalegate --profile pr --update-baseline` on a passing run to record it"
	weave := []Check{
		{Gate: "transport", Title: "transport identity", Level: LevelHard, Threshold: "= enet", MeasuredText: "swarm enet, Welcome enet, server enet", Status: StatusPass},
		{Gate: "load", Title: "load happened (clients admitted and held, snapshots received)", Level: LevelHard, Threshold: "≥ 1 admitted, 0 lost mid-run, ≥ 1 snapshot",
			MeasuredText: "64/64 admitted, 0 lost, 73908 snapshots; swarm lived 20.4 s; server counted 74095 inputs", Status: StatusPass},
		{Gate: "delivery", Title: "state delivered (per-client rate and gaps, none lost to silence)", Level: LevelHard,
			Threshold:    "0 lost to silence, every client ≥ 0.05 × 60 Hz = 3 updates/s, gaps ≤ 4000 ms",
			MeasuredText: "slowest 2.10 updates/s (3.50 % of 60 Hz, announced by the server), mean 57.80, longest gap 4420 ms, 0 lost to silence", Status: StatusFail,
			Detail: "client 17 received 2.10 state updates/s over its joined time, under 0.05 × 60 Hz (announced by the server) = 3; client 17 went 4420 ms without a state update, over 4000 ms: the admitted clients did not keep receiving state"},
		{Gate: "admission", Title: "admission", Level: LevelHard, Threshold: "64/64 connected, 0 refused, 0 dropped", Measured: num(60),
			MeasuredText: "60/64 connected, 4 refused, 0 dropped", Status: StatusFail, Detail: "4 refused map[server full:4]"},
		{Gate: "wire_kbs_max", Title: "wire KB/s per client", Level: LevelHard, Threshold: "≤ 75 KB/s", Measured: num(80.1), MeasuredText: "80.10 KB/s", Status: StatusFail,
			Window: "the hold (t=2.0–20.1 s)", Detail: "server_tick.wire_out_kbs_per_client = 80.10 KB/s, must be ≤ 75 KB/s"},
		{Gate: "tick_hz_min", Title: "observed server tick-Hz (min)", Level: LevelHard, Threshold: "≥ 30 Hz", Measured: num(21.4), MeasuredText: "21.40 Hz", Status: StatusInconclusive,
			Detail: "report.observed_server_tick_hz.min = 21.40 Hz, must be ≥ 30 Hz; the host was busy with other work: a timing failure here cannot be attributed to the server"},
		{Gate: "tick_ms_p99_max", Title: "server tick ms p99", Level: LevelAdvisory, Threshold: "≤ 16.60 ms", Measured: num(21.3), MeasuredText: "21.30 ms", Status: StatusFail,
			Detail: "server_tick.tick_ms.p99 = 21.30 ms, must be ≤ 16.60 ms; advisory in the pr tier (machine-dependent); hard in the strict tier (--strict)"},
		{Gate: "tick_hz_min", Title: "observed server tick-Hz (min) [after]", Level: LevelHard, Threshold: "≥ 30 Hz", MeasuredText: "missing", Status: StatusUnevaluable, Phase: "after",
			Detail: `phase "after": report.phases[after] missing: the swarm wrote no phase of that name (its phases: before, during)`},
		{Gate: "entities_min", Title: "server entities", Level: LevelHard, Threshold: "≥ 576", Measured: num(576), MeasuredText: "576", Status: StatusPass,
			Window: "lowest of 20 readings over the hold (t=2.0–20.1 s)"},
		{Gate: "baseline_kbs", Title: "payload KB/s vs baseline", Level: LevelHard, Threshold: "≤ baseline +10%", Measured: num(71.53), MeasuredText: "71.53",
			Baseline: "missing", Status: StatusUnevaluable, Detail: missingBase},
		{Gate: "baseline_wire_kbs", Title: "wire KB/s vs baseline", Level: LevelHard,
			Threshold: "≤ 79.80 (median 72.55 of 5 runs + max(10 % = 7.25, 5 × σ̂ 0.00 = 0.01, worst run +0.00))", Measured: num(80.1), MeasuredText: "80.10",
			Baseline: "72.55 (+10.4%, +2543.1 σ̂; median of 5 runs on vm)", Status: StatusFail,
			Detail: "+10.4% over baseline: wire bytes moved; fix it, or if intended regenerate with --update-baseline (the limit's margin 7.25 was set by the tolerance term)"},
		{Gate: "baseline_input_latency_p95_ms", Title: "input latency p95 vs baseline", Level: LevelAdvisory,
			Threshold: "≤ 19.53 (median 17.75 of 5 runs + max(10 % = 1.78, 5 × σ̂ 0.05 = 0.24, worst run +0.10))", Measured: num(18.04), MeasuredText: "18.04",
			Baseline: "17.75 (+1.6%, +6.1 σ̂; median of 5 runs on vm)", Status: StatusPass,
			Detail: "advisory in the pr tier (machine-dependent); hard in the strict tier (--strict)"},
		{Gate: "harness", Title: "per-client service interval (harness-bound?)", Level: LevelHard,
			Threshold: "p99 ≤ 33.33 ms (2 periods), mean ≤ 16.83 ms (period +1 %)", MeasuredText: "p99 18.49 ms, mean 16.67 ms", Status: StatusPass},
		{Gate: "host", Title: "host contention (other processes' CPU over the hold)", Level: LevelAdvisory, Threshold: "others ≤ 0.25 cores", Measured: num(1.78),
			MeasuredText: "others 1.78 cores (max 1.80), steal 0.0 %, pressure 68.9", Status: StatusRecorded,
			Detail: "host busy: other processes used 1.78 cores on average over the hold (limit 0.25)"},
		{Gate: "swarm_assert", Title: "swarm assert-max-wire-kbs", Level: LevelHard, Threshold: "75", Measured: num(80.1), MeasuredText: "80.1", Status: StatusFail,
			Detail: "the swarm's own assert failed; server_tick.wire_out_kbs_per_client = 80.1 > 75"},
		{Gate: "report_schema", Title: "report matches schema #Report", Level: LevelHard, Threshold: "valid", MeasuredText: "invalid", Status: StatusFail,
			Detail: strings.Repeat("report.json: /clients_per_pattern/weave: expected integer, but got number; ", 12)},
	}
	return &RunResult{
		Profile: &profile.Profile{Name: "pr", Transport: "enet", Clients: 64, DurationS: 20},
		Tier:    "pr", Dir: "/home/runner/work/mygame/mygame/results/pr_20260417T101112Z", Verdict: VerdictFailed,
		Legs: []LegResult{
			{Leg: profile.Leg{ID: "weave", Pattern: "weave"}, Verdict: VerdictFailed, Checks: weave},
			{Leg: profile.Leg{ID: "aggressive", Pattern: "aggressive"}, Verdict: VerdictFailed, AbortedAtS: &at,
				AbortReason: "tick_hz_min: observed server tick-Hz (min) 20.00 Hz under 24 Hz (threshold 30 Hz −20 %) for 3 consecutive seconds",
				Checks: []Check{{Gate: "abort", Title: "run took its duration", Level: LevelHard, Threshold: "not ended early", MeasuredText: "ended at 5.0 s", Status: StatusFail,
					Detail: "tick_hz_min: observed server tick-Hz (min) 20.00 Hz under 24 Hz (threshold 30 Hz −20 %) for 3 consecutive seconds"}}},
			{Leg: profile.Leg{ID: "idle", Pattern: "idle"}, Verdict: VerdictLaunchFailed,
				Error: "swarm crashed (exit 2): panic: runtime error: argument of cgo function has Go pointer to unpinned Go pointer; see /home/runner/work/mygame/mygame/results/pr_20260417T101112Z/idle/swarm.log"},
			{Leg: profile.Leg{ID: "mix", Pattern: "mix"}, Verdict: VerdictPassed, Shards: 4,
				ServerLog: &LogSummary{Bytes: 52e6, Lines: 400000, LinesPerS: 20000, KeptBytes: 1e6, CapBytes: 1e6, Truncated: true},
				Checks: []Check{{Gate: "host", Title: "host contention (other processes' CPU over the hold)", Level: LevelAdvisory, Threshold: "others ≤ 0.25 cores",
					MeasuredText: "others 0.02 cores (max 0.10)", Status: StatusRecorded, Detail: "host quiet: other processes used 0.02 cores on average over the hold (limit 0.25)"}}},
			{Leg: profile.Leg{ID: "weave_b1400", Pattern: "weave"}, Verdict: VerdictNotRun},
		},
		Checks: []Check{
			{Gate: "history", Title: "history: pr/weave", Level: LevelHard, Threshold: "≤ 10 % worse than the reference level across a change point (p 0.01)", MeasuredText: "13 run(s) of class d2c68c24", Status: StatusFail,
				Detail: "wire_kbs_max: 12.97 → 25.52 KB/s (+96.8 % worse, limit 10 %) since 01feedc0de over 1 change point(s): 12feedc0de..unknown +96.8 %"},
			{Gate: "transport_overhead_kbs_max", Title: "QUIC − ENet wire KB/s per client [weave]", Level: LevelHard, Threshold: "≤ 10 KB/s", Measured: num(4.2),
				MeasuredText: "4.20 KB/s", Status: StatusInconclusive,
				Detail: "the two servers did not keep the same rate (more than 2 % apart), so their wire rates are not the same payload; wire per client: quic 76.50, enet 72.30 KB/s (payload quic 71.50, enet 71.53 KB/s; observed tick-Hz mean quic 55.10, enet 59.80)"},
		},
		Capacity:     []CapacityCurve{{Group: "weave", Verdict: "knee at 192 clients: tick_hz_min, wire_kbs_max, admission (last count that held: 160); the harness limit at 224 clients"}},
		HistoryNote:  "judged against /home/runner/work/mygame/mygame/.scalegate-history (read-only: nothing appended)",
		BaselineNote: "baseline not updated: not every leg passed; /home/runner/work/mygame/mygame/baselines/scale-gate-baseline.json left unchanged",
	}
}

// passingRun is the pr run of 2026-04-17 as it passed: every check
// passes or is recorded.
func passingRun() *RunResult {
	r := failingRun()
	r.Verdict, r.Checks, r.Capacity, r.HistoryNote, r.BaselineNote = VerdictPassed, nil, nil, "", ""
	var checks []Check
	for _, c := range r.Legs[0].Checks {
		if c.Status == StatusPass || c.Status == StatusRecorded {
			checks = append(checks, c)
		}
	}
	r.Legs = []LegResult{{Leg: profile.Leg{ID: "weave", Pattern: "weave"}, Verdict: VerdictPassed, Checks: checks}}
	return r
}

// TestTerminalFitsAndSays: every line of the terminal result is at most
// TermWidth runes, whatever the checks carry, and the result still says
// what matters: one status-first line per check, the reasons under the
// checks that did not pass only, admission's sentence once, a bound as a
// true statement, and where the text cut to fit is whole.
func TestTerminalFitsAndSays(t *testing.T) {
	cases := []struct {
		name          string
		run           *RunResult
		want, notWant []string
	}{
		{name: "failing", run: failingRun(),
			want: []string{
				"leg weave: FAILED\n  PASS          transport    ",
				"\n  FAIL          admission                       60/64 connected, 4 refused, 0 dropped\n      4 refused map[server full:4]\n",
				"  FAIL          wire_kbs_max                    80.10 KB/s > 75 KB/s\n      server_tick.wire_out_kbs_per_client = 80.10 KB/s, must be ≤ 75 KB/s\n",
				"  INCONCLUSIVE  tick_hz_min                     21.40 Hz < 30 Hz\n",
				"  FAIL          tick_ms_p99_max                 advisory: 21.30 ms > 16.60 ms\n",
				"  UNEVALUABLE   tick_hz_min [after]             missing (want ≥ 30 Hz)\n",
				"  PASS          entities_min                    576 ≥ 576\n",
				"  FAIL          baseline_wire_kbs               80.10 > 79.80, baseline 72.55 (+10.4%)\n",
				"  PASS          baseline_input_latency_p95_ms   18.04 ≤ 19.53, baseline 17.75 (+1.6%)\n  PASS          harness ",
				"  RECORDED      host                            others 1.78 cores (…), steal 0.0 %, pressure 68.9\n      host busy: other processes used 1.78 cores",
				"  FAIL          swarm assert-max-wire-kbs       80.1\n",
				"leg aggressive: FAILED (ended early at 5.0 s)\n  ended early at 5.0 s: tick_hz_min: observed server tick-Hz (min) 20.00 Hz under 24 Hz (threshold\n      30 Hz −20 %) for 3 consecutive seconds\n  FAIL          abort ",
				"leg idle: LAUNCH FAILURE — swarm crashed (exit 2): panic: runtime error: argument of cgo function\n    has Go pointer",
				"leg mix: PASSED (4 swarm shards, merged)\n  server.log capped at 1.0 MB: the server wrote 52.0 MB (20000 lines/s); 51.0 MB left out\n  RECORDED      host  ",
				"leg weave_b1400: NOT RUN\nrun checks (across legs):\n  FAIL          history [pr/weave]              13 run(s) of class d2c68c24\n      wire_kbs_max: 12.97 → 25.52 KB/s (+96.8 % worse, limit 10 %) since 01feedc0de",
				"  INCONCLUSIVE  transport_overhead_kbs_max [weave]  4.20 KB/s ≤ 10 KB/s\n",
				"capacity weave: knee at 192 clients: tick_hz_min, wire_kbs_max, admission (last count that held:\n    160)",
				"scalegate: profile pr (pr tier): FAILED; artifacts in\n    /home/runner/work/mygame/mygame/results/pr_20260417T101112Z\n",
				"scalegate: history: judged against /home/runner/work/mygame/mygame/.scalegate-history (read-only:\n",
				"\nscalegate: … marks text cut to fit: summary.md and report.html have it whole (--wide: the table)\n",
			},
			notWant: []string{
				// admission's threshold is the sentence its measured text
				// repeats: printed once, not under both.
				"0 dropped, 64/64 connected", "(want 64/64",
				// a passing check's detail (a tier note) is no reason.
				"advisory in the pr tier (machine-dependent); hard",
				// a quiet host is context only beside a check that did
				// not pass; leg mix passed.
				"host quiet",
				// the schema error's detail is capped, not 12 lines long.
				strings.Repeat("report.json: /clients_per_pattern/weave: expected integer, but got number; ", 2),
			}},
		{name: "passing", run: passingRun(),
			want: []string{"leg weave: PASSED\n  PASS      transport                      swarm enet, Welcome enet, server enet\n",
				"  PASS      load                           64/64 admitted, 0 lost, 73908 snapshots; …\n",
				"  RECORDED  host                           others 1.78 cores (max 1.80), steal 0.0 %, pressure 68.9\n",
				"\nscalegate: … marks text cut to fit"},
			// no reasons: the host's note is context only beside a check
			// that did not pass.
			notWant: []string{"host busy", "\n      "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTerminal(&b, tc.run); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if n := utf8.RuneCountInString(line); n > TermWidth {
					t.Errorf("line %d is %d runes wide (at most %d): %q", i+1, n, TermWidth, line)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("the output has %q", w)
				}
			}
			checkStatusFirst(t, tc.run, out)
			golden(t, filepath.Join("testdata", "terminal_"+tc.name+".golden"), out)
		})
	}
}

// checkStatusFirst: every check has its own line, status first, then its
// name.
func checkStatusFirst(t *testing.T, r *RunResult, out string) {
	t.Helper()
	all := append([]Check(nil), r.Checks...)
	for _, l := range r.Legs {
		all = append(all, l.Checks...)
	}
	lines := strings.Split(out, "\n")
	for _, c := range all {
		found := false
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == strings.ToUpper(string(c.Status)) && strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), f[0])), checkName(c)) {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %s %s", strings.ToUpper(string(c.Status)), checkName(c))
		}
	}
}

// golden compares out with the file at path (go test -update rewrites it).
func golden(t *testing.T, path, out string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if string(want) != out {
		t.Errorf("the output differs from %s (go test -update rewrites it):\n%s", path, out)
	}
}

// TestComparison: the bound beside a measured value is a true statement
// of the value as shown, or "(want …)" when it cannot be one; a threshold
// of several clauses or none gets no bound.
func TestComparison(t *testing.T) {
	cases := []struct {
		name      string
		threshold string
		measured  *float64
		text      string
		want      string
	}{
		{"at most, holds", "≤ 150 KB/s", num(72.3), "72.30 KB/s", "≤ 150 KB/s"},
		{"at most, breached", "≤ 75 KB/s", num(80.1), "80.10 KB/s", "> 75 KB/s"},
		{"at least, holds on the bound", "≥ 576", num(576), "576", "≥ 576"},
		{"at least, breached", "≥ 30 Hz", num(21.4), "21.40 Hz", "< 30 Hz"},
		{"rounded onto the bound", "≥ 30 Hz", num(29.999), "30 Hz", "(want ≥ 30 Hz)"},
		{"baseline limit with its explanation", "≤ 79.80 (median 72.55 of 5 runs + max(10 % = 7.25))", num(80.1), "80.10", "> 79.80"},
		{"nothing measured", "≤ 16.60 ms", nil, "missing", "(want ≤ 16.60 ms)"},
		{"not a number", "= enet", nil, "swarm enet", ""},
		{"a sentence", "≥ 1 admitted, 0 lost mid-run, ≥ 1 snapshot", num(64), "64/64 admitted", ""},
		{"no operator", "64/64 connected, 0 refused, 0 dropped", num(64), "64/64 connected", ""},
		{"a relative bound", "≤ baseline +10%", num(71.5), "71.53", ""},
		{"two clauses", "p99 ≤ 33.33 ms (2 periods), mean ≤ 16.83 ms (period +1 %)", num(18), "p99 18.49 ms", ""},
		{"empty", "", num(1), "1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Check{Gate: "g", Level: gatetable.LevelHard, Threshold: tc.threshold, Measured: tc.measured, MeasuredText: tc.text}
			if got := comparison(c); got != tc.want {
				t.Errorf("comparison = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWrap: word wrap to TermWidth with its indents; a word longer than a
// line is cut with an ellipsis (and says so) in reasons, never in the
// run's notes, whose words are paths to open.
func TestWrap(t *testing.T) {
	long := "/" + strings.Repeat("d", 120)
	cases := []struct {
		name    string
		s       string
		cutLong bool
		want    []string
		cut     bool
	}{
		{"short", "a b c", true, []string{"  a b c"}, false},
		{"wraps at a space", strings.Repeat("word ", 30), true,
			[]string{"  " + strings.TrimSpace(strings.Repeat("word ", 19)), "      " + strings.TrimSpace(strings.Repeat("word ", 11))}, false},
		{"cuts a long word", "in " + long + " end", true, []string{"  in", "      " + long[:93] + "…", "      end"}, true},
		{"keeps a long path whole", "in " + long + " end", false, []string{"  in", "      " + long, "      end"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := wrap(tc.s, "  ", "      ", tc.cutLong)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || cut != tc.cut {
				t.Errorf("wrap = %q (cut %v), want %q (cut %v)", got, cut, tc.want, tc.cut)
			}
		})
	}
}
