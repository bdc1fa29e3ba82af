package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// witness is the runner's own record of a leg's swarm run, kept apart
// from anything the swarm writes: the id and address it was given, when it
// was launched and exited, and the server's counters read by the runner
// just before the launch and just after the exit (gate.Witness).
type witness struct {
	w      gate.Witness
	before counts
	// prom is the leg's own scrape source (nil: the metrics file).
	prom *promsource.Source
}

// counts is one reading of the server's cumulative counters: nil where
// the server does not count the figure.
type counts struct {
	inputs, peerS, ticks *float64
	err                  error
}

// newWitness gives the leg its run id and prepares its server reading.
func (r *legRun) newWitness(port int) (*witness, error) {
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	wt := &witness{w: gate.Witness{RunID: r.leg.ID + "-" + hex.EncodeToString(id),
		ServerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), MetricsSource: r.metrics,
		DurationS: r.o.Profile.DurationS}}
	wt.w.Server.Source = r.metrics
	if r.prom != nil {
		wt.w.MetricsSource, wt.w.Server.Source = r.prom.url, r.prom.url
		src, err := promsource.New(promsource.Config{Fetcher: r.prom.fetcher(), Map: r.prom.m, Labels: r.prom.labels, Start: time.Now()})
		if err != nil {
			return nil, err
		}
		wt.prom = src
	}
	return wt, nil
}

// env is what the swarm's environment carries of the witness.
func (wt *witness) env() string { return report.RunIDEnv + "=" + wt.w.RunID }

// launching reads the server's counters and marks the swarm's launch.
func (wt *witness) launching(ctx context.Context, metrics string) {
	wt.before = wt.read(ctx, metrics)
	wt.w.Launched = time.Now()
}

// exited marks the swarm's exit and, when the server still runs, reads its
// counters again: the witness's figures are their growth over the run.
func (wt *witness) exited(ctx context.Context, metrics string, server *launcher.Process) {
	wt.w.Exited = time.Now()
	if server.Exited() || ctx.Err() != nil {
		// The leg is a launch failure or interrupted: nothing to hold the
		// report to, and the server's death is already its finding.
		return
	}
	after := wt.readFresh(ctx, metrics)
	sc := &wt.w.Server
	if err := errors.Join(wt.before.err, after.err); err != nil {
		sc.Err = err.Error()
		return
	}
	if wt.prom != nil {
		// The second scrape's figures are over the window since the
		// first: already a growth.
		sc.Inputs, sc.Ticks = after.inputs, after.ticks
		return
	}
	sc.Inputs = growth(wt.before.inputs, after.inputs)
	sc.PeerS = growth(wt.before.peerS, after.peerS)
	sc.Ticks = growth(wt.before.ticks, after.ticks)
	sc.TicksAtEnd = after.ticks
}

// growth is after − before, nil unless both were counted.
func growth(before, after *float64) *float64 {
	if before == nil || after == nil {
		return nil
	}
	v := *after - *before
	return &v
}

// witnessReadTimeout bounds one reading of the server's counters; a
// scrape is tried witnessTries times (the endpoint answering once late
// must not fail a healthy leg).
const (
	witnessReadTimeout = 5 * time.Second
	witnessTries       = 3
)

// read is one reading of the server's counters, from its metrics file or
// its endpoint.
func (wt *witness) read(ctx context.Context, metrics string) counts {
	ctx, cancel := context.WithTimeout(ctx, witnessReadTimeout)
	defer cancel()
	if wt.prom != nil {
		return wt.scrape(ctx)
	}
	st, raw, err := report.ReadServerTickContext(ctx, metrics)
	if err != nil {
		return counts{err: err}
	}
	return fileCounts(st, raw)
}

// freshWait bounds how long the reading after the swarm's exit waits for
// a metrics write newer than the file as it stood: a few of the server's
// write intervals (250 ms for the reference server), so that a server
// writing less often than the run lasted is not read as having seen none
// of it.
const freshWait = 1500 * time.Millisecond

// readFresh is read, after the next metrics write where one comes within
// freshWait (the file has no change notification to wait on). A scrape is
// always fresh.
func (wt *witness) readFresh(ctx context.Context, metrics string) counts {
	first := wt.read(ctx, metrics)
	if wt.prom != nil || first.err != nil || first.ticks == nil {
		return first
	}
	deadline := time.Now().Add(freshWait)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
		if c := wt.read(ctx, metrics); c.err == nil && c.ticks != nil && *c.ticks > *first.ticks {
			return c
		}
	}
	return first
}

// fileCounts takes the counters from a metrics document: its cumulative
// block where it has one, else the top-level counts it carries.
func fileCounts(st *report.ServerTick, raw map[string]json.RawMessage) counts {
	var c counts
	if cu := st.Cumulative; cu != nil {
		ticks := float64(cu.Ticks)
		c.ticks, c.peerS = &ticks, cu.PeerS
		if cu.InputsAccepted != nil {
			v := float64(*cu.InputsAccepted)
			c.inputs = &v
		}
	}
	if _, ok := raw["ticks_total"]; ok && c.ticks == nil {
		v := float64(st.TicksTotal)
		c.ticks = &v
	}
	if st.InputsAccepted != nil && c.inputs == nil {
		v := float64(*st.InputsAccepted)
		c.inputs = &v
	}
	return c
}

// scrape samples the endpoint once (up to witnessTries times) and, on the
// second reading, takes the counters over the window since the first.
func (wt *witness) scrape(ctx context.Context) counts {
	var err error
	for range witnessTries {
		if err = wt.prom.Sample(ctx, time.Now(), true); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // the endpoint has nothing to wait on
	}
	if err != nil {
		return counts{err: err}
	}
	ok, _, _ := wt.prom.Scrapes()
	if ok < 2 {
		return counts{}
	}
	return promCounts(wt.prom.Final())
}

// promCounts reads the counters out of a block over the run: inputs
// accepted as a counter's increase or a monotonic gauge's growth, ticks as
// the block's ticks_total figure. Before its second reading a block has
// no window, so the first reading's counts are nil (growth is then nil).
func promCounts(b *promsource.Block) counts {
	var c counts
	if b == nil {
		return c
	}
	if d := b.Details["inputs_accepted"]; d != nil && b.Missing["inputs_accepted"] == "" {
		switch {
		case d.Kind == promsource.Counter && d.Increase != nil:
			v := *d.Increase * d.Scale
			c.inputs = &v
		case d.Kind == promsource.Gauge && d.Min != nil && d.Max != nil:
			v := *d.Max - *d.Min
			c.inputs = &v
		}
	}
	if v, ok := b.Numbers["ticks_total"]; ok {
		c.ticks = &v
	}
	return c
}
