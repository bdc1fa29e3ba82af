package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// Main runs the swarm command line with g's protocol and exits with its
// status: call it from your bot's func main. The binary takes exactly the
// arguments and writes exactly the report of `scalegate swarm`
// (docs/swarm-contract.md), so the gate runs it in place of the built-in
// swarm. The first SIGINT or SIGTERM stops the run early (the report is
// written, marked aborted, exit 130); a second one kills the process.
func Main(g Game) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the next signal gets the default action: exit at once
	}()
	code := Run(ctx, g, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run is Main without the process: it runs the command line args (without
// the program name) and returns the exit status (0 passed, 1 an assert
// failed or bots were lost, 2 usage, 130 interrupted; docs/exit-codes.md).
// The summary goes to stdout, progress and errors to stderr.
func Run(ctx context.Context, g Game, args []string, stdout, stderr io.Writer) int {
	env := &swarmcli.Env{Stdout: stdout, Stderr: stderr, Getenv: os.Getenv}
	err := g.check()
	if err == nil {
		err = g.command().Run(ctx, env, args)
	}
	if err != nil && !errors.Is(err, exitcode.ErrPrinted) {
		fmt.Fprintf(stderr, "%s: %v\n", g.program(), err)
	}
	return int(exitcode.Of(err))
}

// check refuses a Game the swarm cannot run.
func (g Game) check() error {
	var errs []error
	if g.Name == "" {
		errs = append(errs, errors.New("bot: Game.Name is empty: name your protocol (the report's \"protocol\")"))
	}
	if g.New == nil {
		errs = append(errs, errors.New("bot: Game.New is nil: nothing makes a bot's Protocol"))
	}
	return exitcode.With(exitcode.Usage, errors.Join(errs...))
}

func (g Game) program() string { return filepath.Base(os.Args[0]) }

// command is the swarm command line speaking g's protocol.
func (g Game) command() swarmcli.Command {
	return swarmcli.Command{
		Name: g.program(),
		About: fmt.Sprintf(`Runs N bots speaking %s against a server and reports what they observe, as
scalegate swarm does for the scalegate load protocol (built with the
scalegate bot package; docs/own-protocol.md).`, g.Name),
		Protocol:  protocol{g},
		Transport: g.Transport,
		Missing:   missingTransport,
	}
}

// transportPackages maps each transport name to the package under
// bot/transport that links it.
var transportPackages = map[string]string{"enet": "enet", "quic": "quic", "udp": "udp", "ws": "ws", "wss": "ws"}

// missingTransport says what a bot needs to speak a transport it was built
// without: the import that links it, and what else that backend needs.
func missingTransport(name string) string {
	pkg, ok := transportPackages[name]
	if !ok {
		return ""
	}
	need := fmt.Sprintf("import \"github.com/scalegate/scalegate/bot/transport/%s\" in your bot to link it", pkg)
	switch pkg {
	case "enet":
		need += ", and build with cgo (CGO_ENABLED=1, a C compiler and libenet: ENet is the C library)"
	case "udp":
		need += " (raw UDP is Linux only)"
	}
	return need
}
