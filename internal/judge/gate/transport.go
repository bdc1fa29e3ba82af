package gate

import (
	"errors"
	"fmt"
	"math"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// RunChecks are the checks of a run that read more than one leg: they run
// once, after every leg, from the legs' results (the runner calls it
// before the run's verdict is folded). Today that is the cross-transport
// wire overhead (TransportOverhead).
func RunChecks(r *rundir.RunResult, strict bool) []rundir.Check {
	return TransportOverhead(r, strict)
}

// sameRate is how far apart (relative) the two legs' observed tick rates
// may be for their wire rates to describe the same payload: at 2 % the
// rate alone moves a 72 KB/s wire figure by at most 1.5 KB/s.
const sameRate = 0.02

// TransportOverhead checks transport_overhead_kbs_max on a profile with
// transports: for every load the profile runs on both ENet and QUIC (a
// pattern at a sweep point), QUIC's per-client wire rate minus ENet's, each
// read by the gate's figure (server_tick.wire_out_kbs_per_client, with its
// wire_peers rule), against the threshold. The two legs ran the same load,
// so what differs is what each transport puts on the wire around the same
// payload (both payloads are in the detail) — provided both servers kept
// the same rate: a server starved on one leg sends fewer snapshots, and
// its lower wire rate would pass any ceiling. When the legs' observed
// tick-Hz means differ by more than 2 % the check is inconclusive. Either
// leg's figure missing — it did not run, its report is unread, its server
// kept no wire sample — makes the check unevaluable, which fails like a
// failure.
func TransportOverhead(r *rundir.RunResult, strict bool) []rundir.Check {
	p := r.Profile
	g := gatetable.MustLookup(gatetable.TransportOverheadGate)
	spec, declared := p.Gates[g.Name]
	if !declared || spec.Threshold == nil {
		return nil
	}
	level, why := g.LevelIn(spec.Level, p.EffectiveTier(strict))
	var out []rundir.Check
	for _, pr := range transportPairs(r.Legs) {
		c := rundir.Check{Gate: g.Name, Title: g.Title + " [" + pr.load + "]", Level: level, Threshold: g.Bound(*spec.Threshold), Detail: why}
		overheadCheck(&c, g, *spec.Threshold, pr)
		out = append(out, c)
	}
	return out
}

// transportPair is the ENet ([0]) and QUIC ([1]) leg of one load; a side
// whose leg the run does not have is nil.
type transportPair struct {
	load string
	legs [2]*rundir.LegResult
}

// transportPairs groups the legs of each load by transport, in run order.
func transportPairs(legs []rundir.LegResult) []*transportPair {
	side := map[string]int{"enet": 0, "quic": 1}
	byLoad := map[string]*transportPair{}
	var out []*transportPair
	for i := range legs {
		l := &legs[i]
		k, ok := side[l.Leg.Transport]
		if !ok {
			continue
		}
		key := l.Leg.IDWithoutTransport()
		if byLoad[key] == nil {
			byLoad[key] = &transportPair{load: key}
			out = append(out, byLoad[key])
		}
		byLoad[key].legs[k] = l
	}
	return out
}

// overheadCheck evaluates one pair into c: unevaluable without both
// figures, inconclusive when the servers kept different rates, else the
// difference against thr.
func overheadCheck(c *rundir.Check, g gatetable.Gate, thr float64, pr *transportPair) {
	var wire, hz [2]float64
	var payload [2]*float64
	missing := ""
	for k, name := range []string{"enet", "quic"} {
		v, err := legFigure(pr.legs[k], g.Measure, name, pr.load)
		if err == nil {
			hz[k], err = legFigure(pr.legs[k], gatetable.TickHzMean.Read, name, pr.load)
		}
		if err != nil {
			missing = rundir.JoinDetail(missing, err.Error())
			continue
		}
		wire[k] = v
		payload[k], _ = legValue(pr.legs[k], gatetable.KBsMean)
	}
	if missing != "" {
		c.Status, c.MeasuredText, c.Detail = rundir.StatusUnevaluable, "missing", rundir.JoinDetail(missing, c.Detail)
		return
	}
	d := wire[1] - wire[0]
	c.Measured, c.MeasuredText = &d, gatetable.FormatNumber(d)+" "+g.Unit
	note := fmt.Sprintf("wire per client: quic %s, enet %s KB/s (payload quic %s, enet %s KB/s; observed tick-Hz mean quic %s, enet %s)",
		gatetable.FormatNumber(wire[1]), gatetable.FormatNumber(wire[0]), optText(payload[1]), optText(payload[0]),
		gatetable.FormatNumber(hz[1]), gatetable.FormatNumber(hz[0]))
	switch {
	case math.Abs(hz[1]-hz[0]) > sameRate*math.Max(hz[0], hz[1]):
		c.Status = rundir.StatusInconclusive
		c.Detail = rundir.JoinDetail(fmt.Sprintf("the two servers did not keep the same rate (more than %.0f %% apart), so their wire rates are not the same payload; %s", sameRate*100, note), c.Detail)
	case g.Dir.Holds(d, thr):
		c.Status, c.Detail = rundir.StatusPass, rundir.JoinDetail(note, c.Detail)
	default:
		c.Status, c.Detail = rundir.StatusFail, rundir.JoinDetail(fmt.Sprintf("%s = %s, must be %s; %s", g.Metric, c.MeasuredText, c.Threshold, note), c.Detail)
	}
}

// legFigure reads one leg's figure for a cross-leg check, or says why not.
func legFigure(l *rundir.LegResult, read func(*gatetable.Metrics) (float64, error), transport, load string) (float64, error) {
	switch {
	case l == nil:
		return 0, fmt.Errorf("no %s leg of %s ran", transport, load)
	case l.Report == nil:
		return 0, fmt.Errorf("leg %s: no report (%s)", l.Leg.ID, l.Verdict)
	}
	v, err := read(gatetable.FromReport(l.Report))
	if err != nil {
		return 0, fmt.Errorf("leg %s: %w", l.Leg.ID, err)
	}
	return v, nil
}

// legValue reads a figure of a leg's report; nil when missing.
func legValue(l *rundir.LegResult, f gatetable.Figure) (*float64, error) {
	if l == nil || l.Report == nil {
		return nil, errors.New("no report")
	}
	return f.Value(gatetable.FromReport(l.Report))
}

func optText(v *float64) string {
	if v == nil {
		return "missing"
	}
	return gatetable.FormatNumber(*v)
}
