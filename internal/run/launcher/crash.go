package launcher

import (
	"bufio"
	"bytes"
	"io"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// crashScanBytes is how much of a log's end CrashLine reads: a Go panic's
// first line is followed by a goroutine dump that can run to tens of KiB
// with many goroutines, and a crash's first words are what says why.
const crashScanBytes = 256 << 10

// maxCrashLine bounds the line CrashLine returns: it goes into a one-line
// reason in the summary.
const maxCrashLine = 240

// crashPrefixes start the line a Go runtime writes when a program dies of
// a panic or a fatal error (a cgo pointer check, a concurrent map write,
// out of memory).
var crashPrefixes = [][]byte{[]byte("panic: "), []byte("fatal error: ")}

// CrashLine is the first line of a Go panic or fatal error in the last
// part of the process's log, once Done; "" when it has none. A Go program
// that panics exits 2, the code a usage error has too, so the exit code
// alone cannot say which happened: the log can.
func (p *Process) CrashLine() string {
	<-p.done
	// The log path comes from the profile's run directory: opened as a
	// regular file only, and at most its last crashScanBytes read.
	f, err := boundedfile.Open(p.spec.LogPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > crashScanBytes {
		if _, err := f.Seek(-crashScanBytes, io.SeekEnd); err != nil {
			return ""
		}
	}
	return crashLine(io.LimitReader(f, crashScanBytes))
}

// crashLine scans r for the first line starting with a crash prefix.
func crashLine(r io.Reader) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), crashScanBytes)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		for _, pre := range crashPrefixes {
			if bytes.HasPrefix(line, pre) {
				if len(line) > maxCrashLine {
					line = append(line[:maxCrashLine:maxCrashLine], "…"...)
				}
				return string(line)
			}
		}
	}
	return ""
}
