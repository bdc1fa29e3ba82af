package swarmcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// DefaultDegradeStart is --degrade-start's default (s).
const DefaultDegradeStart = 10

// declareDegradeFlags declares the --degrade-* options. The window flags
// describe one phase; --degrade-schedule gives any number from a file.
func declareDegradeFlags(fs *flag.FlagSet, d *degradeFlags) {
	p := &d.phase
	fs.Float64Var(&p.StartS, "degrade-start", DefaultDegradeStart, "impairment window start, `seconds` from the first connect")
	fs.Float64Var(&p.DurationS, "degrade-duration", 0, "impairment window length in `seconds`; 0 = no impairment (clients talk to the server directly)")
	fs.Float64Var(&p.Loss, "degrade-loss", 0, "fraction of datagrams dropped in the window, 0..1")
	fs.Float64Var(&p.BurstLen, "degrade-burst-len", 0, "mean length of a run of drops (Gilbert-Elliott); ≤ 1 = independent drops")
	fs.Float64Var(&p.DelayMs, "degrade-delay-ms", 0, "one-way delay added in each impaired direction, in `ms`")
	fs.Float64Var(&p.JitterMs, "degrade-jitter-ms", 0, "delay spread uniformly over ± this many `ms`")
	fs.BoolVar(&p.Reorder, "degrade-reorder", false, "let jittered datagrams overtake each other (default: keep order)")
	fs.Float64Var(&p.Duplicate, "degrade-duplicate", 0, "fraction of datagrams delivered twice, 0..1")
	fs.Float64Var(&p.RateKbps, "degrade-rate-kbps", 0, "rate limit per client and direction (kbit/s; 0 = none), with a 200 ms tail-drop queue")
	fs.StringVar(&p.Direction, "degrade-direction", impairment.DirBoth, "impaired direction: down (server→client) | up | both")
	fs.StringVar(&d.schedule, "degrade-schedule", "", "JSON `file`: a list of impairment phases (docs/impairment.md); replaces the window flags")
	fs.Uint64Var(&d.seed, "degrade-seed", 1, "seed of the relay's random decisions (same seed, same drops)")
}

// resolve turns the flags into a normalized schedule (nil: no impairment).
func (d *degradeFlags) resolve() (impairment.Schedule, error) {
	var window []string
	for name := range d.set {
		if strings.HasPrefix(name, "degrade-") && name != "degrade-schedule" && name != "degrade-seed" {
			window = append(window, "--"+name)
		}
	}
	sort.Strings(window)
	if d.schedule != "" {
		if len(window) > 0 {
			return nil, fmt.Errorf("--degrade-schedule replaces the window flags; drop %s", strings.Join(window, ", "))
		}
		return impairment.ReadSchedule(d.schedule)
	}
	if d.phase.DurationS == 0 {
		if len(window) > 0 && !d.set["degrade-duration"] {
			return nil, fmt.Errorf("%s given without --degrade-duration: the window is off (duration 0), so nothing would be impaired", strings.Join(window, ", "))
		}
		return nil, nil
	}
	if d.phase.DurationS < 0 {
		return nil, errors.New("--degrade-duration must be ≥ 0 (0 = off)")
	}
	s, err := impairment.Schedule{d.phase}.Normalize()
	if err != nil {
		return nil, fmt.Errorf("--degrade-*: %w", err)
	}
	return s, nil
}

// printImpairment prints the relay's counts and each stretch of the run.
func printImpairment(w io.Writer, r *report.Report) {
	if r.Relay == nil {
		return
	}
	s := r.Relay
	fmt.Fprintf(w, "  relay (seed %d): down %d dropped %d, up %d dropped %d, held %d, duplicated %d, overflow %d, late %d, stray %d\n",
		s.Seed, s.DatagramsDown, s.DroppedDown, s.DatagramsUp, s.DroppedUp, s.Delayed, s.Duplicated, s.Overflow, s.Late, s.Stray)
	for _, p := range r.Phases {
		line := fmt.Sprintf("  %-10s %6.1f–%6.1fs  snapshots %d", p.Name, p.StartS, p.EndS, p.SnapshotsReceived)
		if p.ObservedServerTickHz != nil {
			line += fmt.Sprintf("  tick-Hz min %.1f", p.ObservedServerTickHz.Min)
		}
		if p.RTTMs != nil {
			line += fmt.Sprintf("  rtt p50 %.1f ms", p.RTTMs.P50)
		}
		if p.MaxSnapshotGapMs != nil {
			line += fmt.Sprintf("  max gap %.0f ms", *p.MaxSnapshotGapMs)
		}
		if p.Name == "after" {
			if p.RecoverS != nil {
				line += fmt.Sprintf("  recovered after %.0f s", *p.RecoverS)
			} else {
				line += "  not recovered: " + p.RecoverNote
			}
		}
		fmt.Fprintln(w, line)
	}
}
