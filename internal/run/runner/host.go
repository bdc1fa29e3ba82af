package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/hostload"
)

// hostWatch samples what else the machine does while a leg runs: others'
// CPU (outside the gate's own process tree, which holds the guardians, the
// server, the swarm and their descendants), steal and CPU pressure, once a
// second (internal/sources/hostload). The gate decides with the profile's host
// policy whether the leg's timing verdicts describe the server.
type hostWatch struct {
	s *hostload.Sampler
	// zero is the leg's clock origin (the swarm's start); from and to
	// bound its hold.
	zero, from, to time.Time
}

// startHostWatch starts sampling; a machine the sampler cannot read (not
// Linux, no /proc) is no error: the leg's host block then says it was
// unmeasured, and nothing is softened.
func startHostWatch(ctx context.Context) (*hostWatch, error) {
	s, err := hostload.Start(ctx, hostload.Config{Roots: []int{os.Getpid()}})
	if err != nil {
		return nil, fmt.Errorf("host sampler: %w", err)
	}
	return &hostWatch{s: s}, nil
}

// swarmStarts marks the leg's clock origin, the swarms' shared start
// instant, and the hold: from the last client's connect (the ramp) to the
// end of the duration.
func (h *hostWatch) swarmStarts(zero time.Time, clients int, ramp, duration time.Duration) {
	h.zero = zero
	h.from = zero.Add(time.Duration(max(clients-1, 0)) * ramp)
	h.to = zero.Add(duration)
}

// stop ends the sampling and returns the leg's host block (nil when the
// swarm never started: there was no hold to describe).
func (h *hostWatch) stop() *report.Host {
	series := h.s.Stop()
	if h.zero.IsZero() {
		return nil
	}
	return series.Host(h.zero, h.from, h.to)
}

// amendReport records in the leg's report what only the gate knows: the
// host block (and its timeline's host columns) and, when the server died
// mid-run and the swarm recorded no early end of its own, that death as the
// run's early end (abort_gate "server"). It rewrites report.json once, so
// the report the gate reads and the artifacts carry one account of the leg.
func amendReport(path string, rep *report.Report, h *report.Host, died *serverDeath) error {
	if rep == nil || (h == nil && died == nil) {
		return nil
	}
	if h != nil {
		rep.Host = h
		hostload.JoinTimeline(rep.Timeline, h)
	}
	if died != nil && rep.AbortedAtS == nil {
		at := died.atS
		rep.AbortedAtS, rep.AbortReason, rep.AbortGate = &at, died.reason, report.AbortServer
	}
	if err := report.WriteReportAtomic(path, rep); err != nil {
		return fmt.Errorf("record the host block and early end in %s: %w", path, err)
	}
	return nil
}
