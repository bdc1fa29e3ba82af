package bot_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/udp"
)

// tiny is the bot of the package documentation.
type tiny struct{ lastJoin time.Duration }

func (t *tiny) Connected(c *bot.Conn) error { return c.Send(bot.Unreliable, []byte("J")) }

// Waiting resends the join every 200 ms until it is answered: a datagram may be lost.
func (t *tiny) Waiting(c *bot.Conn, waited time.Duration) error {
	if waited-t.lastJoin < 200*time.Millisecond {
		return nil
	}
	t.lastJoin = waited
	return c.Send(bot.Unreliable, []byte("J"))
}

func (t *tiny) Receive(_ *bot.Conn, msg []byte) (bot.Msg, error) {
	switch {
	case len(msg) == 5 && msg[0] == 'S':
		return bot.Msg{Kind: bot.State, Tick: binary.LittleEndian.Uint32(msg[1:]), HasTick: true}, nil
	case len(msg) == 1 && msg[0] == 'W':
		return bot.Msg{Kind: bot.Admitted}, nil
	case len(msg) == 1 && msg[0] == 'F':
		return bot.Msg{Kind: bot.Refused, Reason: "server_full"}, nil
	}
	return bot.Msg{}, errors.New("tiny: unknown message")
}

func (t *tiny) Controls(buf []byte, ctl *bot.Controls) ([]byte, bot.Delivery) {
	return append(buf, 'I', byte(int8(ctl.Aileron*127)), byte(int8(ctl.Elevator*127))), bot.Unreliable
}

// serveTiny is the tiny game's server: it answers "J" with "W" and sends
// every joined address "S" + the tick 60 times a second, until conn is
// closed.
func serveTiny(conn *net.UDPConn) {
	joined := map[netip.AddrPort]bool{}
	buf := make([]byte, 64)
	var tick uint32
	for next := time.Now(); ; {
		next = next.Add(time.Second / 60)
		for {
			conn.SetReadDeadline(next)
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			if err != nil {
				return // closed
			}
			if n == 1 && buf[0] == 'J' {
				joined[from] = true
				conn.WriteToUDPAddrPort([]byte("W"), from)
			}
		}
		tick++
		state := binary.LittleEndian.AppendUint32([]byte{'S'}, tick)
		for addr := range joined {
			conn.WriteToUDPAddrPort(state, addr)
		}
	}
}

// Run the package documentation's bot, four of them for two seconds,
// against its tiny server on loopback, with the asserts a profile would
// forward, and read the report.
func Example() {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	served := make(chan struct{})
	go func() { serveTiny(conn); close(served) }()
	defer func() { conn.Close(); <-served }()

	dir, err := os.MkdirTemp("", "tinybot")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	reportPath := filepath.Join(dir, "report.json")
	port := fmt.Sprint(conn.LocalAddr().(*net.UDPAddr).Port)
	game := bot.Game{Name: "tiny/1", Transport: udp.Name, New: func(int) bot.Protocol { return &tiny{} }}
	code := bot.Run(context.Background(), game, []string{"127.0.0.1", port,
		"--clients", "4", "--duration", "2", "--progress", "off", "--json", reportPath,
		"--assert-admission", "--assert-min-tick-hz", "30"}, io.Discard, os.Stderr)

	b, err := os.ReadFile(reportPath)
	if err != nil {
		panic(err)
	}
	var r struct {
		Protocol         string `json:"protocol"`
		Transport        string `json:"transport"`
		Clients          int    `json:"clients"`
		ClientsConnected int    `json:"clients_connected"`
		TickHz           *struct {
			Min float64 `json:"min"`
		} `json:"observed_server_tick_hz"`
		RTTMs  any  `json:"rtt_ms"`
		Passed bool `json:"passed"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		panic(err)
	}
	fmt.Println("exit status:", code)
	fmt.Println("protocol:", r.Protocol, "over", r.Transport)
	fmt.Printf("admitted: %d of %d\n", r.ClientsConnected, r.Clients)
	fmt.Println("server tick rate seen by every bot ≥ 30 Hz:", r.TickHz != nil && r.TickHz.Min >= 30)
	fmt.Println("rtt_ms (raw UDP has no RTT, and tiny has no Ping):", r.RTTMs)
	fmt.Println("passed:", r.Passed)
	// Output:
	// exit status: 0
	// protocol: tiny/1 over udp
	// admitted: 4 of 4
	// server tick rate seen by every bot ≥ 30 Hz: true
	// rtt_ms (raw UDP has no RTT, and tiny has no Ping): <nil>
	// passed: true
}

// A bot speaks only the transports it links: this one names udp.Name, so
// it links raw UDP. Asked for QUIC, it runs nothing, exits 2 (usage) and
// says which import links it.
func Example_transportNotLinked() {
	game := bot.Game{Name: "tiny/1", Transport: udp.Name, New: func(int) bot.Protocol { return &tiny{} }}
	var stderr strings.Builder
	code := bot.Run(context.Background(), game, []string{"127.0.0.1", "7777", "--transport", "quic"}, io.Discard, &stderr)
	_, msg, _ := strings.Cut(stderr.String(), "--transport: ")
	refusal, _, _ := strings.Cut(msg, " (available")
	_, hint, _ := strings.Cut(msg, "): ")
	fmt.Println("exit status:", code)
	fmt.Println(refusal)
	fmt.Print(hint)
	// Output:
	// exit status: 2
	// transport "quic" is not available in this build
	// import "github.com/scalegate/scalegate/bot/transport/quic" in your bot to link it
}
