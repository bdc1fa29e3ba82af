package cli

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is scalegate's version; release builds set it with -ldflags -X.
var Version = "0.1.0-dev"

func init() {
	register("version", "print scalegate's version", func(_ context.Context, env *Env, _ []string) error {
		fmt.Fprintf(env.Stdout, "scalegate %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
					fmt.Fprintf(env.Stdout, "%s=%s\n", s.Key, s.Value)
				}
			}
		}
		return nil
	})
}
