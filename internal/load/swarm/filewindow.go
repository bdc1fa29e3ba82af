package swarm

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// fileWindow is what the monitor keeps of a metrics file's readings for
// the figures over the hold (serverwindow): the run's first reading, the
// first one in the hold, the gauges' extremes over the hold, and the
// previous reading's cumulative state for each timeline row's step. Only
// the monitor loop touches it until finish, which runs after the loop.
type fileWindow struct {
	start, holdAt time.Time
	path          string // the metrics file (reset requests go beside it)
	own           map[string]serverwindow.FileFigure

	prev       *report.Cumulative
	prevRead   *serverwindow.Reading // the previous reading (own figures' steps)
	prevInHold bool
	first      *serverwindow.Reading
	base       *serverwindow.Reading
	extremes   serverwindow.Extremes
	readings   int
	busiest    *float64
	// inGame is the latest reading taken before the bots began to leave
	// (monitor.endHold): the population gauges the final block keeps.
	inGame map[string]json.RawMessage

	// token is the marks reset asked for at the hold's start (0: not
	// asked, or the request could not be written: resetErr says why).
	token    int64
	resetErr error
}

func newFileWindow(cfg *Config, start time.Time) *fileWindow {
	return &fileWindow{start: start, holdAt: cfg.holdStart(start), path: cfg.ServerMetrics, own: cfg.OwnFile}
}

// fileStep is a reading's share of its timeline row: the built-in step
// and the own figures over the second.
type fileStep struct {
	serverwindow.Step
	Own map[string]float64
}

// observe takes one reading at now and returns its step since the
// previous one (the timeline row's server share). inGame: it was taken
// before the bots began to leave; one taken after moves the counters but
// not the gauges' extremes.
func (w *fileWindow) observe(now time.Time, st *report.ServerTick, raw map[string]json.RawMessage, inGame bool) fileStep {
	r := serverwindow.Reading{At: now.Sub(w.start).Seconds(), Raw: raw, Tick: st}
	step := fileStep{Step: serverwindow.StepBetween(w.prev, st.Cumulative)}
	if w.prevRead != nil {
		step.Own = serverwindow.OwnStep(*w.prevRead, r, w.own)
	}
	if len(w.own) > 0 {
		w.prevRead = &r
	}
	if w.first == nil {
		w.first = &r
	}
	inHold := !now.Before(w.holdAt)
	if inHold && w.base == nil {
		w.base = &r
		w.requestReset(now)
	}
	if inGame {
		w.inGame = raw
	}
	if w.base != nil && inGame {
		w.extremes.Add(raw)
		w.extremes.AddOwn(raw, w.own)
		w.readings++
		if w.prevInHold && step.CPUPct != nil && (w.busiest == nil || *step.CPUPct > *w.busiest) {
			w.busiest = step.CPUPct
		}
	}
	w.prev, w.prevInHold = st.Cumulative, w.base != nil
	return step
}

// requestReset asks the server to restart its marks now (the send queue's
// high-water mark), so that at the end they cover the hold: the request
// file beside the metrics file holds the request's number, written
// atomically. A server that does not honour it leaves marks_reset where
// it was, and the mark is then read as since the server started.
func (w *fileWindow) requestReset(now time.Time) {
	if w.path == "" || report.IsMetricsURL(w.path) {
		return
	}
	token := now.UnixMilli()
	if err := report.WriteFileAtomic(w.path+report.ResetRequestSuffix, []byte(strconv.FormatInt(token, 10)+"\n")); err != nil {
		w.resetErr = err
		return
	}
	w.token = token
}

// freeze gives a final document read after the bots began to leave
// (monitor.endHold) the population gauges of the last reading before they
// did: what the server reported while it still had its players, as a
// final read with every client connected would have. Its counters stay
// as read. b is returned as is when no reading came before.
func (w *fileWindow) freeze(b []byte) []byte {
	if w.inGame == nil {
		return b
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(b, &doc) != nil {
		return b // ParseServerTick reports it
	}
	for _, g := range serverwindow.Gauges() {
		if v, ok := w.inGame[g]; ok {
			doc[g] = v
		} else {
			delete(doc, g)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return b
	}
	return out
}

// removeResetRequest deletes the request file, which is the swarm's.
func (w *fileWindow) removeResetRequest() {
	if w.token != 0 {
		_ = os.Remove(w.path + report.ResetRequestSuffix)
	}
}

// hold is the server block over the hold, ending at the final reading.
func (w *fileWindow) hold(endAt time.Time, st *report.ServerTick, raw map[string]json.RawMessage) (map[string]json.RawMessage, []string) {
	end := serverwindow.Reading{At: endAt.Sub(w.start).Seconds(), Raw: raw, Tick: st}
	h := serverwindow.Hold{End: end, ResetToken: w.token, Own: w.own}
	var warns []string
	switch {
	case w.base != nil && w.base.At < end.At:
		h.Base, h.InHold = *w.base, true
		ex := w.extremes
		ex.Add(raw)
		ex.AddOwn(raw, w.own)
		h.Extremes, h.Readings = ex, w.readings+1
		busiest := w.busiest
		if s := serverwindow.StepBetween(w.prev, st.Cumulative); w.prevInHold && s.CPUPct != nil && (busiest == nil || *s.CPUPct > *busiest) {
			busiest = s.CPUPct
		}
		h.BusiestCPUPct = busiest
	default:
		// No reading in the hold before the last: the figures span the
		// whole run, the ramp included, and say so.
		h.Base = end
		if w.first != nil {
			h.Base = *w.first
		}
		var ex serverwindow.Extremes
		ex.Add(raw)
		ex.AddOwn(raw, w.own)
		h.Extremes, h.Readings = ex, 1
		warns = append(warns, fmt.Sprintf("server metrics: no reading between the last connect slot and the end of the run; the figures cover t=%.1f–%.1f s, ramp included", h.Base.At, end.At))
	}
	if w.resetErr != nil {
		warns = append(warns, fmt.Sprintf("server metrics: could not ask the server to reset its marks (%v): send_queue_max is since the server started", w.resetErr))
	}
	return serverwindow.Compute(h), warns
}
