//go:build linux

package udp

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// TestConformance runs the shared transport suite (the one ENet and QUIC
// run); the backend's Capabilities select the raw-UDP forms of the
// handshake, reliability, disconnect and RTT checks.
func TestConformance(t *testing.T) { transporttest.Run(t, Name) }
