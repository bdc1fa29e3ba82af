// Package hostload measures what else the machine does while a gate leg runs.
//
// Once a second it samples the CPU that processes outside the run's own process tree use, the
// CPU the hypervisor steals, and the kernel's CPU pressure (docs/host-contention.md). A timing
// gate that fails on a machine a neighbour kept busy describes the machine, not the server;
// Decide says when that was so.
//
// Use: Start with the run's root PIDs (the gate process itself covers the guardians, the
// server, the swarm and every descendant), AddRoots for any process that is not a descendant,
// Stop at the end of the leg, then Series.Host for the report block and Decide for the verdict.
package hostload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// DefaultInterval is the sampling period: one timeline row per second.
const DefaultInterval = time.Second

// Config configures a Sampler.
type Config struct {
	// Roots are the PIDs whose whole process trees are the run's own, found afresh at every
	// sample by walking the ppid links of /proc/*/stat.
	Roots []int
	// Interval is the sampling period; DefaultInterval when zero.
	Interval time.Duration
	// Proc is the proc file system's mount point; "/proc" when empty (tests point it at a
	// fixture).
	Proc string
	// ClockTicks is USER_HZ, the unit of /proc's CPU counters; when zero it is read from the
	// process's auxiliary vector (AT_CLKTCK), as sysconf(_SC_CLK_TCK) does.
	ClockTicks int
}

// Sampler samples the machine on its own goroutine until Stop or its context ends.
type Sampler struct {
	interval time.Duration
	rd       *reader // owned by the goroutine after Start returns
	hz       float64
	hzErr    error

	mu      sync.Mutex
	roots   map[int]uint64 // PID → start time
	samples []Sample
	cpus    int

	// rootRd reads a root's stat file for AddRoots (the goroutine's reader is its own).
	rootMu sync.Mutex
	rootRd *reader

	cancel context.CancelFunc
	done   chan struct{}
}

// Start takes the first snapshot (the baseline of the first interval) and starts sampling.
// It fails when a root PID is not a running process: a tree that is not found would put the
// run's own CPU into others' and call the machine busy. Figures the machine does not report
// are not an error: they are missing in every sample, with the reason.
func Start(ctx context.Context, cfg Config) (*Sampler, error) {
	if cfg.Interval < 0 {
		return nil, fmt.Errorf("hostload: interval %s: want > 0", cfg.Interval)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Proc == "" {
		cfg.Proc = "/proc"
	}
	if cfg.ClockTicks < 0 {
		return nil, fmt.Errorf("hostload: clock ticks %d: want > 0", cfg.ClockTicks)
	}
	s := &Sampler{interval: cfg.Interval, rd: newReader(cfg.Proc), rootRd: newReader(cfg.Proc),
		roots: map[int]uint64{}, done: make(chan struct{})}
	hz := cfg.ClockTicks
	if hz == 0 {
		var err error
		if hz, err = clockTicks(); err != nil {
			s.hzErr = errClockTicks(err)
		}
	}
	s.hz = float64(hz)
	if err := s.AddRoots(cfg.Roots...); err != nil {
		return nil, err
	}
	first := s.rd.snapshot(time.Now())
	ctx, s.cancel = context.WithCancel(ctx)
	go s.loop(ctx, first)
	return s, nil
}

// AddRoots adds PIDs whose trees are the run's own from the next sample on (a process the
// gate starts that is not its descendant). A PID that is not a running process is an error
// naming it; the others are added.
func (s *Sampler) AddRoots(pids ...int) error {
	var errs []error
	for _, pid := range pids {
		s.rootMu.Lock()
		p, err := s.rootRd.procStat(pid)
		s.rootMu.Unlock()
		if err != nil {
			errs = append(errs, fmt.Errorf("hostload: root %w", err))
			continue
		}
		s.mu.Lock()
		s.roots[pid] = p.start
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// loop samples every interval until ctx ends; each sample is bounded by one walk of /proc.
func (s *Sampler) loop(ctx context.Context, prev *snapshot) {
	defer close(s.done)
	defer s.rd.close()
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := s.rd.snapshot(time.Now())
		s.mu.Lock()
		sm := interval(prev, cur, s.roots, s.hz, s.hzErr)
		s.samples = append(s.samples, sm)
		if sm.CPUs > 0 {
			s.cpus = sm.CPUs
		}
		s.mu.Unlock()
		prev = cur
	}
}

// Samples returns a copy of the samples so far (for a runner that watches the leg as it
// runs).
func (s *Sampler) Samples() Series {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Series{Samples: slices.Clone(s.samples), CPUs: s.cpus}
}

// Stop ends sampling, waits for the goroutine to return and gives the samples. Safe to call
// more than once, and after the context has ended.
func (s *Sampler) Stop() Series {
	s.cancel()
	<-s.done
	return s.Samples()
}

// ProcessCPU is a process's own user+system CPU time (every thread's, not its reaped
// children's) as /proc/PID/stat reports it: the measurement tool compares a hog's figure with
// what the sampler counted.
func ProcessCPU(pid int) (time.Duration, error) {
	hz, err := clockTicks()
	if err != nil {
		return 0, errClockTicks(err)
	}
	p, err := newReader("/proc").procStat(pid)
	if err != nil {
		return 0, err
	}
	return time.Duration(p.cpu) * time.Second / time.Duration(hz), nil
}
