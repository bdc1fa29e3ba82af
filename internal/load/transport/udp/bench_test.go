//go:build linux

package udp

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// BenchmarkSendReceive is one message client → server, send and receive,
// beside the same benchmark of the other backends (transporttest). The
// send and receive paths allocate nothing (0 allocs/op at batch 1;
// TestNoAllocs pins it).
func BenchmarkSendReceive(b *testing.B) {
	transporttest.RunSendReceive(b, Name, transporttest.Config{})
}
