package transporttest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// ManyConfig sizes the many-clients exchange. Zero fields take the defaults
// noted.
type ManyConfig struct {
	// Clients is the number of client hosts (required).
	Clients int
	// Shards is the number of goroutines that own the client hosts (default
	// 4, at most Clients).
	Shards int
	// Duration is the traffic window (default 3 s).
	Duration time.Duration
	// TickHz is the send rate of every party (default 60).
	TickHz int
	// ReliableEvery is the ticks between reliable messages, the first on
	// the first tick (default 30).
	ReliableEvery int
	// SnapshotBytes is the size of the server's unreliable message per
	// client per tick (default 200).
	SnapshotBytes int
	// Timeout bounds the connect phase and the final drain (default 60 s).
	Timeout time.Duration
	// ServerOptions and ClientOptions are the hosts' options (MaxPeers of
	// the server is set to Clients).
	ServerOptions, ClientOptions transport.Options
}

func (c ManyConfig) withDefaults() ManyConfig {
	if c.Shards <= 0 {
		c.Shards = 4
	}
	c.Shards = min(c.Shards, c.Clients)
	if c.Duration <= 0 {
		c.Duration = 3 * time.Second
	}
	if c.TickHz <= 0 {
		c.TickHz = 60
	}
	if c.ReliableEvery <= 0 {
		c.ReliableEvery = 30
	}
	if c.SnapshotBytes < proto.SnapshotHeaderSize {
		c.SnapshotBytes = 200
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	return c
}

// Direction totals of one stream of messages.
type Direction struct {
	Sent, Received uint64
}

// ManyResult is what Many counted.
type ManyResult struct {
	Clients                      int
	ConnectTime, TrafficTime     time.Duration
	DrainTime                    time.Duration
	UpUnreliable, UpReliable     Direction // client → server
	DownUnreliable, DownReliable Direction // server → client
}

// manyDataBase offsets the connect data so client i sends manyDataBase+i:
// distinct per client and unlike the zero a broken backend might report.
const manyDataBase uint32 = 0x5C000000

// Message tags of the exchange; the unreliable up message is a real
// proto.Input and the unreliable down one a proto.Snapshot. A backend that
// does not carry connect data (Capabilities.ConnectData) gets it in a hello
// message, the client's first.
const (
	tagReliableUp   = 'u'
	tagReliableDown = 'd'
	tagHello        = 'h'
)

// flow counts one stream for one client: the sender's count is atomic
// because the other side's goroutine reads it to know when it has drained;
// the receiver's fields belong to the receiving goroutine.
type flow struct {
	sent     atomic.Uint64
	received uint64
	next     uint64 // next expected sequence number
	faults   uint64 // out-of-order, duplicate or malformed messages
}

// take records sequence number seq arriving on the flow. Reliable flows
// must see 0,1,2,…; unreliable sequenced flows strictly increasing numbers.
func (f *flow) take(seq uint64, exact bool) {
	if (exact && seq != f.next) || (!exact && seq < f.next) {
		f.faults++
	}
	f.received++
	f.next = seq + 1
}

func (f *flow) drained() bool { return f.received >= f.sent.Load() }

// manyClient is the state of client i, shared by its shard and the server
// goroutine through the flows' directions.
type manyClient struct {
	upU, upR, downU, downR flow
	// server side
	connects   int
	serverPeer transport.PeerID
}

// manyRun is one exchange.
type manyRun struct {
	cfg     ManyConfig
	backend string
	caps    transport.Capabilities
	clients []manyClient
	// Phases: start is closed when all clients are connected on both ends,
	// stop when the traffic window ends, finish when every party drained.
	start, stop, finish chan struct{}
	serverConnected     atomic.Int64
	clientsConnected    atomic.Int64
	sendersDone         atomic.Int64
	drained             atomic.Int64
	unexpectedData      atomic.Int64
	// drops0 is the kernel's count of UDP datagrams dropped for a full
	// receive buffer before the run (dropsOK: it could be read), stopAt
	// when the traffic window ended (unix ns; 0 before).
	drops0  uint64
	dropsOK bool
	stopAt  atomic.Int64
}

// shedGrace is how long after the traffic window the drain waits for
// unreliable messages once the kernel has dropped datagrams: the ones it
// dropped will never come.
const shedGrace = time.Second

// kernelShed is how many UDP datagrams the kernel dropped for a full
// receive buffer since the run began (0 where it cannot say). On loopback
// that is the only way an unreliable message may go missing: a receiver
// descheduled for a tick on a loaded machine (256 clients' Inputs fill
// the server socket's buffer in about one tick). Any other loss is the
// transport's, and fails.
func (r *manyRun) kernelShed() uint64 {
	if !r.dropsOK {
		return 0
	}
	n, ok := kernelDrops()
	if !ok || n < r.drops0 {
		return 0
	}
	return n - r.drops0
}

// shedSettled reports whether the drain may stop waiting for unreliable
// messages: the kernel dropped some, and shedGrace has passed since the
// traffic window ended.
func (r *manyRun) shedSettled() bool {
	at := r.stopAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) >= shedGrace && r.kernelShed() > 0
}

// unreliableDrained is a flow of unreliable messages drained: all in, or
// the rest shed by the kernel (shedSettled).
func (r *manyRun) unreliableDrained(f *flow) bool { return f.drained() || r.shedSettled() }

// Many connects cfg.Clients client hosts to one server host with distinct
// connect data, exchanges reliable and unreliable messages at cfg.TickHz for
// cfg.Duration (clients send an Input per tick and a reliable message every
// cfg.ReliableEvery ticks; the server a Snapshot per client per tick and a
// reliable message per client as often), drains until quiescent, and fails
// unless every message sent arrived: reliable ones exactly and in order,
// unreliable ones all and in sequence (loopback, nothing shed). The client
// hosts are sharded over cfg.Shards goroutines, each owning its hosts.
func Many(t *testing.T, backend string, cfg ManyConfig) ManyResult {
	t.Helper()
	if cfg.Clients <= 0 {
		t.Fatalf("ManyConfig.Clients = %d, want > 0", cfg.Clients)
	}
	cfg = cfg.withDefaults()
	caps, err := transport.CapabilitiesOf(backend)
	if err != nil {
		t.Fatalf("backend under test: %v", err)
	}
	sopt := cfg.ServerOptions
	sopt.MaxPeers = cfg.Clients
	server, err := transport.Listen(backend, "127.0.0.1:0", sopt)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	r := &manyRun{
		cfg: cfg, backend: backend, caps: caps, clients: make([]manyClient, cfg.Clients),
		start: make(chan struct{}), stop: make(chan struct{}), finish: make(chan struct{}),
	}
	r.drops0, r.dropsOK = kernelDrops()
	g, ctx := errgroup.WithContext(context.Background())
	g.Go(func() error { return r.serve(ctx, server) })
	for s := range cfg.Shards {
		g.Go(func() error { return r.shard(ctx, s, server.Addr()) })
	}
	res, coordErr := r.coordinate(ctx)
	if coordErr != nil {
		close(r.finish)
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("many clients (%s): %v", backend, err)
	}
	// Counts are logged (and compared) even when a phase timed out: they
	// say which stream fell short.
	r.verify(t, &res)
	if coordErr != nil {
		t.Fatalf("many clients (%s): %v", backend, coordErr)
	}
	return res
}

// coordinate walks the phases; it returns early when a party failed.
func (r *manyRun) coordinate(ctx context.Context) (ManyResult, error) {
	res := ManyResult{Clients: r.cfg.Clients}
	t0 := time.Now()
	n := int64(r.cfg.Clients)
	if err := r.await(ctx, "every client connected on both ends", func() bool {
		return r.serverConnected.Load() == n && r.clientsConnected.Load() == n
	}); err != nil {
		return res, err
	}
	res.ConnectTime = time.Since(t0)
	close(r.start)
	t1 := time.Now()
	select {
	case <-time.After(r.cfg.Duration):
	case <-ctx.Done():
		return res, context.Cause(ctx)
	}
	r.stopAt.Store(time.Now().UnixNano())
	close(r.stop)
	res.TrafficTime = time.Since(t1)
	t2 := time.Now()
	parties := int64(r.cfg.Shards + 1)
	if err := r.await(ctx, "every party drained", func() bool { return r.drained.Load() == parties }); err != nil {
		return res, err
	}
	res.DrainTime = time.Since(t2)
	close(r.finish)
	return res, nil
}

// await polls cond until it holds, r.cfg.Timeout passes or ctx ends (a
// party failed); the error names what was awaited and every counter.
func (r *manyRun) await(ctx context.Context, what string, cond func() bool) error {
	err := livetest.Poll(ctx, r.cfg.Timeout, nil, func() (bool, string) {
		return cond(), fmt.Sprintf("waiting for %s (server saw %d connects, clients %d, %d/%d parties drained)",
			what, r.serverConnected.Load(), r.clientsConnected.Load(), r.drained.Load(), r.cfg.Shards+1)
	})
	if err != nil {
		return fmt.Errorf("many clients: %w", err)
	}
	return nil
}

// phase reports whether ch is closed, without blocking.
func phase(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// loop runs tick at cfg.TickHz until finish or ctx ends. sending is true
// between start and stop; after stop the party publishes that it sent its
// last message once, then keeps servicing and reports when drained.
func (r *manyRun) loop(ctx context.Context, tick func(sending bool) error, isDrained func() bool) error {
	tk := time.NewTicker(time.Second / time.Duration(r.cfg.TickHz))
	defer tk.Stop()
	stopped, reported := false, false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.finish:
			return nil
		case <-tk.C:
		}
		// A tick and finish both ready: select picks either, and a party
		// ticking after finish would hear the others close their hosts.
		if phase(r.finish) {
			return nil
		}
		if !stopped && phase(r.stop) {
			stopped = true
			r.sendersDone.Add(1)
		}
		if err := tick(phase(r.start) && !stopped); err != nil {
			return err
		}
		if stopped && !reported && r.sendersDone.Load() == int64(r.cfg.Shards+1) && isDrained() {
			reported = true
			r.drained.Add(1)
		}
	}
}

// serve owns the server host.
func (r *manyRun) serve(ctx context.Context, h transport.Host) error {
	defer h.Close()
	s := &manyServer{
		r: r, h: h,
		peers: map[transport.PeerID]int{},
		hello: map[transport.PeerID]bool{},
		snap:  make([]byte, 0, r.cfg.SnapshotBytes),
	}
	return r.loop(ctx, s.tick, s.drained)
}

// manyServer is the server goroutine's state; only serve's goroutine
// touches it, so its maps need no locking.
type manyServer struct {
	r     *manyRun
	h     transport.Host
	peers map[transport.PeerID]int  // peer → client index
	hello map[transport.PeerID]bool // connected, its hello not yet in
	ticks uint64
	snap  []byte
}

// admit binds peer to the client its connect data names, counting data
// that names no client as unexpected.
func (s *manyServer) admit(peer transport.PeerID, data uint32) {
	r := s.r
	i := int(data - manyDataBase)
	if data < manyDataBase || i >= len(r.clients) {
		r.unexpectedData.Add(1)
		return
	}
	s.peers[peer] = i
	r.clients[i].connects++
	r.clients[i].serverPeer = peer
	r.serverConnected.Add(1)
}

// on handles one server event.
func (s *manyServer) on(ev transport.Event) {
	switch ev.Kind {
	case transport.EventConnect:
		if !s.r.caps.ConnectData {
			s.hello[ev.Peer] = true
			return
		}
		s.admit(ev.Peer, ev.Data)
	case transport.EventReceive:
		s.receive(ev)
	case transport.EventDisconnect:
		if i, ok := s.peers[ev.Peer]; ok {
			// Recorded as a fault: nobody disconnects during the run. After
			// finish (every flow drained) the shards close their hosts.
			if !phase(s.r.finish) {
				s.r.clients[i].upR.faults++
			}
			delete(s.peers, ev.Peer)
		}
	}
}

// receive routes a message: a peer's first one is its hello where the
// backend carries no connect data; the rest go to its client's flows.
func (s *manyServer) receive(ev transport.Event) {
	r := s.r
	if s.hello[ev.Peer] {
		delete(s.hello, ev.Peer)
		data, ok := parseHello(ev.Payload)
		if !ok {
			r.unexpectedData.Add(1)
			return
		}
		s.admit(ev.Peer, data)
		return
	}
	i, ok := s.peers[ev.Peer]
	if !ok {
		r.unexpectedData.Add(1)
		return
	}
	r.serverReceive(&r.clients[i], ev)
}

// tick services the host and, while sending, sends every client its
// messages of the tick.
func (s *manyServer) tick(sending bool) error {
	if _, err := s.h.Service(s.on); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if sending {
		s.ticks++
		for i := range s.r.clients {
			if err := s.r.serverSend(s.h, &s.r.clients[i], s.ticks, s.snap); err != nil {
				return err
			}
		}
	}
	return s.h.Flush()
}

// drained reports whether every client's up flows have all arrived.
func (s *manyServer) drained() bool {
	for i := range s.r.clients {
		if !s.r.unreliableDrained(&s.r.clients[i].upU) || !s.r.clients[i].upR.drained() {
			return false
		}
	}
	return true
}

// helloMsg carries a client's connect data on a backend that does not.
func helloMsg(data uint32) []byte {
	b := []byte{tagHello, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], data)
	return b
}

func parseHello(b []byte) (uint32, bool) {
	if len(b) != 5 || b[0] != tagHello {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[1:]), true
}

// isReliable tells the exchange's reliable messages from the others: by
// Delivery where the backend carries it, otherwise by their shape (9
// bytes starting with tag; no Input or Snapshot of the exchange is 9 bytes).
func (r *manyRun) isReliable(ev transport.Event, tag byte) bool {
	if r.caps.TaggedDelivery {
		return ev.Delivery == transport.Reliable
	}
	return len(ev.Payload) == 9 && ev.Payload[0] == tag
}

func (r *manyRun) serverReceive(c *manyClient, ev transport.Event) {
	if r.isReliable(ev, tagReliableUp) {
		c.upR.take(reliableSeq(ev.Payload, tagReliableUp, &c.upR), true)
		return
	}
	var in proto.Input
	if err := proto.DecodeInput(ev.Payload, &in); err != nil {
		c.upU.faults++
		return
	}
	c.upU.take(uint64(in.Seq), false)
}

// reliableSeq reads a reliable test message, counting a malformed one as a
// fault (it then still counts as received, with a sequence that fails).
func reliableSeq(b []byte, tag byte, f *flow) uint64 {
	if len(b) != 9 || b[0] != tag {
		f.faults++
		return ^uint64(0)
	}
	return binary.LittleEndian.Uint64(b[1:])
}

func reliableMsg(tag byte, seq uint64) []byte {
	var b [9]byte
	b[0] = tag
	binary.LittleEndian.PutUint64(b[1:], seq)
	return b[:]
}

func (r *manyRun) serverSend(h transport.Host, c *manyClient, tick uint64, snap []byte) error {
	seq := c.downU.sent.Load()
	snap = proto.AppendSnapshotHeader(snap[:0], proto.SnapshotHeader{Tick: uint32(seq)})
	for len(snap) < r.cfg.SnapshotBytes {
		snap = append(snap, byte(len(snap)))
	}
	if err := h.Send(c.serverPeer, transport.Unreliable, snap); err != nil {
		return fmt.Errorf("server: send snapshot: %w", err)
	}
	c.downU.sent.Add(1)
	if (tick-1)%uint64(r.cfg.ReliableEvery) == 0 {
		if err := h.Send(c.serverPeer, transport.Reliable, reliableMsg(tagReliableDown, c.downR.sent.Load())); err != nil {
			return fmt.Errorf("server: send reliable: %w", err)
		}
		c.downR.sent.Add(1)
	}
	return nil
}

// shardClient is one client host owned by a shard goroutine.
type shardClient struct {
	i    int
	h    transport.Host
	peer transport.PeerID
	up   bool
}

// shard owns clients s, s+Shards, s+2·Shards, …
func (r *manyRun) shard(ctx context.Context, s int, addr string) error {
	var cs []*shardClient
	defer func() {
		for _, c := range cs {
			c.h.Close()
		}
	}()
	for i := s; i < r.cfg.Clients; i += r.cfg.Shards {
		h, err := transport.Dial(r.backend, r.cfg.ClientOptions)
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		c := &shardClient{i: i, h: h}
		cs = append(cs, c)
		if c.peer, err = h.Connect(addr, manyDataBase+uint32(i)); err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
	}
	var ticks uint64
	buf := make([]byte, 0, proto.InputSize)
	tick := func(sending bool) error {
		if sending {
			ticks++
		}
		for _, c := range cs {
			if err := r.clientTick(c, sending, ticks, buf); err != nil {
				return err
			}
		}
		return nil
	}
	drained := func() bool {
		for _, c := range cs {
			mc := &r.clients[c.i]
			if !r.unreliableDrained(&mc.downU) || !mc.downR.drained() {
				return false
			}
		}
		return true
	}
	return r.loop(ctx, tick, drained)
}

func (r *manyRun) clientTick(c *shardClient, sending bool, tick uint64, buf []byte) error {
	mc := &r.clients[c.i]
	if sending {
		in := proto.Input{Seq: uint32(mc.upU.sent.Load()), Throttle: 0.5}
		if err := c.h.Send(c.peer, transport.Unreliable, proto.AppendInput(buf[:0], &in)); err != nil {
			return fmt.Errorf("client %d: send input: %w", c.i, err)
		}
		mc.upU.sent.Add(1)
		if (tick-1)%uint64(r.cfg.ReliableEvery) == 0 {
			if err := c.h.Send(c.peer, transport.Reliable, reliableMsg(tagReliableUp, mc.upR.sent.Load())); err != nil {
				return fmt.Errorf("client %d: send reliable: %w", c.i, err)
			}
			mc.upR.sent.Add(1)
		}
	}
	var evErr error
	_, err := c.h.Service(func(ev transport.Event) {
		switch ev.Kind {
		case transport.EventConnect:
			if !c.up {
				c.up = true
				r.clientsConnected.Add(1)
				if !r.caps.ConnectData {
					evErr = c.h.Send(c.peer, transport.Reliable, helloMsg(manyDataBase+uint32(c.i)))
				}
			}
		case transport.EventDisconnect:
			// After finish the server closes its host: a client in a last
			// tick may hear it. Before, nobody disconnects.
			if !phase(r.finish) {
				evErr = fmt.Errorf("client %d: disconnected (reason %d) during the run", c.i, ev.Data)
			}
		case transport.EventReceive:
			r.clientReceive(mc, ev)
		}
	})
	if err != nil {
		return fmt.Errorf("client %d: %w", c.i, err)
	}
	return evErr
}

func (r *manyRun) clientReceive(mc *manyClient, ev transport.Event) {
	if r.isReliable(ev, tagReliableDown) {
		mc.downR.take(reliableSeq(ev.Payload, tagReliableDown, &mc.downR), true)
		return
	}
	h, body, err := proto.DecodeSnapshot(ev.Payload)
	if err != nil || len(ev.Payload) != r.cfg.SnapshotBytes || len(body) != r.cfg.SnapshotBytes-proto.SnapshotHeaderSize {
		mc.downU.faults++
		return
	}
	mc.downU.take(uint64(h.Tick), false)
}

// flowErrors compares every flow of every client and adds its counts to
// res. An unreliable flow short of messages, nothing else wrong, is an
// error only when the flows' shortfall together is more than shed, the
// datagrams the kernel dropped for a full receive buffer: any other loss,
// fault, or short reliable flow always is.
func (r *manyRun) flowErrors(res *ManyResult, shed uint64) []error {
	var errs []error
	lost := uint64(0)
	var short []error // unreliable flows short of messages, and nothing else wrong
	for i := range r.clients {
		c := &r.clients[i]
		if c.connects != 1 {
			errs = append(errs, fmt.Errorf("client %d (data %#x): server saw %d connects, want 1", i, manyDataBase+uint32(i), c.connects))
		}
		for _, f := range []struct {
			name       string
			fl         *flow
			d          *Direction
			unreliable bool
		}{
			{"up unreliable", &c.upU, &res.UpUnreliable, true}, {"up reliable", &c.upR, &res.UpReliable, false},
			{"down unreliable", &c.downU, &res.DownUnreliable, true}, {"down reliable", &c.downR, &res.DownReliable, false},
		} {
			sent := f.fl.sent.Load()
			f.d.Sent += sent
			f.d.Received += f.fl.received
			if f.fl.received == sent && f.fl.faults == 0 {
				continue
			}
			err := fmt.Errorf("client %d %s: sent %d received %d, %d out of order/malformed/disconnect", i, f.name, sent, f.fl.received, f.fl.faults)
			if f.unreliable && f.fl.faults == 0 && f.fl.received < sent {
				lost += sent - f.fl.received
				short = append(short, err)
				continue
			}
			errs = append(errs, err)
		}
	}
	if lost > shed {
		errs = append(errs, fmt.Errorf("%d unreliable messages lost, %d more than the kernel dropped for a full receive buffer during the run: on loopback the transport lost them", lost, lost-shed))
		errs = append(errs, short...)
	}
	return errs
}

// kernelDrops reads the kernel's count of UDP (and UDPv6) datagrams it
// dropped for a full socket receive buffer: RcvbufErrors in
// /proc/net/snmp and Udp6RcvbufErrors in /proc/net/snmp6. ok is false
// where they cannot be read (not Linux): every loss then fails.
func kernelDrops() (n uint64, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	b, err := boundedfile.ReadFile(ctx, "/proc/net/snmp", 64<<10)
	if err != nil {
		return 0, false
	}
	n, ok = snmpField(string(b), "Udp:", "RcvbufErrors")
	if !ok {
		return 0, false
	}
	if b6, err := boundedfile.ReadFile(ctx, "/proc/net/snmp6", 64<<10); err == nil {
		for _, line := range strings.Split(string(b6), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "Udp6RcvbufErrors" {
				if v, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					n += v
				}
			}
		}
	}
	return n, true
}

// snmpField reads one field of /proc/net/snmp: a header line of names
// after prefix, then the line of values.
func snmpField(snmp, prefix, name string) (uint64, bool) {
	lines := strings.Split(snmp, "\n")
	for i := 0; i+1 < len(lines); i++ {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != prefix || len(values) != len(names) || values[0] != prefix {
			continue
		}
		for j, f := range names {
			if f == name {
				v, err := strconv.ParseUint(values[j], 10, 64)
				return v, err == nil
			}
		}
	}
	return 0, false
}

// verify compares every flow after all goroutines returned (g.Wait orders
// their writes before these reads) and logs the totals.
func (r *manyRun) verify(t *testing.T, res *ManyResult) {
	t.Helper()
	var errs []error
	if n := r.unexpectedData.Load(); n != 0 {
		errs = append(errs, fmt.Errorf("server saw %d connects or messages from unknown connect data or peers", n))
	}
	shed := r.kernelShed()
	errs = append(errs, r.flowErrors(res, shed)...)
	if lost := res.UpUnreliable.Sent - res.UpUnreliable.Received + res.DownUnreliable.Sent - res.DownUnreliable.Received; lost > 0 && lost <= shed {
		t.Logf("%d unreliable messages missing, within the %d datagrams the kernel dropped for a full receive buffer during the run (a receiver descheduled on a loaded machine): not the transport's loss", lost, shed)
	}
	t.Logf("%s, %d clients: connect %v, traffic %v, drain %v", r.backend, res.Clients, res.ConnectTime.Round(time.Millisecond),
		res.TrafficTime.Round(time.Millisecond), res.DrainTime.Round(time.Millisecond))
	t.Logf("client→server unreliable %d/%d, reliable %d/%d; server→client unreliable %d/%d, reliable %d/%d",
		res.UpUnreliable.Received, res.UpUnreliable.Sent, res.UpReliable.Received, res.UpReliable.Sent,
		res.DownUnreliable.Received, res.DownUnreliable.Sent, res.DownReliable.Received, res.DownReliable.Sent)
	if len(errs) > 0 {
		if len(errs) > 20 {
			errs = append(errs[:20], fmt.Errorf("… and %d more", len(errs)-20))
		}
		t.Error(errors.Join(errs...))
	}
	if res.UpUnreliable.Sent == 0 || res.DownUnreliable.Sent == 0 || res.UpReliable.Sent == 0 || res.DownReliable.Sent == 0 {
		t.Errorf("a stream sent nothing (%+v): the exchange did not run", *res)
	}
}
