package gatetable

import (
	"fmt"

	"github.com/scalegate/scalegate/internal/report"
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
