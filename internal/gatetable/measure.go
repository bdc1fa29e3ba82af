package gatetable

import (
	"errors"
	"fmt"
	"strings"
)

// tick reads a number of the server block.
func tick(path ...string) func(*Metrics) (float64, error) {
	return func(m *Metrics) (float64, error) { return m.Tick(path...) }
}

// wireKBs is the server's wire rate per client. A per-client rate is only
// a measurement when the server kept a sample interval with peers
// connected: wire_peers must be present and > 0, else the figure (usually
// 0) would pass any ceiling without having measured anything.
func wireKBs(m *Metrics) (float64, error) {
	peers, err := m.Tick("wire_peers")
	if err != nil {
		return 0, fmt.Errorf("%w (wire_kbs_max reads wire_peers to know a per-client rate was measured)", err)
	}
	if peers <= 0 {
		return 0, errors.New("server_tick.wire_peers is 0: the server kept no wire sample with peers connected, so no per-client rate was measured")
	}
	return m.Tick("wire_out_kbs_per_client")
}

const noTwoSnapshots = "no client received two snapshots"

// scoped names the stretch a report-side figure was read from.
func scoped(m *Metrics, what string) string {
	if m.Scope != "" {
		return what + " in phase " + m.Scope
	}
	return what
}

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

func kbsMax(m *Metrics) (float64, error) {
	if k := m.Report.DownstreamKBsPerClient; k != nil {
		return k.Max, nil
	}
	return 0, errors.New(scoped(m, "report.downstream_kbs_per_client") + " missing (" + noTwoSnapshots + ")")
}

func tickHzMin(m *Metrics) (float64, error) {
	if h := m.Report.ObservedServerTickHz; h != nil {
		return h.Min, nil
	}
	return 0, errors.New(scoped(m, "report.observed_server_tick_hz") + " missing (" + noTwoSnapshots + ")")
}

// rssGrowth is rss_kb − rss_startup_kb. A value ≤ 0 in either field means
// the server could not read its RSS on its platform: unavailable, which is
// unevaluable, never "no growth".
func rssGrowth(m *Metrics) (float64, error) {
	cur, err := m.Tick("rss_kb")
	if err != nil {
		return 0, err
	}
	start, err := m.Tick("rss_startup_kb")
	if err != nil {
		return 0, err
	}
	if cur <= 0 || start <= 0 {
		return 0, fmt.Errorf("server reports rss_kb=%s rss_startup_kb=%s: RSS unavailable on its platform", FormatNumber(cur), FormatNumber(start))
	}
	return cur - start, nil
}

func rssSlope(m *Metrics) (float64, error) {
	r := m.Report
	if r.RSSSlopeKBPerMin != nil {
		return *r.RSSSlopeKBPerMin, nil
	}
	if err := m.TickErr(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("report.rss_slope_kb_per_min is null: the RSS series (%d samples) is too short to fit", len(r.RSSSeries))
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
	held := float64(r.ClientsConnected - r.ClientsDisconnected)
	o := Outcome{Measured: &held, Pass: true,
		Text: fmt.Sprintf("%d/%d connected, %d refused, %d dropped", r.ClientsConnected, r.Clients, r.ClientsRefused, r.ClientsDisconnected)}
	var why []string
	if float64(r.Clients) != want {
		why = append(why, fmt.Sprintf("swarm ran %d clients, the run asked for %s", r.Clients, FormatNumber(want)))
	}
	if r.ClientsConnected < r.Clients || r.ClientsNeverConnected > 0 {
		why = append(why, fmt.Sprintf("%d never connected %v", r.Clients-r.ClientsConnected, r.NeverConnectedByReason))
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
