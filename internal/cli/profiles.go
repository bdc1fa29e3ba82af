package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/format"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

func init() {
	register("profiles", "list profiles (profiles show NAME prints one resolved)", runProfiles)
	register("vet", "validate every profile against the schema", runVet)
}

// runProfiles lists profiles, or with `show NAME` prints one resolved.
func runProfiles(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("profiles", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate profiles [--profiles DIR]\n       scalegate profiles show NAME [--profiles DIR] [--format json|cue] [--set PATH=VALUE]...\n\nLists the profiles, or prints one resolved against the schema (defaults filled).\n\noptions:")
		fs.PrintDefaults()
	}
	dir := fs.String("profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	form := fs.String("format", "json", "profiles show: json or cue")
	var sets setFlags
	fs.Var(&sets, "set", "profiles show: "+setUsage)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] == "show" {
		// Flags may follow "show NAME" too.
		if err := parseFlags(env, fs, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() < 1 {
			return exitcode.Errorf(exitcode.Usage, "usage: scalegate profiles show NAME [--format json|cue] [--set PATH=VALUE]...")
		}
		name := fs.Arg(0)
		if err := parseFlags(env, fs, fs.Args()[1:]); err != nil {
			return err
		}
		if fs.NArg() > 0 {
			return exitcode.Errorf(exitcode.Usage, "profiles show: unexpected argument %q", fs.Arg(0))
		}
		return showProfile(env, *dir, name, *form, sets)
	}
	if len(sets) > 0 {
		return exitcode.Errorf(exitcode.Usage, "profiles: --set applies to profiles show NAME")
	}
	if len(rest) > 0 {
		return exitcode.Errorf(exitcode.Usage, "profiles: unknown argument %q (want: profiles [show NAME])", rest[0])
	}
	return listProfiles(env, *dir)
}

func listProfiles(env *Env, dir string) error {
	cat, err := catalog.NewCatalog(dir)
	if err != nil {
		return profileErr(env, err)
	}
	names, err := cat.Names()
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	bad := 0
	for _, n := range names {
		p, _, err := cat.Load(n)
		if err != nil {
			bad++
			fmt.Fprintf(env.Stdout, "%-16s INVALID (run scalegate vet)\n", n)
			continue
		}
		fmt.Fprintf(env.Stdout, "%-16s %s\n", n, p.Description)
	}
	if bad > 0 {
		return exitcode.Errorf(exitcode.InvalidProfile, "%d invalid profile(s): run scalegate vet", bad)
	}
	return nil
}

func showProfile(env *Env, dir, name, form string, sets []catalog.Override) error {
	cat, err := catalog.NewCatalog(dir)
	if err != nil {
		return profileErr(env, err)
	}
	p, v, err := cat.Load(name, sets...)
	if err != nil {
		return profileErr(env, err)
	}
	switch form {
	case "json":
		b, err := p.Canonical()
		if err != nil {
			return exitcode.With(exitcode.Internal, err)
		}
		_, err = env.Stdout.Write(b)
		return err
	case "cue":
		b, err := format.Node(v.Syntax(cue.Final(), cue.Concrete(true)))
		if err != nil {
			return exitcode.With(exitcode.Internal, err)
		}
		fmt.Fprintf(env.Stdout, "// profile %s, resolved against #Profile (defaults filled)\n%s\n", name, b)
		return nil
	}
	return exitcode.Errorf(exitcode.Usage, "--format %q: want json or cue", form)
}

// runVet validates every profile and prints every error of every file, one
// line per mistake. With --set it checks that every profile accepts the
// overrides.
func runVet(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("vet", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate vet [--profiles DIR] [--set PATH=VALUE]...\n\nValidates every profile against the schema and prints every error as file:line:col: field: message.\n\noptions:")
		fs.PrintDefaults()
	}
	dir := fs.String("profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	var sets setFlags
	fs.Var(&sets, "set", setUsage+"; applied to every profile")
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "vet: unexpected argument %q (vet checks every profile; --profiles DIR picks the directory)", fs.Arg(0))
	}
	cat, err := catalog.NewCatalog(*dir)
	if err != nil {
		return profileErr(env, err)
	}
	names, err := cat.Names()
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	if len(names) == 0 {
		return exitcode.Errorf(exitcode.InvalidProfile, "no *.cue profiles found")
	}
	var bad []string
	for _, n := range names {
		p, _, err := cat.Load(n, sets...)
		if err != nil {
			fmt.Fprintln(env.Stderr, vetLines(n, catalog.FormatError(err)))
			bad = append(bad, n)
			continue
		}
		fmt.Fprintf(env.Stdout, "ok   %s: %d leg(s)\n", n, len(p.Legs()))
	}
	if len(bad) > 0 {
		return exitcode.Errorf(exitcode.InvalidProfile, "vet: %d of %d profile(s) invalid: %s", len(bad), len(names), strings.Join(bad, ", "))
	}
	return nil
}

// vetLines names the profile on the lines placed at a --set flag: vet
// applies the flags to every profile, and the flag alone would not say
// which one refused it.
func vetLines(name, text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "--set ") {
			lines[i] = name + ": " + l
		}
	}
	return strings.Join(lines, "\n")
}
