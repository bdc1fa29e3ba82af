// Package boundedfiletest is the acceptance check every scalegate file
// reader runs in its tests. A symlink to /dev/zero, a FIFO nobody
// writes and a 300 MB file, each given where the reader expects its file,
// must be refused with a clear error within 2 s and with less than 64 MB
// of memory growth. Without the protection the first grows memory without
// bound, the second blocks forever, the third is read whole.
package boundedfiletest

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Budgets of the acceptance test.
const (
	// Within is how long a refusal may take.
	Within = 2 * time.Second
	// MaxGrowthKB bounds the reader's memory growth (VmHWM, the peak
	// resident set, so a read that grew and was freed still counts).
	MaxGrowthKB = 64 << 10
	// BigBytes is the size of the large file (sparse: no disk is used).
	BigBytes = 300_000_000
)

// Case is one hostile file.
type Case struct {
	Name string
	Path string
	// Want is a fragment the error must hold (besides the path).
	Want string
}

// Files makes the three hostile files in dir, named base + a suffix
// (".zero", ".fifo", ".big") so a reader that wants an extension (.flit)
// still sees it at the end of base.
func Files(t testing.TB, dir, base string) []Case {
	t.Helper()
	zero := filepath.Join(dir, "zero-"+base)
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo-"+base)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big-"+base)
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(BigBytes); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return []Case{
		{"dev zero symlink", zero, "is a character device, not a regular file"},
		{"fifo", fifo, "is a named pipe (FIFO), not a regular file"},
		{"300 MB file", big, "-byte cap"},
	}
}

// Refuses runs read on each hostile file and fails the test unless it
// returns an error naming the file and saying why within Within, with the
// process's peak RSS grown by less than MaxGrowthKB. read runs on its own
// goroutine: a read that blocks is reported, not waited for.
func Refuses(t *testing.T, cases []Case, read func(path string) error) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			runtime.GC()
			debug.FreeOSMemory()
			resetPeak(t)
			before := statusKB(t, "VmHWM")
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- read(c.Path) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(Within):
				t.Fatalf("%s: still reading after %v (blocked or reading it whole)", c.Path, Within)
			}
			took := time.Since(start)
			growth := statusKB(t, "VmHWM") - before
			t.Logf("%s: %v after %v, peak RSS +%d KB", c.Name, err, took.Round(time.Millisecond), growth)
			if err == nil {
				t.Fatalf("%s accepted", c.Path)
			}
			if !strings.Contains(err.Error(), c.Path) || !strings.Contains(err.Error(), c.Want) {
				t.Errorf("error %q does not name %s and say %q", err, c.Path, c.Want)
			}
			if growth >= MaxGrowthKB {
				t.Errorf("peak RSS grew %d KB reading %s: want < %d KB", growth, c.Path, MaxGrowthKB)
			}
		})
	}
}

// resetPeak resets VmHWM to the current RSS (writing 5 to clear_refs), so
// each case measures its own peak.
func resetPeak(t *testing.T) {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak RSS: %v", err)
	}
}

// statusKB reads one "Name:  N kB" line of /proc/self/status.
func statusKB(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", name)
	return 0
}
