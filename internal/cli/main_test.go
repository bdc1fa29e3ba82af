package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/promtest"
)

// TestMain makes this test binary double as the scalegate executable:
// testscript installs it in $PATH as "scalegate", and the gate runner starts
// `scalegate serve` and `scalegate swarm` through os.Executable, which is
// that same copy — so the scripts run the real product end to end.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"scalegate": func() { os.Exit(Main(os.Args[1:])) },
		"hog":       hog,
	})
}

// hog keeps one core busy for the seconds given (at most 120), or until
// interrupted, then exits 0: the neighbour a host-contention test starts
// beside its gate runs (`exec hog 60 &hog&` … `kill -INT hog`). It is the
// test binary's child, so it is outside the gate's process tree, as a
// neighbour on a shared runner is. Stopped when the script's runs are
// done, it neither outlives them on the suite's machine nor ends before
// the last one.
func hog() {
	secs, err := strconv.ParseFloat(os.Args[len(os.Args)-1], 64)
	if err != nil || secs <= 0 || secs > 120 {
		fmt.Fprintln(os.Stderr, "usage: hog SECONDS (0 < SECONDS ≤ 120)")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	n, why := 0, "time up"
	for time.Now().Before(end) {
		n++
		select {
		case <-stop:
			end, why = time.Time{}, "interrupted"
		default:
		}
	}
	fmt.Printf("hog: %d iterations, %s\n", n, why)
}

// TestScripts runs testdata/script/*.txtar: the CLI end to end, including
// real gate runs against the reference server with its fault knobs (the
// "gate bites" tests). Most real legs are 4 or 8 clients for 2-6 s; the
// longest hold 36 s (bite_slow_stretch). scriptGate sets how many scripts
// run at once.
func TestScripts(t *testing.T) {
	t.Cleanup(func() {
		if exampleBins.dir != "" {
			os.RemoveAll(exampleBins.dir)
		}
	})
	order := scriptOrder(t)
	gate := newScriptGate(t, order)
	defer gate.seal()
	testscript.RunT(gate.shim(t), testscript.Params{
		Files:               order,
		Deadline:            testDeadline(t),
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gatestatus":   cmdGateStatus,
			"waitfile":     cmdWaitFile,
			"waitmatch":    cmdWaitMatch,
			"noorphans":    cmdNoOrphans,
			"gone":         cmdGone,
			"mkflit":       cmdMkFlit,
			"killswarm":    cmdKillSwarm,
			"samerun":      cmdSameRun,
			"buildexample": cmdBuildExample,
			"jsonnum":      cmdJSONNum,
			"jsondelta":    cmdJSONDelta,
			"linewidth":    cmdLineWidth,
			"prometheus":   cmdPrometheus,
		},
	})
}

// longScripts are the scripts whose legs hold the longest (40-80 s each
// on the 2-core machine), started first: the scripts run several at a time
// (-parallel), and one of these started last would run on alone after the
// rest were done, adding its whole length to the suite's.
var longScripts = []string{
	"bite_host_contention", // alone, first: see aloneScripts
	"ab_self", "ab_busy", "bite_slow_stretch", "bite_slow_stretch_prometheus",
	"bite_recover", "bite_own_figure", "bite_congestion", "promql",
	"baseline_spread", "bite_server_cpu", "bite_baseline_regression",
	"bite_transport_overhead",
}

// aloneScripts run with no other script beside them: bite_host_contention
// starts a one-core hog, which beside other scripts' legs made the
// machine's other two-core load read 1.8-1.9 cores, and a neighbouring
// QUIC leg then ticked 3 % slower than its ENet pair, which
// bite_transport_overhead rightly calls inconclusive.
var aloneScripts = map[string]bool{"bite_host_contention": true}

// scriptOrder is every testdata/script/*.txtar, longScripts first (in
// their order) and the rest by name. A long script that no longer exists
// fails the suite, so the list cannot drift silently.
func scriptOrder(t *testing.T) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil || len(all) == 0 {
		t.Fatalf("no scripts under testdata/script: %v", err)
	}
	first := map[string]bool{}
	var order []string
	for _, name := range longScripts {
		p := filepath.Join("testdata", "script", name+".txtar")
		if !slices.Contains(all, p) {
			t.Fatalf("longScripts names %s, which is not a script (renamed or removed?)", p)
		}
		first[p] = true
		order = append(order, p)
	}
	for _, p := range all {
		if !first[p] {
			order = append(order, p)
		}
	}
	return order
}

// testDeadline is the test binary's -timeout deadline, which testscript.Run
// would pass on itself (RunT, which the gate needs, does not).
func testDeadline(t *testing.T) time.Time {
	d, _ := t.Deadline()
	return d
}

// scriptGate starts the scripts in scriptOrder's order, at most limit at
// once. Go releases parallel subtests in no set order, so its -parallel
// alone would start a long script last as often as first. The gate orders
// them only when Go lets every selected script through (-parallel at least
// their number): otherwise a script next in order could be waiting on
// Go's semaphore behind the ones the gate holds, so the gate then only
// caps their number.
//
// limit is $SCALEGATE_SCRIPTS_PARALLEL when set (scripts/test.sh sets it
// with a -parallel above the script count), else -parallel.
type scriptGate struct {
	rank              map[string]int // script name -> place in the order
	limit, goParallel int

	mu       sync.Mutex
	cond     *sync.Cond
	waiting  map[string]bool // selected by -run and not yet started
	running  int
	alone    bool // an aloneScripts script is running
	ordered  bool
	sealedUp bool
}

func newScriptGate(t *testing.T, order []string) *scriptGate {
	t.Helper()
	goParallel, err := strconv.Atoi(flag.Lookup("test.parallel").Value.String())
	if err != nil || goParallel < 1 {
		t.Fatalf("reading -test.parallel: %v", err)
	}
	g := &scriptGate{rank: map[string]int{}, limit: goParallel, goParallel: goParallel, waiting: map[string]bool{}}
	g.cond = sync.NewCond(&g.mu)
	if v := os.Getenv("SCALEGATE_SCRIPTS_PARALLEL"); v != "" {
		if g.limit, err = strconv.Atoi(v); err != nil || g.limit < 1 {
			t.Fatalf("SCALEGATE_SCRIPTS_PARALLEL=%q: want a whole number ≥ 1", v)
		}
	}
	for i, p := range order {
		g.rank[strings.TrimSuffix(filepath.Base(p), ".txtar")] = i
	}
	return g
}

// seal ends the selection: every script -run selected has registered (a
// subtest's body runs up to t.Parallel before its parent returns, and
// none is released before that).
func (g *scriptGate) seal() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ordered = g.goParallel >= len(g.waiting) && g.limit < g.goParallel
	g.sealedUp = true
	g.cond.Broadcast()
}

// enter blocks until name may start: a free slot (all of them for an
// aloneScripts script, none taken by one), and, when ordered, no selected
// script before it in the order still waiting.
func (g *scriptGate) enter(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for !g.mayStart(name) {
		g.cond.Wait()
	}
	delete(g.waiting, name)
	g.running++
	g.alone = aloneScripts[name]
	// The next in the order may have checked before name started.
	g.cond.Broadcast()
}

// mayStart is enter's condition, under g.mu.
func (g *scriptGate) mayStart(name string) bool {
	switch {
	case !g.sealedUp || g.alone || g.running >= g.limit:
		return false
	case aloneScripts[name] && g.running > 0:
		return false
	}
	return !g.ordered || g.first(name)
}

// first reports whether name is the earliest waiting script in the order.
func (g *scriptGate) first(name string) bool {
	for w := range g.waiting {
		if g.rank[w] < g.rank[name] {
			return false
		}
	}
	return true
}

func (g *scriptGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	g.alone = false
	g.cond.Broadcast()
}

// shim is t as testscript.RunT takes it, with each script's t.Parallel
// followed by the gate.
func (g *scriptGate) shim(t *testing.T) testscript.T { return gatedT{T: t, g: g} }

// gatedT is a *testing.T whose subtests register with the gate, and whose
// Parallel waits on it after Go's own semaphore.
type gatedT struct {
	*testing.T
	g       *scriptGate
	name    string
	entered *bool
}

func (t gatedT) Run(name string, f func(testscript.T)) {
	t.T.Run(name, func(st *testing.T) {
		t.g.mu.Lock()
		t.g.waiting[name] = true
		t.g.mu.Unlock()
		entered := false
		// A script that fails ends its goroutine (FailNow): the slot is
		// given back in a defer.
		defer func() {
			if entered {
				t.g.leave()
			}
		}()
		f(gatedT{T: st, g: t.g, name: name, entered: &entered})
	})
}

func (t gatedT) Parallel() {
	t.T.Parallel()
	t.g.enter(t.name)
	*t.entered = true
}

func (t gatedT) Verbose() bool { return testing.Verbose() }

// cmdLineWidth: linewidth N FILE... asserts that every line of each file
// ("stdout" and "stderr" are the last command's) is at most N runes (a
// terminal's columns, not bytes: "≤" is one column and three bytes).
func cmdLineWidth(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 {
		ts.Fatalf("usage: linewidth N FILE...")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("linewidth: %v", err)
	}
	over := 0
	for _, f := range args[1:] {
		for i, line := range strings.Split(ts.ReadFile(f), "\n") {
			if w := utf8.RuneCountInString(line); w > n {
				over++
				ts.Logf("%s:%d: %d runes: %s", f, i+1, w, line)
			}
		}
	}
	if (over > 0) != neg {
		ts.Fatalf("linewidth %d: %d line(s) over", n, over)
	}
}

// cmdGateStatus: gatestatus RUNDIR LEG GATE STATUS [LEVEL] asserts one
// check of summary.json; LEG "(run)" names the run's checks across legs.
func cmdGateStatus(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 {
		ts.Fatalf("usage: gatestatus RUNDIR LEG GATE STATUS [LEVEL]")
	}
	type check struct{ Gate, Status, Level, Detail string }
	var sum struct {
		Checks []check
		Legs   []struct {
			Leg    struct{ ID string }
			Checks []check
		}
	}
	b := ts.ReadFile(filepath.Join(args[0], "summary.json"))
	if err := json.Unmarshal([]byte(b), &sum); err != nil {
		ts.Fatalf("summary.json: %v", err)
	}
	found := args[1] == "(run)"
	checks := sum.Checks
	for _, l := range sum.Legs {
		if l.Leg.ID == args[1] {
			found, checks = true, l.Checks
		}
	}
	if !found {
		ts.Fatalf("no leg %s in %s/summary.json", args[1], args[0])
	}
	for _, c := range checks {
		if c.Gate != args[2] {
			continue
		}
		ok := c.Status == args[3] && (len(args) < 5 || c.Level == args[4])
		if ok == neg {
			ts.Fatalf("leg %s gate %s: status %s level %s (%s); want %s %v", args[1], args[2], c.Status, c.Level, c.Detail, args[3:], !neg)
		}
		ts.Logf("leg %s gate %s: %s %s — %s", args[1], args[2], c.Status, c.Level, c.Detail)
		return
	}
	ts.Fatalf("leg %s has no %s check", args[1], args[2])
}

// jsonNumber reads the number at a dot-separated PATH of a JSON file.
func jsonNumber(ts *testscript.TestScript, file, path string) float64 {
	var cur any
	if err := json.Unmarshal([]byte(ts.ReadFile(file)), &cur); err != nil {
		ts.Fatalf("%s: %v", file, err)
	}
	for _, k := range strings.Split(path, ".") {
		switch node := cur.(type) {
		case map[string]any:
			cur = node[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(node) {
				ts.Fatalf("%s: %s: %q is not an index of an array of %d", file, path, k, len(node))
			}
			cur = node[i]
		default:
			ts.Fatalf("%s: %s: %q is not in an object or array", file, path, k)
		}
	}
	v, ok := cur.(float64)
	if !ok {
		ts.Fatalf("%s: %s is %v, not a number", file, path, cur)
	}
	return v
}

// cmdJSONDelta: jsondelta FILE PATH_A PATH_B WANT TOL asserts that the
// number at PATH_B exceeds the one at PATH_A by WANT ± TOL (a figure
// measured in two stretches of one run: what an impairment added).
func cmdJSONDelta(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 5 {
		ts.Fatalf("usage: jsondelta FILE PATH_A PATH_B WANT TOL")
	}
	a, b := jsonNumber(ts, args[0], args[1]), jsonNumber(ts, args[0], args[2])
	want, err1 := strconv.ParseFloat(args[3], 64)
	tol, err2 := strconv.ParseFloat(args[4], 64)
	if err1 != nil || err2 != nil {
		ts.Fatalf("jsondelta: WANT %q, TOL %q: not numbers", args[3], args[4])
	}
	d := b - a
	holds := math.Abs(d-want) <= tol
	ts.Logf("%s: %s %g → %s %g: +%g (want %g ± %g)", args[0], args[1], a, args[2], b, d, want, tol)
	if holds == neg {
		ts.Fatalf("%s: %s − %s = %g, want %g ± %g (negated: %v)", args[0], args[2], args[1], d, want, tol, neg)
	}
}

// cmdJSONNum: jsonnum FILE PATH OP VALUE asserts a number of a JSON file:
// PATH is dot-separated object keys and array indices ("tick_ms.p99",
// "legs.0.server_log.bytes"), OP one of < <= > >=.
// A script shows with it what a file said beside what the gate read (the
// metrics file's own last window against the figure over the hold).
func cmdJSONNum(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: jsonnum FILE PATH OP VALUE")
	}
	v := jsonNumber(ts, args[0], args[1])
	want, err := strconv.ParseFloat(args[3], 64)
	if err != nil {
		ts.Fatalf("jsonnum: VALUE %q: %v", args[3], err)
	}
	var holds bool
	switch args[2] {
	case "<":
		holds = v < want
	case "<=":
		holds = v <= want
	case ">":
		holds = v > want
	case ">=":
		holds = v >= want
	default:
		ts.Fatalf("jsonnum: OP %q is not one of < <= > >=", args[2])
	}
	if holds == neg {
		ts.Fatalf("%s: %s = %g; want %s %s %g to be %v", args[0], args[1], v, args[1], args[2], want, !neg)
	}
	ts.Logf("%s: %s = %g", args[0], args[1], v)
}

// scriptWait bounds a script's waits: a gate run starts a whole leg
// before the awaited file or line can appear.
const scriptWait = 2 * livetest.Wait

// cmdWaitFile: waitfile PATH waits (at most scriptWait) for PATH to exist.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitfile PATH")
	}
	path := ts.MkAbs(args[0])
	if err := livetest.Poll(context.Background(), scriptWait, nil, livetest.Holds(path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})); err != nil {
		ts.Fatalf("waitfile: %v", err)
	}
}

// cmdWaitMatch: waitmatch PATH REGEXP waits (at most scriptWait) for a
// line of PATH to match REGEXP: the event a background command announces in its log
// (the swarm's first progress line says its clients are connected and its
// signal handler is in place), so a script never guesses with a sleep.
func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: waitmatch PATH REGEXP")
	}
	path := ts.MkAbs(args[0])
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("waitmatch: %v", err)
	}
	if err := livetest.Poll(context.Background(), scriptWait, nil, func() (bool, string) {
		b, _ := os.ReadFile(path)
		return re.Match(b), fmt.Sprintf("%s: no line matching %q; it holds:\n%s", path, args[1], b)
	}); err != nil {
		ts.Fatalf("waitmatch: %v", err)
	}
}

// cmdNoOrphans: noorphans DIR fails if any live process has DIR in its
// command line (every server and swarm of a run carries its run directory).
func cmdNoOrphans(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: noorphans DIR")
	}
	dir := ts.MkAbs(args[0])
	var left []string
	// Reaping is synchronous in the runner; the short bound (5 s) only
	// absorbs the kernel tearing down a process it already reported dead.
	err := livetest.Poll(context.Background(), 5*time.Second, nil, func() (bool, string) {
		left = processesMentioning(dir)
		return len(left) == 0, fmt.Sprintf("processes left behind: %v", left)
	})
	if err == nil {
		return
	}
	for _, p := range left {
		var pid int
		fmt.Sscan(p, &pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	ts.Fatalf("noorphans: %v", err)
}

// cmdGone: gone DURATION PIDFILE... fails unless every process whose pid
// a file holds is gone (or a zombie) within DURATION. It polls with that
// bound; it is an assertion with a deadline, not a synchronisation.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: gone DURATION PIDFILE...")
	}
	within, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("gone: %v", err)
	}
	var pids []int
	for _, f := range args[1:] {
		pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(f)))
		if err != nil {
			ts.Fatalf("gone: %s: %v", f, err)
		}
		pids = append(pids, pid)
	}
	var left []int
	err = livetest.Poll(context.Background(), within, nil, func() (bool, string) {
		left = left[:0]
		for _, pid := range pids {
			if processAlive(pid) {
				left = append(left, pid)
			}
		}
		return len(left) == 0, fmt.Sprintf("still alive: %v", left)
	})
	if err != nil {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		ts.Fatalf("gone: %v", err)
	}
}

// processAlive: pid exists and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), s) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// TestProcessesMentioning shows noorphans can fail: a live process whose
// command line carries the marker is found.
func TestProcessesMentioning(t *testing.T) {
	marker := t.TempDir() + "/run"
	// A loop, not a lone command: dash execs a lone last command in place,
	// which would replace the shell (and its marker argument) with sleep.
	cmd := exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Start returns once the child has begun its exec, which can be before
	// the kernel has set the new command line (/proc/PID/cmdline reads
	// empty for that instant, seen once on a loaded CI machine): look until
	// it shows, for at most 10 s.
	livetest.Eventually(t, livetest.Wait, livetest.Holds("the sleeping shell found by its marker", func() bool {
		return len(processesMentioning(marker)) > 0
	}))
}

// exampleBins caches the example game binaries the scripts build: each
// is built once per test binary, then copied into a script's $WORK/bin.
var exampleBins = struct {
	sync.Mutex
	dir  string
	done map[string]error
}{done: map[string]error{}}

// cmdBuildExample: buildexample GAME builds examples/GAME's server and bot
// (a team's own game and its bot built with the bot package) and puts
// them in $WORK/bin as GAME-server and GAME-bot.
func cmdBuildExample(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: buildexample GAME")
	}
	game := args[0]
	bin := ts.MkAbs("bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	for _, part := range []string{"server", "bot"} {
		built, err := buildExample(game, part)
		if err != nil {
			ts.Fatalf("build examples/%s/%s: %v", game, part, err)
		}
		b, err := os.ReadFile(built)
		if err != nil {
			ts.Fatalf("%v", err)
		}
		if err := os.WriteFile(filepath.Join(bin, game+"-"+part), b, 0o755); err != nil {
			ts.Fatalf("%v", err)
		}
	}
}

// buildExample builds one example binary once (go build, the build cache
// makes a rebuild cheap) and returns its path.
func buildExample(game, part string) (string, error) {
	exampleBins.Lock()
	defer exampleBins.Unlock()
	if exampleBins.dir == "" {
		dir, err := os.MkdirTemp("", "scalegate-examples-")
		if err != nil {
			return "", err
		}
		exampleBins.dir = dir
	}
	out := filepath.Join(exampleBins.dir, game+"-"+part)
	key := game + "/" + part
	if err, ok := exampleBins.done[key]; ok {
		return out, err
	}
	cmd := exec.Command("go", "build", "-o", out, "github.com/scalegate/scalegate/examples/"+game+"/"+part)
	b, err := cmd.CombinedOutput()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, b)
	}
	exampleBins.done[key] = err
	return out, err
}

// cmdPrometheus: prometheus TARGETSFILE starts a real Prometheus (Debian's,
// 1 s scrape interval, on loopback) that discovers its targets from
// TARGETSFILE (file_sd, the gate's server.metrics.targets_file), sets
// $PROMETHEUS_URL for the script and stops when the script ends.
func cmdPrometheus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: prometheus TARGETSFILE")
	}
	dir := ts.MkAbs("prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		ts.Fatalf("%v", err)
	}
	s, stop, err := promtest.Run(dir, promtest.Options{TargetsFile: ts.MkAbs(args[0])})
	if err != nil {
		ts.Fatalf("prometheus: %v", err)
	}
	ts.Defer(stop)
	ts.Setenv("PROMETHEUS_URL", s.URL)
}
