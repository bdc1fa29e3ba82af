package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/schema"
)

// schemaDefs are the documents `scalegate schema` prints, by name.
var schemaDefs = map[string]string{
	"report":      "#Report",     // the swarm report (docs/swarm-contract.md)
	"server-tick": "#ServerTick", // the server metrics file (docs/metrics.md)
}

const schemaUsage = `usage: scalegate schema report | server-tick

Prints the JSON Schema (draft 2020-12) of the swarm report (report) or the
server metrics file (server-tick), generated from schema/*.cue: the contract
the gate validates against, for a team writing either outside Go.
`

func init() {
	register("schema", "print the JSON Schema of the swarm report or the server metrics file", runSchema)
}

func runSchema(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("schema", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), schemaUsage) }
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return exitcode.With(exitcode.Usage, errors.New("schema: want one of: report, server-tick"))
	}
	def, ok := schemaDefs[fs.Arg(0)]
	if !ok {
		names := make([]string, 0, len(schemaDefs))
		for n := range schemaDefs {
			names = append(names, n)
		}
		return exitcode.Errorf(exitcode.Usage, "schema: unknown document %q (want %s)", fs.Arg(0), strings.Join(names, ", "))
	}
	b, err := schema.JSONSchema(def)
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	if _, err := env.Stdout.Write(append(b, '\n')); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	return nil
}
