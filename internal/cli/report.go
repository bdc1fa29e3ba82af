package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"

	"github.com/scalegate/scalegate/internal/reports/htmlreport"
	"github.com/scalegate/scalegate/internal/reports/junit"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

func init() {
	register("report", "rebuild a run directory's report.html (and optionally JUnit XML) from its artifacts", runReport)
}

// runReport: scalegate report [--junit PATH] DIR.
func runReport(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("scalegate report", flag.ContinueOnError)
	junitPath := fs.String("junit", "", "also write the run as JUnit XML to this file")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate report [--junit PATH] RUN_DIR")
		fs.PrintDefaults()
	}
	dirs, err := parseInterleaved(env, fs, args)
	if err != nil {
		return err
	}
	if len(dirs) != 1 {
		return exitcode.Errorf(exitcode.Usage, "report: want one run directory, got %d argument(s)", len(dirs))
	}
	dir := dirs[0]
	if err := htmlreport.Write(dir); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	fmt.Fprintln(env.Stdout, filepath.Join(dir, htmlreport.FileName))
	if *junitPath == "" {
		return nil
	}
	run, err := htmlreport.Load(dir)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if err := junit.WriteFile(*junitPath, run.Summary); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprintln(env.Stdout, *junitPath)
	return nil
}
