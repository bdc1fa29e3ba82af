package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultMaxFileBytes is the default per-file cap of a Recorder: 64 MiB,
// about 2.4 million records (11 hours of one peer at 60 Inputs a second).
const DefaultMaxFileBytes = 64 << 20

// recorderBuffer is each peer file's write buffer. 16 KiB holds ~10 s of one
// 60 Hz peer, so the tick loop makes a write system call per peer about
// every ten seconds, not per Input.
const recorderBuffer = 16 << 10

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
// loses no earlier recording. Writes are buffered; ClosePeer and Close
// flush. A Recorder is owned by one goroutine.
type Recorder struct {
	dir      string
	tickRate uint32
	maxBytes int64
	files    map[uint32]*peerFile
	scratch  []byte
	stats    RecorderStats
}

// RecorderStats are a Recorder's running totals.
type RecorderStats struct {
	Records int64 // records written (buffered counts)
	Files   int64 // files opened
	Errors  int64 // failed opens, writes and flushes
	// LastError is the most recent failure, "" when none.
	LastError string
}

type peerFile struct {
	f    *os.File
	w    *bufio.Writer
	next int   // the index the next file of this peer tries first
	size int64 // bytes written to f, header included
	dead bool  // a write failed: this peer is no longer recorded
}

// NewRecorder records into dir (created if missing), stamping tickRate in
// every header. maxFileBytes ≤ 0 means DefaultMaxFileBytes; otherwise it
// must hold the header and at least one record.
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
	return &Recorder{dir: dir, tickRate: tickRate, maxBytes: maxFileBytes,
		files: map[uint32]*peerFile{}, scratch: make([]byte, 0, RecordSize)}, nil
}

// Dir is the directory recorded into.
func (r *Recorder) Dir() string { return r.dir }

// Stats returns the running totals.
func (r *Recorder) Stats() RecorderStats { return r.stats }

// Record appends rec to peer's current file, opening or rolling it as
// needed. After a failure the peer is no longer recorded (the error is
// returned once, counted, and kept in Stats) so a full disk costs one
// failed write, not one per Input.
func (r *Recorder) Record(peer uint32, rec *Record) error {
	pf := r.files[peer]
	if pf == nil {
		pf = &peerFile{}
		r.files[peer] = pf
	}
	if pf.dead {
		return nil
	}
	if pf.f != nil && pf.size+RecordSize > r.maxBytes {
		if err := r.closeFile(pf); err != nil {
			return r.fail(pf, err)
		}
	}
	if pf.f == nil {
		if err := r.open(peer, pf); err != nil {
			return r.fail(pf, err)
		}
	}
	r.scratch = AppendRecord(r.scratch[:0], rec)
	if _, err := pf.w.Write(r.scratch); err != nil {
		return r.fail(pf, fmt.Errorf("trace %s: %w", pf.f.Name(), err))
	}
	pf.size += RecordSize
	r.stats.Records++
	return nil
}

// open creates the peer's next free file and writes its header.
func (r *Recorder) open(peer uint32, pf *peerFile) error {
	for n := pf.next; n < maxFileIndex; n++ {
		path := filepath.Join(r.dir, FileName(peer, n))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("trace recorder: %w", err)
		}
		pf.f, pf.next, pf.size = f, n+1, HeaderSize
		if pf.w == nil {
			pf.w = bufio.NewWriterSize(f, recorderBuffer)
		} else {
			pf.w.Reset(f)
		}
		r.stats.Files++
		_, err = pf.w.Write(AppendHeader(r.scratch[:0], r.tickRate))
		return err
	}
	return fmt.Errorf("trace recorder: no free file name for peer %d in %s", peer, r.dir)
}

// closeFile flushes and closes the peer's current file.
func (r *Recorder) closeFile(pf *peerFile) error {
	if pf.f == nil {
		return nil
	}
	ferr := pf.w.Flush()
	cerr := pf.f.Close()
	name := pf.f.Name()
	pf.f = nil
	if err := errors.Join(ferr, cerr); err != nil {
		return fmt.Errorf("trace %s: %w", name, err)
	}
	return nil
}

func (r *Recorder) fail(pf *peerFile, err error) error {
	pf.dead = true
	if pf.f != nil {
		pf.f.Close()
		pf.f = nil
	}
	r.stats.Errors++
	r.stats.LastError = err.Error()
	return err
}

// ClosePeer flushes and closes peer's file (the peer left). A later Record
// for the same id (transports reuse ids) starts that id's next file.
func (r *Recorder) ClosePeer(peer uint32) error {
	pf := r.files[peer]
	if pf == nil {
		return nil
	}
	err := r.closeFile(pf)
	if err != nil {
		r.stats.Errors++
		r.stats.LastError = err.Error()
	}
	pf.dead = false
	return err
}

// Close flushes and closes every file, returning every failure.
func (r *Recorder) Close() error {
	var errs []error
	for id := range r.files {
		if err := r.ClosePeer(id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
