package catalog

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
)

// The fixtures are a real smoke run's report and metrics file.
func TestValidateRealFiles(t *testing.T) {
	for _, tc := range []struct{ def, file string }{
		{"#Report", "testdata/report.json"},
		{"#ServerTick", "testdata/server_metrics.json"},
	} {
		b, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateJSON(tc.def, tc.file, b); err != nil {
			t.Errorf("%s: %v", tc.file, err)
		}
	}
}

// An aborted report with harness errors, as the swarm writes one, is valid.
// The fields are set on the decoded fixture (a real report carries a
// harness_errors block already; spliced text would name it twice).
func TestValidateAbortedReport(t *testing.T) {
	b, err := os.ReadFile("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	var add map[string]any
	if err := json.Unmarshal([]byte(`{"aborted_at_s": 4.2, "abort_reason": "tick_hz_min: 3 s under 24 Hz", "abort_gate": "tick_hz_min",
		"harness_errors": {"socket": 3, "dial": 0, "fd_exhausted": 3, "first_error": "socket: too many open files",
		"fd_limit": {"soft": 256, "hard": 256, "soft_before": 256, "needed": 1064, "clients": 1000, "per_client": 1, "spare": 64}}}`), &add); err != nil {
		t.Fatal(err)
	}
	maps.Copy(rep, add)
	out, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON("#Report", "report.json", out); err != nil {
		t.Fatal(err)
	}
}

func TestValidateRejects(t *testing.T) {
	b, _ := os.ReadFile("testdata/report.json")
	for _, tc := range []struct{ name, from, to, want string }{
		{"transport not a string", `"transport": "enet"`, `"transport": 7`, "transport"},
		{"negative clients", `"clients": 8`, `"clients": -1`, "clients"},
		{"abort time without reason", `"clients": 8`, `"clients": 8, "aborted_at_s": 4.2`, "abort_reason"},
		{"negative abort time", `"clients": 8`, `"clients": 8, "aborted_at_s": -1, "abort_reason": "x"`, "aborted_at_s"},
		{"negative harness count", `"socket": 0`, `"socket": -2`, "socket"},
	} {
		bad := bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%s: fixture lacks %s", tc.name, tc.from)
		}
		err := ValidateJSON("#Report", "report.json", bad)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "conflicting") {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
