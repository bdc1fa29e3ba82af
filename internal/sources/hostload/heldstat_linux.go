//go:build linux

package hostload

import (
	"fmt"
	"syscall"
)

// maxHeld bounds the stat files a reader keeps open, so a host of thousands of processes
// cannot take the gate's file descriptors; the processes past it are opened at each snapshot.
const maxHeld = 256

// procFile reads a process's stat file (name, under the proc directory) through the
// descriptor kept from the last snapshot when there is one: a /proc file read again from
// offset 0 is generated afresh, so only the first snapshot opens it. Opening was 41 % of a
// snapshot's CPU (BenchmarkSnapshot), and the gate takes a snapshot every second beside the
// server it measures. A held descriptor that no longer reads (the process is gone, or its PID
// now names another process, which a /proc descriptor does not follow) is closed and the file
// opened again.
func (r *reader) procFile(pid int, name string) ([]byte, error) {
	if h, ok := r.held[pid]; ok {
		if b, err := r.pread(h.fd); err == nil {
			r.held[pid] = heldFile{h.fd, r.gen}
			return b, nil
		}
		syscall.Close(h.fd)
		delete(r.held, pid)
	}
	fd, err := openRead(r.path(name))
	if err != nil {
		return nil, err
	}
	b, err := r.pread(fd)
	if err != nil || len(r.held) >= maxHeld {
		syscall.Close(fd)
		return b, err
	}
	if r.held == nil {
		r.held = map[int]heldFile{}
	}
	r.held[pid] = heldFile{fd, r.gen}
	return b, nil
}

func openRead(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// pread reads the whole file from offset 0 into r.buf; the bytes are valid until the next read.
func (r *reader) pread(fd int) ([]byte, error) {
	r.buf = r.buf[:0]
	for range 64 { // stat files are under a page; 64 reads bound a runaway file
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := syscall.Pread(fd, r.buf[len(r.buf):cap(r.buf)], int64(len(r.buf)))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return r.buf, nil
		}
		r.buf = r.buf[:len(r.buf)+n]
	}
	return nil, fmt.Errorf("stat file larger than expected (%d bytes read)", len(r.buf))
}

// releaseUnseen closes the files of the processes the last snapshot did not list.
func (r *reader) releaseUnseen() {
	for pid, h := range r.held {
		if h.gen != r.gen {
			syscall.Close(h.fd)
			delete(r.held, pid)
		}
	}
}

// close closes every held file.
func (r *reader) close() {
	for pid, h := range r.held {
		syscall.Close(h.fd)
		delete(r.held, pid)
	}
}
