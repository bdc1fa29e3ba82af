//go:build !cgo

package enet

import (
	"errors"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// TestNotAvailableWithoutCgo: a build without cgo must say "enet" is not
// available rather than register anything.
func TestNotAvailableWithoutCgo(t *testing.T) {
	_, err := transport.Lookup(Name)
	var unknown *transport.UnknownBackendError
	if !errors.As(err, &unknown) || unknown.Name != Name {
		t.Fatalf("Lookup(enet) without cgo: %v, want *UnknownBackendError", err)
	}
}
