package profile

import (
	"errors"
	"strings"
	"testing"
)

func TestTransportError(t *testing.T) {
	p := &Profile{Name: "reference", Transport: "quic"}
	missing := func(string) error {
		return errors.New(`transport "quic" is not available in this build (available: [enet])`)
	}
	err := p.TransportError(missing)
	if err == nil || !strings.Contains(err.Error(), "transport quic") || !strings.Contains(err.Error(), "not available in this build") ||
		!strings.Contains(err.Error(), "never runs another transport") {
		t.Fatalf("err = %v", err)
	}
	if err := p.TransportError(func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestLegsClientSweep(t *testing.T) {
	p := &Profile{Name: "cap", Clients: 8, Patterns: []string{"weave"},
		Sweep: &Sweep{Clients: []int{32, 64}, EntityCounts: []int{0, 500}}}
	var ids []string
	for _, l := range p.Legs() {
		ids = append(ids, l.ID)
	}
	if got := strings.Join(ids, " "); got != "weave_c32_e0 weave_c32_e500 weave_c64_e0 weave_c64_e500" {
		t.Fatalf("legs %s", got)
	}
	l := p.Legs()[2]
	if p.ClientsFor(l) != 64 || l.SimWorkers != nil {
		t.Errorf("leg %+v: clients %d", l, p.ClientsFor(l))
	}
	if p.ClientsFor(Leg{}) != 8 {
		t.Error("an unswept leg runs the profile's clients")
	}
	if got := l.IDWithoutClients(); got != "weave_e0" {
		t.Errorf("IDWithoutClients = %q, want weave_e0", got)
	}
}

// A budget axis multiplies the legs like the others ("_b1200"); a profile
// with transports runs every leg once per transport, innermost, with the
// transport in its ID and baseline key.
func TestLegsBudgetAndTransports(t *testing.T) {
	p := &Profile{Name: "x", Clients: 8, Patterns: []string{"weave", "idle"}, Transports: []string{"enet", "quic"},
		Sweep: &Sweep{SnapshotBudgetBytes: []int{600, 1200}}}
	var ids []string
	for _, l := range p.Legs() {
		ids = append(ids, l.ID)
	}
	want := "weave_b600_enet weave_b600_quic weave_b1200_enet weave_b1200_quic idle_b600_enet idle_b600_quic idle_b1200_enet idle_b1200_quic"
	if got := strings.Join(ids, " "); got != want {
		t.Fatalf("legs %s\nwant %s", got, want)
	}
	l := p.Legs()[3]
	if *l.SnapshotBudget != 1200 || l.Transport != "quic" || p.TransportFor(l) != "quic" || l.BaselineKey != "x/weave_quic" ||
		l.IDWithoutTransport() != "weave_b1200" {
		t.Errorf("leg %+v", l)
	}
	single := &Profile{Name: "s", Transport: "enet", Patterns: []string{"weave"}}
	sl := single.Legs()[0]
	if sl.ID != "weave" || sl.Transport != "" || single.TransportFor(sl) != "enet" || sl.IDWithoutTransport() != "weave" {
		t.Errorf("single-transport leg %+v (transport %s)", sl, single.TransportFor(sl))
	}
	var asked []string
	if err := p.TransportError(func(n string) error { asked = append(asked, n); return nil }); err != nil || strings.Join(asked, ",") != "enet,quic" {
		t.Errorf("TransportError looked up %v (%v), want every transport", asked, err)
	}
	if err := p.TransportError(func(n string) error {
		if n == "quic" {
			return errors.New("not in this build")
		}
		return nil
	}); err == nil || !strings.Contains(err.Error(), "transport quic") {
		t.Errorf("an unavailable second transport: %v", err)
	}
}
