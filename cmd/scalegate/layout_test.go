package main

import (
	"bufio"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

// layoutRow is one row of README.md's Layout table: where (one or more
// paths, each a package or a folder) and the rooms under it (packages,
// relative to the one where path; empty when where is itself the place).
type layoutRow struct {
	where []string
	rooms []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readLayout parses the Layout table of README.md.
func readLayout(t *testing.T) []layoutRow {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []layoutRow
	in, header := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "## Layout":
			in = true
		case !in:
		case strings.HasPrefix(line, "## "):
			return rows
		case strings.HasPrefix(line, "|"):
			if header < 2 { // the header row and its rule
				header++
				continue
			}
			cells := strings.Split(line, "|")
			if len(cells) < 4 {
				t.Fatalf("README.md Layout: row %q has fewer than three cells", line)
			}
			rows = append(rows, layoutRow{where: ticks(cells[1]), rooms: ticks(cells[2])})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

func ticks(cell string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		out = append(out, strings.TrimSuffix(m[1], "/"))
	}
	return out
}

// packageDirs lists every directory of the module holding non-test Go
// files (what `go list ./...` lists), as slash paths from the root.
func packageDirs(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != repoRoot && (strings.HasPrefix(name, ".") || name == "testdata" || name == "results") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			rel, _ := filepath.Rel(repoRoot, filepath.Dir(path))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// TestLayoutTableMatchesPackages: README.md's Layout table names every
// package on disk (as a place of its own, or as a room of a group, a room
// covering the packages below it), and nothing it names is gone. A new
// package without a row, or a row left for a moved one, fails here.
func TestLayoutTableMatchesPackages(t *testing.T) {
	rows := readLayout(t)
	if len(rows) == 0 {
		t.Fatal("README.md has no Layout table")
	}
	var places []string
	for _, r := range rows {
		for _, w := range r.where {
			if len(r.rooms) == 0 {
				places = append(places, w)
				continue
			}
			for _, room := range r.rooms {
				places = append(places, w+"/"+room)
			}
		}
	}
	for _, p := range places {
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			t.Errorf("README.md Layout names %s, which does not exist", p)
		}
	}
	for _, pkg := range packageDirs(t) {
		covered := slices.ContainsFunc(places, func(p string) bool { return pkg == p || strings.HasPrefix(pkg, p+"/") })
		if !covered {
			t.Errorf("package %s has no row or room in README.md's Layout table", pkg)
		}
	}
}

// TestLayoutGroupsAreFolders: every folder directly under internal/ is a
// row of the table (a group or a place), so a new folder is placed on
// purpose, not left flat beside the groups.
func TestLayoutGroupsAreFolders(t *testing.T) {
	named := map[string]bool{}
	for _, r := range readLayout(t) {
		for _, w := range r.where {
			named[w] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(repoRoot, "internal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && !named["internal/"+e.Name()] {
			t.Errorf("internal/%s is not a row of README.md's Layout table", e.Name())
		}
	}
}

// maxSynopsisWords bounds a package doc's first sentence (net/http's is 8
// words): it is what `go doc` and the package list show, so it names the
// package's job and stops.
const maxSynopsisWords = 15

// TestPackageDocsSayTheirJobShortly: every package has a doc comment whose
// first sentence is at most maxSynopsisWords words.
func TestPackageDocsSayTheirJobShortly(t *testing.T) {
	for _, dir := range packageDirs(t) {
		text := packageDoc(t, filepath.Join(repoRoot, dir))
		if text == "" {
			t.Errorf("%s: no package doc comment", dir)
			continue
		}
		syn := (&doc.Package{}).Synopsis(text)
		if n := len(strings.Fields(syn)); n > maxSynopsisWords {
			t.Errorf("%s: the doc's first sentence is %d words (at most %d): %q", dir, n, maxSynopsisWords, syn)
		}
	}
}

// packageDoc is the package comment of the package in dir ("" when none).
func packageDoc(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			return af.Doc.Text()
		}
	}
	return ""
}

// TestDependencyBoundaries: packages that must stay light import none of
// the heavy ones. The public bot SDK is what a team's bot binary links:
// it must not carry the profile language, the reference server, the gate
// runner or the catalog. The runner reads the reference server's
// Prometheus series through their names alone (server/exposition), and
// the JSON contract holds the relay's schedule as data (relay/impairment).
func TestDependencyBoundaries(t *testing.T) {
	const mod = "github.com/scalegate/scalegate/"
	for _, tc := range []struct {
		pkg    string
		forbid []string
	}{
		{"bot", []string{"internal/config/profile", "internal/reference/server", "internal/run/runner", "internal/config/catalog"}},
		{"internal/run/runner", []string{"internal/reference/server"}},
		{"internal/reports/report", []string{"internal/load/relay"}},
	} {
		out, err := exec.Command("go", "list", "-deps", mod+tc.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tc.pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, f := range tc.forbid {
			if slices.Contains(deps, mod+f) {
				t.Errorf("%s depends on %s", tc.pkg, f)
			}
		}
	}
}
