package report

import (
	"errors"
	"fmt"
	"math"
)

// Validate refuses a report whose counts cannot describe a run: a negative
// count, an outcome count larger than the clients, a disconnected count
// larger than the admitted one, a non-finite or negative rate or duration,
// a player outside the clients, or a shard block that is not a part of a
// run (Shard.Validate). A report that fails it is not evidence: reading it
// is an error naming the field, never a gate input. ParseReport calls it,
// so every reader of report.json (the gate, merge, compare, the HTML
// report) refuses the same reports.
func (r *Report) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	r.checkClients(bad)
	r.checkCounts(bad)
	r.checkEarlyEnd(bad)
	if r.Shard != nil {
		if err := r.Shard.Validate(r.Clients); err != nil {
			errs = append(errs, err)
		}
	}
	r.checkPlayers(bad)
	return errors.Join(errs...)
}

// complaint records one reason a report cannot describe a run.
type complaint func(format string, a ...any)

// checkClients holds the client outcome counts to each other: none
// negative, none above the clients, no more lost than admitted.
func (r *Report) checkClients(bad complaint) {
	if r.Clients < 0 {
		bad("clients is %d: a count cannot be negative", r.Clients)
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"clients_connected", r.ClientsConnected}, {"clients_refused", r.ClientsRefused},
		{"clients_disconnected", r.ClientsDisconnected}, {"clients_never_connected", r.ClientsNeverConnected}, {"threads", r.Threads}} {
		switch {
		case c.v < 0:
			bad("%s is %d: a count cannot be negative", c.name, c.v)
		case c.name != "threads" && c.v > r.Clients:
			bad("%s is %d, more than the report's %d clients", c.name, c.v, r.Clients)
		}
	}
	if r.ClientsDisconnected > r.ClientsConnected && r.ClientsConnected >= 0 {
		bad("clients_disconnected is %d, more than the %d clients_connected (only an admitted client can be lost)", r.ClientsDisconnected, r.ClientsConnected)
	}
	if r.ClientsConnected+r.ClientsRefused > r.Clients && r.ClientsConnected >= 0 && r.ClientsRefused >= 0 {
		bad("clients_connected %d + clients_refused %d is more than the %d clients", r.ClientsConnected, r.ClientsRefused, r.Clients)
	}
}

// checkCounts refuses a negative counter or by-reason count and a rate or
// duration that is not a finite number ≥ 0.
func (r *Report) checkCounts(bad complaint) {
	for _, c := range []struct {
		name string
		v    int64
	}{{"snapshots_received", r.SnapshotsReceived}, {"snapshot_decode_errors", r.SnapshotDecodeErrors},
		{"inputs_sent", r.InputsSent}, {"snapshots_decoded", r.SnapshotsDecoded}, {"protocol_errors", r.ProtocolErrors},
		{"client_ticks", r.ClientTicks}} {
		if c.v < 0 {
			bad("%s is %d: a count cannot be negative", c.name, c.v)
		}
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"rate_hz", r.RateHz}, {"duration_s", r.DurationS}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			bad("%s is %v: want a finite number ≥ 0", c.name, c.v)
		}
	}
	for name, m := range map[string]map[string]int{"pattern_counts": r.PatternCounts, "refused_by_reason": r.RefusedByReason,
		"disconnected_by_reason": r.DisconnectedByReason, "never_connected_by_reason": r.NeverConnectedByReason} {
		for k, v := range m {
			if v < 0 {
				bad("%s[%q] is %d: a count cannot be negative", name, k, v)
			}
		}
	}
}

// checkEarlyEnd holds an early abort to saying when and why, and the
// harness error counts to being counts.
func (r *Report) checkEarlyEnd(bad complaint) {
	switch a := r.AbortedAtS; {
	case a != nil && (math.IsNaN(*a) || math.IsInf(*a, 0) || *a < 0):
		bad("aborted_at_s is %v: want a finite number ≥ 0", *a)
	case a != nil && r.AbortReason == "":
		bad("aborted_at_s is set without an abort_reason: an early end must say why")
	case a == nil && (r.AbortReason != "" || r.AbortGate != ""):
		bad("abort_reason/abort_gate without aborted_at_s: an early end must say when")
	}
	h := r.HarnessErrors
	if h == nil {
		return
	}
	if h.Socket < 0 || h.Dial < 0 || h.FDExhausted < 0 {
		bad("harness_errors: a count cannot be negative (socket %d, dial %d, fd_exhausted %d)", h.Socket, h.Dial, h.FDExhausted)
	}
	if h.FDExhausted > h.Socket+h.Dial {
		bad("harness_errors.fd_exhausted %d is more than socket %d + dial %d", h.FDExhausted, h.Socket, h.Dial)
	}
	if l := h.FDLimit; l != nil && (l.Soft < 0 || l.Hard < 0 || l.Needed < 0 || l.Clients < 0 || l.PerClient < 0 || l.Spare < 0) {
		bad("harness_errors.fd_limit: a limit or count cannot be negative")
	}
}

// checkPlayers holds every player row inside the run's clients: the
// whole run's when the report is a shard or a (partial) merge of shards.
func (r *Report) checkPlayers(bad complaint) {
	total := r.Clients
	if r.Shard != nil && r.Shard.ClientsTotal > total {
		total = r.Shard.ClientsTotal
	}
	if r.Shards != nil && r.Shards.ClientsTotal > total {
		total = r.Shards.ClientsTotal
	}
	for i, p := range r.Players {
		if p.Index < 0 || p.Index >= total {
			bad("players[%d]: index %d is outside the run's %d clients", i, p.Index, total)
			return
		}
	}
}

// Validate refuses a shard block that cannot be a part of a run of its
// own clients_total: Count ≥ 1, 0 ≤ Index < Count, 0 ≤ FirstClient, and
// FirstClient + clients (the report's own) ≤ ClientsTotal; StartLateMs a
// finite number ≥ 0.
func (s *ShardInfo) Validate(clients int) error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("shard: "+format, a...)) }
	if s.Count < 1 {
		bad("count is %d: want ≥ 1", s.Count)
	}
	if s.Index < 0 || s.Index >= max(s.Count, 1) {
		bad("index is %d: want 0..%d (count %d)", s.Index, max(s.Count, 1)-1, s.Count)
	}
	if s.ClientsTotal < 0 {
		bad("clients_total is %d: a count cannot be negative", s.ClientsTotal)
	}
	if s.FirstClient < 0 {
		bad("first_client is %d: want ≥ 0", s.FirstClient)
	}
	if s.FirstClient >= 0 && clients >= 0 && s.ClientsTotal >= 0 && s.FirstClient+clients > s.ClientsTotal {
		bad("first_client %d + this shard's %d clients is more than clients_total %d", s.FirstClient, clients, s.ClientsTotal)
	}
	if math.IsNaN(s.StartLateMs) || math.IsInf(s.StartLateMs, 0) || s.StartLateMs < 0 {
		bad("start_late_ms is %v: want a finite number ≥ 0", s.StartLateMs)
	}
	return errors.Join(errs...)
}
