package cli

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/catalog"
)

// TestInitHelpListsTheSchemasTransports: init's usage line and its
// --transport description list exactly the transports a profile may name
// (the schema's, catalog.Transports), so the help can never again offer
// enet|quic while vet accepts udp, ws and wss too.
func TestInitHelpListsTheSchemasTransports(t *testing.T) {
	want, err := catalog.Transports()
	if err != nil {
		t.Fatal(err)
	}
	env, out, _ := testEnv(nil)
	if code := Run(context.Background(), env, []string{"init", "--help"}); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	help := out.String()
	m := regexp.MustCompile(`\[--transport ([a-z|]+)\]`).FindStringSubmatch(help)
	if m == nil || m[1] != strings.Join(want, "|") {
		t.Errorf("usage offers --transport %v, want %s:\n%s", m, strings.Join(want, "|"), help)
	}
	d := regexp.MustCompile(`(?m)^  -transport string\n\s+(.*)$`).FindStringSubmatch(help)
	if d == nil || !strings.HasPrefix(d[1], strings.Join(want, ", ")+":") {
		t.Errorf("--transport says %v, want it to begin %q", d, strings.Join(want, ", ")+":")
	}
	for _, flag := range []string{"-swarm-command", "-transport-declared", "-delivery-rate-hz", "-metrics-url"} {
		if !strings.Contains(help, "  "+flag+" ") && !strings.Contains(help, "  "+flag+"\n") {
			t.Errorf("the help does not describe %s", flag)
		}
	}
}

// TestInitCommandFlags: --server-command and --swarm-command split the
// same way (words, quotes and backslashes as a shell would, no expansion),
// and each refuses a shell line by its own name.
func TestInitCommandFlags(t *testing.T) {
	for _, tc := range []struct {
		name, line, want, err string
	}{
		{"swarm-command", `./bin/my\ bot --entity-type 'big ship' $HOME`, `["./bin/my bot" "--entity-type" "big ship" "$HOME"]`, ""},
		{"server-command", `srv --config "{config}"`, `["srv" "--config" "{config}"]`, ""},
		{"swarm-command", `./bin/bot | tee log`, "", `--swarm-command "./bin/bot | tee log": "| tee log" from column 11 is a shell operator`},
		{"swarm-command", `./bin/bot 'unterminated`, "", `--swarm-command "./bin/bot 'unterminated"`},
	} {
		got, err := splitCommand(tc.name, tc.line)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("--%s %q: %v, want an error containing %q", tc.name, tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || quoteAll(got) != tc.want {
			t.Errorf("--%s %q: %s %v, want %s", tc.name, tc.line, quoteAll(got), err, tc.want)
		}
	}
}

func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = `"` + w + `"`
	}
	return "[" + strings.Join(q, " ") + "]"
}
