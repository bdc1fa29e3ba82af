package gatetable

import (
	"errors"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// recoverS is the "after" stretch's recover_s: null (never recovered) is
// unevaluable with the swarm's reason.
func recoverS(m *Metrics) (float64, error) {
	st := m.Report.Phase("after")
	switch {
	case st == nil && m.Scope != "":
		return 0, fmt.Errorf("recover_s exists only on the \"after\" stretch, not on phase %q", m.Scope)
	case st == nil:
		return 0, errors.New("report has no \"after\" stretch (the run was not impaired)")
	case st.RecoverS == nil:
		return 0, fmt.Errorf("phases[after].recover_s is null: %s", st.RecoverNote)
	}
	return *st.RecoverS, nil
}

// rssStep names the largest single RSS step, which the slope estimator
// deliberately does not average away.
func rssStep(m *Metrics) string {
	r := m.Report
	if r.RSSStepMaxKB == nil {
		return ""
	}
	at := "?"
	if r.RSSStepAtS != nil {
		at = FormatNumber(*r.RSSStepAtS)
	}
	return fmt.Sprintf("largest RSS step %s KB at t=%s s", FormatNumber(*r.RSSStepMaxKB), at)
}

// admission: the run asked for want clients; every one connected, none was
// refused, none dropped mid-run, none left unconnected.
func admission(m *Metrics, want float64) Outcome {
	r := m.Report
	if missing := absent(r, "clients_refused", "clients_disconnected", "clients_never_connected"); missing != "" {
		return Outcome{Text: "missing", Err: fmt.Errorf("report.%s missing: admission cannot be shown without it", missing)}
	}
	held := float64(r.ClientsConnected - r.ClientsDisconnected)
	o := Outcome{Measured: &held, Pass: true,
		Text: fmt.Sprintf("%d/%d connected, %d refused, %d dropped", r.ClientsConnected, r.Clients, r.ClientsRefused, r.ClientsDisconnected)}
	var why []string
	if float64(r.Clients) != want {
		why = append(why, fmt.Sprintf("swarm ran %d clients, the run asked for %s", r.Clients, FormatNumber(want)))
	}
	// A refused client never connected either; it is counted once, as
	// refused, below.
	if unjoined := max(r.Clients-r.ClientsConnected-r.ClientsRefused, r.ClientsNeverConnected); unjoined > 0 {
		why = append(why, fmt.Sprintf("%d never connected %v", unjoined, r.NeverConnectedByReason))
	}
	if r.ClientsRefused > 0 {
		why = append(why, fmt.Sprintf("%d refused %v", r.ClientsRefused, r.RefusedByReason))
	}
	if r.ClientsDisconnected > 0 {
		why = append(why, fmt.Sprintf("%d dropped mid-run %v", r.ClientsDisconnected, r.DisconnectedByReason))
	}
	if len(why) > 0 {
		o.Pass, o.Detail = false, strings.Join(why, "; ")
	}
	return o
}

// absent names the first of keys a parsed report left out ("" when it has
// them all): a count a custom swarm did not write is missing, not 0.
func absent(r *report.Report, keys ...string) string {
	for _, k := range keys {
		if !r.Has(k) {
			return k
		}
	}
	return ""
}
