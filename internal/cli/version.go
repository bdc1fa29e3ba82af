package cli

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// devVersion is the version of a build from source: the release it leads
// to, marked -dev. Bump it after each release (docs/releasing.md).
const devVersion = "0.1.0-dev"

// Version is scalegate's version, recorded in every run's metadata.json.
// scripts/release.sh stamps it with
// -ldflags "-X github.com/scalegate/scalegate/internal/cli.Version=X.Y.Z";
// a `go install …@vX.Y.Z` build takes it from the module version (see
// init); any other build is devVersion.
var Version = devVersion

// Commit is the commit a release was built from, stamped by
// scripts/release.sh beside Version. Other builds leave it empty and print
// the VCS revision Go recorded, if any (none for `go install`).
var Commit = ""

// releaseTag is a module version that names a release: vX.Y.Z with an
// optional pre-release, not a pseudo-version (…-yyyymmddhhmmss-abcdef123456)
// and not a +dirty build.
var (
	releaseTag    = regexp.MustCompile(`^v(\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?)$`)
	pseudoVersion = regexp.MustCompile(`\d{14}-[0-9a-f]{12}$`)
)

func init() {
	register("version", "print scalegate's version", runVersion)
	if bi, ok := debug.ReadBuildInfo(); ok {
		Version = versionFrom(Version, bi.Main.Version)
	}
}

// versionFrom is the version to report: a stamped one as it is; the dev
// default replaced by the module's release tag when the binary was built
// from a released module (go install …@vX.Y.Z).
func versionFrom(stamped, module string) string {
	if stamped != devVersion {
		return stamped
	}
	m := releaseTag.FindStringSubmatch(module)
	if m == nil || pseudoVersion.MatchString(module) {
		return stamped
	}
	return m[1]
}

// runVersion prints the version, the commit a release was built from, the
// VCS revision Go recorded and the transports the build speaks. It takes no arguments: a stray one is a
// usage error, not ignored.
func runVersion(_ context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate version\n\nPrints scalegate's version, the Go toolchain, the platform, the commit a release was built from,\nthe VCS revision Go recorded and the transports this build speaks.")
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "version: unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintf(env.Stdout, "scalegate %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	if Commit != "" {
		fmt.Fprintf(env.Stdout, "commit=%s\n", Commit)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				fmt.Fprintf(env.Stdout, "%s=%s\n", s.Key, s.Value)
			}
		}
	}
	// A build without cgo has no ENet (docs/install.md): say what this one speaks.
	fmt.Fprintf(env.Stdout, "transports=%s\n", strings.Join(transport.Available(), ","))
	return nil
}
