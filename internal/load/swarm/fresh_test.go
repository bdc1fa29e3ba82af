package swarm

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestFreshMetrics: the final capture waits for the server's next write
// (a larger ticks_total), so Inputs that arrived after the file's last
// write are counted; a server that writes nothing newer is read as it
// stood, after the bounded wait.
func TestFreshMetrics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	write := func(ticks, accepted int) {
		t.Helper()
		doc := []byte(`{"ticks_total": ` + strconv.Itoa(ticks) + `, "inputs_accepted": ` + strconv.Itoa(accepted) + `}`)
		if err := report.WriteFileAtomic(path, doc); err != nil {
			t.Error(err)
		}
	}
	write(100, 90)
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(100 * time.Millisecond) // the server's next write, a moment later
		write(115, 100)
	}()
	b, err := freshMetrics(path, 30*time.Second)
	<-done
	if err != nil || ticksTotal(b) != 115 {
		t.Fatalf("got %s (%v), want the write with ticks_total 115", b, err)
	}
	start := time.Now()
	b, err = freshMetrics(path, 200*time.Millisecond)
	if err != nil || ticksTotal(b) != 115 || time.Since(start) > 10*time.Second {
		t.Fatalf("no newer write: got %s (%v) after %s", b, err, time.Since(start))
	}
	if err := os.WriteFile(path, []byte(`{"inputs_accepted": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := freshMetrics(path, time.Hour); err != nil || ticksTotal(b) != -1 {
		t.Fatalf("a document without ticks_total is read at once: %s (%v)", b, err)
	}
}
