package admin

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// raceChildEnv makes this test binary the other user's process: it
// connects to the socket path in the variable as fast as it can, answers
// each "count" line on its stdin with "hits N tries M" (the connects that
// succeeded so far), and stops when its stdin closes.
const raceChildEnv = "SCALEGATE_ADMIN_RACE_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(raceChildEnv); path != "" {
		os.Exit(raceChild(path))
	}
	os.Exit(m.Run())
}

// raceChild spins connect(2) on path from every CPU. Raw syscalls: the
// loop must be as tight as possible to hit a window of microseconds.
func raceChild(path string) int {
	var hits, tries atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range max(2, runtime.NumCPU()) {
		wg.Go(func() {
			sa := &syscall.SockaddrUnix{Name: path}
			for {
				select {
				case <-stop:
					return
				default:
				}
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					continue
				}
				if syscall.Connect(fd, sa) == nil {
					hits.Add(1)
				}
				tries.Add(1)
				syscall.Close(fd)
			}
		})
	}
	// Woken by inotify the moment a file is created in the directory, one
	// more goroutine bursts connects at once: it aims at the instant right
	// after bind, where a socket created with the umask's mode would be
	// open to everyone.
	if in, err := syscall.InotifyInit1(syscall.IN_CLOEXEC); err == nil {
		if _, err := syscall.InotifyAddWatch(in, filepath.Dir(path), syscall.IN_CREATE); err == nil {
			go func() {
				buf := make([]byte, 4096)
				sa := &syscall.SockaddrUnix{Name: path}
				for {
					if _, err := syscall.Read(in, buf); err != nil {
						return
					}
					for range 50 {
						fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
						if err != nil {
							break
						}
						if syscall.Connect(fd, sa) == nil {
							hits.Add(1)
						}
						tries.Add(1)
						syscall.Close(fd)
					}
				}
			}()
		}
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() { // until the parent closes it
		fmt.Printf("hits %d tries %d\n", hits.Load(), tries.Load())
	}
	close(stop)
	wg.Wait()
	return 0
}

// TestAnotherUserNeverConnects: with umask 000 and the socket in a
// directory everyone may enter, another user (uid 65534) spinning on
// connect never gets in, across 50 starts of the admin socket. Before, the
// socket was bound (mode 0777 under umask 000) and then chmod'ed to 0600:
// another user connected in 12 of 25 starts, and was served.
func TestAnotherUserNeverConnects(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs a child as uid 65534 and needs root (CI and the dev machines run as root)")
	}
	// A directory every user may enter and write, like /tmp.
	shared, err := os.MkdirTemp("", "admin-race-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	// The child must be able to run this binary: copy it where it can.
	exe, _ := os.Executable()
	child := filepath.Join(shared, "child.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(child, b, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(shared, "admin.sock")

	old := syscall.Umask(0)
	defer syscall.Umask(old)

	cmd := exec.Command(child)
	cmd.Env = append(os.Environ(), raceChildEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		out := bufio.NewScanner(stdout)
		for out.Scan() {
			lines <- out.Text()
		}
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the child ended before %s", what)
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s from the child within 30 s", what)
		}
		return ""
	}
	if l := next("ready"); l != "ready" {
		t.Fatalf("child: %q", l)
	}
	var served atomic.Int64
	for range 50 {
		s, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		s.Serve(func(Command) []string { served.Add(1); return []string{"ok"} })
		// Stay up a moment: connects after the start must fail too.
		time.Sleep(2 * time.Millisecond)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (hits, tries int) {
		t.Helper()
		io.WriteString(stdin, "count\n")
		l := next("a count")
		if _, err := fmt.Sscanf(l, "hits %d tries %d", &hits, &tries); err != nil {
			t.Fatalf("child: %q", l)
		}
		return hits, tries
	}
	hits, tries := count()
	t.Logf("uid 65534: %d connect(s) of %d tries during the 50 starts", hits, tries)
	if hits > 0 {
		t.Fatalf("another user connected %d time(s) during the 50 starts (%d command(s) served)", hits, served.Load())
	}
	if tries < 1000 {
		t.Fatalf("the child tried only %d connects: the test proves nothing", tries)
	}
	// Control: a socket bound the plain way under umask 000 is reachable,
	// so the child is able to connect and the zero above means something.
	open, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	livetest.Eventually(t, 30*time.Second, func() (bool, string) {
		h, n := count()
		if h > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("the child never connected to the open control socket (0 of %d tries): it cannot show anything", n)
	})
	stdin.Close()
}
