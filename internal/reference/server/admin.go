package server

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/reference/admin"
)

// adminWait bounds how long an admin command waits for the tick loop to
// take it and answer: a loop stalled longer is itself the answer.
const adminWait = 10 * time.Second

// adminQueue is how many admin commands can wait for the next tick.
const adminQueue = 16

// adminJob is work an admin connection hands to the tick loop: everything
// that reads or changes loop state runs there, between two ticks, never
// racing the loop.
type adminJob struct {
	run   func() []string
	reply chan []string // buffered: the loop never blocks on it
}

// Reloader re-reads the configuration the server was started with: its
// file and the command-line overrides on top of it. It must give up when
// ctx ends (the server shuts down, or the reload took adminWait).
type Reloader func(ctx context.Context) (Config, error)

// SetReload tells the admin reload command which file the server was
// started from and how to read it again (the CLI applies its flags on top).
// Without it, reload answers that there is nothing to re-read.
func (s *Server) SetReload(path string, load Reloader) {
	s.reloadPath, s.reload = path, load
}

// liveKeys are the config keys reload applies to a running server (loop
// goroutine), each returning a note for the answer ("" when none); every
// other changed key is reported as needing a restart.
var liveKeys = map[string]func(s *Server, next *Config) string{
	// Off releases every lever at once (governor.setEnabled).
	"world.overrun_governor": func(s *Server, next *Config) string {
		s.gov.setEnabled(next.World.OverrunGovernor)
		s.cfg.World.OverrunGovernor = next.World.OverrunGovernor
		return ""
	},
	// Off sends every peer a snapshot every tick again at once; on lets the
	// controller start evaluating links at its next period.
	"network.congestion_control": func(s *Server, next *Config) string {
		s.cfg.Network.CongestionControl = next.Network.CongestionControl
		if s.cfg.Faults.DisableCongestionControl {
			return " (the disable_congestion_control fault keeps the controller off)"
		}
		s.cc.on = next.Network.CongestionControl
		if !s.cc.on {
			for _, st := range s.cc.peers {
				st.rate, st.congested = TickHz, 0
			}
		}
		return ""
	},
}

// listenAdmin binds the admin socket when [admin] socket is set.
func (s *Server) listenAdmin() error {
	if s.cfg.Admin.Socket == "" {
		return nil
	}
	a, err := admin.Listen(s.cfg.Admin.Socket)
	if err != nil {
		return err
	}
	s.adm = a
	return nil
}

// closeAdmin stops the admin goroutines and removes the socket file.
func (s *Server) closeAdmin() {
	if s.adm == nil {
		return
	}
	if err := s.adm.Close(); err != nil {
		s.log.Printf("admin: close %s: %v", s.adm.Path(), err)
	}
}

// drainAdmin runs the admin commands waiting for the loop (loop goroutine,
// between ticks). It takes at most what was queued when it started, so a
// flood of commands cannot hold the loop.
func (s *Server) drainAdmin() {
	for range cap(s.adminq) {
		select {
		case j := <-s.adminq:
			j.reply <- j.run()
		default:
			return
		}
	}
}

// onLoop runs fn on the tick loop and returns its answer (connection
// goroutine).
func (s *Server) onLoop(fn func() []string) []string {
	j := adminJob{run: fn, reply: make(chan []string, 1)}
	timeout := time.NewTimer(adminWait)
	defer timeout.Stop()
	select {
	case s.adminq <- j:
	case <-s.adm.Quit():
		return admin.Errorf("server shutting down")
	case <-timeout.C:
		return admin.Errorf("the tick loop did not take the command within %v (the queue is full)", adminWait)
	}
	select {
	case r := <-j.reply:
		return r
	case <-s.adm.Quit():
		return admin.Errorf("server shutting down")
	case <-timeout.C:
		return admin.Errorf("the tick loop did not answer within %v", adminWait)
	}
}

// handleAdmin answers one command (connection goroutine).
func (s *Server) handleAdmin(c admin.Command) []string {
	switch c.Name {
	case "status":
		return s.onLoop(func() []string { return []string{s.statusLine()} })
	case "tickstats":
		return s.onLoop(s.tickStats)
	case "reload":
		return s.reloadConfig()
	case "trace-start":
		return s.traceStart(c.Args[0])
	case "trace-stop":
		return s.traceStop()
	}
	return admin.Errorf("unknown command %q (commands: %s)", c.Name, admin.Usage())
}

// traceStart starts recording every peer's accepted Input into dir. The
// recorder is created off the loop (it makes the directory and starts its
// writer goroutine) and installed on it; a server already recording keeps
// its recorder and the new one is closed unused.
func (s *Server) traceStart(dir string) []string {
	r, err := trace.NewRecorder(dir, TickHz, s.traceMaxBytes)
	if err != nil {
		return admin.Errorf("trace-start: %v", err)
	}
	// state: 0 waiting for the loop, 1 installed, 2 abandoned (the loop did
	// not take the job in time; it must not install a closed recorder).
	var state atomic.Int32
	lines := s.onLoop(func() []string {
		if s.rec != nil {
			return admin.Errorf("trace-start: already recording to %s (trace-stop first)", s.rec.Dir())
		}
		if !state.CompareAndSwap(0, 1) {
			return nil
		}
		s.rec, s.traceErrsLogged = r, 0
		s.log.Printf("admin trace-start: recording every peer's accepted Input to %s", dir)
		return nil
	})
	if state.CompareAndSwap(0, 2) { // not installed, and now it never will be
		if err := r.Close(); err != nil {
			s.log.Printf("admin trace-start: close the unused recorder: %v", err)
		}
		return lines
	}
	// Installed, even if the loop took the job after onLoop stopped waiting.
	return []string{fmt.Sprintf("recording every peer's accepted Input to %s (trace_peer<id>_<n>.flit)", dir)}
}

// traceStop detaches the recorder on the loop, then flushes and closes it
// off the loop (the recorder waits for its writer), and reports its totals.
func (s *Server) traceStop() []string {
	// handed carries the detached recorder from the loop; once this
	// goroutine stops waiting it holds abandonedRecorder, and a job the
	// loop runs late detaches nothing.
	var handed atomic.Pointer[trace.Recorder]
	lines := s.onLoop(func() []string {
		if s.rec == nil {
			return admin.Errorf("trace-stop: not recording")
		}
		if handed.CompareAndSwap(nil, s.rec) {
			s.rec = nil
		}
		return nil
	})
	r := handed.Swap(abandonedRecorder)
	if r == nil {
		return lines
	}
	err := r.Close()
	st := r.Stats()
	msg := traceTotals("stopped", st, r.Dir())
	s.log.Printf("admin trace-stop: %s", msg)
	if err != nil {
		return admin.Errorf("trace-stop: %s; %v", msg, err)
	}
	return []string{msg}
}

// traceTotals reports what a closed recorder wrote: the records that reached
// a file, and apart from them the ones accepted but never written.
func traceTotals(what string, st trace.RecorderStats, dir string) string {
	return fmt.Sprintf("%s: %d record(s) written in %d file(s) under %s; %d record(s) lost, %d error(s)", what, st.Written, st.Files, dir, st.Lost, st.Errors)
}

// abandonedRecorder marks a trace-stop that no longer waits for the loop.
var abandonedRecorder = new(trace.Recorder)

// statusLine is the one-line state: peers, entities, tick-Hz, load_factor,
// the governor switch, and [DEGRADED] while the governor sheds.
func (s *Server) statusLine() string {
	hz, _ := s.met.tickHz()
	gov := "off"
	if s.gov.enabled {
		gov = "on"
	}
	line := fmt.Sprintf("peers %d entities %d tick-Hz %.2f load_factor %.2f governor %s",
		len(s.viewers), s.sim.World.Len(), hz, s.gov.loadFactor(), gov)
	if s.gov.degraded() {
		line += " [DEGRADED]"
	}
	return line
}

// tickStats is the per-phase table over the metrics window.
func (s *Server) tickStats() []string {
	hz, span := s.met.tickHz()
	var b strings.Builder
	fmt.Fprintf(&b, "tick-Hz %.2f over the last %d ticks (%.1f s); ms:\n", hz, s.met.tick.Len(), span)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "phase\tmin\tmean\tp95\tp99\tmax\t")
	row := func(name string, win *stats.Window) {
		p := phaseOf(win)
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", name, p.Min, p.Mean, p.P95, p.P99, p.Max)
	}
	row("tick", s.met.tick)
	for i := range numPhases {
		row(Phase(i).String(), s.met.phase[i])
		if Phase(i) == PhaseSerialize {
			row("  build", s.met.buildW)
			row("  send", s.met.sendW)
		}
	}
	w.Flush()
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// reloadConfig re-reads the config off the loop (file I/O never stalls a
// tick), then applies it on the loop.
func (s *Server) reloadConfig() []string {
	if s.reload == nil || s.reloadPath == "" {
		return admin.Errorf("reload: the server was started without --config: there is no file to re-read")
	}
	// The read is bounded by the admin wait and by shutdown: a config
	// path on a hung file system cannot hold this connection, and so the
	// admin server's Close, past either.
	parent := context.Background()
	if s.adm != nil {
		parent = s.adm.Context()
	}
	ctx, cancel := context.WithTimeout(parent, adminWait)
	defer cancel()
	next, err := s.reload(ctx)
	if err != nil {
		return admin.Errorf("reload %s: %v (nothing changed)", s.reloadPath, err)
	}
	return s.onLoop(func() []string { return s.applyReload(&next) })
}

// applyReload applies the live keys that changed and names the rest (loop
// goroutine).
func (s *Server) applyReload(next *Config) []string {
	diffs := configDiff(&s.cfg, next)
	out := []string{fmt.Sprintf("reloaded %s: %d key(s) changed", s.reloadPath, len(diffs))}
	for _, d := range diffs {
		if apply, ok := liveKeys[d.key]; ok {
			note := apply(s, next)
			out = append(out, fmt.Sprintf("applied %s: %s -> %s%s", d.key, d.from, d.to, note))
		} else {
			out = append(out, fmt.Sprintf("not applied (needs a restart): %s: %s -> %s", d.key, d.from, d.to))
		}
	}
	for _, l := range out {
		s.log.Printf("admin reload: %s", l)
	}
	return out
}

// keyDiff is one config key whose value differs.
type keyDiff struct{ key, from, to string }

// configDiff lists the keys whose values differ, as "section.key", in the
// order of the Config struct.
func configDiff(a, b *Config) []keyDiff {
	var out []keyDiff
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		section := tomlName(va.Type().Field(i))
		sa, sb := va.Field(i), vb.Field(i)
		if sa.Kind() != reflect.Struct { // a top-level key, not a [section]
			if !reflect.DeepEqual(sa.Interface(), sb.Interface()) {
				out = append(out, keyDiff{key: section, from: showValue(sa.Interface()), to: showValue(sb.Interface())})
			}
			continue
		}
		for j := 0; j < sa.NumField(); j++ {
			fa, fb := sa.Field(j).Interface(), sb.Field(j).Interface()
			if !reflect.DeepEqual(fa, fb) {
				out = append(out, keyDiff{key: section + "." + tomlName(sa.Type().Field(j)), from: showValue(fa), to: showValue(fb)})
			}
		}
	}
	return out
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return name
}

func showValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}
