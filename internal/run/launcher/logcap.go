package launcher

import (
	"bytes"
	"fmt"
	"os"
	"sync"
)

// DefaultLogMaxBytes caps a process's log when the spec names no cap:
// enough for a chatty server's whole leg at normal verbosity, far below
// what fills a CI runner's disk.
const DefaultLogMaxBytes = 64 << 20

// minLogMaxBytes is the smallest cap a spec may ask for: room for a
// startup banner and the truncation marker.
const minLogMaxBytes = 64 << 10

// maxTailBytes bounds the tail kept in memory for the end of a capped
// log: a crash's last words are at the end.
const maxTailBytes = 4 << 20

// LogStats is what a process wrote to its log: every byte and line it
// produced, how much of that the file keeps, and whether the cap cut it.
type LogStats struct {
	// Bytes and Lines are what the process wrote (newlines counted).
	Bytes int64 `json:"bytes"`
	Lines int64 `json:"lines"`
	// KeptBytes is what the file holds of it (the marker not counted);
	// CapBytes the cap it ran under.
	KeptBytes int64 `json:"kept_bytes"`
	CapBytes  int64 `json:"cap_bytes"`
	Truncated bool  `json:"truncated"`
}

// cappedLog is a process's stdout and stderr on their way to its log
// file, bounded: the first CapBytes − tail bytes go to the file as they
// come, the last tail bytes are kept in a ring, and everything between is
// counted and dropped. Close writes a marker saying what was left out,
// then the tail. The writer never blocks the process on the disk beyond
// its own writes, and never errs back at it: a log that cannot be written
// must not kill or stall the server being measured.
type cappedLog struct {
	mu       sync.Mutex
	f        *os.File
	headLeft int64
	tail     []byte // ring of the newest bytes once the head is full
	tailAt   int
	tailFull bool
	stats    LogStats
	writeErr error
}

func newCappedLog(f *os.File, capBytes int64) *cappedLog {
	if capBytes <= 0 {
		capBytes = DefaultLogMaxBytes
	}
	capBytes = max(capBytes, minLogMaxBytes)
	tail := min(capBytes/4, maxTailBytes)
	return &cappedLog{f: f, headLeft: capBytes - tail, tail: make([]byte, 0, tail),
		stats: LogStats{CapBytes: capBytes}}
}

// Write takes the process's output. It always reports the whole of p
// written.
func (l *cappedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Bytes += int64(len(p))
	l.stats.Lines += int64(bytes.Count(p, []byte{'\n'}))
	rest := p
	if l.headLeft > 0 {
		n := min(int64(len(rest)), l.headLeft)
		l.write(rest[:n])
		l.headLeft -= n
		l.stats.KeptBytes += n
		rest = rest[n:]
	}
	if len(rest) > 0 {
		l.stats.Truncated = true
		l.keepTail(rest)
	}
	return len(p), nil
}

func (l *cappedLog) write(p []byte) {
	if l.writeErr != nil {
		return
	}
	if _, err := l.f.Write(p); err != nil {
		l.writeErr = err
	}
}

// keepTail puts p in the ring, keeping only its newest cap(tail) bytes.
func (l *cappedLog) keepTail(p []byte) {
	c := cap(l.tail)
	if c == 0 {
		return
	}
	if len(p) >= c {
		l.tail = append(l.tail[:0], p[len(p)-c:]...)
		l.tailAt, l.tailFull = 0, true
		return
	}
	if !l.tailFull {
		room := c - len(l.tail)
		if len(p) <= room {
			l.tail = append(l.tail, p...)
			l.tailFull = len(l.tail) == c
			return
		}
		l.tail = append(l.tail, p[:room]...)
		p = p[room:]
		l.tailFull = true
	}
	for len(p) > 0 {
		n := copy(l.tail[l.tailAt:], p)
		p = p[n:]
		l.tailAt = (l.tailAt + n) % c
	}
}

// tailBytes is the ring in order, from its first whole line when it lost
// the start of one.
func (l *cappedLog) tailBytes() []byte {
	var t []byte
	if l.tailFull {
		t = append(append(t, l.tail[l.tailAt:]...), l.tail[:l.tailAt]...)
	} else {
		t = append(t, l.tail...)
	}
	if i := bytes.IndexByte(t, '\n'); i >= 0 && i+1 < len(t) && l.stats.Bytes-l.stats.KeptBytes > int64(len(t)) {
		t = t[i+1:]
	}
	return t
}

// Close writes the truncation marker and the tail (when the cap cut the
// log) and closes the file; it returns what was written.
func (l *cappedLog) Close() LogStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stats.Truncated {
		t := l.tailBytes()
		dropped := l.stats.Bytes - l.stats.KeptBytes - int64(len(t))
		l.write(fmt.Appendf(nil, "\n--- scalegate: %d bytes of this process's output left out here (it wrote %d bytes, %d lines; the log keeps the first %d and the last %d bytes: cap %d bytes, the profile's server.log_max_mb) ---\n",
			dropped, l.stats.Bytes, l.stats.Lines, l.stats.KeptBytes, len(t), l.stats.CapBytes))
		l.write(t)
		l.stats.KeptBytes += int64(len(t))
	}
	_ = l.f.Close()
	return l.stats
}
