package rundir

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// terminalWriters are the two layouts of the terminal result: the
// default lines and --wide's table.
var terminalWriters = map[string]func(io.Writer, *RunResult) error{"WriteTerminal": WriteTerminal, "WriteTable (--wide)": WriteTable}

// A leg that ended early says so, with its reason, in summary.md, the
// terminal (both layouts) and summary.json's leg result; one that took its
// duration says nothing of the kind.
func TestAbortedLegIsMarked(t *testing.T) {
	at := 4.2
	r := &RunResult{
		Profile: &profile.Profile{Name: "p", Transport: "enet", Clients: 4, DurationS: 60},
		Tier:    "pr", Dir: "results/p", Verdict: VerdictFailed,
		Legs: []LegResult{
			{Leg: profile.Leg{ID: "weave", Pattern: "weave"}, Verdict: VerdictFailed, AbortedAtS: &at,
				AbortReason: "tick_hz_min: observed server tick-Hz (min) 15 Hz under 24 Hz for 3 consecutive seconds",
				Checks:      []Check{{Gate: "tick_hz_min", Title: "observed server tick-Hz (min)", Level: gatetable.LevelHard, Status: StatusFail}}},
			{Leg: profile.Leg{ID: "level", Pattern: "level"}, Verdict: VerdictPassed,
				Checks: []Check{{Gate: "load", Title: "load", Level: gatetable.LevelHard, Status: StatusPass}}},
		},
	}
	md := Markdown(r)
	if !strings.Contains(md, "**Ended early** at 4.2 s of 60 s: tick\\_hz\\_min: observed server tick-Hz (min) 15 Hz under 24 Hz") {
		t.Errorf("summary.md does not mark the aborted leg:\n%s", md)
	}
	if strings.Count(md, "Ended early") != 1 {
		t.Errorf("a leg that took its duration is marked too:\n%s", md)
	}
	for name, write := range terminalWriters {
		var term bytes.Buffer
		if err := write(&term, r); err != nil {
			t.Fatal(err)
		}
		out := term.String()
		if !strings.Contains(out, "leg weave: FAILED (ended early at 4.2 s)") || !strings.Contains(out, "  ended early at 4.2 s: tick_hz_min: observed") ||
			strings.Contains(out, "leg level: PASSED (ended") {
			t.Errorf("%s does not mark the aborted leg:\n%s", name, out)
		}
	}
	b, err := json.Marshal(r.Legs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"aborted_at_s":4.2,"abort_reason":"tick_hz_min: observed`) || strings.Count(string(b), "aborted_at_s") != 1 {
		t.Errorf("summary.json legs: %s", b)
	}
}
