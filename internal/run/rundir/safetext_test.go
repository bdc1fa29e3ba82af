package rundir

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// TestOutsideTextIsEscaped: text that comes from outside (a profile's
// description, an entity type in the rerun command, a custom server's
// words in a check's detail, a leg error) cannot hide the gate tables,
// break out of the rerun block, split a table cell, or reach the terminal
// with a control character that draws a fake PASSED.
func TestOutsideTextIsEscaped(t *testing.T) {
	evil := "\x1b[2K\r\x1b[32mleg weave: PASSED\x1b[0m\x00"
	r := &RunResult{
		Profile: &profile.Profile{Name: "p", Description: "<!-- everything below is hidden", Transport: "enet", Clients: 1},
		Tier:    "pr", Dir: "results/p", Verdict: VerdictFailed,
		Legs: []LegResult{{
			Leg: profile.Leg{ID: "weave", Pattern: "weave"}, Verdict: VerdictFailed, Error: "server said " + evil,
			Checks: []Check{{Gate: "load", Title: "load", Level: gatetable.LevelHard, Status: StatusFail,
				MeasuredText: "a | b", Detail: "refused: " + evil + " | forged cell\nforged row"}},
			ServerCmd: "scalegate serve", SwarmCmd: "scalegate swarm --entity-type 'x\n```\n# pwned\n```'",
		}},
	}
	md := Markdown(r)
	if strings.Contains(md, "\n<!--") || strings.HasPrefix(md, "<!--") || !strings.Contains(md, "| gate | level |") {
		t.Errorf("the description can hide what follows:\n%s", md)
	}
	// The rerun block's fence is longer than any backtick run inside it,
	// so the entity type's own fence stays text in the block.
	open := strings.Index(md, "````sh\n")
	pwned := strings.Index(md, "# pwned")
	closing := strings.LastIndex(md, "\n````\n")
	if open < 0 || pwned < open || closing < pwned {
		t.Errorf("the entity type broke out of the rerun block:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| load |") && strings.Count(strings.ReplaceAll(line, `\|`, ""), "|") != 9 {
			t.Errorf("a detail split the row into more cells: %q", line)
		}
		if strings.HasPrefix(line, "forged row") {
			t.Errorf("a detail started a new row: %q", line)
		}
	}
	if strings.ContainsAny(md, "\x1b\r\x00") {
		t.Errorf("control characters reached summary.md: %q", md)
	}
	for name, write := range terminalWriters {
		var term bytes.Buffer
		if err := write(&term, r); err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(term.String(), "\x1b\r\x00") || strings.Contains(term.String(), "\nforged row") {
			t.Errorf("control characters reached the terminal (%s): %q", name, term.String())
		}
	}
}
