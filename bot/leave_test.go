package bot_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/udp"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// byeServer is the tiny game with a goodbye: "B" from a joined address
// counts a BYE, drops the player and, when answer is set, is answered
// "L". Every tick it writes the metrics file with its joined players
// (peers) and the BYEs counted so far (byes), as a team's server would
// count its clean leaves; its Prometheus endpoint (prom) serves the same
// as tiny_players, tiny_dropped_total and the bytes it sent.
type byeServer struct {
	conn    *net.UDPConn
	metrics string
	answer  bool
	done    chan struct{}
	prom    *httptest.Server

	mu      sync.Mutex
	byes    int
	players int
	sent    int
}

func startByeServer(t *testing.T, answer bool) *byeServer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &byeServer{conn: conn, metrics: filepath.Join(t.TempDir(), "metrics.json"), answer: answer, done: make(chan struct{})}
	if err := s.write(0, 0); err != nil {
		t.Fatal(err)
	}
	s.prom = httptest.NewServer(http.HandlerFunc(s.exposition))
	go s.serve()
	t.Cleanup(func() { conn.Close(); <-s.done; s.prom.Close() })
	return s
}

// exposition serves the server's figures in Prometheus's text format.
func (s *byeServer) exposition(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	players, byes, sent := s.players, s.byes, s.sent
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# TYPE tiny_players gauge\ntiny_players %d\n# TYPE tiny_dropped_total counter\ntiny_dropped_total %d\n"+
		"# TYPE tiny_sent_bytes_total counter\ntiny_sent_bytes_total %d\n", players, byes, sent)
}

// promMap maps the endpoint's series: the BYEs are the players it
// dropped (kicked), each dropped on its goodbye.
const promMap = `{"peers": {"gauge": "tiny_players"}, "kicked": {"gauge": "tiny_dropped_total"},
	"wire_out_kbs": {"counter_rate": "tiny_sent_bytes_total", "scale": 0.001}}`

func (s *byeServer) port() string { return fmt.Sprint(s.conn.LocalAddr().(*net.UDPAddr).Port) }

func (s *byeServer) serve() {
	defer close(s.done)
	joined := map[netip.AddrPort]bool{}
	buf := make([]byte, 64)
	var tick int64
	for next := time.Now(); ; {
		next = next.Add(time.Second / 60)
		for {
			s.conn.SetReadDeadline(next)
			n, from, err := s.conn.ReadFromUDPAddrPort(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				break
			}
			if err != nil {
				return // closed
			}
			s.handle(joined, buf[:n], from)
		}
		tick++
		state := binary.LittleEndian.AppendUint32([]byte{'S'}, uint32(tick))
		for addr := range joined {
			s.conn.WriteToUDPAddrPort(state, addr)
		}
		s.mu.Lock()
		s.sent += len(state) * len(joined)
		s.mu.Unlock()
		if err := s.write(tick, len(joined)); err != nil {
			return
		}
	}
}

func (s *byeServer) handle(joined map[netip.AddrPort]bool, msg []byte, from netip.AddrPort) {
	switch {
	case len(msg) == 1 && msg[0] == 'J':
		joined[from] = true
		s.mu.Lock()
		s.players = len(joined)
		s.mu.Unlock()
		s.conn.WriteToUDPAddrPort([]byte("W"), from)
	case len(msg) == 1 && msg[0] == 'B' && joined[from]:
		delete(joined, from)
		s.mu.Lock()
		s.byes++
		s.players = len(joined)
		s.mu.Unlock()
		if s.answer {
			s.conn.WriteToUDPAddrPort([]byte("L"), from)
		}
	}
}

// write writes the metrics file: the minimum of docs/metrics.md, the
// joined players and the BYEs.
func (s *byeServer) write(ticks int64, peers int) error {
	s.mu.Lock()
	byes := s.byes
	s.mu.Unlock()
	return report.WriteJSONAtomic(s.metrics, map[string]any{
		"schema_version": 6, "transport": "udp", "rss_kb": 1000, "ticks_total": ticks,
		"tick_ms": map[string]float64{"min": 0.01, "mean": 0.01, "max": 0.01, "p95": 0.01, "p99": 0.01},
		"peers":   peers, "byes": byes,
	})
}

// leaver is the package documentation's bot with a goodbye: Leave sends
// "B" (or fails, when fail is set), and "L" is the server's answer.
type leaver struct {
	tiny
	fail bool
}

func (l *leaver) Leave(c *bot.Conn) error {
	if l.fail {
		return errors.New("leaver: no goodbye today")
	}
	return c.Send(bot.Unreliable, []byte("B"))
}

func (l *leaver) Receive(c *bot.Conn, msg []byte) (bot.Msg, error) {
	if len(msg) == 1 && msg[0] == 'L' {
		return bot.Msg{Kind: bot.Leaving, Reason: "bye"}, nil
	}
	return l.tiny.Receive(c, msg)
}

// TestLeaveRunsBeforeTheFinalRead: the bots' goodbyes go out after the
// hold and before the swarm's final read of the server's figures, so the
// report's server_tick (that read) counts a BYE from every connected bot,
// while the population the server reported stays the hold's (peers 4,
// where the server says 0 by then), from the metrics file and from a
// Prometheus endpoint, whose wire rate per client is then still
// computable. Goodbyes the server leaves unanswered
// end the wait at the timeout; a Leave that fails is counted and does not
// fail the run.
func TestLeaveRunsBeforeTheFinalRead(t *testing.T) {
	const clients = 4
	for _, tc := range []struct {
		name                string
		answer, fail, prom  bool
		byes, sent, answers int64
		errs                int64
	}{
		{"answered", true, false, false, clients, clients, clients, 0},
		{"answered, prometheus", true, false, true, clients, clients, clients, 0},
		{"unanswered", false, false, false, clients, clients, 0, 0},
		{"leave fails", true, true, false, 0, 0, 0, clients},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startByeServer(t, tc.answer)
			path := filepath.Join(t.TempDir(), "report.json")
			game := bot.Game{Name: "tiny-bye/1", Transport: udp.Name, New: func(int) bot.Protocol { return &leaver{fail: tc.fail} }}
			args := []string{"127.0.0.1", srv.port(), "--clients", fmt.Sprint(clients), "--duration", "2", "--progress", "off",
				"--json", path, "--assert-admission", "--server-metrics", srv.metrics}
			if tc.prom {
				mapPath := filepath.Join(t.TempDir(), "map.json")
				if err := os.WriteFile(mapPath, []byte(promMap), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args[:len(args)-2], "--server-metrics-prometheus", srv.prom.URL+"/metrics", "--server-metrics-map", mapPath,
					"--assert-max-wire-kbs", "100")
			}
			var stderr strings.Builder
			code := bot.Run(context.Background(), game, args, io.Discard, &stderr)
			r := readLeaveReport(t, path)
			if code != 0 || !r.Passed || r.ClientsConnected != clients {
				t.Fatalf("exit %d, passed %v, %d of %d connected: a goodbye must not fail the run\n%s", code, r.Passed, r.ClientsConnected, clients, stderr.String())
			}
			byes := r.ServerTick.Byes
			if tc.prom {
				byes = r.ServerTick.Kicked
			}
			if byes == nil || *byes != tc.byes {
				t.Errorf("the final read counted %s BYEs, want %d (one per connected bot, read after the goodbyes)", orNone(byes), tc.byes)
			}
			if r.ServerTick.Peers != clients {
				t.Errorf("server_tick.peers = %d, want %d: the population is the hold's, not the server's after the goodbyes", r.ServerTick.Peers, clients)
			}
			if tc.prom && (r.ServerTick.WirePerClient == nil || *r.ServerTick.WirePerClient <= 0) {
				t.Errorf("wire_out_kbs_per_client %v: the hold's peers must divide the wire rate", r.ServerTick.WirePerClient)
			}
			l := r.Leave
			if l == nil || l.Sent != tc.sent || l.Answered != tc.answers || l.Errors != tc.errs || l.TimeoutMs != 1000 {
				t.Fatalf("leave %+v, want sent %d answered %d errors %d", l, tc.sent, tc.answers, tc.errs)
			}
			if tc.sent > 0 && tc.answers == 0 && l.WaitedMs < 1000 {
				t.Errorf("unanswered goodbyes waited %v ms, want the 1000 ms timeout", l.WaitedMs)
			}
			if tc.answers > 0 && l.WaitedMs >= 1000 {
				t.Errorf("answered goodbyes waited %v ms: the wait ends at the last answer", l.WaitedMs)
			}
			if tc.errs > 0 && !strings.Contains(strings.Join(r.Warnings, "\n"), "no goodbye today") {
				t.Errorf("warnings %q do not name the failed goodbye", r.Warnings)
			}
			if tc.byes > 0 {
				// The server writes its file once a tick, after the goodbyes
				// it read: on the Prometheus route the swarm's final read did
				// not wait for that write, so the test does.
				livetest.Eventually(t, 5*time.Second, livetest.Holds("the server's file to show its players dropped by the goodbyes (else the test proved nothing)", func() bool {
					b, _, _ := report.ReadServerTick(srv.metrics)
					return b != nil && b.Peers == 0
				}))
			}
			if srv.mu.Lock(); tc.byes > 0 && srv.players != 0 {
				t.Errorf("the server ends with %d players: the goodbyes never dropped them, the test proved nothing", srv.players)
			}
			srv.mu.Unlock()
		})
	}
}

// leaveReport is the part of the report the goodbye test reads.
type leaveReport struct {
	Passed           bool     `json:"passed"`
	ClientsConnected int      `json:"clients_connected"`
	Warnings         []string `json:"warnings"`
	ServerTick       struct {
		Peers         int      `json:"peers"`
		Byes          *int64   `json:"byes"`
		Kicked        *int64   `json:"kicked"`
		WirePerClient *float64 `json:"wire_out_kbs_per_client"`
	} `json:"server_tick"`
	Leave *report.Leave `json:"leave"`
}

func readLeaveReport(t *testing.T, path string) leaveReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r leaveReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// orNone prints a count the report may lack.
func orNone(v *int64) string {
	if v == nil {
		return "no"
	}
	return fmt.Sprint(*v)
}
