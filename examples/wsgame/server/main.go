// Command server is the wsgame server: an io-style game over WebSocket. It
// speaks JSON text messages (package wsgame documents them), with one
// goroutine per connection for reading and one writer per connection fed by
// the tick, as a team's own server would be. It knows nothing of scalegate
// except the metrics file it writes for the gate (docs/metrics.md).
//
//	server -listen 127.0.0.1:8080 -metrics-json /tmp/tick.json [-fault stall-half]
//
// It prints "listening on ADDR" once bound and runs until SIGINT/SIGTERM.
// -fault stall-half is a deliberate defect for proving a gate bites: the
// writer of every second player gets stuck after its welcome, so those
// players hear nothing more (no state, no pong) while the server carries
// on, which the admission gate must catch (they are lost, silent).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/scalegate/scalegate/examples/internal/metricsfile"
)

type config struct {
	listen, metrics, fault string
	tickHz, maxPlayers     int
	stateEntities          int
}

func main() {
	var c config
	flag.StringVar(&c.listen, "listen", "127.0.0.1:8080", "TCP address of the WebSocket endpoint / (port 0: any)")
	flag.StringVar(&c.metrics, "metrics-json", "", "write scalegate's metrics file here every 250 ms (docs/metrics.md)")
	flag.IntVar(&c.tickHz, "tick-hz", 60, "simulation and state-update rate")
	flag.IntVar(&c.maxPlayers, "max-players", 256, "players admitted at once; more get {\"t\":\"full\"}")
	flag.IntVar(&c.stateEntities, "state-entities", 16, "players in one state update")
	flag.StringVar(&c.fault, "fault", "", "a deliberate defect: stall-half (every second player's writer gets stuck)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "wsgame server:", err)
		os.Exit(1)
	}
}

// player is one joined connection. The tick goroutine owns x, y; the
// connection's reader writes vx, vy atomically.
type player struct {
	id      int
	x, y    float64
	vx, vy  atomic.Int64 // float64 bits
	out     chan []byte  // to the writer; a full queue drops the update
	stalled bool         // -fault stall-half
}

type server struct {
	c       config
	m       *metricsfile.File
	mu      sync.Mutex
	players map[int]*player
	nextID  int
}

func run(ctx context.Context, c config) error {
	if c.fault != "" && c.fault != "stall-half" {
		return fmt.Errorf("-fault %q: want stall-half", c.fault)
	}
	if c.tickHz < 1 || c.stateEntities < 0 {
		return errors.New("-tick-hz must be ≥ 1 and -state-entities ≥ 0")
	}
	s := &server{c: c, players: map[int]*player{}}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	if c.metrics != "" {
		s.m = metricsfile.New(c.metrics, "ws")
		if err := s.m.Write(0, 0); err != nil {
			return err
		}
		ln = countingListener{ln, s.m}
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	if c.fault != "" {
		fmt.Fprintf(os.Stderr, "wsgame server: FAULT ENABLED: %s (a deliberate defect)\n", c.fault)
	}
	hs := &http.Server{Handler: http.HandlerFunc(s.serveWS), ReadHeaderTimeout: 5 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	s.loop(ctx)
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = hs.Shutdown(shut) // hijacked WebSockets end with ctx, which is done
	if s.m != nil {
		_ = s.m.Write(0, 0)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveWS runs one connection: the join, then moves and pings until it
// closes.
func (s *server) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4096)
	ctx := r.Context()
	var p *player
	defer func() { s.leave(p) }()
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			T  string  `json:"t"`
			X  float64 `json:"x"`
			Y  float64 `json:"y"`
			ID uint32  `json:"id"`
		}
		if json.Unmarshal(msg, &m) != nil {
			return
		}
		switch {
		case m.T == "join" && p == nil:
			if p = s.join(ctx, conn); p == nil {
				_ = conn.Write(ctx, websocket.MessageText, []byte(`{"t":"full"}`))
				return
			}
		case m.T == "move" && p != nil:
			p.vx.Store(int64(floatBits(m.X)))
			p.vy.Store(int64(floatBits(m.Y)))
		case m.T == "ping" && p != nil:
			p.send([]byte(`{"t":"pong","id":` + strconv.FormatUint(uint64(m.ID), 10) + `}`))
		}
	}
}

// join admits a player and starts its writer; nil when the room is full.
func (s *server) join(ctx context.Context, conn *websocket.Conn) *player {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.players) >= s.c.maxPlayers {
		return nil
	}
	s.nextID++
	p := &player{id: s.nextID, out: make(chan []byte, 64), stalled: s.c.fault == "stall-half" && s.nextID%2 == 0}
	s.players[p.id] = p
	p.send([]byte(`{"t":"welcome","id":` + strconv.Itoa(p.id) + `}`))
	go p.write(ctx, conn)
	return p
}

func (s *server) leave(p *player) {
	if p == nil {
		return
	}
	s.mu.Lock()
	delete(s.players, p.id)
	s.mu.Unlock()
}

// send queues msg for the player's writer, dropping it when the queue is
// full (a slow reader must not stall the tick).
func (p *player) send(msg []byte) {
	select {
	case p.out <- msg:
	default:
	}
}

// write sends the player's queue until ctx ends. A stalled player's
// writer stops after the welcome: the fault.
func (p *player) write(ctx context.Context, conn *websocket.Conn) {
	for {
		select {
		case <-ctx.Done():
			return
		case msg := <-p.out:
			if err := conn.Write(ctx, websocket.MessageText, msg); err != nil {
				return
			}
			if p.stalled {
				<-ctx.Done()
				return
			}
		}
	}
}

// loop ticks until ctx ends: move every player, send each the state.
func (s *server) loop(ctx context.Context) {
	t := time.NewTicker(time.Second / time.Duration(s.c.tickHz))
	defer t.Stop()
	lastWrite := time.Now()
	var tick uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		tick++
		n := s.step(tick)
		if s.m == nil {
			continue
		}
		s.m.Tick(start, time.Since(start))
		if time.Since(lastWrite) >= 250*time.Millisecond {
			lastWrite = time.Now()
			_ = s.m.Write(n, n)
		}
	}
}

// step moves the players and queues one state update to each; it returns
// how many there are.
func (s *server) step(tick uint64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := append([]byte(`{"t":"state","tick":`), strconv.FormatUint(tick, 10)...)
	n := min(len(s.players), s.c.stateEntities)
	b = append(append(append(b, `,"n":`...), strconv.Itoa(n)...), `,"p":[`...)
	i := 0
	for _, p := range s.players {
		p.x += bitsFloat(p.vx.Load()) / 10
		p.y += bitsFloat(p.vy.Load()) / 10
		if i < n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "[%d,%.2f,%.2f]", p.id, p.x, p.y)
		}
		i++
	}
	b = append(b, "]}"...)
	for _, p := range s.players {
		p.send(b) // shared read-only by every writer
	}
	return len(s.players)
}

// countingListener counts every byte its connections move: the wire
// traffic of the WebSocket, framing and HTTP upgrade included.
type countingListener struct {
	net.Listener
	m *metricsfile.File
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.m}, nil
}

type countingConn struct {
	net.Conn
	m *metricsfile.File
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.m.CountIn(n)
	return n, err
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.m.CountOut(n)
	return n, err
}

func floatBits(f float64) uint64 { return math.Float64bits(f) }
func bitsFloat(b int64) float64  { return math.Float64frombits(uint64(b)) }
