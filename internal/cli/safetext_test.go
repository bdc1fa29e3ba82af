package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// fakePassed is what a hostile server sends to draw a green PASSED over
// the line the terminal shows.
const fakePassed = "\x1b[2K\r\x1b[32mPASSED\x1b[0m\x00"

// noControl fails when out holds a control character other than newline.
func noControl(t *testing.T, what, out string) {
	t.Helper()
	for _, c := range []byte(out) {
		if c < 0x20 && c != '\n' || c == 0x7f {
			t.Fatalf("%s holds control byte %#x: %q", what, c, out)
		}
	}
	if !strings.Contains(out, `\x1b[2K\r\x1b[32mPASSED`) {
		t.Fatalf("%s does not show the escaped text: %q", what, out)
	}
}

// TestSwarmSummaryEscapesServerText: refuse reasons, loss reasons and
// warnings come from the server or from files; the summary shows them
// escaped.
func TestSwarmSummaryEscapesServerText(t *testing.T) {
	r := &report.Report{Transport: "enet", Pattern: "weave", Clients: 2,
		RefusedByReason: map[string]int{fakePassed: 1}, DisconnectedByReason: map[string]int{},
		NeverConnectedByReason: map[string]int{}, Warnings: []string{"server said " + fakePassed},
		ServerMetricsError: fakePassed}
	var b bytes.Buffer
	swarmcli.WriteSummary(&b, &swarm.Result{Report: r})
	noControl(t, "the swarm summary", b.String())
}

// TestAdminAnswerEscaped: the admin answer is the server's text.
func TestAdminAnswerEscaped(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	srv, err := admin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(func(admin.Command) []string { return []string{"peers 0 " + fakePassed} })
	t.Cleanup(func() { srv.Close() })
	code, out, stderr := adminCmd(t, sock, "status")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	noControl(t, "the admin answer", out)
	srv2 := filepath.Join(t.TempDir(), "admin2.sock")
	s2, err := admin.Listen(srv2)
	if err != nil {
		t.Fatal(err)
	}
	s2.Serve(func(admin.Command) []string { return admin.Errorf("refused %s", fakePassed) })
	t.Cleanup(func() { s2.Close() })
	code, _, stderr = adminCmd(t, srv2, "status")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	noControl(t, "the admin error", stderr)
}
