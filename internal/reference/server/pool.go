package server

import (
	"sync"
	"sync/atomic"
)

// pool runs data-parallel passes over n workers: the calling goroutine is
// worker 0, and n−1 long-lived goroutines are the rest. Items are handed
// out through one atomic counter, so which worker builds which item varies
// from tick to tick — results must (and do) depend only on the item. A pool
// of 1 runs everything inline. Close stops the goroutines.
type pool struct {
	n     int
	start []chan struct{}
	wg    sync.WaitGroup // one pass
	exit  sync.WaitGroup // goroutine lifetimes
	next  atomic.Int64
	count int
	chunk int
	fn    func(worker, i int)
}

func newPool(n int) *pool {
	p := &pool{n: max(n, 1)}
	for w := 1; w < p.n; w++ {
		ch := make(chan struct{})
		p.start = append(p.start, ch)
		p.exit.Add(1)
		go p.worker(w, ch)
	}
	return p
}

func (p *pool) worker(w int, start chan struct{}) {
	defer p.exit.Done()
	for range start {
		p.drain(w)
		p.wg.Done()
	}
}

func (p *pool) drain(w int) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.count {
			return
		}
		for i := lo; i < min(lo+p.chunk, p.count); i++ {
			p.fn(w, i)
		}
	}
}

// run calls fn(worker, i) for every i in [0, count), chunk items at a time,
// and returns when all are done.
func (p *pool) run(count, chunk int, fn func(worker, i int)) {
	if count == 0 {
		return
	}
	p.count, p.chunk, p.fn = count, max(chunk, 1), fn
	p.next.Store(0)
	helpers := min(p.n-1, (count-1)/p.chunk) // no point waking idle workers
	p.wg.Add(helpers)
	for w := 0; w < helpers; w++ {
		p.start[w] <- struct{}{}
	}
	p.drain(0)
	p.wg.Wait()
	p.fn = nil
}

// close stops the worker goroutines and waits for them; calling it again
// does nothing.
func (p *pool) close() {
	for _, ch := range p.start {
		close(ch)
	}
	p.start = nil // idempotent
	p.exit.Wait()
}
