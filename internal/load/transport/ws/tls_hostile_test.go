package ws

import (
	"testing"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
)

// TestCAFileRefusesHostileFiles: a CA file that is a symlink to /dev/zero,
// a FIFO or a huge file is refused at once, naming it (it was read with
// os.ReadFile, and a FIFO hung the swarm past SIGINT).
func TestCAFileRefusesHostileFiles(t *testing.T) {
	boundedfiletest.Refuses(t, boundedfiletest.Files(t, t.TempDir(), "ca.pem"), func(p string) error {
		_, err := clientTLS(p)
		return err
	})
}
