package server

import "github.com/scalegate/scalegate/internal/trace"

// recordInput appends one accepted Input, as applied (after validation), to
// the peer's trace. It is on the Input path of the tick: one map lookup and
// a 28-byte append to a buffered file. A failed write is logged once; the
// recorder then stops recording that peer and counts it (trace_errors), and
// the tick goes on: a full disk must not take the server down.
func (s *Server) recordInput(p *peer, c *Controls) {
	s.trRec = trace.Record{
		ServerTick: uint64(s.tick),
		Throttle:   float32(c.Throttle), Elevator: float32(c.Elevator),
		Aileron: float32(c.Aileron), Rudder: float32(c.Rudder),
		Buttons: c.Buttons,
	}
	if err := s.rec.Record(uint32(p.id), &s.trRec); err != nil {
		s.log.Printf("peer %d: trace: %v (no longer recording this peer)", p.id, err)
	}
}

// closeRecorder flushes and closes every trace file (shutdown) and logs
// what was recorded.
func (s *Server) closeRecorder() error {
	if s.rec == nil {
		return nil
	}
	err := s.rec.Close()
	st := s.rec.Stats()
	s.log.Printf("trace: %d record(s) in %d file(s) under %s, %d error(s)", st.Records, st.Files, s.rec.Dir(), st.Errors)
	return err
}
