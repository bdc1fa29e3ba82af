package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTransportsAreWhatVetAccepts: every transport Transports lists vets
// in a profile, and a name it does not list is refused: the list a help
// text shows (scalegate init --transport) is the schema's, not a copy.
func TestTransportsAreWhatVetAccepts(t *testing.T) {
	names, err := Transports()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"enet", "quic", "udp", "ws", "wss"} {
		if !slices.Contains(names, want) {
			t.Errorf("Transports() = %v lacks %s", names, want)
		}
	}
	const src = "name: \"t\"\ndescription: \"d\"\ntransport: %q\nclients: 4\nduration_s: 2\npatterns: [\"weave\"]\nbaselined: false\n"
	for _, tr := range append(names, "tcp", "ENET") {
		dir := t.TempDir()
		writeProfile(t, dir, "t", fmt.Sprintf(src, tr))
		cat, err := NewCatalog(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = cat.Load("t")
		listed := slices.Contains(names, tr)
		if listed && err != nil {
			t.Errorf("transport %s is listed but refused: %s", tr, FormatError(err))
		}
		if !listed && (err == nil || !strings.Contains(FormatError(err), "transport")) {
			t.Errorf("transport %s is not listed, yet vet says %v", tr, err)
		}
	}
	names[0] = "changed"
	if again, _ := Transports(); again[0] == "changed" {
		t.Error("Transports hands out its cache: a caller changed the next caller's answer")
	}
}

// TestDocsNameEveryTransport: the profile reference and the transports
// page name every transport vet accepts, so a new one is not a transport
// a reader cannot find.
func TestDocsNameEveryTransport(t *testing.T) {
	names, err := Transports()
	if err != nil {
		t.Fatal(err)
	}
	for page, quote := range map[string]string{"profiles.md": `"`, "transports.md": "`"} {
		raw, err := os.ReadFile(filepath.Join("../../../docs", page))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !strings.Contains(string(raw), quote+n+quote) {
				t.Errorf("docs/%s does not name the transport %s%s%s", page, quote, n, quote)
			}
		}
	}
}
