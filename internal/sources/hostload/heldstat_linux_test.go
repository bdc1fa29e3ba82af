package hostload

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// fakeProc writes a proc directory with /proc/stat and a stat file per pid, utime cpu.
func fakeProc(t *testing.T, cpu map[int]int) string {
	t.Helper()
	dir := t.TempDir()
	stat, err := os.ReadFile("testdata/busy/t0/stat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), stat, 0o644); err != nil {
		t.Fatal(err)
	}
	for pid, c := range cpu {
		writeStat(t, dir, pid, c)
	}
	return dir
}

func writeStat(t *testing.T, dir string, pid, cpu int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, fmt.Sprint(pid)), 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%d (p) S 1 0 0 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0\n", pid, cpu, 100+pid)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(pid), "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHeldStatFilesFollowTheListing: a held file gives what the process's file says now, the
// file of a process gone from the listing is closed, and no more than maxHeld are kept open
// while every process is still read.
func TestHeldStatFilesFollowTheListing(t *testing.T) {
	dir := fakeProc(t, map[int]int{1: 10, 2: 20, 3: 30})
	rd := newReader(dir)
	defer rd.close()
	if s := rd.snapshot(time.Now()); len(s.procs) != 3 || len(rd.held) != 3 {
		t.Fatalf("first snapshot: %d processes, %d held; want 3 and 3", len(s.procs), len(rd.held))
	}
	if err := os.RemoveAll(filepath.Join(dir, "2")); err != nil {
		t.Fatal(err)
	}
	writeStat(t, dir, 3, 35) // rewritten in place: the held descriptor reads it anew
	s := rd.snapshot(time.Now())
	if _, ok := s.procs[2]; ok || len(rd.held) != 2 {
		t.Fatalf("after pid 2 left: processes %v, %d held; want pid 2 gone and 2 held", s.procs, len(rd.held))
	}
	if s.procs[3].cpu != 35 || s.procs[1].cpu != 10 {
		t.Fatalf("cpu of pid 1, 3 read %d, %d through held files; want 10, 35", s.procs[1].cpu, s.procs[3].cpu)
	}
	many := map[int]int{}
	for pid := 1; pid <= maxHeld+20; pid++ {
		many[pid] = pid
	}
	big := newReader(fakeProc(t, many))
	defer big.close()
	for range 2 {
		if s := big.snapshot(time.Now()); len(s.procs) != maxHeld+20 || len(big.held) > maxHeld {
			t.Fatalf("%d processes read, %d held; want %d read, at most %d held", len(s.procs), len(big.held), maxHeld+20, maxHeld)
		}
	}
}

// TestHeldStatFileOfAnExitedProcess: on the real /proc, a process that exits between two
// snapshots is not read from the file held for it.
func TestHeldStatFileOfAnExitedProcess(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	rd := newReader("/proc")
	defer rd.close()
	if _, ok := rd.snapshot(time.Now()).procs[pid]; !ok {
		t.Fatalf("pid %d not read", pid)
	}
	if _, ok := rd.held[pid]; !ok {
		t.Fatalf("pid %d's stat file not held", pid)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, ok := rd.snapshot(time.Now()).procs[pid]; ok {
		t.Fatalf("pid %d read after it exited", pid)
	}
	if _, ok := rd.held[pid]; ok {
		t.Fatalf("pid %d's stat file still held after it exited", pid)
	}
}
