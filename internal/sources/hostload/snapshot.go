package hostload

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Reasons a figure is missing, for the report (Host.Missing) and docs/host-contention.md.
const (
	reasonNoProcStat = "no /proc/stat: the platform has no Linux /proc"
	reasonNoSteal    = "/proc/stat has no steal column (kernel before 2.6.11)"
	reasonNoPSI      = "no /proc/pressure/cpu: kernel without pressure stall information " +
		"(before 4.20, built without CONFIG_PSI, or booted with psi=0)"
	reasonPSIOff = "/proc/pressure/cpu not supported: pressure stall information disabled (boot with psi=1)"
)

// snapshot is one reading of the machine: the /proc/stat totals, every process's CPU and parent,
// and the CPU pressure, each with the error that kept it from being read.
type snapshot struct {
	at time.Time

	cpu    cpuTimes
	cpuErr error

	procs    map[int]procStat
	procsErr error

	avg10       float64
	pressureErr error
}

// reader reads snapshots from a proc file system, reusing one buffer: the sampler reads every
// process's stat file once a second. On Linux it keeps up to maxHeld of those files open
// between snapshots (held, heldstat_linux.go).
type reader struct {
	proc string
	buf  []byte
	held map[int]heldFile
	gen  uint64 // the snapshot a held file was last read in
}

// heldFile is a process's stat file kept open, and the snapshot that last read it.
type heldFile struct {
	fd  int
	gen uint64
}

func newReader(proc string) *reader { return &reader{proc: proc, buf: make([]byte, 0, 4096)} }

// snapshot reads /proc/stat first, then the processes, then the pressure. /proc/stat and the
// walk are a few milliseconds apart; every snapshot has the same order, so the intervals they
// bound are equally long and the offset cancels over a hold (docs/host-contention.md).
func (r *reader) snapshot(at time.Time) *snapshot {
	s := &snapshot{at: at}
	if b, err := r.read("stat"); err != nil {
		s.cpuErr = fileError(r.path("stat"), err, reasonNoProcStat, "")
	} else if s.cpu, err = parseCPUStat(b); err != nil {
		s.cpuErr = fmt.Errorf("%s: %w", r.path("stat"), err)
	}
	s.procs, s.procsErr = r.processes()
	if b, err := r.read("pressure/cpu"); err != nil {
		s.pressureErr = fileError(r.path("pressure/cpu"), err, reasonNoPSI, reasonPSIOff)
	} else if s.avg10, err = parsePressure(b); err != nil {
		s.pressureErr = fmt.Errorf("%s: %w", r.path("pressure/cpu"), err)
	}
	return s
}

// processes reads every /proc/PID/stat. A process that exits while the directory is walked
// (its file is gone, or reads ESRCH) is skipped: it is not there any more. A stat file that
// does not parse is skipped too, since one odd process must not blind the sampler to the rest;
// a process of the run's tree that is skipped shows as others' CPU for that second.
func (r *reader) processes() (map[int]procStat, error) {
	d, err := os.Open(r.proc)
	if err != nil {
		return nil, fileError(r.proc, err, reasonNoProcStat, "")
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", r.proc, err)
	}
	procs := make(map[int]procStat, len(names))
	r.gen++
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		b, err := r.procFile(pid, n+"/stat")
		if err != nil {
			continue
		}
		if p, err := parseProcStat(b); err == nil {
			procs[pid] = p
		}
	}
	r.releaseUnseen()
	return procs, nil
}

// procStat reads one process's stat file.
func (r *reader) procStat(pid int) (procStat, error) {
	name := strconv.Itoa(pid) + "/stat"
	b, err := r.read(name)
	if err != nil {
		return procStat{}, fmt.Errorf("process %d: %w", pid, err)
	}
	p, err := parseProcStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("%s: %w", r.path(name), err)
	}
	return p, nil
}

func (r *reader) path(name string) string { return filepath.Join(r.proc, name) }

// read returns the whole file; the bytes are valid until the next read.
func (r *reader) read(name string) ([]byte, error) {
	f, err := os.Open(r.path(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.buf = r.buf[:0]
	for range 64 { // proc files here are under a page; 64 reads bound a runaway file
		if len(r.buf) == cap(r.buf) {
			r.buf = append(r.buf, 0)[:len(r.buf)]
		}
		n, err := f.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if errors.Is(err, io.EOF) {
			return r.buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%s: larger than expected (%d bytes read)", r.path(name), len(r.buf))
}

// fileError names the file and, for the cases a user can act on, the reason in plain words:
// notExist when the file is absent, notSupported when reading it is refused (EOPNOTSUPP).
func fileError(path string, err error, notExist, notSupported string) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) && notExist != "":
		return errors.New(notExist)
	case errors.Is(err, syscall.EOPNOTSUPP) && notSupported != "":
		return errors.New(notSupported)
	}
	return fmt.Errorf("read %s: %w", path, err)
}
