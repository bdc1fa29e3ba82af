package swarm

import (
	"math"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// ackClient is a joined client with no protocol: the tests drive its
// input numbering and acknowledgements directly.
func ackClient(w *worker, slot time.Time) *client {
	c := newClient(0, "weave", nil, slot, LoadV1.NewWorker(&Config{}).NewBot(0))
	c.phase = phaseJoined
	return c
}

// send numbers and sends n Inputs, one every step from at.
func send(c *client, w *worker, n int, at time.Time, step time.Duration) time.Time {
	for range n {
		c.nextSeq()
		c.inputSent(w, at)
		at = at.Add(step)
	}
	return at
}

// TestInputAcks: each Input is timed once, from its send to the first
// acknowledgement naming it or a later one; a stale or repeated
// acknowledgement times nothing; one for an Input never sent is a
// protocol error; Inputs a client gives up on are counted with their age.
func TestInputAcks(t *testing.T) {
	t0 := time.Now()
	ms := time.Millisecond
	tests := []struct {
		name string
		run  func(c *client, w *worker)
		// want: latencies recorded (ms, to ±0.01), unanswered, protocol errors
		want                []float64
		unanswered, protErr int64
	}{
		{"one ack times its input", func(c *client, w *worker) {
			send(c, w, 1, t0, 0)
			c.onInputAck(w, 1, t0.Add(20*ms))
		}, []float64{20}, 0, 0},
		{"a cumulative ack times every input it supersedes", func(c *client, w *worker) {
			send(c, w, 3, t0, 10*ms) // sent at 0, 10, 20 ms
			c.onInputAck(w, 3, t0.Add(50*ms))
		}, []float64{50, 40, 30}, 0, 0},
		{"a repeated or older ack times nothing more", func(c *client, w *worker) {
			send(c, w, 2, t0, 10*ms)
			c.onInputAck(w, 2, t0.Add(30*ms))
			c.onInputAck(w, 2, t0.Add(40*ms))
			c.onInputAck(w, 1, t0.Add(50*ms))
		}, []float64{30, 20}, 0, 0},
		{"an ack of an input never sent is a protocol error", func(c *client, w *worker) {
			send(c, w, 1, t0, 0)
			c.onInputAck(w, 5, t0.Add(10*ms))
		}, nil, 0, 1},
		{"a client ending with old unanswered inputs counts them at their age", func(c *client, w *worker) {
			send(c, w, 1, t0, 0)
			c.onInputAck(w, 1, t0.Add(10*ms))
			send(c, w, 2, t0.Add(100*ms), 2*time.Second) // at 0.1 s and 2.1 s
			c.endInputs(w, t0.Add(2500*ms))              // the first is 2.4 s old, the second 0.4 s: in flight
		}, []float64{10, 2400}, 1, 0},
		{"a server that never acknowledged gives up on nothing", func(c *client, w *worker) {
			send(c, w, inputRing+10, t0, 16*ms)
			c.endInputs(w, t0.Add(time.Minute))
		}, nil, 0, 0},
		{"an input pushed out of the ring unanswered counts at its age", func(c *client, w *worker) {
			send(c, w, 1, t0, 0)
			c.onInputAck(w, 1, t0.Add(5*ms))
			at := send(c, w, inputRing, t0.Add(10*ms), 10*ms) // inputs 2 … 513
			send(c, w, 1, at, 0)                              // input 514 takes input 2's slot
		}, []float64{5, float64(inputRing) * 10}, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(0, &Config{}, nil, time.Second/60)
			c := ackClient(w, t0)
			tc.run(c, w)
			got := w.latHist.Count()
			if got != int64(len(tc.want)) || w.latUnanswered != tc.unanswered || w.protocolErrors != tc.protErr {
				t.Fatalf("%d latencies, %d unanswered, %d protocol errors; want %d, %d, %d",
					got, w.latUnanswered, w.protocolErrors, len(tc.want), tc.unanswered, tc.protErr)
			}
			if len(tc.want) == 0 {
				return
			}
			want := stats.NewHistogram()
			for _, v := range tc.want {
				want.Record(v)
			}
			near := func(a, b float64) bool { return math.Abs(a-b) <= 0.01 }
			if g, x := w.latHist.Summary(), want.Summary(); !near(g.Min, x.Min) || !near(g.Max, x.Max) || !near(g.Mean, x.Mean) {
				t.Errorf("latencies %+v, want %+v", g, x)
			}
		})
	}
}

// TestPongsTimedFromTheirArrival: a pong is timed against its own ping,
// however many later pings went out since, from the arrival the backend
// stamped, not the service call that handed it over.
func TestPongsTimedFromTheirArrival(t *testing.T) {
	t0 := time.Now()
	w := newWorker(0, &Config{}, nil, time.Second/60)
	c := ackClient(w, t0)
	c.pinger = pingerFunc(func(Conn, uint32) error { return nil })
	c.host = discardHost{}
	for i := range 3 {
		c.ping(t0.Add(time.Duration(i) * 100 * time.Millisecond)) // tokens 1, 2, 3
	}
	c.onPong(w, 1, t0.Add(250*time.Millisecond)) // its answer arrives after two more pings
	c.onPong(w, 1, t0.Add(260*time.Millisecond)) // a duplicate: not timed twice
	c.onPong(w, 9, t0.Add(270*time.Millisecond)) // never sent
	if n := w.rttHist.Count(); n != 1 {
		t.Fatalf("%d round trips timed, want 1", n)
	}
	if s := w.rttHist.Summary(); s.Max < 249.9 || s.Max > 250.1 {
		t.Errorf("round trip %v ms, want 250", s.Max)
	}
	at := arrival(transportEvent(t0.Add(-3*time.Millisecond)), t0)
	if d := t0.Sub(at); d < 3*time.Millisecond-time.Microsecond || d > 3*time.Millisecond+time.Microsecond {
		t.Errorf("arrival %v before the service, want 3ms", d)
	}
	if at := arrival(transportEvent(time.Time{}), t0); !at.Equal(t0) {
		t.Errorf("an unstamped message arrived at %v, want the service time", at)
	}
}

type pingerFunc func(Conn, uint32) error

func (f pingerFunc) Ping(c Conn, tok uint32) error { return f(c, tok) }

// transportEvent is a received message the backend stamped at (zero: not).
func transportEvent(at time.Time) transport.Event {
	return transport.Event{Kind: transport.EventReceive, At: at}
}
