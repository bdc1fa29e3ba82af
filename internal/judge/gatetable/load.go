package gatetable

import (
	"fmt"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// LoadHappened is the one rule for whether a report describes the load its
// leg names, whatever gates the profile declares: the swarm ran clients,
// the server admitted at least one, none it admitted was lost mid-run, and
// clients received state. It returns why not, one reason each; none means
// the load happened. The swarm's exit status, the report's `passed` and the
// gate's built-in "load" check all read it, so none of them can call a run
// that let nobody in, or sent nothing, a pass.
func LoadHappened(r *report.Report) []string {
	var why []string
	if k := absent(r, "clients_disconnected", "snapshots_received"); k != "" {
		why = append(why, "report."+k+" missing: the load cannot be shown to have happened without it")
	}
	if r.Clients < 1 {
		why = append(why, "the swarm ran no clients")
	}
	if r.ClientsConnected < 1 {
		why = append(why, fmt.Sprintf("no client was admitted (refused %d %v, never connected %d %v)",
			r.ClientsRefused, r.RefusedByReason, r.ClientsNeverConnected, r.NeverConnectedByReason))
	}
	if r.ClientsDisconnected > 0 {
		why = append(why, fmt.Sprintf("%d of %d admitted clients lost mid-run %v", r.ClientsDisconnected, r.ClientsConnected, r.DisconnectedByReason))
	}
	if r.SnapshotsReceived < 1 {
		why = append(why, "no client received a snapshot")
	}
	return why
}

// HarnessShort is the one rule for a swarm that could not start some of
// its clients itself (report.harness_errors: its own sockets, descriptors
// or local connects, never the server's doing). why says how many and,
// when it was the descriptor limit, the limit against the need ("ulimit
// -n 256 < 1064 needed for 1000 clients") and what to raise; "" when the
// harness started every client. excused says whether that accounts for
// the leg falling short: only when the server refused and lost none of the
// clients that did reach it (a refusal or a loss at part of the load is
// the server's all the same). The swarm's exit status and the gate's
// harness_errors check both read it.
func HarnessShort(r *report.Report) (why string, excused bool) {
	h := r.HarnessErrors
	n := h.Clients()
	if n == 0 {
		return "", false
	}
	why = fmt.Sprintf("the swarm could not start %d of %d clients itself (%d no socket, %d connect not issued)", n, r.Clients, h.Socket, h.Dial)
	if l := h.FDLimit; h.FDExhausted > 0 && l != nil {
		why += fmt.Sprintf(": %d hit the descriptor limit, ulimit -n %d < %d needed for %d clients (hard limit %d); raise it to %d (ulimit -n, LimitNOFILE=, nofile in limits.conf, docker --ulimit) or split the clients over shards",
			h.FDExhausted, l.Soft, l.Needed, l.Clients, l.Hard, l.Needed)
	} else if h.FDExhausted > 0 {
		why += fmt.Sprintf(": %d hit the descriptor limit", h.FDExhausted)
	}
	if h.FirstError != "" {
		why += "; first error: " + h.FirstError
	}
	return why, r.ClientsRefused == 0 && r.ClientsDisconnected == 0
}
