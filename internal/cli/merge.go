package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/scalegate/scalegate/internal/reports/merge"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

const mergeUsage = `usage: scalegate merge --out PATH REPORT...

Merges the reports of a sharded swarm run (scalegate swarm --shard I/N)
into one report of the same schema, as if one process had run every
client, plus shards: {count, merged, complete}. Distributions merge from
their histograms (percentiles within 1/2048 relative of one process's),
timelines by the shared --start-at clock.

Exit status: 0 merged and complete; 3 written but incomplete (a shard
missing or given twice: a gate never passes such a report); 2 usage, an
unreadable report, or reports of different runs; 6 the output could not
be written.
`

func init() {
	register("merge", "merge the reports of a sharded swarm run into one", runMerge)
}

func runMerge(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), mergeUsage); fs.PrintDefaults() }
	out := fs.String("out", "", "write the merged report to `path`")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return exitcode.Errorf(exitcode.Usage, "merge: want --out PATH and at least one REPORT")
	}
	m, err := merge.Files(fs.Args())
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if err := report.WriteReportAtomic(*out, m); err != nil {
		return exitcode.With(exitcode.Internal, fmt.Errorf("merge: %w", err))
	}
	s := m.Shards
	fmt.Fprintf(env.Stdout, "merge: %d of %d shards (%v), %d clients, %d admitted → %s\n", len(s.Merged), s.Count, s.Merged, m.Clients, m.ClientsConnected, *out)
	if !s.Complete {
		return exitcode.Errorf(exitcode.Inconclusive, "merge: incomplete: missing shards %v, duplicated %v; the report is written but describes part of the run", s.Missing, s.Duplicated)
	}
	return nil
}
