package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestNoReportReason: a leg whose swarm left no usable report says why in
// the order a reader can act on: a report refused, a crash (a panicking
// Go program exits 2 too), the swarm's usage status (docs/swarm-contract.md:
// a bad flag, or a transport it cannot speak), any other status.
func TestNoReportReason(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "swarm.log")
	r := &legRun{o: Options{Profile: &profile.Profile{Transport: "quic"}}, res: &rundir.LegResult{Dir: dir}}
	missing := fmt.Errorf("read report: %w", fs.ErrNotExist)
	for _, tc := range []struct {
		name      string
		code      int
		reportErr error
		crash     string
		want      string
	}{
		{"refused", 1, errors.New("clients_connected is 9, more than the report's 8 clients"), "",
			"swarm exited 1; its report was refused: clients_connected is 9, more than the report's 8 clients; see " + log},
		{"crashed", 2, missing, "panic: runtime error: index out of range",
			"swarm crashed (exit 2): panic: runtime error: index out of range; see " + log},
		{"usage", 2, missing, "", "swarm exited 2 (a usage error, or transport quic unsupported by the swarm); see " + log},
		{"usage, no report looked at", 2, nil, "", "swarm exited 2 (a usage error, or transport quic unsupported by the swarm); see " + log},
		{"gate failed", 1, missing, "", "swarm exited 1 without a report; see " + log},
		{"killed", -1, nil, "", "swarm exited -1 without a report; see " + log},
	} {
		r.reportErr = tc.reportErr
		if got := r.noReportReason(tc.code, tc.crash); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
