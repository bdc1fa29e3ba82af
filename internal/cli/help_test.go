package cli

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// helpArgs is how each registered command is asked for help. The gate is
// also reached without its name (scalegate --profile NAME -h), and profiles
// has a second level (profiles show -h).
func helpArgs() map[string][][]string {
	m := map[string][][]string{}
	for name := range commands {
		for _, h := range []string{"-h", "-help", "--help"} {
			m[name] = append(m[name], []string{name, h})
		}
	}
	m["gate"] = append(m["gate"], []string{"--profile", "pr", "-h"}, []string{"-h", "--profile", "pr"})
	m["profiles"] = append(m["profiles"], []string{"profiles", "show", "-h"}, []string{"profiles", "show", "pr", "--help"})
	m["serve"] = append(m["serve"], []string{"serve", "--port", "0", "-h"})
	m["swarm"] = append(m["swarm"], []string{"swarm", "127.0.0.1", "7777", "-h"})
	return m
}

// TestHelpExitsZeroQuietly asks every registered subcommand for help: the
// usage is the command's output (stdout), the exit is 0, and nothing is
// reported as an error ("flag: help requested" was printed on stderr).
// Iterating the registry means a new subcommand is covered without a new row.
func TestHelpExitsZeroQuietly(t *testing.T) {
	cases := helpArgs()
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 6 {
		t.Fatalf("only %d commands registered: %v", len(names), names)
	}
	for _, name := range names {
		want := "usage: scalegate " + name
		if name == "gate" {
			want = "usage: scalegate --profile NAME"
		}
		for _, args := range cases[name] {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				env, out, errb := testEnv(nil)
				code := Run(context.Background(), env, args)
				if code != int(exitcode.OK) {
					t.Errorf("exit %d, want 0", code)
				}
				if errb.Len() != 0 {
					t.Errorf("stderr not empty:\n%s", errb)
				}
				if !strings.HasPrefix(out.String(), want) {
					t.Errorf("stdout does not start with %q:\n%s", want, out)
				}
				for _, line := range strings.Split(out.String(), "\n") {
					// The flag package takes a backquoted word of a flag's
					// usage as its argument's name: "(see `scalegate
					// profiles`)" printed "-profile scalegate profiles".
					if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "    ") {
						t.Errorf("flag line %q names its argument in %d words", line, len(f)-1)
					}
				}
			})
		}
	}
}

// TestBadFlagStillUsageError: routing requested help to stdout must not
// turn a mistake into help. An unknown flag is exit 2 with the usage and
// the error on stderr, nothing on stdout.
func TestBadFlagStillUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--nope"}, {"swarm", "127.0.0.1", "1", "--nope"}, {"profiles", "--nope"},
		{"profiles", "show", "pr", "--nope"}, {"vet", "--nope"}, {"version", "--nope"},
		{"--profile", "pr", "--nope"}, {"version", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			env, out, errb := testEnv(nil)
			code := Run(context.Background(), env, args)
			if code != int(exitcode.Usage) {
				t.Errorf("exit %d, want %d", code, exitcode.Usage)
			}
			if out.Len() != 0 {
				t.Errorf("stdout not empty:\n%s", out)
			}
			bad := strings.TrimLeft(args[len(args)-1], "-")
			if !strings.Contains(errb.String(), bad) {
				t.Errorf("stderr does not name %q:\n%s", bad, errb)
			}
		})
	}
}

// TestPackageDocNamesEveryCommand: the package doc and the README's
// Layout row for internal/cli name every registered subcommand, so a new
// one cannot land undocumented (the doc named 6 of 16).
func TestPackageDocNamesEveryCommand(t *testing.T) {
	src, err := os.ReadFile("cli.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src[:strings.Index(string(src), "package cli")])
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| `internal/cli`") {
			row = line
		}
	}
	for name := range commands {
		if name == "gate" {
			continue
		}
		if !regexp.MustCompile(`\b` + name + `\b`).MatchString(doc) {
			t.Errorf("the cli package doc does not name the %s command", name)
		}
		if !strings.Contains(row, "`"+name+"`") {
			t.Errorf("README's Layout row for internal/cli does not name `%s`", name)
		}
	}
}

// TestGateHelpListsExitCodes: the gate's help (and the top-level help,
// the gate being the default command) ends with every exit code of
// internal/run/exitcode, number, name and meaning, and nothing else;
// TestAllIsEveryConstant keeps exitcode.All in step with the constants.
func TestGateHelpListsExitCodes(t *testing.T) {
	for _, args := range [][]string{{"gate", "-h"}, {"--profile", "pr", "--help"}, {"help"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			env, out, _ := testEnv(nil)
			if code := Run(context.Background(), env, args); code != 0 {
				t.Fatalf("exit %d", code)
			}
			_, list, ok := strings.Cut(out.String(), "\nexit codes of the gate (docs/exit-codes.md):\n")
			if !ok {
				t.Fatalf("no exit codes in the help:\n%s", out)
			}
			lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
			all := exitcode.All()
			if len(lines) != len(all) {
				t.Errorf("the help lists %d exit codes, exitcode has %d:\n%s", len(lines), len(all), list)
			}
			for i, c := range all {
				re := regexp.MustCompile(fmt.Sprintf(`^ +%d  %s +%s$`, int(c), regexp.QuoteMeta(c.String()), regexp.QuoteMeta(c.Meaning())))
				if i >= len(lines) || !re.MatchString(lines[i]) {
					t.Errorf("exit code %d (%s) is not line %d of the list:\n%s", int(c), c, i+1, list)
				}
			}
		})
	}
}
