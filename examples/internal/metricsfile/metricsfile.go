// Package metricsfile writes scalegate's server metrics file
// (docs/metrics.md) for the example game servers. It is what any team's
// server writes so the gate can read its tick, its RSS and its wire traffic.
// A server in another language writes the same JSON object its own way.
package metricsfile

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// window is how many ticks the percentiles and tick_hz cover (10 s at
// 60 Hz), as the reference server's.
const window = 600

// File is one server's metrics file. Tick and Write belong to the server's
// tick loop; CountOut and CountIn may be called from any goroutine.
type File struct {
	path, transport string
	tickMs          *stats.Window
	starts          []time.Time // tick start times, a ring of window
	ticks           int64
	rssStartup      int64

	out, in, pktsOut atomic.Int64
	// inputs and byes count what the server applied and the goodbyes it
	// heard, written only by a server that counts them (Track*): a field
	// the server does not count is left out, never written as 0.
	inputs, byes             atomic.Int64
	tracksInputs, tracksByes bool
	// The wire rate kept is the one measured at the highest peer count
	// seen (docs/metrics.md: a drained server must not report 0).
	lastAt                    time.Time
	lastOut, lastIn, lastPkts int64
	peakPeers                 int
	accOut, accIn, accPkts    int64
	accDt                     time.Duration
}

// New starts the metrics file of a server speaking transport ("udp",
// "ws"); its RSS now is rss_startup_kb.
func New(path, transport string) *File {
	return &File{path: path, transport: transport, tickMs: stats.NewWindow(window), rssStartup: rssKB(), lastAt: time.Now()}
}

// Tick records one tick that started at start and worked for work.
func (f *File) Tick(start time.Time, work time.Duration) {
	f.tickMs.Add(float64(work) / float64(time.Millisecond))
	if len(f.starts) < window {
		f.starts = append(f.starts, start)
	} else {
		f.starts[f.ticks%window] = start
	}
	f.ticks++
}

// CountOut counts a datagram or message of n bytes sent, as it left the
// socket; CountIn one received.
func (f *File) CountOut(n int) { f.out.Add(int64(n)); f.pktsOut.Add(1) }

// CountIn counts n bytes received.
func (f *File) CountIn(n int) { f.in.Add(int64(n)) }

// TrackInputs says the server counts the inputs it applies: the file
// writes inputs_accepted (the inputs_accepted_ratio_min gate's figure)
// from then on. Call it before the first Write.
func (f *File) TrackInputs() { f.tracksInputs = true }

// CountInputAccepted counts one input applied to a player.
func (f *File) CountInputAccepted() { f.inputs.Add(1) }

// TrackByes says the server counts its players' goodbyes: the file writes
// byes from then on. Call it before the first Write.
func (f *File) TrackByes() { f.tracksByes = true }

// CountBye counts one player's goodbye.
func (f *File) CountBye() { f.byes.Add(1) }

// tickHz is (ticks in the window − 1) / (newest − oldest tick start).
func (f *File) tickHz() float64 {
	n := len(f.starts)
	if n < 2 {
		return 0
	}
	oldest, newest := f.starts[0], f.starts[n-1]
	if f.ticks > window {
		oldest, newest = f.starts[f.ticks%window], f.starts[(f.ticks-1)%window]
	}
	return float64(n-1) / newest.Sub(oldest).Seconds()
}

// sampleWire folds the traffic since the last write into the kept rate.
func (f *File) sampleWire(now time.Time, peers int) {
	out, in, pkts := f.out.Load(), f.in.Load(), f.pktsOut.Load()
	dOut, dIn, dPkts, dt := out-f.lastOut, in-f.lastIn, pkts-f.lastPkts, now.Sub(f.lastAt)
	f.lastOut, f.lastIn, f.lastPkts, f.lastAt = out, in, pkts, now
	switch {
	case peers == 0 || dt <= 0 || peers < f.peakPeers:
		return
	case peers > f.peakPeers:
		f.peakPeers, f.accOut, f.accIn, f.accPkts, f.accDt = peers, 0, 0, 0, 0
	}
	f.accOut, f.accIn, f.accPkts, f.accDt = f.accOut+dOut, f.accIn+dIn, f.accPkts+dPkts, f.accDt+dt
}

// Write writes the file atomically with the server's joined peers and
// live entities now.
func (f *File) Write(peers, entities int) error {
	f.sampleWire(time.Now(), peers)
	s := f.tickMs.Summary()
	m := map[string]any{
		"schema_version": 6,
		"transport":      f.transport,
		"rss_kb":         rssKB(),
		"rss_startup_kb": f.rssStartup,
		"tick_ms":        map[string]float64{"min": s.Min, "mean": s.Mean, "max": s.Max, "p95": s.P95, "p99": s.P99},
		"tick_hz":        f.tickHz(),
		"ticks_sampled":  f.tickMs.Len(),
		"ticks_total":    f.ticks,
		"peers":          peers,
		"entities":       entities,
	}
	if f.tracksInputs {
		m["inputs_accepted"] = f.inputs.Load()
	}
	if f.tracksByes {
		m["byes"] = f.byes.Load()
	}
	if f.accDt > 0 {
		sec := f.accDt.Seconds()
		outKBs := float64(f.accOut) / sec / 1000
		m["wire_out_kbs"], m["wire_in_kbs"] = outKBs, float64(f.accIn)/sec/1000
		m["wire_out_pps"], m["wire_peers"] = float64(f.accPkts)/sec, f.peakPeers
		m["wire_out_kbs_per_client"] = outKBs / float64(f.peakPeers)
	}
	return report.WriteJSONAtomic(f.path, m)
}

// rssKB is the process's resident set in KiB from /proc/self/statm, 0
// where there is none (unavailable, which the gate reads as missing).
func rssKB() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize()) / 1024
}
