// Command swarmcost measures what QUIC clients cost the swarm process. It
// reports goroutines, CPU per client-tick and RSS per client, with one UDP
// socket (quic-go Transport) per client versus several clients per socket,
// and through scalegate's QUIC host ("host" stack) versus quic-go used
// directly ("bare" stack, the floor any quic-go client pays; see bare.go).
//
//	go run ./tools/swarmcost -clients 64,128 -per-socket 1,16 -duration 10s
//	GOMAXPROCS=1 taskset -c 1 swarmcost -stack host,bare -clients 128 -per-socket 1 -server-cpu 0
//
// Each leg starts a QUIC echo-free load server as a subprocess of this
// program (so its CPU is not counted in the client's), connects N clients,
// and drives them the way the swarm does: one owner goroutine, 60 Hz, every
// client sends a 25-byte Input datagram and services its host each tick,
// while the server sends every client a snapshot-sized datagram each tick.
// Figures go to stdout, one line per leg; -json writes them too. Loopback
// only.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/quic"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

const tickHz = 60

func main() {
	serve := flag.Bool("serve", false, "run the load server (used by the measuring process)")
	clients := flag.String("clients", "64,128", "comma-separated client counts")
	perSocket := flag.String("per-socket", "1,16", "comma-separated clients per UDP socket (1: a socket per client)")
	duration := flag.Duration("duration", 10*time.Second, "measured window per leg")
	snapshot := flag.Int("snapshot", 600, "snapshot bytes the server sends each client each tick")
	jsonOut := flag.String("json", "", "also write the results as JSON to this file")
	repeat := flag.Int("repeat", 1, "run the whole set of legs this many times, interleaved (a shared machine drifts)")
	one := flag.Bool("one", false, "run a single leg in this process and print it as JSON (used by the orchestrator)")
	stacks := flag.String("stack", "host", "comma-separated client stacks: host (scalegate's QUIC host) or bare (quic-go directly; socket per client only, so bare legs run only where -per-socket is 1)")
	serverCPU := flag.Int("server-cpu", -1, "pin the load server to this CPU with taskset (-1: no pinning); pin this process with taskset to keep the two apart")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case *serve && *stacks == stackBare:
		err = runBareServer(ctx, *snapshot, announce)
	case *serve:
		err = runServer(ctx, *snapshot, announce)
	case *one:
		err = runOne(ctx, legSpec{stack: *stacks, serverCPU: *serverCPU, d: *duration, snap: *snapshot}, *clients, *perSocket)
	default:
		err = runLegs(ctx, *clients, *perSocket, *stacks, legSpec{serverCPU: *serverCPU, d: *duration, snap: *snapshot}, *repeat, *jsonOut)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "swarmcost:", err)
		os.Exit(1)
	}
}

// announce tells the measuring process where the load server listens.
func announce(addr string) { fmt.Printf("listening on %s\n", addr) }

// The client stacks a leg can measure.
const (
	stackHost = "host"
	stackBare = "bare"
)

// legSpec is what every leg of a run shares, plus its stack.
type legSpec struct {
	stack     string
	serverCPU int // -1: not pinned
	d         time.Duration
	snap      int
}

// result is one leg's figures.
type result struct {
	Stack               string     `json:"stack"`
	Clients             int        `json:"clients"`
	PerSocket           int        `json:"clients_per_socket"`
	Sockets             int        `json:"sockets"`
	ConnectS            float64    `json:"connect_s"`
	Goroutines          int        `json:"goroutines"`
	GoroutinesPerClient float64    `json:"goroutines_per_client"`
	CPUPerClientTickUS  float64    `json:"cpu_us_per_client_tick"`
	CPUCores            float64    `json:"cpu_cores"`
	RSSPerClientKB      float64    `json:"rss_kb_per_client"`
	RSSKB               int64      `json:"rss_kb"`
	OwnerStepUSMean     float64    `json:"owner_step_us_per_client"`
	Delivered           float64    `json:"snapshots_delivered_ratio"`
	ServerCPUCores      float64    `json:"server_cpu_cores"`
	ServerTickHz        float64    `json:"server_tick_hz"`
	RTTMsMean           float64    `json:"rtt_ms_mean"`
	GoroutinesAfter     int        `json:"goroutines_after_close"`
	ClientStats         quic.Stats `json:"client_stats"`
}

func runLegs(ctx context.Context, clientsSpec, perSpec, stackSpec string, spec legSpec, repeat int, jsonOut string) error {
	ns, err := ints(clientsSpec)
	if err != nil {
		return fmt.Errorf("-clients: %w", err)
	}
	ps, err := ints(perSpec)
	if err != nil {
		return fmt.Errorf("-per-socket: %w", err)
	}
	stacks, err := parseStacks(stackSpec)
	if err != nil {
		return err
	}
	var all []result
	failed := 0
	for range max(repeat, 1) {
		for _, n := range ns {
			for _, per := range ps {
				for _, st := range stacks {
					if st == stackBare && per != 1 {
						continue
					}
					spec.stack = st
					r, err := legProcess(ctx, spec, n, per)
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if err != nil {
						// Keep going: one starved leg must not lose the others.
						fmt.Printf("stack=%s clients=%d per_socket=%d FAILED: %v load1=%s\n", st, n, per, err, loadavg())
						failed++
						continue
					}
					printResult(r)
					all = append(all, r)
				}
			}
		}
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(all, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d leg(s) failed", failed)
	}
	return nil
}

// parseStacks reads -stack: a comma-separated list of host and bare.
func parseStacks(spec string) ([]string, error) {
	stacks := strings.Split(spec, ",")
	for _, st := range stacks {
		if st != stackHost && st != stackBare {
			return nil, fmt.Errorf("-stack: %q is neither %s nor %s", st, stackHost, stackBare)
		}
	}
	return stacks, nil
}

// printResult prints one leg as one line.
func printResult(r result) {
	fmt.Printf("stack=%s clients=%d per_socket=%d sockets=%d connect=%.2fs goroutines=%d (%.2f/client, %d after close) cpu=%.1fµs/client-tick (%.2f cores) rss=%.0fKB/client (%d KB) owner_step=%.1fµs/client delivered=%.4f server_hz=%.1f rtt=%.2fms server_cpu=%.2f cores client_recv_drops=%d load1=%s\n",
		r.Stack, r.Clients, r.PerSocket, r.Sockets, r.ConnectS, r.Goroutines, r.GoroutinesPerClient, r.GoroutinesAfter,
		r.CPUPerClientTickUS, r.CPUCores, r.RSSPerClientKB, r.RSSKB, r.OwnerStepUSMean, r.Delivered, r.ServerTickHz, r.RTTMsMean, r.ServerCPUCores,
		r.ClientStats.RecvQueueDrops, loadavg())
}

// legProcess runs one leg in a fresh process, so RSS and goroutine
// baselines are not left over from a previous leg.
func legProcess(ctx context.Context, spec legSpec, n, per int) (result, error) {
	var r result
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.CommandContext(ctx, exe, "-one", "-stack", spec.stack, "-server-cpu", strconv.Itoa(spec.serverCPU),
		"-clients", strconv.Itoa(n), "-per-socket", strconv.Itoa(per),
		"-duration", spec.d.String(), "-snapshot", strconv.Itoa(spec.snap))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("leg process: %w", err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("leg process output %q: %w", out, err)
	}
	return r, nil
}

// runOne runs one leg here and prints its result as JSON.
func runOne(ctx context.Context, spec legSpec, clientsSpec, perSpec string) error {
	n, err := strconv.Atoi(clientsSpec)
	if err != nil {
		return fmt.Errorf("-clients: %w", err)
	}
	per, err := strconv.Atoi(perSpec)
	if err != nil {
		return fmt.Errorf("-per-socket: %w", err)
	}
	if st, err := parseStacks(spec.stack); err != nil || len(st) != 1 {
		return fmt.Errorf("-stack %q: a single leg runs one stack, %s or %s", spec.stack, stackHost, stackBare)
	}
	r, err := leg(ctx, spec, n, per)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// loadavg is the 1-minute load average, to judge how shared the machine was.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// server is the load server subprocess.
type server struct {
	cmd  *exec.Cmd
	addr string
}

func startServer(spec legSpec) (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{exe, "-serve", "-stack", spec.stack, "-snapshot", strconv.Itoa(spec.snap)}
	if spec.serverCPU >= 0 {
		args = append([]string{"taskset", "-c", strconv.Itoa(spec.serverCPU)}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("server did not report its address: %w", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("server said %q", line)
	}
	return &server{cmd: cmd, addr: addr}, nil
}

// stop interrupts the server, then kills it after a grace period.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpuSeconds reads utime+stime of pid from /proc (clock ticks of 100 Hz).
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseFloat(fields[11], 64)
	st, _ := strconv.ParseFloat(fields[12], 64)
	return (ut + st) / 100
}

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func leg(ctx context.Context, spec legSpec, n, per int) (result, error) {
	r := result{Stack: spec.stack, Clients: n, PerSocket: per, Sockets: (n + per - 1) / per}
	if spec.stack == stackBare && per != 1 {
		return r, fmt.Errorf("the bare stack puts each client on its own socket; -per-socket %d", per)
	}
	srv, err := startServer(spec)
	if err != nil {
		return r, err
	}
	defer srv.stop()
	runtime.GC()
	g0, rss0 := runtime.NumGoroutine(), rssKB()
	var pool *quic.SocketPool
	if per > 1 {
		pool = quic.NewSocketPool(per)
	}
	cs := make([]client, 0, n)
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	start := time.Now()
	for range n {
		c, err := dial(ctx, spec.stack, pool, srv.addr)
		if err != nil {
			return r, err
		}
		cs = append(cs, c)
	}
	input := proto.AppendInput(nil, &proto.Input{Seq: 1, Throttle: 0.5})
	// Connect phase, bounded.
	for deadline := time.Now().Add(60 * time.Second); ; {
		up, gone := 0, 0
		for _, c := range cs {
			u, g := c.step(input)
			if u {
				up++
			}
			if g {
				gone++
			}
		}
		if up == n {
			break
		}
		if gone > 0 {
			deadline = time.Now() // a failed client never comes back
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			why := ""
			for _, c := range cs {
				if hc, ok := c.(*hostClient); ok && hc.stats().LastDialError != "" {
					why = hc.stats().LastDialError
				}
			}
			return r, fmt.Errorf("only %d of %d clients connected (a failed dial: %s)", up, n, why)
		}
		time.Sleep(time.Second / tickHz)
	}
	r.ConnectS = time.Since(start).Seconds()
	// Warm up one second, then measure.
	if _, _, err := driveTimed(ctx, cs, input, time.Second); err != nil {
		return r, err
	}
	for _, c := range cs {
		c.reset()
	}
	cpu0, scpu0, t0 := selfCPU(), cpuSeconds(srv.cmd.Process.Pid), time.Now()
	ticks, stepTotal, err := driveTimed(ctx, cs, input, spec.d)
	if err != nil {
		return r, err
	}
	wall := time.Since(t0).Seconds()
	cpu := selfCPU() - cpu0
	r.Goroutines = runtime.NumGoroutine() - g0
	r.GoroutinesPerClient = float64(r.Goroutines) / float64(n)
	r.CPUPerClientTickUS = cpu / float64(n*ticks) * 1e6
	r.CPUCores = cpu / wall
	r.ServerCPUCores = (cpuSeconds(srv.cmd.Process.Pid) - scpu0) / wall
	r.RSSKB = rssKB() - rss0
	r.RSSPerClientKB = float64(r.RSSKB) / float64(n)
	r.OwnerStepUSMean = stepTotal.Seconds() / float64(n*ticks) * 1e6
	got, sent := 0, 0
	var rtt time.Duration
	for _, c := range cs {
		w := c.window()
		got += w.snaps
		sent += w.sent()
		rtt += c.rtt()
		if hc, ok := c.(*hostClient); ok {
			st := hc.stats()
			r.ClientStats.RecvQueueDrops += st.RecvQueueDrops
			r.ClientStats.SendQueueDrops += st.SendQueueDrops
			r.ClientStats.BadFragments += st.BadFragments
		}
	}
	r.Delivered = float64(got) / float64(sent)
	r.ServerTickHz = float64(sent) / float64(n) / wall
	r.RTTMsMean = rtt.Seconds() * 1e3 / float64(n)
	for _, c := range cs {
		c.close()
	}
	cs = nil
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > g0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	r.GoroutinesAfter = runtime.NumGoroutine() - g0
	return r, nil
}

// dial connects one client of the stack (pool: clients sharing sockets,
// host stack only; nil: a socket each).
func dial(ctx context.Context, stack string, pool *quic.SocketPool, addr string) (client, error) {
	if stack == stackBare {
		return dialBare(ctx, addr)
	}
	return dialHost(pool, addr)
}

// driveTimed runs 60 Hz ticks for d, returning ticks and the owner's time
// spent stepping clients.
func driveTimed(ctx context.Context, cs []client, input []byte, d time.Duration) (int, time.Duration, error) {
	t := time.NewTicker(time.Second / tickHz)
	defer t.Stop()
	end := time.Now().Add(d)
	ticks := 0
	var busy time.Duration
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ticks, busy, ctx.Err()
		case <-t.C:
		}
		s := time.Now()
		for _, c := range cs {
			if _, gone := c.step(input); gone {
				return ticks, busy, errors.New("a client disconnected during the measurement")
			}
		}
		busy += time.Since(s)
		ticks++
	}
	return ticks, busy, nil
}

// runServer is the load server: every tick it services and sends each
// connected client one snapshot-sized unreliable message. ready gets its
// address once it listens.
func runServer(ctx context.Context, snap int, ready func(addr string)) error {
	h, err := transport.Listen(quic.Name, "127.0.0.1:0", transport.Options{MaxPeers: 4096, RecvBufferBytes: 4 << 20})
	if err != nil {
		return err
	}
	defer h.Close()
	ready(h.Addr())
	body := make([]byte, snap)
	body[0] = byte(proto.TypeSnapshot)
	peers := map[transport.PeerID]bool{}
	var tick uint32
	t := time.NewTicker(time.Second / tickHz)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if qh, ok := h.(*quic.Host); ok {
				fmt.Fprintf(os.Stderr, "swarmcost server: %d peers at exit, stats %+v\n", len(peers), qh.Stats())
			}
			return nil
		case <-t.C:
		}
		if _, err := h.Service(func(ev transport.Event) {
			switch ev.Kind {
			case transport.EventConnect:
				peers[ev.Peer] = true
			case transport.EventDisconnect:
				delete(peers, ev.Peer)
			}
		}); err != nil {
			return err
		}
		tick++
		binary.LittleEndian.PutUint32(body[1:], tick)
		for p := range peers {
			_ = h.Send(p, transport.Unreliable, body)
		}
		if err := h.Flush(); err != nil {
			return err
		}
	}
}
