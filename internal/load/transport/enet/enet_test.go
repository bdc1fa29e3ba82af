//go:build cgo

package enet

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// TestConformance holds the ENet backend to the shared transport contract.
func TestConformance(t *testing.T) { transporttest.Run(t, Name) }
