package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/udp"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestRawUDPCountsLinkHeaders: on raw UDP every message is one datagram,
// so the swarm can say what the state updates cost on the link. The tiny
// server's 5-byte state update is 33 bytes there (IPv4 20 + UDP 8), so
// link KB/s is 33/5 of the payload's, per player and across them.
func TestRawUDPCountsLinkHeaders(t *testing.T) {
	srv := startByeServer(t, true)
	path := filepath.Join(t.TempDir(), "report.json")
	game := bot.Game{Name: "tiny-bye/1", Transport: udp.Name, New: func(int) bot.Protocol { return &leaver{} }}
	args := []string{"127.0.0.1", srv.port(), "--clients", "3", "--duration", "2", "--progress", "off", "--json", path, "--assert-admission"}
	var stderr strings.Builder
	if code := bot.Run(context.Background(), game, args, io.Discard, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	k, l := r.DownstreamKBsPerClient, r.DownstreamLinkKBsPerClient
	if k == nil || l == nil {
		t.Fatalf("downstream %v, on the link %v: both must be measured on raw UDP", k, l)
	}
	const ratio = float64(5+28) / 5
	if math.Abs(l.Mean/k.Mean-ratio) > 0.01*ratio {
		t.Errorf("link %.3f / payload %.3f KB/s = %.3f, want %.3f (each 5-byte update carries 28 B of headers)", l.Mean, k.Mean, l.Mean/k.Mean, ratio)
	}
	for _, p := range r.Players {
		if p.LinkKBs == nil || p.KBs == nil || math.Abs(*p.LinkKBs / *p.KBs - ratio) > 0.01*ratio {
			t.Errorf("player %d: link %s, payload %s", p.Index, fmtPtr(p.LinkKBs), fmtPtr(p.KBs))
		}
	}
}

func fmtPtr(v *float64) string {
	if v == nil {
		return "none"
	}
	return fmt.Sprintf("%.3f", *v)
}
