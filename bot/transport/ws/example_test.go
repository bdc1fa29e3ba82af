package ws_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/coder/websocket"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/ws"
)

// joiner joins with "J", is admitted by "W" and reads "S" + a u32 tick as
// a state update; it sends no input.
type joiner struct{}

func (joiner) Connected(c *bot.Conn) error { return c.Send(bot.Reliable, []byte("J")) }

func (joiner) Receive(_ *bot.Conn, msg []byte) (bot.Msg, error) {
	switch {
	case len(msg) == 1 && msg[0] == 'W':
		return bot.Msg{Kind: bot.Admitted}, nil
	case len(msg) == 5 && msg[0] == 'S':
		return bot.Msg{Kind: bot.State, Tick: binary.LittleEndian.Uint32(msg[1:]), HasTick: true}, nil
	}
	return bot.Msg{}, errors.New("joiner: unknown message")
}

func (joiner) Controls([]byte, *bot.Controls) ([]byte, bot.Delivery) { return nil, bot.Reliable }

// admitOwn upgrades player i only on /play/i with its token in the query
// and its session cookie (403 otherwise), then answers its join and sends
// it a state 30 times a second.
func admitOwn(w http.ResponseWriter, r *http.Request) {
	var i int
	_, err := fmt.Sscanf(r.URL.Path, "/play/%d", &i)
	cookie, cerr := r.Cookie("session")
	if err != nil || cerr != nil || r.URL.Query().Get("token") != fmt.Sprint("tok-", i) || cookie.Value != fmt.Sprint("s-", i) {
		http.Error(w, "who are you?", http.StatusForbidden)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	if _, _, err := c.Read(r.Context()); err != nil { // the join
		return
	}
	ctx := c.CloseRead(r.Context()) // done when the bot leaves
	if c.Write(ctx, websocket.MessageBinary, []byte("W")) != nil {
		return
	}
	for tick := uint32(1); ; tick++ {
		if c.Write(ctx, websocket.MessageBinary, binary.LittleEndian.AppendUint32([]byte("S"), tick)) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second / 30):
		}
	}
}

// Each bot dials its own URL with its own headers: bot i joins
// /play/i with its token in the query and its session cookie, which the
// server checks before it upgrades. Tokens and cookies never show in the
// report or on the terminal.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(admitOwn))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	game := bot.Game{Name: "tokens/1", Transport: ws.Name, New: func(int) bot.Protocol { return joiner{} },
		Target: func(i int, hostport string) string {
			return fmt.Sprintf("ws://%s/play/%d?token=tok-%d", hostport, i, i)
		},
		Header: func(i int) http.Header { return http.Header{"Cookie": {fmt.Sprintf("session=s-%d", i)}} },
	}
	dir, err := os.MkdirTemp("", "wsbot")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "report.json")
	code := bot.Run(context.Background(), game, []string{host, port, "--clients", "3", "--duration", "2",
		"--progress", "off", "--json", report}, io.Discard, os.Stderr)

	b, err := os.ReadFile(report)
	if err != nil {
		panic(err)
	}
	var r struct {
		Transport        string `json:"transport"`
		Clients          int    `json:"clients"`
		ClientsConnected int    `json:"clients_connected"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		panic(err)
	}
	fmt.Println("exit status:", code)
	fmt.Printf("admitted over %s: %d of %d\n", r.Transport, r.ClientsConnected, r.Clients)
	// Output:
	// exit status: 0
	// admitted over ws: 3 of 3
}
