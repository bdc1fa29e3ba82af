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
