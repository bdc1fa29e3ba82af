package swarm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// fdSpare is the descriptors a swarm process needs besides its clients'
// sockets: the Go runtime's poller, stdio, the metrics file and report,
// the Prometheus scraper's connection, the relay's own.
const fdSpare = 64

// fdNeed is how many descriptors the run needs, per client and in all:
// each client holds its own socket (its transport host), and behind the
// impairment relay the relay holds one more per client of the whole run.
func fdNeed(cfg *Config) (perClient int, needed int64) {
	perClient, needed = 1, int64(cfg.ShardClients())+fdSpare
	if len(cfg.Impairment) > 0 {
		perClient++
		needed += int64(cfg.Clients)
	}
	return perClient, needed
}

// CheckFileLimit reads the process's descriptor limit (RLIMIT_NOFILE),
// raises the soft limit toward what the run needs (up to the hard limit:
// raising that takes privileges the swarm does not assume), and returns
// the limit against the need; nil where the platform has no such limit.
// Run calls it; a command line calls it first to warn before the run.
func CheckFileLimit(cfg *Config) *report.FDLimit {
	cfg.defaults()
	soft, hard, ok := fileLimit()
	if !ok {
		return nil
	}
	per, need := fdNeed(cfg)
	l := &report.FDLimit{Soft: soft, Hard: hard, SoftBefore: soft, Needed: need, Clients: cfg.ShardClients(), PerClient: per, Spare: fdSpare}
	if soft < need && soft < hard {
		if err := setSoftFileLimit(min(need, hard)); err == nil {
			if s, _, ok := fileLimit(); ok {
				l.Soft = s
			}
		}
	}
	return l
}

// FileLimitAdvice says what the limit allows and what to raise, for a
// limit below the run's need.
func FileLimitAdvice(l *report.FDLimit) string {
	extra := ""
	if l.PerClient > 1 {
		extra = fmt.Sprintf(", %d per client behind the impairment relay", l.PerClient)
	}
	return fmt.Sprintf("descriptors: ulimit -n %d < %d needed for %d clients (one socket each%s, %d spare; hard limit %d): "+
		"about %d clients can open a socket, the rest fail as harness errors and the leg is inconclusive; "+
		"raise the limit to %d (ulimit -n %d in the shell that starts the run; above the hard limit: LimitNOFILE= in the systemd unit, "+
		"nofile in /etc/security/limits.conf, docker run --ulimit nofile=%d) or split the clients over shards",
		l.Soft, l.Needed, l.Clients, extra, l.Spare, l.Hard, max(0, (l.Soft-int64(l.Spare))/int64(max(1, l.PerClient))), l.Needed, l.Needed, l.Needed)
}

// fdBudget is how many clients may still take a socket when the limit is
// below the need: the room left after the spare, shared by the workers, so
// the swarm never takes the descriptors it needs to read the server's
// metrics and write its report. nil: no budget (the limit is enough, or
// unknown).
func fdBudget(l *report.FDLimit) *fdRoom {
	if !l.Short() {
		return nil
	}
	r := &fdRoom{limit: l, room: max(0, (l.Soft-int64(l.Spare))/int64(max(1, l.PerClient)))}
	r.left.Store(r.room)
	return r
}

// fdRoom is the shared descriptor budget of a run whose limit is short.
type fdRoom struct {
	limit *report.FDLimit
	room  int64
	left  atomic.Int64
}

// take reserves one client's sockets, or says why there is no room (an
// error that is the descriptor limit: it wraps EMFILE).
func (r *fdRoom) take() error {
	if r == nil || r.left.Add(-1) >= 0 {
		return nil
	}
	return fmt.Errorf("descriptor limit: ulimit -n %d leaves room for %d of %d clients (%d descriptors kept for the swarm itself): %w",
		r.limit.Soft, r.room, r.limit.Clients, r.limit.Spare, syscall.EMFILE)
}

// harnessFail records one client the harness itself failed to start: its
// socket could not be created (socket) or its connect not issued (dial).
func (w *worker) harnessFail(err error, socket bool) {
	if w.firstDialErr == nil {
		w.firstDialErr = err
	}
	if socket {
		w.socketErrs++
	} else {
		w.dialErrs++
	}
	if fdExhausted(err) {
		w.fdErrs++
	}
}

// fdExhausted: the error is a descriptor limit, the process's or the
// system's.
func fdExhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// harnessErrors sums the workers' failures to start clients.
func harnessErrors(workers []*worker, l *report.FDLimit) *report.HarnessErrors {
	h := &report.HarnessErrors{FDLimit: l}
	for _, w := range workers {
		h.Socket += w.socketErrs
		h.Dial += w.dialErrs
		h.FDExhausted += w.fdErrs
		if h.FirstError == "" && w.firstDialErr != nil {
			h.FirstError = w.firstDialErr.Error()
		}
	}
	return h
}
