// Command server is the udpgame server: a small game on raw UDP. It has its
// own binary protocol (package udpgame documents it) and a
// challenge-response join, and is written the way a team's own server would
// be: one socket, one goroutine, a fixed tick. It knows nothing of scalegate
// except how it reports itself: the metrics file it writes for the gate
// (docs/metrics.md), a Prometheus endpoint, or both.
//
//	server -listen 127.0.0.1:7777 [-metrics-json /tmp/tick.json] [-prometheus-listen 127.0.0.1:9464] [-fault half-tick]
//
// It prints "listening on ADDR" once bound and runs until SIGINT/SIGTERM.
// The endpoint serves udpgame_tick_duration_seconds (histogram),
// udpgame_players (gauge), udpgame_net_bytes_sent_total,
// udpgame_inputs_accepted_total and udpgame_byes_total (counters) and the
// process collector's RSS and CPU; no series names its transport, as on
// most teams' servers (docs/metrics.md, "The transport series").
//
// -fault is a deliberate defect for proving a gate bites: half-tick ticks
// at half the rate while the players still expect the full one, which the
// observed tick-Hz gate must catch; late-inputs applies every input 100 ms
// after it arrived, which only the input latency gate sees; ignore-inputs
// applies none (the players still get their state), which only the
// inputs-accepted gate sees.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/examples/internal/metricsfile"
	"github.com/scalegate/scalegate/examples/udpgame"
)

// config is the command line.
type config struct {
	listen, metrics, prom, fault string
	tickHz, maxPlayers           int
	stateEntities                int
	timeout                      time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.listen, "listen", "127.0.0.1:7777", "UDP address to listen on (port 0: any)")
	flag.StringVar(&c.metrics, "metrics-json", "", "write scalegate's metrics file here every 250 ms (docs/metrics.md)")
	flag.StringVar(&c.prom, "prometheus-listen", "", "serve Prometheus metrics at http://ADDR/metrics (host:port; port 0: any)")
	flag.IntVar(&c.tickHz, "tick-hz", 60, "simulation and state-update rate")
	flag.IntVar(&c.maxPlayers, "max-players", 256, "players admitted at once; more are denied (server_full)")
	flag.IntVar(&c.stateEntities, "state-entities", 32, "players in one state update, at most 255")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Second, "a player silent this long is dropped")
	flag.StringVar(&c.fault, "fault", "", "a deliberate defect: half-tick (tick at half -tick-hz), late-inputs (apply each input 100 ms late), ignore-inputs (apply none)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "udpgame server:", err)
		os.Exit(1)
	}
}

// player is one admitted address.
type player struct {
	id       uint16
	addr     netip.AddrPort
	x, y     int16
	vx, vy   int8
	lastSeen time.Time
	ack      uint32  // the newest input applied
	late     []input // inputs the late-inputs fault holds back, oldest first
}

// input is one player input as the simulation applies it.
type input struct {
	due    time.Time
	seq    uint32
	vx, vy int8
}

// lateBy is how much later than it arrived the late-inputs fault applies
// each input.
const lateBy = 100 * time.Millisecond

// maxQueued bounds a player's queued inputs: 4 s of them at 60 Hz.
const maxQueued = 256

// server is the game; everything is owned by run's goroutine.
type server struct {
	c       config
	conn    *net.UDPConn
	m       telemetry
	secret  [8]byte
	byAddr  map[netip.AddrPort]*player
	players []*player
	nextID  uint16
	tick    uint32
	out     []byte
}

// faults are the -fault values.
var faults = []string{"half-tick", "late-inputs", "ignore-inputs"}

func run(ctx context.Context, c config) error {
	if c.fault != "" && !slices.Contains(faults, c.fault) {
		return fmt.Errorf("-fault %q: want one of %s", c.fault, strings.Join(faults, ", "))
	}
	if c.tickHz < 1 || c.stateEntities < 0 || c.stateEntities > 255 {
		return errors.New("-tick-hz must be ≥ 1 and -state-entities in 0..255")
	}
	ua, err := net.ResolveUDPAddr("udp", c.listen)
	if err != nil {
		return err
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetReadBuffer(4 << 20) // a tick's worth of inputs from every player lands at once
	s := &server{c: c, conn: conn, byAddr: map[netip.AddrPort]*player{}, out: make([]byte, 0, 2048)}
	binary.LittleEndian.PutUint64(s.secret[:], uint64(time.Now().UnixNano()))
	if err := s.report(ctx); err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", conn.LocalAddr())
	if c.fault != "" {
		fmt.Fprintf(os.Stderr, "udpgame server: FAULT ENABLED: %s (a deliberate defect)\n", c.fault)
	}
	err = s.loop(ctx)
	s.shutdown()
	return err
}

// report starts what the server says of itself: the metrics file, written
// once before the first tick so that the gate sees the server ready, and
// the Prometheus endpoint.
func (s *server) report(ctx context.Context) error {
	if s.c.metrics != "" {
		s.m.file = metricsfile.New(s.c.metrics, "udp")
		s.m.file.TrackInputs()
		s.m.file.TrackByes()
		if err := s.m.file.Write(0, 0); err != nil {
			return err
		}
	}
	if s.c.prom != "" {
		s.m.prom = newPromMetrics()
		return s.m.prom.serve(ctx, s.c.prom)
	}
	return nil
}

// loop receives until each tick is due, then ticks.
func (s *server) loop(ctx context.Context) error {
	period := time.Second / time.Duration(s.c.tickHz)
	if s.c.fault == "half-tick" {
		period *= 2
	}
	buf := make([]byte, 2048)
	next, lastWrite := time.Now(), time.Now()
	for ctx.Err() == nil {
		if next = next.Add(period); time.Until(next) < -4*period {
			next = time.Now() // far behind: drop the ticks, do not run them back to back
		}
		if err := s.receive(buf, next); err != nil {
			return err
		}
		start := time.Now()
		s.step(start)
		s.m.tick(start, time.Since(start))
		if s.m.file != nil && time.Since(lastWrite) >= 250*time.Millisecond {
			lastWrite = time.Now()
			if err := s.m.file.Write(len(s.players), len(s.players)); err != nil {
				return err
			}
		}
	}
	return nil
}

// receive handles datagrams until the deadline.
func (s *server) receive(buf []byte, deadline time.Time) error {
	if err := s.conn.SetReadDeadline(deadline); err != nil {
		return err
	}
	for {
		n, addr, err := s.conn.ReadFromUDPAddrPort(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil
		}
		if err != nil {
			return err
		}
		s.m.received(n)
		s.handle(buf[:n], addr, time.Now())
	}
}

// token is the challenge for addr: only who receives at addr can answer it.
func (s *server) token(addr netip.AddrPort) uint32 {
	h := fnv.New32a()
	h.Write(s.secret[:])
	b, _ := addr.MarshalBinary()
	h.Write(b)
	return h.Sum32()
}

func (s *server) handle(msg []byte, addr netip.AddrPort, now time.Time) {
	if len(msg) == 0 {
		return
	}
	p := s.byAddr[addr]
	switch {
	case msg[0] == udpgame.Hello && len(msg) == 5:
		s.send(addr, binary.LittleEndian.AppendUint32(append(s.out[:0], udpgame.Challenge), s.token(addr)))
	case msg[0] == udpgame.Join && len(msg) == 5 && binary.LittleEndian.Uint32(msg[1:]) == s.token(addr):
		s.join(p, addr, now)
	case msg[0] == udpgame.Input && len(msg) == 8 && p != nil:
		p.lastSeen = now
		s.queueInput(p, msg, now)
	case msg[0] == udpgame.Ping && len(msg) == 5 && p != nil:
		p.lastSeen = now
		s.send(addr, append(append(s.out[:0], udpgame.Pong), msg[1:5]...))
	case msg[0] == udpgame.Bye && len(msg) == 1:
		s.bye(p, addr, now)
	}
}

// queueInput queues one input to be applied on the tick it is due.
func (s *server) queueInput(p *player, msg []byte, now time.Time) {
	in := input{due: now, seq: binary.LittleEndian.Uint32(msg[1:]), vx: int8(msg[5]), vy: int8(msg[6])}
	switch s.c.fault {
	case "late-inputs":
		in.due = now.Add(lateBy)
	case "ignore-inputs":
		return // the defect: the player still gets its state, its inputs do nothing
	}
	if len(p.late) < maxQueued { // a flood of inputs cannot grow the server
		p.late = append(p.late, in)
	}
}

// bye drops a player that said goodbye, after applying the inputs it sent
// before, and answers it with a kick "bye". A repeated bye (its answer
// was lost) is answered again and counted once.
func (s *server) bye(p *player, addr netip.AddrPort, now time.Time) {
	if p == nil {
		s.send(addr, append(append(s.out[:0], udpgame.Kick, byte(len("bye"))), "bye"...))
		return
	}
	s.apply(p, now)
	s.m.bye()
	for i, q := range s.players {
		if q == p {
			s.drop(i, "bye")
			return
		}
	}
}

// join admits addr, or answers a repeated join again.
func (s *server) join(p *player, addr netip.AddrPort, now time.Time) {
	if p == nil {
		if len(s.players) >= s.c.maxPlayers {
			s.send(addr, append(append(s.out[:0], udpgame.Deny, byte(len("server_full"))), "server_full"...))
			return
		}
		s.nextID++
		p = &player{id: s.nextID, addr: addr, lastSeen: now}
		s.byAddr[addr] = p
		s.players = append(s.players, p)
		s.m.playing(len(s.players))
	}
	s.send(addr, binary.LittleEndian.AppendUint16(append(s.out[:0], udpgame.Welcome), p.id))
}

// step moves every player, drops the silent ones and sends each the state.
func (s *server) step(now time.Time) {
	s.tick++
	for i := 0; i < len(s.players); i++ {
		p := s.players[i]
		if now.Sub(p.lastSeen) > s.c.timeout {
			s.drop(i, "timeout")
			i--
			continue
		}
		s.apply(p, now)
		p.x += int16(p.vx) / 8
		p.y += int16(p.vy) / 8
	}
	n := min(len(s.players), s.c.stateEntities)
	// One body for everyone; each player's header carries its own ack.
	msg := binary.LittleEndian.AppendUint32(append(s.out[:0], udpgame.State), s.tick)
	msg = append(binary.LittleEndian.AppendUint32(msg, 0), byte(n))
	for _, p := range s.players[:n] {
		msg = binary.LittleEndian.AppendUint16(msg, p.id)
		msg = binary.LittleEndian.AppendUint16(msg, uint16(p.x))
		msg = binary.LittleEndian.AppendUint16(msg, uint16(p.y))
	}
	for _, p := range s.players {
		binary.LittleEndian.PutUint32(msg[5:], p.ack)
		s.send(p.addr, msg)
	}
	s.out = msg[:0]
}

// apply applies the player's inputs that are due, in the order they
// arrived, counting each (inputs_accepted); the newest applied is what its
// states acknowledge. An input older than one applied (reordered) is
// dropped, and not counted.
func (s *server) apply(p *player, now time.Time) {
	n := 0
	for n < len(p.late) && !p.late[n].due.After(now) {
		if in := p.late[n]; int32(in.seq-p.ack) > 0 || p.ack == 0 {
			p.vx, p.vy, p.ack = in.vx, in.vy, in.seq
			s.m.inputApplied()
		}
		n++
	}
	p.late = append(p.late[:0], p.late[n:]...)
}

// drop removes player i, telling it why.
func (s *server) drop(i int, reason string) {
	p := s.players[i]
	delete(s.byAddr, p.addr)
	s.players[i] = s.players[len(s.players)-1]
	s.players = s.players[:len(s.players)-1]
	s.m.playing(len(s.players)) // before the kick: whoever hears it sees the count without the player
	s.send(p.addr, append(append(s.out[:0], udpgame.Kick, byte(len(reason))), reason...))
}

func (s *server) send(addr netip.AddrPort, msg []byte) {
	if _, err := s.conn.WriteToUDPAddrPort(msg, addr); err == nil {
		s.m.sent(len(msg))
	}
}

// shutdown kicks every player and writes the metrics file once more.
func (s *server) shutdown() {
	for len(s.players) > 0 {
		s.drop(0, "server_shutdown")
	}
	if s.m.file != nil {
		_ = s.m.file.Write(0, 0)
	}
}
