package hostload

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// cpuTimes is the aggregate "cpu" line of /proc/stat, in clock ticks (USER_HZ), and how many
// per-CPU lines follow it.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
	// columns is how many figures the cpu line has: 4 on 2.4 kernels, 7 from 2.6.0, 8 (steal)
	// from 2.6.11, 10 (guest, guest_nice) from 2.6.33.
	columns int
	// cpus counts the cpuN lines.
	cpus int
}

// hasSteal reports whether the kernel has the steal column.
func (c cpuTimes) hasSteal() bool { return c.columns >= 8 }

// busy is the time CPUs spent running anything: processes (user, nice, system) and interrupt
// handlers (irq, softirq). Interrupt time is counted because a kernel without
// CONFIG_IRQ_TIME_ACCOUNTING charges the softirq work done in a task's context (the loopback
// traffic of the run itself) to that task's own utime+stime too: leaving it out would make the
// run's own CPU exceed the machine's busy time. guest and guest_nice are already inside user
// and nice, so they are not added again.
func (c cpuTimes) busy() uint64 { return c.user + c.nice + c.system + c.irq + c.softirq }

// total is every tick of every CPU: busy, idle, iowait and steal.
func (c cpuTimes) total() uint64 { return c.busy() + c.idle + c.iowait + c.steal }

// parseCPUStat reads the aggregate cpu line and counts the per-CPU lines of /proc/stat.
func parseCPUStat(b []byte) (cpuTimes, error) {
	var c cpuTimes
	found := false
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) == 0 || !bytes.HasPrefix(f[0], []byte("cpu")) {
			continue
		}
		if len(f[0]) > 3 {
			if _, err := strconv.Atoi(string(f[0][3:])); err == nil {
				c.cpus++
			}
			continue
		}
		if found {
			return cpuTimes{}, errors.New("two aggregate cpu lines")
		}
		found = true
		if len(f) < 5 {
			return cpuTimes{}, fmt.Errorf("cpu line has %d figures, want at least 4 (user nice system idle)", len(f)-1)
		}
		dst := []*uint64{&c.user, &c.nice, &c.system, &c.idle, &c.iowait, &c.irq, &c.softirq, &c.steal}
		for i, field := range f[1:] {
			v, err := strconv.ParseUint(string(field), 10, 64)
			if err != nil {
				return cpuTimes{}, fmt.Errorf("cpu line figure %d: %w", i+1, err)
			}
			if i < len(dst) {
				*dst[i] = v
			}
		}
		c.columns = len(f) - 1
	}
	if !found {
		return cpuTimes{}, errors.New("no aggregate cpu line")
	}
	if c.cpus == 0 {
		return cpuTimes{}, errors.New("no cpuN lines")
	}
	return c, nil
}

// procStat is what the sampler reads from one /proc/PID/stat.
type procStat struct {
	ppid int
	// start is the process's start time in clock ticks after boot: with the PID it names one
	// process, so a PID reused between two samples is not taken for the old process.
	start uint64
	// cpu is utime + stime in clock ticks: every thread's, the exited ones' included, and not
	// the reaped children's (cutime, cstime; see interval).
	cpu uint64
}

// Field positions after the command's closing parenthesis (field 3, state, is index 0).
const (
	statPPID      = 1  // field 4
	statUtime     = 11 // field 14
	statStime     = 12 // field 15
	statStarttime = 19 // field 22
)

// parseProcStat reads a /proc/PID/stat line. The command name is in parentheses and may itself
// hold spaces and parentheses, so fields are counted after the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || bytes.IndexByte(b[:i], '(') < 0 {
		return procStat{}, errors.New("no (command) field")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) <= statStarttime {
		return procStat{}, fmt.Errorf("%d fields after the command, want at least %d", len(f), statStarttime+1)
	}
	ppid, err := strconv.Atoi(string(f[statPPID]))
	if err != nil {
		return procStat{}, fmt.Errorf("ppid: %w", err)
	}
	ut, err := strconv.ParseUint(string(f[statUtime]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("utime: %w", err)
	}
	st, err := strconv.ParseUint(string(f[statStime]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("stime: %w", err)
	}
	start, err := strconv.ParseUint(string(f[statStarttime]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("starttime: %w", err)
	}
	return procStat{ppid: ppid, start: start, cpu: ut + st}, nil
}

// parsePressure reads "some avg10" from /proc/pressure/cpu:
//
//	some avg10=1.53 avg60=0.87 avg300=0.24 total=3158374
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// (the full line exists from Linux 5.13 and is not read).
func parsePressure(b []byte) (float64, error) {
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) == 0 || string(f[0]) != "some" {
			continue
		}
		for _, kv := range f[1:] {
			k, v, ok := bytes.Cut(kv, []byte("="))
			if !ok || string(k) != "avg10" {
				continue
			}
			avg, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return 0, fmt.Errorf("some avg10: %w", err)
			}
			if !(avg >= 0 && avg <= 100) { // NaN too
				return 0, fmt.Errorf("some avg10 %v outside 0..100", avg)
			}
			return avg, nil
		}
		return 0, errors.New("some line without avg10")
	}
	return 0, errors.New("no \"some\" line")
}
