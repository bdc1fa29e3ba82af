package server

import "github.com/scalegate/scalegate/internal/load/trace"

// recordInput appends one accepted Input, as applied (after validation), to
// the peer's trace. It is on the Input path of the tick: one map lookup and
// a 28-byte append to an in-memory chunk; the recorder's own goroutine does
// the file I/O, so a slow disk cannot stall the tick. Write failures are
// counted (trace_errors) and logged with the metrics write; the tick goes
// on: a full disk must not take the server down.
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
	s.log.Printf("%s", traceTotals("trace", st, s.rec.Dir()))
	return err
}

// logTraceErrors logs the recorder's newest failure when its error count
// grew since the last call (called with each metrics write).
func (s *Server) logTraceErrors() {
	if s.rec == nil {
		return
	}
	if st := s.rec.Stats(); st.Errors > s.traceErrsLogged {
		s.log.Printf("trace: %d error(s) so far; the last: %s", st.Errors, st.LastError)
		s.traceErrsLogged = st.Errors
	}
}
