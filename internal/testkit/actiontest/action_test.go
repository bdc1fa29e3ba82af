package actiontest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/cli"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../../.."

// scalegateBin is this test binary under the name "scalegate" (TestMain):
// run as that name it is the real scalegate, so the action script runs the
// product end to end without a separate build.
var scalegateBin string

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "scalegate" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "actiontest-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scalegateBin, err = installSelf(filepath.Join(dir, "scalegate"))
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, "actiontest:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// installSelf links (or copies) the test binary to path. A link or copy,
// not a symlink: scalegate starts `serve` and `swarm` through
// os.Executable, which must keep the name "scalegate".
func installSelf(path string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if err := os.Link(self, path); err == nil {
		return path, nil
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return "", err
	}
	return path, dst.Close()
}

// Profiles of the team repository the action runs in. The harness bounds
// are generous because tests share a loaded 2-core machine (the starved
// profile is starved far past them, as in internal/cli's inconclusive.txtar).
var teamProfiles = map[string]string{
	"ok.cue": `name:        "ok"
description: "reference server, 4 clients, healthy"
transport:   "enet"
clients:     4
duration_s:  3
patterns: ["weave"]
baselined: false
harness: {service_interval_p99_max_periods: 15, service_interval_mean_max_pct: 50}
gates: {
	admission: {}
	wire_kbs_max: threshold: 150
}
`,
	// 8 ms of CPU per client per swarm iteration: every client is serviced
	// about every 32 ms instead of every 16.7 ms, so the mean bound trips.
	"starved.cue": `name:        "starved"
description: "a harness spinning 8 ms per client per iteration"
transport:   "enet"
clients:     4
duration_s:  4
patterns: ["weave"]
baselined: false
harness: {service_interval_p99_max_periods: 4, service_interval_mean_max_pct: 10, test_busy_us_per_client: 8000}
gates: admission: {}
`,
	"long.cue": `name:        "long"
description: "a long leg, interrupted"
transport:   "enet"
clients:     4
duration_s:  120
patterns: ["weave"]
baselined: false
harness: {service_interval_p99_max_periods: 15, service_interval_mean_max_pct: 50}
gates: admission: {}
`,
}

// step is one run of scripts/action.sh as an action step.
type step struct {
	inputs map[string]string // INPUT_<NAME> without the prefix: "PROFILE" → "ok"
	env    map[string]string // further GITHUB_* variables (GITHUB_REF, GITHUB_EVENT_NAME)
	bin    string            // SCALEGATE_BIN; empty builds from the repository
	// signalWhen, if set, is polled while the step runs; when it returns
	// true the step gets SIGINT, as the runner sends on cancellation.
	signalWhen func() bool
}

// stepResult is what the step left.
type stepResult struct {
	ws      string // GITHUB_WORKSPACE
	code    int
	outputs map[string]string
	summary string // GITHUB_STEP_SUMMARY
	path    string // GITHUB_PATH
	log     string // stdout + stderr
}

// newWorkspace is a team repository holding gates/ with teamProfiles.
func newWorkspace(t *testing.T) string {
	t.Helper()
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "gates"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range teamProfiles {
		if err := os.WriteFile(filepath.Join(ws, "gates", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

// run runs the action script in ws with the GITHUB_* files in a fresh
// temp directory, bounded by a deadline (a hang is a failure, not a wait).
func (s step) run(t *testing.T, ws string) stepResult {
	t.Helper()
	gh := t.TempDir()
	files := map[string]string{}
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_PATH"} {
		files[f] = filepath.Join(gh, strings.ToLower(f))
		if err := os.WriteFile(files[f], nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join(repoRoot, "scripts", "action.sh"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(cleanEnv(), "GITHUB_WORKSPACE="+ws, "RUNNER_TEMP="+filepath.Join(gh, "runner-temp"))
	for f, p := range files {
		cmd.Env = append(cmd.Env, f+"="+p)
	}
	if s.bin != "" {
		cmd.Env = append(cmd.Env, "SCALEGATE_BIN="+s.bin)
	}
	for k, v := range s.inputs {
		cmd.Env = append(cmd.Env, "INPUT_"+k+"="+v)
	}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	if s.signalWhen != nil {
		waitFor(t, done, s.signalWhen)
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	err = <-done
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok || ctx.Err() != nil {
			t.Fatalf("action.sh: %v (deadline: %v)\n%s", err, ctx.Err(), out.String())
		}
		code = ee.ExitCode()
	}
	r := stepResult{ws: ws, code: code, outputs: readOutputs(t, files["GITHUB_OUTPUT"]),
		summary: readFile(t, files["GITHUB_STEP_SUMMARY"]), path: readFile(t, files["GITHUB_PATH"]), log: out.String()}
	t.Logf("action.sh exit %d; outputs %v; job summary (%d bytes):\n%s", r.code, r.outputs, len(r.summary), r.summary)
	return r
}

// waitFor polls cond for up to 2 minutes, failing early if the step ended
// first.
func waitFor(t *testing.T, done <-chan error, cond func() bool) {
	t.Helper()
	var ended bool
	var stepErr error
	livetest.Eventually(t, 2*time.Minute, func() (bool, string) {
		if cond() {
			return true, ""
		}
		select {
		case stepErr = <-done:
			ended = true // stop polling: reported below
			return true, ""
		default:
		}
		return false, "the moment to interrupt the step did not come"
	})
	if ended {
		t.Fatalf("the step ended (%v) before the moment to interrupt it", stepErr)
	}
}

// cleanEnv is the test's environment without anything a runner or an
// outer action run may have set, so each step sees only what it is given.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GITHUB_") || strings.HasPrefix(kv, "INPUT_") ||
			strings.HasPrefix(kv, "RUNNER_") || strings.HasPrefix(kv, "SCALEGATE_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readOutputs parses GITHUB_OUTPUT's name=value lines; a name given twice
// fails the test (the step would have said two things).
func readOutputs(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(readFile(t, path)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("GITHUB_OUTPUT line %q is not name=value", sc.Text())
		}
		if _, dup := out[k]; dup {
			t.Fatalf("GITHUB_OUTPUT sets %s twice", k)
		}
		out[k] = v
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// summaryJSON is what the tests read of a run's summary.json.
type summaryJSON struct {
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	Profile  struct {
		Name    string `json:"name"`
		Clients int    `json:"clients"`
	} `json:"profile"`
	Legs []struct {
		Checks []struct {
			Gate, Status, Level string
		} `json:"checks"`
	} `json:"legs"`
}

// checkRun checks what every step that ran scalegate to the end leaves:
// outputs that agree with summary.json and the exit code, a run directory
// under the workspace named like scalegate's own, and the job summary
// holding that run's summary.md exactly once.
func checkRun(t *testing.T, r stepResult, profile string, wantCode int, wantVerdict string) summaryJSON {
	t.Helper()
	if got := r.outputs["exit-code"]; got != strconv.Itoa(wantCode) {
		t.Errorf("output exit-code = %q, want %d", got, wantCode)
	}
	if got := r.outputs["verdict"]; got != wantVerdict {
		t.Errorf("output verdict = %q, want %q", got, wantVerdict)
	}
	dir := r.outputs["run-dir"]
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(r.ws, "results", profile)) + `_\d{8}T\d{6}Z(-\d+)?$`)
	if !re.MatchString(dir) {
		t.Fatalf("output run-dir = %q, want %s/results/%s_<UTC timestamp>\n%s", dir, r.ws, profile, r.log)
	}
	if got, want := r.outputs["artifact-name"], "scalegate-"+filepath.Base(dir); got != want {
		t.Errorf("output artifact-name = %q, want %q", got, want)
	}
	for _, f := range []string{"summary.md", "summary.json", "metadata.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}
	var sum summaryJSON
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "summary.json"))), &sum); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Verdict != wantVerdict || sum.ExitCode != wantCode {
		t.Errorf("summary.json: verdict %q exit %d, want %q %d", sum.Verdict, sum.ExitCode, wantVerdict, wantCode)
	}
	md := readFile(t, filepath.Join(dir, "summary.md"))
	if !strings.HasPrefix(r.summary, md) {
		t.Errorf("the job summary does not start with the run's summary.md\njob summary:\n%s", r.summary)
	}
	if n := strings.Count(r.summary, "## scalegate: profile `"+profile+"`"); n != 1 {
		t.Errorf("the job summary holds the run %d times, want once:\n%s", n, r.summary)
	}
	if r.path == "" {
		t.Error("GITHUB_PATH: the scalegate directory was not added")
	}
	return sum
}

// TestBuildsAndPasses runs the action as GitHub does with no version:
// scalegate is built from this checkout, then gates a healthy run. The
// step passes and says so in its outputs and the job summary; the JUnit
// file asked for is written and named.
func TestBuildsAndPasses(t *testing.T) {
	ws := newWorkspace(t)
	r := step{inputs: map[string]string{"PROFILE": "ok", "PROFILES": "gates", "JUNIT": "out/junit.xml"}}.run(t, ws)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.log)
	}
	checkRun(t, r, "ok", 0, "passed")
	if !strings.Contains(r.log, "building scalegate from ") {
		t.Errorf("the step did not build scalegate:\n%s", r.log)
	}
	bin := filepath.Join(strings.TrimSpace(r.path), "scalegate")
	if !strings.HasSuffix(strings.TrimSpace(r.path), filepath.Join("scalegate-action", "bin")) {
		t.Errorf("GITHUB_PATH = %q, want the built binary's directory", r.path)
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "scalegate ") {
		t.Errorf("%s version: %v\n%s", bin, err, out)
	}
	junit := filepath.Join(ws, "out", "junit.xml")
	if r.outputs["junit"] != junit {
		t.Errorf("output junit = %q, want %q", r.outputs["junit"], junit)
	}
	if !strings.Contains(readFile(t, junit), `<testsuite name="ok/weave"`) {
		t.Errorf("%s is not the run's JUnit", junit)
	}
	if !strings.Contains(r.summary, "PASSED") && !strings.Contains(r.summary, "passed") {
		t.Errorf("the job summary does not say passed:\n%s", r.summary)
	}
}

// TestGateFails: a hard gate that cannot hold (set through the set input,
// whose lines are trimmed and whose blank lines are skipped) fails the
// step with exit 1, and the summary names the gate.
func TestGateFails(t *testing.T) {
	ws := newWorkspace(t)
	r := step{bin: scalegateBin, inputs: map[string]string{"PROFILE": "ok", "PROFILES": "gates",
		"SET": "  gates.wire_kbs_max.threshold=0.001 \n\nclients=3\n"}}.run(t, ws)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.log)
	}
	sum := checkRun(t, r, "ok", 1, "failed")
	var meta struct {
		Overrides []string `json:"overrides"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(r.outputs["run-dir"], "metadata.json"))), &meta); err != nil {
		t.Fatal(err)
	}
	want := []string{"gates.wire_kbs_max.threshold=0.001", "clients=3"}
	if sum.Profile.Clients != 3 || strings.Join(meta.Overrides, " ") != strings.Join(want, " ") {
		t.Errorf("clients %d, overrides %q; want %q applied", sum.Profile.Clients, meta.Overrides, want)
	}
	failed := false
	for _, l := range sum.Legs {
		for _, c := range l.Checks {
			if c.Gate == "wire_kbs_max" && c.Status == "fail" && c.Level == "hard" {
				failed = true
			}
		}
	}
	if !failed {
		t.Errorf("summary.json has no hard wire_kbs_max fail: %+v", sum.Legs)
	}
	if !strings.Contains(r.summary, "wire_kbs_max") {
		t.Errorf("the job summary does not name the failed gate:\n%s", r.summary)
	}
}

// TestInconclusive: a harness-bound run fails the step with exit 3 unless
// allow-inconclusive is true, which passes the step but keeps exit-code 3
// and the verdict, and says so in the summary.
func TestInconclusive(t *testing.T) {
	for _, tc := range []struct {
		allow    string
		wantExit int
	}{
		{"false", 3},
		{"true", 0},
	} {
		t.Run("allow-inconclusive="+tc.allow, func(t *testing.T) {
			ws := newWorkspace(t)
			r := step{bin: scalegateBin, inputs: map[string]string{"PROFILE": "starved", "PROFILES": "gates",
				"ALLOW_INCONCLUSIVE": tc.allow}}.run(t, ws)
			if r.code != tc.wantExit {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.wantExit, r.log)
			}
			checkRun(t, r, "starved", 3, "inconclusive")
			allowed := strings.Contains(r.summary, "allow-inconclusive: true")
			if allowed != (tc.allow == "true") {
				t.Errorf("allow-inconclusive %s: summary notes it = %v:\n%s", tc.allow, allowed, r.summary)
			}
		})
	}
}

// TestInterrupted: the runner cancels a job by sending SIGINT to the step's
// process; the script passes it on, scalegate stops the leg in stages and
// the step ends with 130, its outputs and summary written, nothing left
// running.
func TestInterrupted(t *testing.T) {
	ws := newWorkspace(t)
	connected := regexp.MustCompile(`(?m)^swarm +[0-9]+s +connected [1-9]`)
	midRun := func() bool {
		logs, _ := filepath.Glob(filepath.Join(ws, "results", "long_*", "weave", "swarm.log"))
		for _, l := range logs {
			if b, err := os.ReadFile(l); err == nil && connected.Match(b) {
				return true
			}
		}
		return false
	}
	r := step{bin: scalegateBin, inputs: map[string]string{"PROFILE": "long", "PROFILES": "gates"}, signalWhen: midRun}.run(t, ws)
	if r.code != 130 {
		t.Fatalf("exit %d, want 130\n%s", r.code, r.log)
	}
	checkRun(t, r, "long", 130, "interrupted")
	// scalegate reaps its processes before it exits; the short bound (5 s)
	// only absorbs the kernel tearing down one it already reported dead.
	livetest.Eventually(t, 5*time.Second, func() (bool, string) {
		left := processesMentioning(r.outputs["run-dir"])
		return len(left) == 0, fmt.Sprintf("processes left behind: %v", left)
	})
}

// TestNotRun: steps that end before scalegate writes a run directory still
// write their outputs (exit-code, verdict, an empty run-dir) and say why in
// the job summary: an invalid profile (scalegate's exit 4, its positioned
// error quoted), and the action's own input checks (exit 2, nothing run).
func TestNotRun(t *testing.T) {
	for _, tc := range []struct {
		name        string
		inputs      map[string]string
		file        string // written into gates/ first
		wantCode    int
		wantVerdict string
		wantSummary string
	}{
		{"invalid profile", map[string]string{"PROFILE": "bad", "PROFILES": "gates"},
			"name: \"bad\"\ndescription: \"typo\"\ntransport: \"enet\"\nclients: 4\nclinets: 5\nduration_s: 3\npatterns: [\"weave\"]\nbaselined: false\ngates: admission: {}\n",
			4, "invalid profile", "clinets"},
		{"unknown profile", map[string]string{"PROFILE": "nope", "PROFILES": "gates"}, "", 4, "invalid profile", "nope"},
		{"no profile", map[string]string{"PROFILES": "gates"}, "", 2, "usage", "input profile is required"},
		{"bad boolean", map[string]string{"PROFILE": "ok", "STRICT": "yes"}, "", 2, "usage", `input strict: "yes" is not true or false`},
		{"bad working directory", map[string]string{"PROFILE": "ok", "WORKING_DIRECTORY": "nowhere"}, "", 2, "usage", "working-directory: nowhere"},
		{"bad profile name", map[string]string{"PROFILE": "../ok"}, "", 2, "usage", `"../ok" is not a profile name`},
		{"version with a path", map[string]string{"PROFILE": "ok", "VERSION": "../../etc"}, "", 2, "usage", `input version: "../../etc" is not a release version`},
		{"version with a shell line", map[string]string{"PROFILE": "ok", "VERSION": "v1.0.0; rm -rf /"}, "", 2, "usage", `input version: "v1.0.0; rm -rf /" is not a release version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(t)
			if tc.file != "" {
				if err := os.WriteFile(filepath.Join(ws, "gates", "bad.cue"), []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := step{bin: scalegateBin, inputs: tc.inputs}.run(t, ws)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d\n%s", r.code, tc.wantCode, r.log)
			}
			want := map[string]string{"exit-code": strconv.Itoa(tc.wantCode), "verdict": tc.wantVerdict, "run-dir": ""}
			for k, v := range want {
				if got, ok := r.outputs[k]; !ok || got != v {
					t.Errorf("output %s = %q (set: %v), want %q", k, got, ok, v)
				}
			}
			if !strings.Contains(r.summary, tc.wantSummary) {
				t.Errorf("the job summary does not say %q:\n%s", tc.wantSummary, r.summary)
			}
			if entries, _ := os.ReadDir(filepath.Join(ws, "results")); len(entries) > 0 {
				t.Errorf("results/ holds %d entries after a run that never started", len(entries))
			}
		})
	}
}

// processesMentioning lists live processes whose command line contains s
// (every server and swarm of a run carries its run directory).
func processesMentioning(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if cl := string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})); strings.Contains(cl, s) {
			out = append(out, fmt.Sprintf("%d %s", pid, cl))
		}
	}
	return out
}
