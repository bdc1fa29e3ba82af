package quic

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// TestConformance runs the shared transport suite (the same one ENet runs).
func TestConformance(t *testing.T) { transporttest.Run(t, Name) }
