package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/compare"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

func init() {
	register("compare", "set two run directories side by side: per leg and metric A, B and the delta", runCompare)
}

// runCompare: scalegate compare [--markdown PATH] [--legs-by profile|name]
// RUN_A RUN_B. It exits 0
// only when every leg of both runs was compared; a refused leg (different
// load, or in one run only) exits 2 after the legs that could be compared
// are printed.
func runCompare(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("scalegate compare", flag.ContinueOnError)
	md := fs.String("markdown", "", "also write the comparison as Markdown to this file")
	legsBy := fs.String("legs-by", compare.LegsByProfile, "how legs are matched: \"profile\" (both runs of one profile, legs by ID) or \"name\" (legs by ID across two profiles, e.g. entity-churn against entity-scale)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate compare [--markdown PATH] [--legs-by profile|name] RUN_A RUN_B")
		fs.PrintDefaults()
	}
	dirs, err := parseInterleaved(env, fs, args)
	if err != nil {
		return err
	}
	if *legsBy != compare.LegsByProfile && *legsBy != compare.LegsByName {
		return exitcode.Errorf(exitcode.Usage, "compare: --legs-by %q: want %q or %q", *legsBy, compare.LegsByProfile, compare.LegsByName)
	}
	if len(dirs) != 2 {
		return exitcode.Errorf(exitcode.Usage, "compare: want two run directories, got %d argument(s)", len(dirs))
	}
	a, err := compare.Load(dirs[0])
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	b, err := compare.Load(dirs[1])
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	res := compare.CompareWith(a, b, compare.Options{LegsBy: *legsBy})
	if err := res.WriteTable(env.Stdout); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	if *md != "" {
		var sb strings.Builder
		if err := res.WriteMarkdown(&sb); err != nil {
			return exitcode.With(exitcode.Internal, err)
		}
		if err := report.WriteFileAtomic(*md, []byte(sb.String())); err != nil {
			return exitcode.With(exitcode.Internal, err)
		}
	}
	if refused := res.Refused(); len(refused) > 0 {
		return exitcode.Errorf(exitcode.Usage, "compare: %d leg(s) not compared: %s", len(refused), strings.Join(refused, "; "))
	}
	return nil
}

// parseInterleaved parses flags given before, between or after the
// positional arguments (the flag package stops at the first positional),
// so `compare A B --markdown x.md` works like `compare --markdown x.md A B`.
// Help and flag errors are handled as parseFlags handles them.
func parseInterleaved(env *Env, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(env, fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
