// Command scalegate is a scale gate for real-time multiplayer game servers.
// All behaviour lives in internal/cli so tests can run the CLI in-process.
package main

import (
	"os"

	"github.com/scalegate/scalegate/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
