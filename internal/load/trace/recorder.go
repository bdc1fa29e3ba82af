package trace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// DefaultMaxFileBytes is the default per-file cap of a Recorder: 64 MiB,
// about 2.4 million records (11 hours of one peer at 60 Inputs a second).
const DefaultMaxFileBytes = 64 << 20

// chunkBytes is the size of a peer's in-memory chunk: 585 records, about
// 10 s of one 60 Hz peer. A full chunk is handed to the writer goroutine.
const chunkBytes = 585 * RecordSize

// queueChunks bounds the writer's backlog: 1024 chunks (16 MiB), over a
// minute of 128 peers. A disk that cannot absorb that loses chunks (counted
// in Errors) rather than stalling the tick that records.
const queueChunks = 1024

// maxFileIndex bounds the search for a free trace_peer<id>_<n> name.
const maxFileIndex = 1_000_000

// FileName is the name of peer id's n-th file: trace_peer<id>_<n>.flit.
func FileName(peer uint32, n int) string {
	return fmt.Sprintf("trace_peer%d_%d.flit", peer, n)
}

// Recorder appends records to one FLIT file per peer in a directory. A file
// that reaches the size cap is closed and recording continues in the next
// index (trace_peer3_0.flit, then trace_peer3_1.flit); an existing file is
// never overwritten (the next free index is taken), so a restarted server
// loses no earlier recording.
//
// Record, ClosePeer and Close belong to one goroutine (the server's tick).
// Record only appends to an in-memory chunk; file creation, writes and
// closes happen on the Recorder's own writer goroutine, so a slow disk
// never stalls the caller. Close flushes everything and stops the writer.
type Recorder struct {
	dir      string
	tickRate uint32
	maxBytes int64
	peers    map[uint32]*peerChunk
	ops      chan op
	done     chan struct{}
	closed   bool
	records  int64

	// Written by the writer goroutine (lost also by Record's caller, when
	// the writer's backlog is full).
	files, errs   atomic.Int64
	written, lost atomic.Int64
	mu            sync.Mutex
	lastErr       string
}

// RecorderStats are a Recorder's running totals. After Close, Records =
// Written + Lost: every accepted record was either written to a file or
// lost (and counted in Errors).
type RecorderStats struct {
	Records int64 // records accepted (written, queued, or lost)
	Written int64 // records the writer put in a file
	Lost    int64 // records never written: their chunk was dropped, or its file could not be created or written
	Files   int64 // files created
	Errors  int64 // failed creates, writes and closes, and chunks dropped
	// LastError is the most recent failure, "" when none.
	LastError string
}

// peerChunk is the caller's side of one peer: the chunk being filled and
// the size of the file it goes to.
type peerChunk struct {
	buf  []byte
	recs int64 // records in buf
	size int64 // bytes of the current file, header included; 0: no file open
}

type opKind uint8

const (
	opOpen  opKind = iota // create the peer's next free file
	opWrite               // append data to the peer's open file
	opClose               // close the peer's open file
)

type op struct {
	kind opKind
	peer uint32
	data []byte
	recs int64 // records in data (opWrite)
}

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, chunkBytes); return &b }}

// NewRecorder records into dir (created if missing), stamping tickRate in
// every header, and starts its writer goroutine. maxFileBytes ≤ 0 means
// DefaultMaxFileBytes; otherwise it must hold the header and one record.
func NewRecorder(dir string, tickRate uint32, maxFileBytes int64) (*Recorder, error) {
	if maxFileBytes <= 0 {
		maxFileBytes = DefaultMaxFileBytes
	}
	if maxFileBytes < HeaderSize+RecordSize {
		return nil, fmt.Errorf("trace recorder: file cap %d bytes cannot hold the header and one record (%d)", maxFileBytes, HeaderSize+RecordSize)
	}
	if tickRate == 0 {
		return nil, errors.New("trace recorder: tick rate must be > 0")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("trace recorder: %w", err)
	}
	r := &Recorder{dir: dir, tickRate: tickRate, maxBytes: maxFileBytes,
		peers: map[uint32]*peerChunk{}, ops: make(chan op, queueChunks), done: make(chan struct{})}
	go r.write()
	return r, nil
}

// Dir is the directory recorded into.
func (r *Recorder) Dir() string { return r.dir }

// Stats returns the running totals.
func (r *Recorder) Stats() RecorderStats {
	r.mu.Lock()
	last := r.lastErr
	r.mu.Unlock()
	return RecorderStats{Records: r.records, Written: r.written.Load(), Lost: r.lost.Load(), Files: r.files.Load(), Errors: r.errs.Load(), LastError: last}
}

// Record appends rec to peer's recording, opening or rolling its file as
// needed. It does no I/O.
func (r *Recorder) Record(peer uint32, rec *Record) error {
	if r.closed {
		return errors.New("trace recorder: closed")
	}
	pc := r.peers[peer]
	if pc == nil {
		pc = &peerChunk{}
		r.peers[peer] = pc
	}
	if pc.size > 0 && pc.size+RecordSize > r.maxBytes {
		r.closeFile(peer, pc)
	}
	if pc.size == 0 {
		r.send(op{kind: opOpen, peer: peer})
		pc.buf = AppendHeader(r.chunk(pc), r.tickRate)
		pc.size = HeaderSize
	}
	if len(pc.buf)+RecordSize > chunkBytes {
		r.flush(peer, pc)
	}
	pc.buf = AppendRecord(r.chunk(pc), rec)
	pc.recs++
	pc.size += RecordSize
	r.records++
	return nil
}

// chunk returns pc's chunk, taking a fresh one when it has none.
func (r *Recorder) chunk(pc *peerChunk) []byte {
	if pc.buf == nil {
		pc.buf = (*chunkPool.Get().(*[]byte))[:0]
	}
	return pc.buf
}

// flush hands the peer's chunk to the writer.
func (r *Recorder) flush(peer uint32, pc *peerChunk) {
	if len(pc.buf) > 0 {
		r.send(op{kind: opWrite, peer: peer, data: pc.buf, recs: pc.recs})
		pc.buf, pc.recs = nil, 0
	}
}

func (r *Recorder) closeFile(peer uint32, pc *peerChunk) {
	r.flush(peer, pc)
	r.send(op{kind: opClose, peer: peer})
	pc.size = 0
}

// send queues o for the writer without ever blocking: with the queue full
// (a disk far slower than the recording) a write is dropped and counted.
// Opens and closes wait, so file boundaries stay right; they are rare.
func (r *Recorder) send(o op) {
	if o.kind != opWrite {
		r.ops <- o
		return
	}
	select {
	case r.ops <- o:
	default:
		r.lost.Add(o.recs)
		r.fail(fmt.Errorf("trace recorder: writer backlog full (%d chunks): %d byte(s) of peer %d dropped", queueChunks, len(o.data), o.peer))
	}
}

// ClosePeer flushes and closes peer's file (the peer left). A later Record
// for the same id (transports reuse ids) starts that id's next file.
func (r *Recorder) ClosePeer(peer uint32) error {
	if pc := r.peers[peer]; pc != nil && pc.size > 0 && !r.closed {
		r.closeFile(peer, pc)
	}
	return nil
}

// Close flushes and closes every file, stops the writer and waits for it,
// then returns the last failure, if any.
func (r *Recorder) Close() error {
	if r.closed {
		return nil
	}
	for id := range r.peers {
		r.ClosePeer(id)
	}
	r.closed = true
	close(r.ops)
	<-r.done
	if st := r.Stats(); st.Errors > 0 {
		return fmt.Errorf("trace recorder: %d error(s), the last: %s", st.Errors, st.LastError)
	}
	return nil
}

func (r *Recorder) fail(err error) {
	r.errs.Add(1)
	r.mu.Lock()
	r.lastErr = err.Error()
	r.mu.Unlock()
}

// write is the writer goroutine: it owns the files and ends when Close
// closes the queue.
func (r *Recorder) write() {
	defer close(r.done)
	files := map[uint32]*os.File{}
	next := map[uint32]int{}
	for o := range r.ops {
		switch o.kind {
		case opOpen:
			f, n, err := r.create(o.peer, next[o.peer])
			next[o.peer] = n + 1
			if err != nil {
				r.fail(err)
				continue
			}
			files[o.peer] = f
			r.files.Add(1)
		case opWrite:
			f := files[o.peer]
			switch {
			case f == nil: // its create failed (counted then), or an earlier write
				r.lost.Add(o.recs)
			default:
				if _, err := f.Write(o.data); err != nil {
					r.lost.Add(o.recs) // a short write may have put part of it: a truncated last record, which readers skip
					r.fail(fmt.Errorf("trace %s: %w", f.Name(), err))
					f.Close()
					delete(files, o.peer)
				} else {
					r.written.Add(o.recs)
				}
			}
			b := o.data[:0]
			chunkPool.Put(&b)
		case opClose:
			if f := files[o.peer]; f != nil {
				if err := f.Close(); err != nil {
					r.fail(fmt.Errorf("trace %s: %w", f.Name(), err))
				}
				delete(files, o.peer)
			}
		}
	}
	for _, f := range files { // only after a failed close sequence
		f.Close()
	}
}

// create makes the peer's first free file at index from or later.
func (r *Recorder) create(peer uint32, from int) (*os.File, int, error) {
	for n := from; n < maxFileIndex; n++ {
		f, err := os.OpenFile(filepath.Join(r.dir, FileName(peer, n)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, n, fmt.Errorf("trace recorder: %w", err)
		}
		return f, n, nil
	}
	return nil, maxFileIndex, fmt.Errorf("trace recorder: no free file name for peer %d in %s", peer, r.dir)
}
