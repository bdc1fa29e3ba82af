package server

import (
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// maxDelayedInputs bounds one peer's queue under the input_delay_ms fault:
// at 60 Hz, 1024 Inputs are 17 s of them, far beyond any delay the fault
// accepts, so a peer flooding Inputs cannot grow the server's memory.
const maxDelayedInputs = 1024

// delayedInput is an Input held back by the input_delay_ms fault until due.
type delayedInput struct {
	due time.Time
	in  proto.Input
}

// onInput takes one Input of a joined peer: applied at once, or queued
// until the input_delay_ms fault lets it through.
func (s *Server) onInput(p *peer, b []byte, now time.Time) {
	if s.cfg.Faults.IgnoreInputs {
		return
	}
	if err := proto.DecodeInput(b, &s.input.in); err != nil {
		s.malformed(p, now, 1)
		return
	}
	if in := &s.input.in; in.HasSnapshotAck {
		if !p.viewer.In.Deltas {
			s.malformed(p, now, 1) // a snapshot ack from a peer that never asked for deltas
			return
		}
		// An ack of a tick not yet built is no snapshot this server sent:
		// taken, it would release every view the peer's deltas need.
		if !s.cfg.Faults.IgnoreSnapshotAcks && int32(s.tick-in.SnapshotAck) >= 0 {
			p.viewer.In.TakeSnapshotAck(in.SnapshotAck)
		}
	}
	if d := s.inputDelay(); d > 0 {
		if len(p.delayed) < maxDelayedInputs {
			p.delayed = append(p.delayed, delayedInput{due: now.Add(d), in: s.input.in})
		}
		return
	}
	s.applyInput(p, &s.input.in)
}

// inputDelay is the input_delay_ms fault as a duration (0: off).
func (s *Server) inputDelay() time.Duration {
	return time.Duration(s.cfg.Faults.InputDelayMs * float64(time.Millisecond))
}

// applyInput hands an Input to the simulation and makes it the one this
// peer's snapshots acknowledge. Unreliable delivery may reorder (QUIC
// datagrams): an Input older than the newest applied one is dropped
// (wrap-safe comparison) and never acknowledged.
func (s *Server) applyInput(p *peer, in *proto.Input) {
	if p.haveSeq && int32(in.Seq-p.lastSeq) < 0 {
		return
	}
	p.lastSeq, p.haveSeq, p.appliedTick = in.Seq, true, s.tick
	ctl := clampControls(in)
	s.sim.World.At(p.slot).Ctl = ctl
	s.met.inputsAccepted++
	if s.rec != nil {
		s.recordInput(p, &ctl)
	}
}

// applyDelayed applies the held-back Inputs that are due by now, in the
// order they arrived.
func (s *Server) applyDelayed(now time.Time) {
	if s.inputDelay() <= 0 {
		return
	}
	for _, p := range s.vpeers {
		n := 0
		for n < len(p.delayed) && !p.delayed[n].due.After(now) {
			s.applyInput(p, &p.delayed[n].in)
			n++
		}
		if n > 0 {
			p.delayed = append(p.delayed[:0], p.delayed[n:]...)
		}
	}
}

// onFeatures takes a joined peer's Features (v1.1): once, after Welcome.
func (s *Server) onFeatures(p *peer, b []byte, now time.Time) {
	f, err := proto.DecodeFeatures(b)
	if err != nil || p.features {
		s.malformed(p, now, 1)
		return
	}
	p.features = true
	p.viewer.In.AckInputs = f&proto.FeatureInputAcks != 0
	// A peer asking a server that did not offer deltas keeps version 2.
	p.viewer.In.Deltas = f&proto.FeatureSnapshotDeltas != 0 && s.cfg.Network.SnapshotDeltas
}

// onPing answers a joined peer's Ping (v1.1) at once: the Pong is queued in
// the pass that read the Ping and leaves with this tick's flush.
func (s *Server) onPing(p *peer, b []byte, now time.Time) {
	token, err := proto.DecodePing(b)
	if err != nil {
		s.malformed(p, now, 1)
		return
	}
	s.msgBuf = proto.AppendPong(s.msgBuf[:0], token)
	if err := s.send(p.id, transport.Unreliable, s.msgBuf); err != nil {
		s.log.Printf("peer %d: send pong: %v", p.id, err)
	}
}

// stampAcks gives every due viewer the input acknowledgement its snapshot
// carries: the newest Input applied for its peer and that Input's tick.
func (s *Server) stampAcks() {
	for i, v := range s.due {
		p := s.duePeers[i]
		v.In.HaveAck, v.In.AckSeq, v.In.AckTick = p.haveSeq, p.lastSeq, p.appliedTick
	}
}
