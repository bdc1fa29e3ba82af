package catalog

import (
	"bytes"
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

func TestValidateRejects(t *testing.T) {
	b, _ := os.ReadFile("testdata/report.json")
	for _, tc := range []struct{ name, from, to, want string }{
		{"transport not a string", `"transport": "enet"`, `"transport": 7`, "transport"},
		{"negative clients", `"clients": 8`, `"clients": -1`, "clients"},
	} {
		bad := bytes.Replace(b, []byte(tc.from), []byte(tc.to), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%s: fixture lacks %s", tc.name, tc.from)
		}
		err := ValidateJSON("#Report", "report.json", bad)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}
