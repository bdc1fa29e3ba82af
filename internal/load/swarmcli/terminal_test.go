package swarmcli

import (
	"bytes"
	"io"
	"os"
	"testing"
)

// TestIsTerminal: only a real tty selects the in-place progress line.
// /dev/null is a character device, so a file-mode check took it for a
// terminal; a pipe and a buffer never are.
func TestIsTerminal(t *testing.T) {
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	// The master side of a pseudo-terminal answers the tty ioctl: it proves
	// isTerminal can say yes, so the cases above are not passing by default.
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal to compare with: %v", err)
	}
	defer ptmx.Close()
	if !isTerminal(ptmx) {
		t.Error("a pseudo-terminal not taken for a terminal")
	}
	for _, c := range []struct {
		name string
		w    io.Writer
	}{
		{"/dev/null", devNull},
		{"pipe", w},
		{"regular file", file},
		{"buffer", &bytes.Buffer{}},
	} {
		if isTerminal(c.w) {
			t.Errorf("%s taken for a terminal", c.name)
		}
	}
}
