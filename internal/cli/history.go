package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/changepoint"
	"github.com/scalegate/scalegate/internal/judge/history"
	"github.com/scalegate/scalegate/internal/reports/trendpage"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

func init() {
	register("history", "list the change points of a run history, named by commit (--html: the trend page)", runHistory)
}

// runHistory: scalegate history --dir DIR [--profile P] [--leg L]
// [--figure F] [--runner-class C] [--p-value P] [--html PATH]. Lines the
// history cannot use are warned about, naming file and line; the rest is
// analysed.
func runHistory(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("scalegate history", flag.ContinueOnError)
	dir := fs.String("dir", "history", "the run history `DIR` (what --history wrote)")
	var f history.Filter
	fs.StringVar(&f.Profile, "profile", "", "only this profile's records")
	fs.StringVar(&f.Leg, "leg", "", "only this leg (its baseline key, e.g. pr/weave)")
	fs.StringVar(&f.Figure, "figure", "", "only this figure (a gate's name, or kbs_mean, wire_kbs_per_client, bytes_per_entity)")
	fs.StringVar(&f.RunnerClass, "runner-class", "", "only this runner class (as printed, or its 8-digit id)")
	p := fs.Float64("p-value", changepoint.DefaultPValue, "significance a change point must reach")
	html := fs.String("html", "", "also write the trend page to this `PATH`")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate history [--dir DIR] [--profile P] [--leg L] [--figure F] [--runner-class C] [--p-value P] [--html PATH]")
		fs.PrintDefaults()
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if *p <= 0 || *p > 0.05 {
		return exitcode.Errorf(exitcode.Usage, "history: --p-value %g: want 0 < p ≤ 0.05", *p)
	}
	records, problems, err := history.Load(ctx, *dir, f.Profile)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	for _, pr := range problems {
		fmt.Fprintf(env.Stderr, "scalegate: history: warning: %s (line skipped)\n", pr)
	}
	series := history.Build(records, f)
	if len(series) == 0 {
		return exitcode.Errorf(exitcode.Usage, "history: no series in %s match%s (%d record(s) read)%s", *dir, describeFilter(f), len(records), figureHint(records, f))
	}
	as := history.AnalyzeAll(series, *p)
	if err := history.WriteText(env.Stdout, as); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	if *html != "" {
		if err := trendpage.Write(*html, as); err != nil {
			return exitcode.With(exitcode.Internal, err)
		}
		fmt.Fprintf(env.Stderr, "scalegate: history: trend page %s\n", *html)
	}
	return nil
}

func describeFilter(f history.Filter) string {
	var parts []string
	for _, kv := range [][2]string{{"profile", f.Profile}, {"leg", f.Leg}, {"figure", f.Figure}, {"runner class", f.RunnerClass}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, ", ")
}

// figureHint lists the figures the records have when --figure named none.
func figureHint(records []history.Record, f history.Filter) string {
	if f.Figure == "" || len(records) == 0 {
		return ""
	}
	var names []string
	for _, r := range records {
		for n := range r.Figures {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return "; the figures recorded are " + strings.Join(names, ", ")
}
