package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// TestVersionFrom: a stamped version wins; the dev default gives way only
// to a module version that names a release.
func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		stamped, module, want string
	}{
		{"0.3.1", "v0.2.0", "0.3.1"},
		{devVersion, "v0.2.0", "0.2.0"},
		{devVersion, "v1.4.0-rc.1", "1.4.0-rc.1"},
		{devVersion, "(devel)", devVersion},
		{devVersion, "", devVersion},
		{devVersion, "v0.0.0-20261201152500-aac8288abcde", devVersion},
		{devVersion, "v0.1.1-0.20261201152500-aac8288abcde", devVersion},
		{devVersion, "v0.2.0+dirty", devVersion},
	} {
		if got := versionFrom(tc.stamped, tc.module); got != tc.want {
			t.Errorf("versionFrom(%q, %q) = %q, want %q", tc.stamped, tc.module, got, tc.want)
		}
	}
}

// TestVersionPrintsStamps: what release.sh stamps is what `scalegate
// version` prints, with the transports of the build.
func TestVersionPrintsStamps(t *testing.T) {
	defer func(v, c string) { Version, Commit = v, c }(Version, Commit)
	Version, Commit = "9.8.7", "0123456789abcdef0123456789abcdef01234567"
	var out bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}
	if err := runVersion(context.Background(), env, nil); err != nil {
		t.Fatal(err)
	}
	// This package's tests run a cgo build: ENet must be among them.
	speaks := strings.Join(transport.Available(), ",")
	if !strings.Contains(","+speaks+",", ",enet,") {
		t.Errorf("transports %s: no enet in a cgo build", speaks)
	}
	for _, want := range []string{"scalegate 9.8.7 (go", "\ncommit=0123456789abcdef0123456789abcdef01234567\n", "\ntransports=" + speaks + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
}
