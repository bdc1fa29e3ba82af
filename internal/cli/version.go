package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/scalegate/scalegate/internal/exitcode"
)

// Version is scalegate's version; release builds set it with -ldflags -X.
var Version = "0.1.0-dev"

func init() {
	register("version", "print scalegate's version", runVersion)
}

// runVersion prints the version and the VCS revision the binary was built
// from. It takes no arguments: a stray one is a usage error, not ignored.
func runVersion(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate version\n\nPrints scalegate's version, the Go toolchain and the VCS revision it was built from.")
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "version: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(env.Stdout, "scalegate %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				fmt.Fprintf(env.Stdout, "%s=%s\n", s.Key, s.Value)
			}
		}
	}
	return nil
}
