package bot

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	_ "github.com/scalegate/scalegate/internal/load/transport/ws" // registers "ws"
)

// tokenServer is a WebSocket game that admits a bot only on its own path
// with its own token (/play/N?token=tok-N) and refuses any other with 403,
// as a game with per-player join tokens does. An admitted bot gets 'w',
// then a state update every 20 ms until it leaves.
func tokenServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/play/%d", &n); err != nil || r.URL.Query().Get("token") != fmt.Sprintf("tok-%d", n) {
			http.Error(w, "bad token", http.StatusForbidden)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil { // the join
			return
		}
		if c.Write(ctx, websocket.MessageBinary, []byte{'w'}) != nil {
			return
		}
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
		for tick := uint32(1); ; tick++ {
			msg := binary.LittleEndian.AppendUint32([]byte{'s'}, tick)
			if c.Write(ctx, websocket.MessageBinary, append(msg, 1)) != nil {
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTargetDialsPerBotURL: Game.Target gives each bot its own path and
// query. Bots with their own token are admitted; bots that send another's
// are refused by the server (403) and never connect, and the report says
// why.
func TestTargetDialsPerBotURL(t *testing.T) {
	srv := tokenServer(t)
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	g := Game{Name: "tokens/1", Transport: "ws", New: func(int) Protocol { return &stateProto{} },
		Target: func(i int, hostport string) string {
			token := fmt.Sprintf("tok-%d", i)
			if i%2 == 1 {
				token = "tok-stolen"
			}
			return fmt.Sprintf("ws://%s/play/%d?token=%s", hostport, i, token)
		}}
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Run(ctx, g, []string{"--clients", "4", "--duration", "2", "--ramp-ms", "20", "--timeout-s", "3", "--json", out, host, port}, &stdout, &stderr)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	var rep struct {
		Connected      int            `json:"clients_connected"`
		NeverConnected int            `json:"clients_never_connected"`
		Reasons        map[string]int `json:"never_connected_by_reason"`
		Warnings       []string       `json:"warnings"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Connected != 2 || rep.NeverConnected != 2 {
		t.Fatalf("connected %d, never connected %d %v; want the 2 bots with their own token in, the 2 with a stolen one out\nstdout:\n%s",
			rep.Connected, rep.NeverConnected, rep.Reasons, &stdout)
	}
	t.Logf("never connected %v; warnings %q", rep.Reasons, rep.Warnings)
}
