package server

import (
	"fmt"
	"net"
	"time"
	"unicode/utf8"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// Garbage handling: a peer whose malformed messages reach garbageKick
// within any garbageWindow (a sliding window, not one reset every 10 s) is
// kicked with Notice(kicked). Isolated bad packets are only counted and
// dropped.
const (
	garbageKick   = 32
	garbageWindow = 10 * time.Second
)

// kickLogEvery is the least time between two kick log lines: a flood of
// kicks must not become a flood of log (the count is in the metrics file).
const kickLogEvery = time.Second

type peerState uint8

const (
	peerJoining peerState = iota // connected, admitted, no Join yet
	peerJoined
	peerClosing // refused or kicked: waiting for the disconnect event
)

// peer is one transport peer. admitted peers count against max_peers and
// the per-IP cap until they are kicked or disconnect.
type peer struct {
	id          transport.PeerID
	ip          string
	state       peerState
	admitted    bool
	connectedAt time.Time
	lastHeard   time.Time
	slot        int32
	viewer      *Viewer
	strikes     *stats.SlidingCount // malformed messages within garbageWindow
	lastSeq     uint32              // newest Input applied
	haveSeq     bool
	appliedTick uint32 // the tick lastSeq was applied on
	// delayTick is the tick the peer was last sent PeerDelay on (with its
	// snapshot, sendOne, or on its own, finishSends).
	delayTick uint32
	delaySent bool // delayTick is set (tick 0 is a tick too)
	// features: the peer sent its Features (v1.1); a second is malformed.
	features bool
	// delayed: Inputs the input_delay_ms fault holds back, oldest first.
	delayed []delayedInput
	// faultSnaps and faultLastAt: the snapshots the delivery faults let
	// through to this peer, and when the latest went (deliveryFault).
	faultSnaps  int64
	faultLastAt time.Time
}

// notice is a Notice to send.
type notice struct {
	kind proto.NoticeKind
	msg  string
}

var (
	noticeShutdown = notice{proto.NoticeShutdown, "server shutting down"}
	noticeGarbage  = notice{proto.NoticeKicked, "kicked: malformed traffic"}
	noticeIdle     = notice{proto.NoticeKicked, "kicked: idle timeout"}
)

// admission is the connect rate limiter and per-IP accounting.
type admission struct {
	limit    int
	window   time.Duration
	perIPMax int
	attempts map[string]*stats.SlidingCount
	perIP    map[string]int
	admitted int
}

func newAdmission(c *SecurityConfig) admission {
	return admission{
		limit:    c.ConnectRateLimitCount,
		window:   time.Duration(c.ConnectRateLimitWindowS * float64(time.Second)),
		perIPMax: c.MaxConnectionsPerIP,
		attempts: map[string]*stats.SlidingCount{},
		perIP:    map[string]int{},
	}
}

// rateLimited records a connect attempt from ip at now and reports whether
// it exceeds connect_rate_limit_count within the window. Every attempt
// counts, refused ones included, so a flood stays limited.
func (a *admission) rateLimited(ip string, now time.Time) bool {
	c := a.attempts[ip]
	if c == nil {
		// One past the limit is all that matters: the counter saturates there.
		c = stats.NewSlidingCount(a.limit+1, a.window)
		a.attempts[ip] = c
	}
	return c.Add(now, 1) > a.limit
}

// pruneAll forgets addresses with no attempt left in the window
// (maintenance: the map would otherwise keep every address ever seen).
func (a *admission) pruneAll(now time.Time) {
	for ip, c := range a.attempts {
		if c.Count(now) == 0 {
			delete(a.attempts, ip)
		}
	}
}

// decide runs the admission checks in order and returns the refusal
// reason, or 0 to admit.
func (s *Server) decide(data uint32, ip string, now time.Time) proto.Reason {
	switch {
	case data != proto.ConnectData:
		return proto.ReasonProtocolVersion
	case s.admit.rateLimited(ip, now):
		return proto.ReasonRateLimited
	case s.admit.admitted >= s.cfg.Server.MaxPeers:
		return proto.ReasonServerFull
	case s.admit.perIPMax > 0 && s.admit.perIP[ip] >= s.admit.perIPMax:
		return proto.ReasonPerIPCap
	}
	return 0
}

// service drains the host's events.
func (s *Server) service(now time.Time) {
	if _, err := s.host.Service(func(ev transport.Event) { s.handleEvent(ev, now) }); err != nil {
		s.log.Printf("service: %v", err)
	}
}

func (s *Server) handleEvent(ev transport.Event, now time.Time) {
	switch ev.Kind {
	case transport.EventConnect:
		s.onConnect(ev.Peer, ev.Data, now)
	case transport.EventReceive:
		s.onReceive(ev, now)
	case transport.EventDisconnect:
		s.onDisconnect(ev.Peer)
	case transport.EventMalformed:
		// Datagrams the backend dropped before they became messages (QUIC
		// fragments that cannot be reassembled): strikes like bad messages.
		if p, ok := s.peers[ev.Peer]; ok && p.state != peerClosing {
			s.malformed(p, now, int(ev.Data))
		}
	}
}

func (s *Server) onConnect(id transport.PeerID, data uint32, now time.Time) {
	ip := hostOf(s.host.PeerAddr(id))
	p := &peer{id: id, ip: ip, connectedAt: now, lastHeard: now, slot: -1,
		strikes: stats.NewSlidingCount(garbageKick, garbageWindow)}
	s.peers[id] = p
	if s.closing { // shutting down: no new peers, no admission counted
		s.sendNotice(id, noticeShutdown)
		s.host.Disconnect(id, uint32(noticeShutdown.kind))
		p.state = peerClosing
		return
	}
	if r := s.decide(data, ip, now); r != 0 {
		s.refuse(p, r, refuseMessage(r, s))
		return
	}
	p.admitted = true
	s.admit.admitted++
	s.admit.perIP[ip]++
}

func refuseMessage(r proto.Reason, s *Server) string {
	switch r {
	case proto.ReasonProtocolVersion:
		return fmt.Sprintf("protocol version: connect data must be 0x%08x", proto.ConnectData)
	case proto.ReasonRateLimited:
		return "connect rate limit exceeded"
	case proto.ReasonServerFull:
		return fmt.Sprintf("server full (max_peers %d)", s.cfg.Server.MaxPeers)
	case proto.ReasonPerIPCap:
		return fmt.Sprintf("too many connections from this address (max %d)", s.cfg.Security.MaxConnectionsPerIP)
	}
	return "bad Join"
}

// refuse sends Refuse(reason), disconnects the peer and counts it.
func (s *Server) refuse(p *peer, r proto.Reason, msg string) {
	s.met.refused[r.String()]++
	s.release(p)
	var err error
	s.msgBuf, err = proto.AppendRefuse(s.msgBuf[:0], &proto.Refuse{Reason: r, Message: msg})
	if err == nil {
		err = s.send(p.id, transport.Reliable, s.msgBuf)
	}
	if err != nil {
		s.log.Printf("peer %d: send refuse: %v", p.id, err)
	}
	s.host.Disconnect(p.id, uint32(r))
	p.state = peerClosing
}

// kick sends Notice(kicked) and disconnects a peer.
func (s *Server) kick(p *peer, n notice) {
	s.met.kicked++
	s.sendNotice(p.id, n)
	s.release(p)
	s.host.Disconnect(p.id, uint32(n.kind))
	p.state = peerClosing
}

func (s *Server) sendNotice(id transport.PeerID, n notice) {
	var err error
	s.msgBuf, err = proto.AppendNotice(s.msgBuf[:0], &proto.Notice{Kind: n.kind, Message: n.msg})
	if err == nil {
		err = s.send(id, transport.Reliable, s.msgBuf)
	}
	if err != nil {
		s.log.Printf("peer %d: send notice: %v", id, err)
	}
}

func (s *Server) sendPeerDelay(id transport.PeerID) {
	rtt := s.host.RTT(id).Milliseconds()
	s.msgBuf = proto.AppendPeerDelay(s.msgBuf[:0], uint16(min(max(rtt, 0), 65535)))
	if err := s.send(id, transport.Unreliable, s.msgBuf); err != nil {
		s.log.Printf("peer %d: send peer delay: %v", id, err)
	}
}

// release frees what an admitted peer holds: its admission counts, its
// entity, its snapshot state and its trace file.
func (s *Server) release(p *peer) {
	if s.rec != nil {
		if err := s.rec.ClosePeer(uint32(p.id)); err != nil {
			s.log.Printf("peer %d: trace: %v", p.id, err)
		}
	}
	if p.admitted {
		p.admitted = false
		s.admit.admitted--
		if s.admit.perIP[p.ip]--; s.admit.perIP[p.ip] <= 0 {
			delete(s.admit.perIP, p.ip)
		}
	}
	if p.viewer != nil {
		s.sim.World.Remove(p.slot)
		for i, v := range s.viewers {
			if v == p.viewer {
				s.viewers = append(s.viewers[:i], s.viewers[i+1:]...)
				s.vpeers = append(s.vpeers[:i], s.vpeers[i+1:]...)
				break
			}
		}
		p.viewer, p.slot = nil, -1
	}
}

func (s *Server) onDisconnect(id transport.PeerID) {
	if p, ok := s.peers[id]; ok {
		s.release(p)
		delete(s.peers, id)
	}
}

// inputScratch is reused by every Input decode (the hot path).
type inputScratch struct{ in proto.Input }

// onReceive dispatches one message. Anything that is not what this peer
// may send now is malformed: counted, dropped, and struck against the peer.
func (s *Server) onReceive(ev transport.Event, now time.Time) {
	p, ok := s.peers[ev.Peer]
	if !ok || p.state == peerClosing {
		return
	}
	p.lastHeard = now
	t, err := proto.PeekType(ev.Payload)
	switch {
	case err != nil:
		s.malformed(p, now, 1)
	case t == proto.TypeJoin:
		s.onJoin(p, ev.Payload, now)
	case t == proto.TypeInput && p.state == peerJoined:
		s.onInput(p, ev.Payload, now)
	case t == proto.TypePing && p.state == peerJoined:
		s.onPing(p, ev.Payload, now)
	case t == proto.TypeFeatures && p.state == peerJoined:
		s.onFeatures(p, ev.Payload, now)
	default: // Input, Ping or Features before Join, or a server-to-client type
		s.malformed(p, now, 1)
	}
}

// onJoin admits a joining peer's Join, or refuses a bad one. A second Join
// from a joined peer is malformed traffic.
func (s *Server) onJoin(p *peer, b []byte, now time.Time) {
	if p.state != peerJoining {
		s.malformed(p, now, 1)
		return
	}
	j, err := proto.DecodeJoin(b)
	if err != nil {
		s.refuse(p, proto.ReasonBadJoin, "bad Join: "+err.Error())
		return
	}
	if !utf8.ValidString(j.EntityType) {
		s.refuse(p, proto.ReasonBadJoin, "bad Join: entity_type is not UTF-8")
		return
	}
	if j.EntityType == "" {
		// No type asked for: the server's default entity, as a game server
		// spawns its default when a client names none.
		j.EntityType = DefaultEntityType
	}
	s.joins++
	if n := int64(s.cfg.Faults.RefuseEveryNthJoin); n > 0 && s.joins%n == 0 {
		s.refuse(p, proto.ReasonServerFull, "server full (fault refuse_every_nth_join)")
		return
	}
	p.slot = s.sim.World.SpawnPlayer(p.id, typeCode(j.EntityType), j.ClientIndex)
	p.viewer = &Viewer{Slot: p.slot}
	p.state = peerJoined
	s.warm.joined(now)
	s.viewers = append(s.viewers, p.viewer)
	s.vpeers = append(s.vpeers, p)
	s.msgBuf, err = proto.AppendWelcome(s.msgBuf[:0], &proto.Welcome{
		EntityID:   s.sim.World.At(p.slot).ID,
		TickHz:     TickHz,
		ServerTick: s.tick,
		Transport:  s.reported,
		BodyFormat: snapshot.BodyFormat,
		Flags:      s.welcomeFlags(),
	})
	if err == nil {
		err = s.send(p.id, transport.Reliable, s.msgBuf)
	}
	if err != nil {
		s.log.Printf("peer %d: send welcome: %v", p.id, err)
	}
}

// welcomeFlags are v1.1, and deltas when [network] snapshot_deltas offers them.
func (s *Server) welcomeFlags() uint8 {
	if s.cfg.Network.SnapshotDeltas {
		return proto.WelcomeFlagMinor1 | proto.WelcomeFlagDeltas
	}
	return proto.WelcomeFlagMinor1
}

// malformed counts n dropped messages and kicks a peer that sent
// garbageKick of them within garbageWindow.
func (s *Server) malformed(p *peer, now time.Time, n int) {
	s.met.malformed += int64(n)
	if p.strikes.Add(now, n) < garbageKick {
		return
	}
	s.logKick(p, now)
	s.kick(p, noticeGarbage)
}

// logKick writes one line per kick, at most one per kickLogEvery; the lines
// held back are counted in the metrics file and on the next line written.
func (s *Server) logKick(p *peer, now time.Time) {
	if !s.lastKickLog.IsZero() && now.Sub(s.lastKickLog) < kickLogEvery {
		s.met.kickLogsSuppressed++
		s.kickQuiet++
		return
	}
	held := ""
	if s.kickQuiet > 0 {
		held = fmt.Sprintf(" (+%d kick line(s) not logged since the last one)", s.kickQuiet)
	}
	s.log.Printf("peer %d (%s): kicked after %d malformed messages within %v%s", p.id, p.ip, garbageKick, garbageWindow, held)
	s.lastKickLog, s.kickQuiet = now, 0
}

// maintain runs the per-tick housekeeping: idle and join timeouts, the
// rate limiter's expiry, and the RSS and allocation faults.
func (s *Server) maintain(now time.Time) {
	idle := time.Duration(s.cfg.Server.IdleTimeoutS * float64(time.Second))
	join := time.Duration(s.cfg.Server.JoinTimeoutS * float64(time.Second))
	for _, p := range s.peers {
		switch {
		case p.state == peerJoined && now.Sub(p.lastHeard) > idle,
			p.state == peerJoining && now.Sub(p.connectedAt) > join:
			s.met.idle++
			s.kick(p, noticeIdle)
		}
	}
	if s.tick%TickHz == 0 {
		s.admit.pruneAll(now)
	}
	s.leak.tick(now.Sub(s.started))
	s.churn.tick()
	s.decay.tick(s.sim.World)
}

// hostOf returns the IP of an "ip:port" address (the whole string when it
// has no port).
func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
