package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedhttp"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/livetest/liveserver"
)

// crowd is how many idle connections the acceptance test holds.
const crowd = 5000

// raiseNoFile lifts the descriptor limit to hold n more (the test holds
// both ends of every connection), raising the hard limit when allowed.
func raiseNoFile(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		lim.Max = n // needs CAP_SYS_RESOURCE; the error says so otherwise
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("raise RLIMIT_NOFILE to %d: %v", n, err)
	}
}

// establishedOn counts the TCP sockets in state ESTABLISHED whose local
// port is port: the server's side of its connections (the clients' sides
// have the port as their remote one). Read from /proc/net/tcp{,6}.
func establishedOn(t *testing.T, port int) int {
	t.Helper()
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(l)
			if len(fs) < 4 || fs[3] != "01" {
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				n++
			}
		}
	}
	return n
}

// TestMetricsEndpointUnderAnIdleCrowd is the acceptance test of the HTTP
// endpoint: 5,000 connections are opened and held idle (half after one
// GET each, kept alive; half silent since they connected) while the server
// runs. A new GET is answered, the metrics file keeps updating, the admin
// socket answers, and the server holds at most its connection cap. Before,
// every one of them was held forever: at ~20,000 the server ran out of
// descriptors, its metrics file went stale and its admin socket went
// silent.
func TestMetricsEndpointUnderAnIdleCrowd(t *testing.T) {
	raiseNoFile(t, 2*crowd+1024)
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ls := liveserver.Start(t, func(c *server.Config) {
		c.Metrics.HTTPListen = "127.0.0.1:0"
		c.Admin.Socket = sock
	})
	url := ls.MetricsURL()
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), server.MetricsPath)
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)

	var mu sync.Mutex
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	var wg sync.WaitGroup
	const workers = 8
	for w := range workers {
		wg.Go(func() {
			for i := w; i < crowd; i += workers {
				c, err := net.DialTimeout("tcp", addr, livetest.Wait)
				if err != nil {
					continue // the crowd is the attacker: its failures are not the test's
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
				if i%2 == 0 {
					c.SetDeadline(time.Now().Add(livetest.Wait))
					fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", server.MetricsPath)
					if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
					c.SetDeadline(time.Time{})
				}
			}
		})
	}
	wg.Wait()
	if len(held) < crowd*9/10 {
		t.Fatalf("only %d of %d connections opened", len(held), crowd)
	}

	// A new reader is answered.
	st, _, err := report.ReadServerTick(url)
	if err != nil {
		t.Fatalf("GET behind %d idle connections: %v", len(held), err)
	}
	// The metrics file keeps updating (the server's descriptors are not
	// exhausted): a later write than the one just read appears.
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		now, _, err := report.ReadServerTick(ls.Metrics)
		if err == nil && now.TicksTotal > st.TicksTotal {
			return true, ""
		}
		if err != nil {
			return false, fmt.Sprintf("metrics file not updated (last read: %v)", err)
		}
		return false, fmt.Sprintf("metrics file not updated (last read: ticks_total %v, want more than %v)", now.TicksTotal, st.TicksTotal)
	})
	ctx, cancel := context.WithTimeout(context.Background(), livetest.Wait)
	defer cancel()
	if lines, err := admin.Do(ctx, sock, "status"); err != nil || len(lines) == 0 {
		t.Fatalf("admin socket behind the crowd: %q %v", lines, err)
	}
	// The server holds at most its cap (plus the reader just served).
	if n := establishedOn(t, port); n > boundedhttp.DefaultMaxConns+1 {
		t.Fatalf("the server holds %d established connections on the metrics port with %d idle clients: want at most %d",
			n, len(held), boundedhttp.DefaultMaxConns+1)
	}
	t.Logf("%d idle connections held by the clients; the server holds %d (%+v)", len(held), establishedOn(t, port), server.MetricsHTTPStats(ls.Server))
}
