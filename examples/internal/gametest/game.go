package gametest

import (
	"path"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// botLimit bounds one bot run of an end-to-end test: far beyond the few
// seconds a run takes, for a loaded machine.
const botLimit = 90 * time.Second

// Game is an example game as its end-to-end test runs it: where its
// commands are, what its bot reports when healthy, and the bot's flags
// (the asserts a profile gating it would forward).
type Game struct {
	Pkg       string   // import path of the example; its server and bot commands are below it
	Protocol  string   // the report's protocol ("udpgame/3")
	Transport string   // the report's transport ("udp")
	Clients   int      // the clients Args run, every one connected when healthy
	Args      []string // the bot's flags after host and port
}

// Built is a Game with its server and bot binaries built.
type Built struct {
	Game
	Server, Bot string // the binaries' paths
}

// BuildGame builds g's server and bot into a directory of t's.
func BuildGame(t testing.TB, g Game) *Built {
	t.Helper()
	dir := t.TempDir()
	return &Built{Game: g, Server: Build(t, dir, path.Join(g.Pkg, "server")), Bot: Build(t, dir, path.Join(g.Pkg, "bot"))}
}

// Healthy runs the server as it is and the bot with the game's flags. It
// fails t at once unless the bot exits 0 with every assert passed, and
// reports (carrying on) a protocol, transport or connected count other
// than the game's. It returns the report for the game's own checks.
func (b *Built) Healthy(t testing.TB) *report.Report {
	t.Helper()
	s := StartServer(t, b.Server)
	code, r := RunBot(t, b.Bot, s, botLimit, b.Args...)
	if code != 0 || !r.Passed {
		t.Fatalf("exit %d, passed %v, asserts %+v", code, r.Passed, r.Asserts)
	}
	if r.Protocol != b.Protocol || r.Transport != b.Transport || r.ClientsConnected != b.Clients {
		t.Errorf("protocol %q transport %q connected %d", r.Protocol, r.Transport, r.ClientsConnected)
	}
	return r
}

// Faulty runs the server with -fault fault and the bot with the game's
// flags. It fails t at once unless the bot exits 1 with the run failed,
// saying after the exit status why passing is wrong (passed: "a server
// ticking at half its rate passed"). It returns the report for the game's
// own checks of what failed.
func (b *Built) Faulty(t testing.TB, fault, passed string) *report.Report {
	t.Helper()
	s := StartServer(t, b.Server, "-fault", fault)
	code, r := RunBot(t, b.Bot, s, botLimit, b.Args...)
	if code != 1 || r.Passed {
		t.Fatalf("exit %d, passed %v: %s", code, r.Passed, passed)
	}
	return r
}
