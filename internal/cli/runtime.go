package cli

import (
	"os"
	"strings"
	"syscall"
)

// sysmonAwake is the GODEBUG setting the load processes (serve, swarm) run
// with: a scheduler-trace interval of 2³¹−1 ms (24.8 days), so the trace
// itself never prints during a run, while a positive interval keeps the
// runtime's monitor thread (sysmon) from parking when every P is idle.
//
// Why: both processes sleep between ticks and then make cgo calls into
// libenet. Parked, sysmon is woken by every cgo call that finds it parked
// and by every return from one whose P it took, and each wake restarts its
// 20 µs polling; on one core that was 12 extra context switches a tick. Not
// parked, it backs off to 10 ms polls. Measured on the swarm, 128 ENet
// clients on one core for 15 s (docs/swarm.md): 14,445 → 3,747 context
// switches, 3,402 → 41 futex calls, 16.8 → 13.7 µs of CPU per client-tick.
//
// The one visible effect: on a machine up for more than 24.8 days the
// runtime prints one "SCHED" line to stderr as the process starts.
const sysmonAwake = "schedtrace=2147483647"

// loadCommands are the subcommands that run a tick loop.
var loadCommands = map[string]bool{"serve": true, "swarm": true}

// execTuned replaces the process with itself under sysmonAwake when args
// name a load subcommand and GODEBUG does not already say schedtrace (set
// GODEBUG=schedtrace=0 to run without it). The runtime reads the setting
// only at start, hence the exec; it keeps the PID, arguments, environment
// and open descriptors, so a launcher tracking the process sees nothing.
// It returns only when it did not exec: not a load command, already set,
// or the exec failed (err, and the process runs on untuned).
func execTuned(args []string, environ []string) (bool, error) {
	if len(args) == 0 || !loadCommands[args[0]] {
		return false, nil
	}
	env, ok := withSysmonAwake(environ)
	if !ok {
		return false, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return true, err
	}
	return true, syscall.Exec(exe, os.Args, env)
}

// withSysmonAwake returns environ with sysmonAwake added to GODEBUG, or
// false when GODEBUG already sets schedtrace.
func withSysmonAwake(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	found := false
	for _, kv := range environ {
		v, isGODEBUG := strings.CutPrefix(kv, "GODEBUG=")
		if !isGODEBUG {
			out = append(out, kv)
			continue
		}
		for _, f := range strings.Split(v, ",") {
			if strings.HasPrefix(f, "schedtrace=") {
				return nil, false
			}
		}
		found = true
		if v == "" {
			out = append(out, "GODEBUG="+sysmonAwake)
		} else {
			out = append(out, "GODEBUG="+v+","+sysmonAwake)
		}
	}
	if !found {
		out = append(out, "GODEBUG="+sysmonAwake)
	}
	return out, true
}
