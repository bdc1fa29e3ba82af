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

	"github.com/scalegate/scalegate/bot/transport/ws"
)

// tokenServer is a WebSocket game that upgrades a bot only on its own path
// with its own token and header (/play/N?token=tok-N, Authorization:
// Bearer sec-N) and refuses any other with 403, as a game with per-player
// join tokens does. After the join it closes the connection of a bot full
// says no room for with 4003 "server full", as such a game does when it is
// full; any other gets 'w', then a state update every 20 ms until it
// leaves.
func tokenServer(t *testing.T, full func(n int) bool) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/play/%d", &n); err != nil || r.URL.Query().Get("token") != fmt.Sprintf("tok-%d", n) ||
			r.Header.Get("Authorization") != fmt.Sprintf("Bearer sec-%d", n) {
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
		if full(n) {
			_ = c.Close(4003, "server full")
			return
		}
		serveState(ctx, c)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// serveState admits the bot on c and sends it a state update every 20 ms
// until it leaves.
func serveState(ctx context.Context, c *websocket.Conn) {
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
}

// tokenRun is one run of 4 bots of g against srv; it returns the report
// and everything the bot printed.
type tokenRun struct {
	Connected      int            `json:"clients_connected"`
	Refused        int            `json:"clients_refused"`
	RefusedBy      map[string]int `json:"refused_by_reason"`
	NeverConnected int            `json:"clients_never_connected"`
	NeverBy        map[string]int `json:"never_connected_by_reason"`
	raw, printed   string
}

func runTokens(t *testing.T, g Game, srv *httptest.Server) tokenRun {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.json")
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	Run(ctx, g, []string{"--clients", "4", "--duration", "2", "--ramp-ms", "20", "--timeout-s", "3", "--json", out, host, port}, &stdout, &stderr)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no report: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
	}
	var rep tokenRun
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	rep.raw, rep.printed = string(raw), stdout.String()+stderr.String()
	return rep
}

// tokenGame is a ws Game whose bot i dials its own path with its own
// token and header, except a thief's, which sends another's.
func tokenGame(p func() Protocol, thief func(i int) (token, header bool)) Game {
	return Game{Name: "tokens/1", Transport: ws.Name, New: func(int) Protocol { return p() },
		Target: func(i int, hostport string) string {
			token := fmt.Sprintf("tok-%d", i)
			if stolen, _ := thief(i); stolen {
				token = "tok-stolen"
			}
			return fmt.Sprintf("ws://%s/play/%d?token=%s", hostport, i, token)
		},
		Header: func(i int) http.Header {
			if _, stolen := thief(i); stolen {
				return http.Header{"Authorization": {"Bearer sec-stolen"}}
			}
			return http.Header{"Authorization": {fmt.Sprintf("Bearer sec-%d", i)}}
		}}
}

// TestTargetDialsPerBotURL: Game.Target and Game.Header give each bot its
// own path, query and headers. Bots with their own token and header are
// admitted; a bot that sends another's token, or another's header, is
// refused by the server (403) and never connects, and the report says why
// with the HTTP status. No token or header value shows anywhere: not in
// the report, not in what the bot printed.
func TestTargetDialsPerBotURL(t *testing.T) {
	srv := tokenServer(t, func(int) bool { return false })
	g := tokenGame(func() Protocol { return &stateProto{} }, func(i int) (bool, bool) { return i == 1, i == 3 })
	rep := runTokens(t, g, srv)
	if rep.Connected != 2 || rep.NeverConnected != 2 || rep.NeverBy["connect_error (HTTP 403 Forbidden)"] != 2 {
		t.Fatalf("connected %d, never connected %d %v; want the 2 bots with their own token and header in, the 2 with a stolen one out with the 403\n%s",
			rep.Connected, rep.NeverConnected, rep.NeverBy, rep.printed)
	}
	for _, secret := range []string{"tok-", "sec-"} {
		if strings.Contains(rep.raw, secret) || strings.Contains(rep.printed, secret) {
			t.Errorf("a join secret (%s…) shows in the report or the output:\n%s\n%s", secret, rep.raw, rep.printed)
		}
	}
}

// fullMapper is stateProto that reads the server's 4003 as server_full.
type fullMapper struct{ stateProto }

func (fullMapper) Closed(code uint32, _ string) Msg {
	if code == 4003 {
		return Msg{Kind: Refused, Reason: "server_full"}
	}
	return Msg{}
}

// TestJoinRefusedByCloseCode: a server that answers a join by closing the
// connection with 4003 "server full" refuses the bot. Without a
// CloseReader the refusal is counted under the code and its text, and the
// summary shows them; a CloseReader names it the team's way.
func TestJoinRefusedByCloseCode(t *testing.T) {
	srv := tokenServer(t, func(n int) bool { return n >= 2 })
	for _, tc := range []struct {
		name   string
		p      func() Protocol
		reason string
	}{
		{"the swarm's rule", func() Protocol { return &stateProto{} }, "close_4003 (server full)"},
		{"a CloseReader", func() Protocol { return &fullMapper{} }, "server_full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := runTokens(t, tokenGame(tc.p, func(int) (bool, bool) { return false, false }), srv)
			if rep.Connected != 2 || rep.Refused != 2 || rep.RefusedBy[tc.reason] != 2 || rep.NeverConnected != 0 {
				t.Fatalf("connected %d, refused %d %v, never connected %d %v; want 2 in and 2 refused as %q\n%s",
					rep.Connected, rep.Refused, rep.RefusedBy, rep.NeverConnected, rep.NeverBy, tc.reason, rep.printed)
			}
			if !strings.Contains(rep.printed, tc.reason) {
				t.Errorf("the output does not show %q:\n%s", tc.reason, rep.printed)
			}
		})
	}
}
