// Package boundedfile reads files so that none can hang scalegate or exhaust
// its memory. It serves every file scalegate is handed: traces, configs,
// metrics documents, reports, baselines. A path in a repository or on a
// shared machine may be a symlink to /dev/zero, a named pipe that never
// delivers a byte, or a file of any size; os.ReadFile trusts all of them.
//
// Every read here:
//
//   - refuses anything but a regular file before reading a byte: the path is
//     stat'ed (a FIFO or device is refused without being opened, since
//     opening some devices has effects), opened with O_NONBLOCK (so a path
//     swapped for a FIFO in between cannot block the open), and the opened
//     descriptor is fstat'ed again;
//   - caps the bytes actually read, not the size stat reports (procfs and
//     sysfs files report 0 and can yield more): a file over the cap is an
//     error naming the cap, and at most cap+1 bytes are ever held;
//   - honours a context: the read runs in chunks on its own goroutine, so
//     a read that blocks (a hung network filesystem) is abandoned when the
//     context ends and the caller returns at once; the goroutine stops after
//     the chunk in flight.
//
// Budget caps the total of several files (a directory of traces).
package boundedfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// chunk is how much one read call asks for; the context is checked between
// chunks.
const chunk = 1 << 20

// NotRegularError is a path that is not a regular file: a directory, a
// named pipe, a device or a socket. Reading one could block forever or
// never end, so it is refused.
type NotRegularError struct {
	Path string
	Kind string // "directory", "named pipe (FIFO)", "character device", ...
}

// Error names the path and what it is.
func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: refused (reading it could block forever or never end)", e.Path, e.Kind)
}

// TooLargeError is a file over its byte cap.
type TooLargeError struct {
	Path string
	Cap  int64
	// What names the cap when it is not the file's own ("the files of
	// traces/ together"); "" for a per-file cap.
	What string
}

// Error names the path and the cap.
func (e *TooLargeError) Error() string {
	if e.What != "" {
		return fmt.Sprintf("%s: %s exceed the %d-byte cap (%s): refused", e.Path, e.What, e.Cap, human(e.Cap))
	}
	return fmt.Sprintf("%s: over the %d-byte cap (%s): refused", e.Path, e.Cap, human(e.Cap))
}

// human renders a byte count in binary units for error messages.
func human(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// kindOf names a file mode's type for NotRegularError ("" when regular).
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "irregular file"
}

// Open opens path for reading if it is a regular file, without ever
// blocking: it is stat'ed first (following symlinks), opened with
// O_NONBLOCK, and the opened descriptor is checked again. Errors name the
// path.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		// Reported as the open it stands for, as os.Open would: "open PATH:
		// no such file or directory".
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Op = "open"
		}
		return nil, err
	}
	if k := kindOf(st.Mode()); k != "" {
		return nil, &NotRegularError{Path: path, Kind: k}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOpened fstats an opened file: the path may have been replaced
// between the stat and the open.
func checkOpened(f fs.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if k := kindOf(st.Mode()); k != "" {
		return &NotRegularError{Path: path, Kind: k}
	}
	return nil
}

// ReadFile reads the regular file at path whole, refusing it when it holds
// more than limit bytes (read, not stat'ed). It returns ctx's error as soon
// as ctx ends, even while a read is blocked.
func ReadFile(ctx context.Context, path string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	return readOwned(ctx, f, path, limit)
}

// ReadFS is ReadFile for a file of fsys (a profile directory, or files
// embedded in the binary). An fs.FS cannot open with O_NONBLOCK, so the
// name is stat'ed before the open and the opened file after it; only a
// name swapped for a FIFO between the two could still block the open.
func ReadFS(ctx context.Context, fsys fs.FS, name string, limit int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if k := kindOf(st.Mode()); k != "" {
		return nil, &NotRegularError{Path: name, Kind: k}
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(f, name); err != nil {
		f.Close()
		return nil, err
	}
	return readOwned(ctx, f, name, limit)
}

// sizer is a file that can say its size (every fs.File can).
type sizer interface{ Stat() (fs.FileInfo, error) }

// readOwned reads f (which it closes) under ctx on its own goroutine.
func readOwned(ctx context.Context, f fs.File, path string, limit int64) ([]byte, error) {
	hint := int64(-1)
	if st, err := f.(sizer).Stat(); err == nil {
		hint = st.Size()
	}
	// A regular file whose size already says it is over the cap is refused
	// without reading it; one that says less is still capped by what is
	// read (it may grow, or be a procfs file that reports 0).
	if hint > limit {
		f.Close()
		return nil, &TooLargeError{Path: path, Cap: limit}
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned reader never blocks
	go func() {
		defer f.Close()
		b, err := readCapped(ctx, f, hint, limit)
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		if errors.Is(r.err, errOverCap) {
			return nil, &TooLargeError{Path: path, Cap: limit}
		}
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", path, r.err)
		}
		return r.b, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", path, ctx.Err())
	}
}

// errOverCap: more than limit bytes were read.
var errOverCap = errors.New("over the cap")

// readCapped reads r to EOF in chunks, checking ctx between them, and
// fails with errOverCap once it has read limit+1 bytes. hint (the size stat
// reported, -1 when unknown) sizes the buffer; it is never trusted as the
// bound.
func readCapped(ctx context.Context, r io.Reader, hint, limit int64) ([]byte, error) {
	limit = max(limit, 0)
	initial := min(limit+1, 64<<10)
	if hint >= 0 {
		initial = min(hint+1, limit+1)
	}
	buf := make([]byte, 0, initial)
	lr := &io.LimitedReader{R: r, N: limit + 1}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(buf) == cap(buf) {
			// Grow by doubling, never past limit+1.
			nc := min(max(2*int64(cap(buf)), 512), limit+1)
			nb := make([]byte, len(buf), nc)
			copy(nb, buf)
			buf = nb
		}
		want := min(cap(buf)-len(buf), chunk)
		n, err := lr.Read(buf[len(buf) : len(buf)+want])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, errOverCap
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Budget caps the total bytes read through it: the files of one directory
// (or of one run) together, on top of each file's own cap. It is not safe
// for concurrent use.
type Budget struct {
	what string
	cap  int64
	used int64
}

// NewBudget is a budget of cap bytes; what names the set in errors ("the
// .flit files of traces/").
func NewBudget(what string, cap int64) *Budget { return &Budget{what: what, cap: cap} }

// Used is the bytes read through b so far.
func (b *Budget) Used() int64 { return b.used }

// ReadFile reads path like the package's ReadFile, capped at perFile and at
// what is left of the budget, and charges what it read. An error naming
// the budget's cap means the set, not the file alone, is too large.
func (b *Budget) ReadFile(ctx context.Context, path string, perFile int64) ([]byte, error) {
	return b.read(path, perFile, func(limit int64) ([]byte, error) { return ReadFile(ctx, path, limit) })
}

// ReadFS is Budget.ReadFile for a file of fsys.
func (b *Budget) ReadFS(ctx context.Context, fsys fs.FS, name string, perFile int64) ([]byte, error) {
	return b.read(name, perFile, func(limit int64) ([]byte, error) { return ReadFS(ctx, fsys, name, limit) })
}

func (b *Budget) read(path string, perFile int64, read func(limit int64) ([]byte, error)) ([]byte, error) {
	limit := min(perFile, b.cap-b.used)
	data, err := read(limit)
	var tl *TooLargeError
	if errors.As(err, &tl) && limit < perFile {
		return nil, &TooLargeError{Path: path, Cap: b.cap, What: b.what + " together"}
	}
	if err != nil {
		return nil, err
	}
	b.used += int64(len(data))
	return data, nil
}
