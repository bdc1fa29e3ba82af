package launcher

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func writeLines(t *testing.T, l *cappedLog, from, to int, chunk int) {
	t.Helper()
	var all bytes.Buffer
	for i := from; i < to; i++ {
		fmt.Fprintf(&all, "line %06d of a chatty server\n", i)
	}
	b := all.Bytes()
	for len(b) > 0 {
		n := min(chunk, len(b))
		if w, err := l.Write(b[:n]); err != nil || w != n {
			t.Fatalf("write %d: %d, %v", n, w, err)
		}
		b = b[n:]
	}
}

// TestCappedLogKeepsHeadAndTail: past its cap the log keeps its first
// lines and its last, says between them exactly how much it left out, and
// counts everything the process wrote.
func TestCappedLogKeepsHeadAndTail(t *testing.T) {
	for _, chunk := range []int{1, 7, 4096, 1 << 20} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "server.log")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			l := newCappedLog(f, minLogMaxBytes) // 64 KiB: 48 KiB head, 16 KiB tail
			writeLines(t, l, 0, 20000, chunk)    // 20,000 lines of 31 bytes: 620 kB
			st := l.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if st.Bytes != 620000 || st.Lines != 20000 || !st.Truncated || st.CapBytes != minLogMaxBytes {
				t.Fatalf("stats %+v", st)
			}
			if st.KeptBytes > minLogMaxBytes {
				t.Errorf("kept %d bytes, over the cap %d", st.KeptBytes, minLogMaxBytes)
			}
			if !strings.HasPrefix(s, "line 000000 of") || !strings.HasSuffix(s, "line 019999 of a chatty server\n") {
				t.Errorf("head %q… tail …%q", s[:40], s[len(s)-40:])
			}
			m := regexp.MustCompile(`\n--- scalegate: (\d+) bytes of this process's output left out here \(it wrote 620000 bytes, 20000 lines`).FindStringSubmatch(s)
			if m == nil {
				t.Fatalf("no marker in the log")
			}
			var dropped int64
			fmt.Sscan(m[1], &dropped)
			if dropped+st.KeptBytes != st.Bytes {
				t.Errorf("left out %d + kept %d ≠ written %d", dropped, st.KeptBytes, st.Bytes)
			}
			// The tail starts at a whole line.
			after := s[strings.Index(s, " ---\n")+5:]
			if !strings.HasPrefix(after, "line ") {
				t.Errorf("the tail starts mid-line: %q", after[:30])
			}
		})
	}
}

// TestCappedLogUnderTheCap: a log within its cap is the output as written,
// with no marker.
func TestCappedLogUnderTheCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	l := newCappedLog(f, 0) // the default cap
	writeLines(t, l, 0, 100, 64)
	st := l.Close()
	b, _ := os.ReadFile(path)
	if st.Truncated || st.KeptBytes != 3100 || int64(len(b)) != 3100 || bytes.Contains(b, []byte("--- scalegate")) {
		t.Errorf("stats %+v, file %d bytes", st, len(b))
	}
	if st.CapBytes != DefaultLogMaxBytes {
		t.Errorf("cap %d, want the default %d", st.CapBytes, DefaultLogMaxBytes)
	}
}

// TestCappedLogNeverErrsAtTheProcess: a log whose file cannot be written
// still takes the output (the server must not stall or die of it) and
// still counts it.
func TestCappedLogNeverErrsAtTheProcess(t *testing.T) {
	f, err := os.Open(os.DevNull) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	l := newCappedLog(f, minLogMaxBytes)
	writeLines(t, l, 0, 10, 5)
	if st := l.Close(); st.Bytes != 310 || st.Lines != 10 {
		t.Errorf("stats %+v", st)
	}
}

func BenchmarkCappedLogFlood(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "server.log"))
	if err != nil {
		b.Fatal(err)
	}
	l := newCappedLog(f, minLogMaxBytes)
	block := bytes.Repeat([]byte("a chatty server's debug line ........................\n"), 600)
	b.SetBytes(int64(len(block)))
	for range b.N {
		_, _ = l.Write(block)
	}
	l.Close()
}
