// Command hostload prints what internal/sources/hostload measures on this machine. It prints once
// a second and over the run: others' CPU (cores used outside this process's tree), the part of it
// that processes alive at both ends of a second account for, the tree's own CPU, steal and CPU
// pressure. With -hog it also runs a process that burns one core outside the tree for the whole
// run and compares others' CPU with the hog's own CPU time, read from its /proc/PID/stat.
// docs/host-contention.md, "Figures", has the recorded runs.
//
//	go run ./tools/hostload -duration 30s        # the machine as it is
//	go run ./tools/hostload -duration 30s -hog   # plus a 1-core hog
//
// Linux only (it reads /proc). The hog is started through a short-lived intermediate so that
// it is reparented away from this process and is not in its tree, as a neighbour would not be;
// it stops by itself 10 s after the run should have ended, and the tool kills it at the end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/hostload"
)

func main() {
	dur := flag.Duration("duration", 30*time.Second, "how long to sample")
	hog := flag.Bool("hog", false, "run a 1-core hog outside this process's tree while sampling")
	spawnHog := flag.Duration("spawn-hog", 0, "internal: start a hog that lives this long, print its PID, exit")
	hogChild := flag.Duration("hog-child", 0, "internal: burn one core for this long")
	quiet := flag.Bool("q", false, "print the summary only")
	flag.Parse()
	var err error
	switch {
	case *hogChild > 0:
		for end := time.Now().Add(*hogChild); time.Now().Before(end); {
		}
		return
	case *spawnHog > 0:
		err = spawn(*spawnHog)
	default:
		err = run(*dur, *hog, *quiet)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostload:", err)
		os.Exit(1)
	}
}

// spawn starts the hog in a session of its own and prints its PID; when this process exits
// the hog is reparented (to init or the nearest subreaper), out of the caller's tree.
func spawn(life time.Duration) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, "-hog-child", life.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start hog: %w", err)
	}
	fmt.Println(cmd.Process.Pid)
	return nil
}

// startHog runs the intermediate and returns the hog's PID.
func startHog(life time.Duration) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(self, "-spawn-hog", life.String()).Output()
	if err != nil {
		return 0, fmt.Errorf("spawn hog: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return 0, fmt.Errorf("spawn hog printed %q: %w", out, err)
	}
	return pid, nil
}

func run(dur time.Duration, withHog, quiet bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	load0 := loadavg()
	hogPID := 0
	var hog0 time.Duration
	if withHog {
		pid, err := startHog(dur + 10*time.Second)
		if err != nil {
			return err
		}
		hogPID = pid
		defer func() { _ = syscall.Kill(pid, syscall.SIGKILL) }()
		// Let it get going: the first second of a process includes its exec.
		time.Sleep(500 * time.Millisecond)
		if hog0, err = hostload.ProcessCPU(pid); err != nil {
			return err
		}
	}
	start := time.Now()
	s, err := hostload.Start(ctx, hostload.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		return err
	}
	printed := 0
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for end := start.Add(dur); time.Now().Before(end) && ctx.Err() == nil; {
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
		if !quiet {
			printed = printSamples(s.Samples(), start, printed)
		}
	}
	series := s.Stop()
	end := time.Now()
	if !quiet {
		printSamples(series, start, printed)
	}
	var hogCPU time.Duration
	if withHog {
		h1, err := hostload.ProcessCPU(hogPID)
		if err != nil {
			return fmt.Errorf("hog gone before the end: %w", err)
		}
		hogCPU = h1 - hog0
	}
	summary(series, start, end, load0, hogCPU, withHog)
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	return nil
}

// printSamples prints the samples from index from on, and returns how many there are.
func printSamples(s hostload.Series, start time.Time, from int) int {
	for _, sm := range s.Samples[from:] {
		fmt.Printf("t %6.2fs  others %s (seen %s)  own %s  steal %s %%  pressure %s\n", sm.At.Sub(start).Seconds(),
			fig(sm.OtherCores, "%.3f"), fig(sm.OtherSeenCores, "%.3f"), fig(sm.OwnCores, "%.3f"),
			fig(sm.StealPct, "%.2f"), fig(sm.CPUPressureAvg10, "%.2f"))
	}
	return len(s.Samples)
}

func summary(s hostload.Series, start, end time.Time, load0 string, hogCPU time.Duration, withHog bool) {
	h := s.Host(start, start, end)
	fmt.Printf("\n%d samples over %.1f s, %d CPUs; load average at start %s, at end %s\n",
		h.HoldSamples, end.Sub(start).Seconds(), h.CPUs, load0, loadavg())
	fmt.Printf("others' CPU  %s cores\n", mm(h.OtherCores))
	var seen, wall float64
	for _, sm := range s.Samples {
		if sm.OtherSeenCores != nil {
			w := sm.At.Sub(sm.From).Seconds()
			seen += *sm.OtherSeenCores * w
			wall += w
		}
	}
	if wall > 0 && h.OtherCores != nil {
		fmt.Printf("  of which processes alive at both ends of a second %.3f, the rest (short-lived processes, tick sampling) %.3f\n",
			seen/wall, h.OtherCores.Mean-seen/wall)
	}
	fmt.Printf("own CPU      %s cores\n", mm(h.OwnCores))
	fmt.Printf("steal        %s %%\n", mm(h.StealPct))
	fmt.Printf("pressure     %s (some avg10, %%)\n", mm(h.CPUPressureAvg10))
	for k, why := range h.Missing {
		fmt.Printf("missing %s: %s\n", k, why)
	}
	d := hostload.Decide(h, hostload.DefaultPolicy())
	fmt.Printf("decision     %s\n", d.Reason)
	if withHog {
		rate := hogCPU.Seconds() / end.Sub(start).Seconds()
		fmt.Printf("hog          %.3f cores by its /proc/PID/stat", rate)
		if h.OtherCores != nil {
			fmt.Printf("; others − hog %.3f cores; others / hog %.3f", h.OtherCores.Mean-rate, h.OtherCores.Mean/rate)
		}
		fmt.Println()
	}
}

func fig(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func mm(v *report.MeanMax) string {
	if v == nil {
		return "missing"
	}
	return fmt.Sprintf("mean %.3f max %.3f", v.Mean, v.Max)
}

// loadavg is the first three fields of /proc/loadavg, what uptime prints.
func loadavg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if fs := strings.Fields(line); len(fs) >= 3 {
		return strings.Join(fs[:3], " ")
	}
	return "unknown"
}
