// Package eventq is the event hand-off the goroutine-based transport
// backends share. Those backends are QUIC and WebSocket: their I/O
// goroutines push events, and the host's owner takes them all in Service.
package eventq

import "sync"

// Queue is a mutex-guarded double buffer: Take swaps the filled slice for
// the one Recycle gave back, so a host in steady state delivers events
// without allocating. Push is safe from any goroutine; Take and Recycle
// belong to the owner.
type Queue[E any] struct {
	mu    sync.Mutex
	queue []E
	spare []E // owner-only: the slice the last Take handed out, emptied
}

// Push appends e for the owner's next Take.
func (q *Queue[E]) Push(e E) {
	q.mu.Lock()
	q.queue = append(q.queue, e)
	q.mu.Unlock()
}

// Take returns every event pushed since the last Take, in order. The
// owner hands the slice back to Recycle once it is done with it.
func (q *Queue[E]) Take() []E {
	q.mu.Lock()
	evs := q.queue
	q.queue, q.spare = q.spare[:0], nil
	q.mu.Unlock()
	return evs
}

// Recycle keeps evs, from Take, for reuse; it is cleared first so the
// buffer holds no references to delivered events.
func (q *Queue[E]) Recycle(evs []E) {
	clear(evs)
	q.spare = evs[:0]
}
