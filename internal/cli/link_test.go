package cli

import (
	"runtime"
	"slices"
	"testing"

	"github.com/scalegate/scalegate/internal/load/swarm/bodydec"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// TestBinaryLinksEveryCodec: the scalegate binary speaks every transport
// and decodes the reference server's snapshot bodies. The swarm engine and
// its command line link none of them (a team's bot links only what it
// imports), so this package's wiring (link.go) is what links them.
func TestBinaryLinksEveryCodec(t *testing.T) {
	want := []string{"enet", "quic", "ws", "wss"} // this package's tests run a cgo build
	if runtime.GOOS == "linux" {
		want = append(want, "udp")
	}
	for _, name := range want {
		if !slices.Contains(transport.Available(), name) {
			t.Errorf("transport %s is not linked (linked: %v)", name, transport.Available())
		}
	}
	for _, f := range []string{snapshot.BodyFormat, snapshot.BodyFormatV1} {
		if _, ok := bodydec.Lookup(f); !ok {
			t.Errorf("body format %s has no decoder: `scalegate swarm` would not count corrupt snapshots", f)
		}
	}
}
