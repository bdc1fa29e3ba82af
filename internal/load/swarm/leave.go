package swarm

import (
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// DefaultLeaveTimeout bounds the goodbyes of a Leaver protocol at the end
// of a run: long enough for a loaded machine's server to read and answer a
// datagram, short enough that a server which never answers a goodbye costs
// the run one second.
const DefaultLeaveTimeout = time.Second

// leaveTally is what one worker's goodbyes came to (report.Leave).
type leaveTally struct {
	leavers  int // clients whose bot is a Leaver
	goodbyes int // of them, the ones admitted when the hold ended
	sent     int64
	answered int64
	errors   int64
	firstErr error
	waited   time.Duration
}

// countLeavers counts, once the worker's loop is over, its clients whose
// bot is a Leaver and the admitted ones of them, which will say goodbye:
// the run freezes the server's population gauges before the first one
// does (drive).
func (w *worker) countLeavers() {
	for _, c := range w.clients {
		if c.leaver == nil {
			continue
		}
		w.leave.leavers++
		if c.live() && c.phase == phaseJoined {
			w.leave.goodbyes++
		}
	}
}

// sayGoodbye calls Leave for every admitted client whose bot is a Leaver,
// then services their hosts until each has heard its server's answer or
// the leave timeout has passed. Nothing received here counts in the
// report's figures: the hold is over. Errors are counted, never fatal.
func (w *worker) sayGoodbye() {
	if w.leave.goodbyes == 0 {
		return
	}
	begin := time.Now()
	var leaving []*client
	for _, c := range w.clients {
		if c.leaver == nil || !c.live() || c.phase != phaseJoined {
			continue
		}
		err := c.leaver.Leave(c)
		if err == nil {
			err = c.sendErr
		}
		if err == nil {
			err = c.host.Flush()
		}
		if err != nil {
			w.leave.errors++
			if w.leave.firstErr == nil {
				w.leave.firstErr = fmt.Errorf("client %d: %w", c.index, err)
			}
			continue
		}
		w.leave.sent++
		leaving = append(leaving, c)
	}
	w.awaitAnswers(leaving, begin.Add(w.cfg.LeaveTimeout))
	w.leave.waited = time.Since(begin)
}

// leavePoll is how often the goodbyes' hosts are serviced while their
// answers are awaited.
const leavePoll = 2 * time.Millisecond

// awaitAnswers services the leaving clients' hosts until every one has
// its answer or deadline passes.
func (w *worker) awaitAnswers(leaving []*client, deadline time.Time) {
	for {
		pending := 0
		for _, c := range leaving {
			if c.answered {
				continue
			}
			if _, err := c.host.Service(c.onGoodbyeEvent); err != nil {
				c.answered = true // the host is gone: nothing more will come
			}
			if c.answered {
				w.leave.answered++
			} else {
				pending++
			}
		}
		if pending == 0 || !time.Now().Before(deadline) {
			return
		}
		time.Sleep(leavePoll)
	}
}

// onGoodbyeEvent handles one event after the client's goodbye: the
// server's MsgLeaving, or the transport's disconnect, answers it. The
// protocol still reads every message (it may need to, to tell its answer
// from a late state update), and what it says is not counted.
func (c *client) onGoodbyeEvent(ev transport.Event) {
	switch ev.Kind {
	case transport.EventDisconnect:
		c.answered = true
	case transport.EventReceive:
		if m, err := c.bot.Receive(c, ev.Payload); err == nil && m.Kind == MsgLeaving {
			c.answered = true
		}
	}
}

// addLeave records the run's goodbyes (nothing when no client's bot is a
// Leaver), with a warning when some of them failed.
func addLeave(r *report.Report, cfg *Config, workers []*worker) {
	var l report.Leave
	leavers := 0
	var firstErr error
	for _, w := range workers {
		leavers += w.leave.leavers
		l.Sent += w.leave.sent
		l.Answered += w.leave.answered
		l.Errors += w.leave.errors
		l.WaitedMs = max(l.WaitedMs, round3(float64(w.leave.waited)/float64(time.Millisecond)))
		if firstErr == nil {
			firstErr = w.leave.firstErr
		}
	}
	if leavers == 0 {
		return
	}
	l.TimeoutMs = round3(float64(cfg.LeaveTimeout) / float64(time.Millisecond))
	r.Leave = &l
	if firstErr != nil {
		r.Warnings = append(r.Warnings, fmt.Sprintf("leave: %d bot(s) could not say goodbye (counted, not fatal: the run's figures were already taken); the first: %v", l.Errors, firstErr))
	}
}
