package swarmcli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/exitcode"
)

// TestImpairmentRefusedOnWebSocket: the relay impairs datagrams; a run
// that asks it to impair a WebSocket (TCP) is refused before it connects,
// with the reason, never run unimpaired.
func TestImpairmentRefusedOnWebSocket(t *testing.T) {
	for _, tr := range []string{"ws", "wss"} {
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
		err := Scalegate.Run(context.Background(), env, []string{"127.0.0.1", "1", "--transport", tr,
			"--duration", "3", "--degrade-start", "1", "--degrade-duration", "1", "--degrade-loss", "0.1"})
		if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "TCP") {
			t.Errorf("%s: %v (exit %d), want a usage error naming TCP", tr, err, exitcode.Of(err))
		}
		if strings.Contains(out.String(), "admitted") {
			t.Errorf("%s: the run went ahead: %s", tr, out.String())
		}
	}
}
