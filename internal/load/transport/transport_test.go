package transport

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeBackend records calls; it exists only in this test binary to check the
// registry's dispatch, never as a transport.
type fakeBackend struct {
	name            string
	listened, dials int
}

var errFake = errors.New("fake backend creates no hosts")

func (f *fakeBackend) Name() string { return f.name }

func (f *fakeBackend) Capabilities() Capabilities { return Capabilities{} }

func (f *fakeBackend) Listen(string, Options) (Host, error) { f.listened++; return nil, errFake }

func (f *fakeBackend) Dial(Options) (Host, error) { f.dials++; return nil, errFake }

func TestRegistry(t *testing.T) {
	fb := &fakeBackend{name: "test-registry-fake"}
	Register(fb)
	// The registry is process-wide: take the fake out again, so the test
	// can run twice in one binary (-count=2).
	t.Cleanup(func() {
		regMu.Lock()
		defer regMu.Unlock()
		delete(registry, fb.name)
	})
	if !slices.Contains(Available(), fb.name) || !slices.IsSorted(Available()) {
		t.Fatalf("Available() = %v, want it sorted and containing %q", Available(), fb.name)
	}
	if _, err := Listen(fb.name, "127.0.0.1:0", Options{}); !errors.Is(err, errFake) || fb.listened != 1 {
		t.Errorf("Listen dispatched %d times, err %v", fb.listened, err)
	}
	if _, err := Dial(fb.name, Options{}); !errors.Is(err, errFake) || fb.dials != 1 {
		t.Errorf("Dial dispatched %d times, err %v", fb.dials, err)
	}
	defer func() {
		if r := recover(); r == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	Register(&fakeBackend{name: fb.name})
}

func TestUnknownBackend(t *testing.T) {
	for _, call := range []struct {
		name string
		fn   func() error
	}{
		{"Lookup", func() error { _, err := Lookup("carrier-pigeon"); return err }},
		{"Listen", func() error { _, err := Listen("carrier-pigeon", "127.0.0.1:0", Options{}); return err }},
		{"Dial", func() error { _, err := Dial("carrier-pigeon", Options{}); return err }},
	} {
		err := call.fn()
		var u *UnknownBackendError
		if !errors.As(err, &u) || u.Name != "carrier-pigeon" {
			t.Errorf("%s: %v, want *UnknownBackendError", call.name, err)
			continue
		}
		if !strings.Contains(err.Error(), `"carrier-pigeon"`) || !slices.Equal(u.Available, Available()) {
			t.Errorf("%s: %q should name the backend and list %v", call.name, err, Available())
		}
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Reliable.String(), "reliable"},
		{Unreliable.String(), "unreliable"},
		{Text.String(), "text"},
		{Delivery(9).String(), "delivery(9)"},
		{EventConnect.String(), "connect"},
		{EventReceive.String(), "receive"},
		{EventDisconnect.String(), "disconnect"},
		{EventKind(0).String(), "unknown"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// capsBackend is a fake backend with given capabilities, registered once
// per test binary (Register panics on a second registration, and -count
// reruns tests).
type capsBackend struct {
	fakeBackend
	caps Capabilities
}

func (c *capsBackend) Capabilities() Capabilities { return c.caps }

var registerCaps = sync.OnceFunc(func() {
	Register(&capsBackend{fakeBackend{name: "test-caps-datagram"}, Capabilities{Datagram: true}})
	Register(&capsBackend{fakeBackend{name: "test-caps-tcp"}, Capabilities{Reliable: true}})
})

func TestCheckImpairable(t *testing.T) {
	registerCaps()
	if err := CheckImpairable("test-caps-datagram"); err != nil {
		t.Errorf("datagram backend refused: %v", err)
	}
	err := CheckImpairable("test-caps-tcp")
	if err == nil || !strings.Contains(err.Error(), `"test-caps-tcp"`) || !strings.Contains(err.Error(), "test-caps-datagram") {
		t.Errorf("CheckImpairable(tcp) = %v, want an error naming it and the datagram backends", err)
	}
	var u *UnknownBackendError
	if err := CheckImpairable("carrier-pigeon"); !errors.As(err, &u) {
		t.Errorf("CheckImpairable(unknown) = %v, want *UnknownBackendError", err)
	}
	if _, err := CapabilitiesOf("carrier-pigeon"); !errors.As(err, &u) {
		t.Errorf("CapabilitiesOf(unknown) = %v, want *UnknownBackendError", err)
	}
}

func TestArrives(t *testing.T) {
	enetLike := Capabilities{Reliable: true, TaggedDelivery: true}
	wsLike := Capabilities{Reliable: true, Text: true}
	udpLike := Capabilities{Datagram: true}
	tests := []struct {
		name string
		c    Capabilities
		sent Delivery
		want Delivery
	}{
		{"tagged reliable", enetLike, Reliable, Reliable},
		{"tagged unreliable", enetLike, Unreliable, Unreliable},
		{"tcp unreliable is reliable", wsLike, Unreliable, Reliable},
		{"tcp text", wsLike, Text, Text},
		{"datagram reliable is unreliable", udpLike, Reliable, Unreliable},
		{"datagram unreliable", udpLike, Unreliable, Unreliable},
	}
	for _, tc := range tests {
		if got := tc.c.Arrives(tc.sent); got != tc.want {
			t.Errorf("%s: Arrives(%v) = %v, want %v", tc.name, tc.sent, got, tc.want)
		}
	}
}
