package boundedfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// wait bounds how long a refusal may take on a loaded machine: every case
// here must answer without blocking, so anything near it is a hang.
const wait = 10 * time.Second

// call runs fn and fails the test if it does not return within wait (a
// FIFO open or read that blocks would otherwise hang the test binary).
func call[T any](t *testing.T, fn func() (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := fn(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(wait):
		t.Fatalf("still blocked after %v", wait)
		panic("unreachable")
	}
}

func TestReadFileRefusesAnythingButARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.flit")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct{ name, path, kind string }{
		{"fifo", fifo, "named pipe (FIFO)"},
		{"dev zero symlink", zero, "character device"},
		{"dev null", "/dev/null", "character device"},
		{"directory", dir, "directory"},
		{"socket", sock, "socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := call(t, func() ([]byte, error) { return ReadFile(context.Background(), tc.path, 1<<20) })
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != tc.kind || nr.Path != tc.path {
				t.Fatalf("err = %v, want a NotRegularError %q for %s", err, tc.kind, tc.path)
			}
			if !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.kind) {
				t.Errorf("message %q does not name the path and the kind", err)
			}
		})
	}
}

func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{'x'}, n), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		size    int
		limit   int64
		tooLong bool
	}{
		{"empty", 0, 10, false},
		{"under", 9, 10, false},
		{"at the cap", 10, 10, false},
		{"one over", 11, 10, true},
		{"big", 3 << 20, 1 << 20, true},
		{"zero cap", 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(tc.name, tc.size)
			b, err := ReadFile(context.Background(), p, tc.limit)
			if tc.tooLong {
				var tl *TooLargeError
				if !errors.As(err, &tl) || tl.Cap != tc.limit || !strings.Contains(err.Error(), p) {
					t.Fatalf("err = %v, want a TooLargeError naming %s and cap %d", err, p, tc.limit)
				}
				return
			}
			if err != nil || len(b) != tc.size {
				t.Fatalf("read %d bytes, err %v; want %d", len(b), err, tc.size)
			}
		})
	}
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

// endless yields bytes forever and says nothing about its size, like a
// procfs file that stat reports as empty.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	clear(p)
	e.n += int64(len(p))
	return len(p), nil
}

func TestReadCappedCountsBytesRead(t *testing.T) {
	// stat said 0 bytes: the cap still holds, after reading just past it.
	src := &endless{}
	_, err := readCapped(context.Background(), src, 0, 5<<20)
	if !errors.Is(err, errOverCap) {
		t.Fatalf("err = %v, want errOverCap", err)
	}
	if src.n > 5<<20+chunk {
		t.Errorf("read %d bytes for a %d-byte cap: the cap is not enforced on bytes read", src.n, 5<<20)
	}
}

// blocking never returns from Read until release is closed.
type blocking struct{ release chan struct{} }

func (b blocking) Read([]byte) (int, error) {
	<-b.release
	return 0, io.EOF
}
func (blocking) Close() error { return nil }
func (blocking) Stat() (os.FileInfo, error) {
	return nil, errors.New("no stat")
}

func TestBlockedReadAbandonedWithTheContext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := call(t, func() ([]byte, error) { return readOwned(ctx, blocking{release}, "hung", 1<<20) })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "hung") {
		t.Fatalf("err = %v, want context.Canceled naming the file", err)
	}
}

func TestReadFileCancelled(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("x"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFile(ctx, p, 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestBudget(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, n := range []string{"a", "b", "c"} {
		p := filepath.Join(dir, n)
		os.WriteFile(p, bytes.Repeat([]byte{'x'}, 40), 0o644)
		paths = append(paths, p)
	}
	b := NewBudget("the files of "+dir, 100)
	for _, p := range paths[:2] {
		if _, err := b.ReadFile(context.Background(), p, 64); err != nil {
			t.Fatal(err)
		}
	}
	_, err := b.ReadFile(context.Background(), paths[2], 64)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Cap != 100 || !strings.Contains(err.Error(), "together exceed the 100-byte cap") {
		t.Fatalf("err = %v, want the budget's cap named", err)
	}
	if b.Used() != 80 {
		t.Errorf("used %d, want 80", b.Used())
	}
	// The per-file cap still names the file's own cap.
	b2 := NewBudget("x", 1000)
	_, err = b2.ReadFile(context.Background(), paths[0], 10)
	if !errors.As(err, &tl) || tl.Cap != 10 || tl.What != "" {
		t.Fatalf("err = %v, want the per-file cap", err)
	}
}

func TestReadFS(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.flit"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Symlink("/dev/zero", filepath.Join(dir, "zero.flit"))
	os.WriteFile(filepath.Join(dir, "ok.flit"), []byte("FLIT"), 0o644)
	fsys := os.DirFS(dir)
	for _, name := range []string{"fifo.flit", "zero.flit"} {
		_, err := call(t, func() ([]byte, error) { return ReadFS(context.Background(), fsys, name, 100) })
		var nr *NotRegularError
		if !errors.As(err, &nr) {
			t.Errorf("%s: err = %v, want NotRegularError", name, err)
		}
	}
	if b, err := ReadFS(context.Background(), fsys, "ok.flit", 100); err != nil || string(b) != "FLIT" {
		t.Errorf("ok.flit: %q %v", b, err)
	}
	mfs := fstest.MapFS{"big": {Data: make([]byte, 101)}}
	if _, err := ReadFS(context.Background(), mfs, "big", 100); err == nil {
		t.Error("embedded file over the cap accepted")
	}
}

// chunky returns data in pieces of the sizes given, cycling.
type chunky struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzReadCapped: whatever the data, the read sizes, the size hint and the
// cap, the result is the data exactly when it fits the cap and errOverCap
// otherwise, and never more than cap+1 bytes are held.
func FuzzReadCapped(f *testing.F) {
	f.Add([]byte("hello"), []byte{0, 3}, int64(5), int64(-1))
	f.Add([]byte("hello!"), []byte{7}, int64(5), int64(0))
	f.Add([]byte{}, []byte{}, int64(0), int64(100))
	f.Fuzz(func(t *testing.T, data, sizes []byte, limit, hint int64) {
		limit = limit % (1 << 16)
		if limit < 0 {
			limit = -limit
		}
		if hint < -1 {
			hint = -1
		}
		hint = hint % (1 << 20)
		b, err := readCapped(context.Background(), &chunky{data: data, sizes: sizes}, hint, limit)
		if int64(len(data)) > limit {
			if !errors.Is(err, errOverCap) {
				t.Fatalf("%d bytes, cap %d: err %v, want errOverCap", len(data), limit, err)
			}
			return
		}
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("%d bytes, cap %d: got %d bytes, err %v", len(data), limit, len(b), err)
		}
		if int64(cap(b)) > limit+1 {
			t.Fatalf("buffer of %d bytes for a %d-byte cap", cap(b), limit)
		}
	})
}

func BenchmarkReadFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "f")
	os.WriteFile(p, make([]byte, 4<<20), 0o644)
	b.SetBytes(4 << 20)
	for b.Loop() {
		if _, err := ReadFile(context.Background(), p, 8<<20); err != nil {
			b.Fatal(err)
		}
	}
}
