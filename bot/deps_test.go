package bot_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBotsLinkOnlyTheirTransports: a bot links the transports it imports
// and nothing else. The raw UDP bot of examples/udpgame builds with
// CGO_ENABLED=0 and links neither ENet (cgo libenet), QUIC nor WebSocket;
// the WebSocket bot of examples/wsgame links WebSocket and neither of the
// others. Before transports registered themselves, importing bot built
// all three into every bot. Neither links what only the scalegate binary
// needs: the sg-entities snapshot codec (zstd) or the gate's confidence
// intervals (gonum).
func TestBotsLinkOnlyTheirTransports(t *testing.T) {
	const (
		mod       = "github.com/scalegate/scalegate/"
		enet      = mod + "internal/load/transport/enet"
		quic      = "github.com/quic-go/quic-go"
		websocket = "github.com/coder/websocket"
		zstd      = "github.com/klauspost/compress"
		gonum     = "gonum.org/v1/gonum"
	)
	for _, tc := range []struct {
		pkg          string
		want, forbid []string
	}{
		{"examples/udpgame/bot", []string{mod + "internal/load/transport/udp"}, []string{enet, quic, websocket, zstd, gonum}},
		{"examples/wsgame/bot", []string{websocket}, []string{enet, quic, zstd, gonum}},
	} {
		t.Run(tc.pkg, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "bot")
			build := exec.Command("go", "build", "-o", bin, "./"+tc.pkg)
			build.Dir = ".."
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("CGO_ENABLED=0 go build %s: %v\n%s", tc.pkg, err, out)
			}
			list := exec.Command("go", "list", "-deps", "./"+tc.pkg)
			list.Dir = ".."
			out, err := list.Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tc.pkg, err)
			}
			deps := strings.Fields(string(out))
			for _, w := range tc.want {
				if !slices.Contains(deps, w) {
					t.Errorf("%s does not link %s", tc.pkg, w)
				}
			}
			for _, f := range tc.forbid {
				if i := slices.IndexFunc(deps, func(d string) bool { return d == f || strings.HasPrefix(d, f+"/") }); i >= 0 {
					t.Errorf("%s links %s", tc.pkg, deps[i])
				}
			}
		})
	}
}
