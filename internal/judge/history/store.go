package history

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// MaxFileBytes bounds one history file read: a month of one profile is
// a few hundred KB even at a run an hour.
const MaxFileBytes = 64 << 20

// gitattributes asks git to merge history files by keeping both sides'
// lines: two branches that each appended records merge without conflict.
const gitattributes = "*.jsonl merge=union\n"

var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// FileFor is the file a record is appended to: DIR/<profile>/<YYYY-MM>.jsonl
// by the record's time.
func FileFor(dir string, r Record) (string, error) {
	if !profileName.MatchString(r.Profile) {
		return "", fmt.Errorf("profile name %q cannot name a history directory", r.Profile)
	}
	t, err := time.Parse(time.RFC3339, r.Time)
	if err != nil {
		return "", fmt.Errorf("record time %q: %w", r.Time, err)
	}
	return filepath.Join(dir, r.Profile, t.UTC().Format("2006-01")+".jsonl"), nil
}

// Append adds records to their files under dir in one write per file,
// creating what is missing (and DIR/.gitattributes). It never rewrites a
// line: a file whose last line a killed writer left unfinished gets a
// newline first, so that line stays one corrupt line (reported by Load)
// and the new records stay whole.
func Append(dir string, records []Record) error {
	byFile := map[string][]byte{}
	var files []string
	for _, r := range records {
		line, err := Encode(r)
		if err != nil {
			return fmt.Errorf("history record %s: %w", r.ID, err)
		}
		f, err := FileFor(dir, r)
		if err != nil {
			return err
		}
		if _, ok := byFile[f]; !ok {
			files = append(files, f)
		}
		byFile[f] = append(append(byFile[f], line...), '\n')
	}
	if err := ensureAttributes(dir); err != nil {
		return err
	}
	for _, f := range files {
		if err := appendFile(f, byFile[f]); err != nil {
			return err
		}
	}
	return nil
}

func ensureAttributes(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("history %s: %w", dir, err)
	}
	p := filepath.Join(dir, ".gitattributes")
	if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.WriteFile(p, []byte(gitattributes), 0o644); err != nil {
		return fmt.Errorf("history %s: %w", p, err)
	}
	return nil
}

func appendFile(path string, lines []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err == nil && last[0] != '\n' {
			lines = append([]byte{'\n'}, lines...)
		}
	}
	if _, err := f.Write(lines); err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	return f.Close()
}

// Problem is a line Load could not use, with its place.
type Problem struct {
	File string
	Line int
	Why  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Why) }

// Load reads every record of profile under dir ("" for every profile),
// oldest first (by time, then file and line). A line it cannot use is a
// Problem and the rest still load; a record merged in twice is read once.
// A missing dir is an empty history, not an error: the first run of a
// history starts one.
func Load(ctx context.Context, dir, profile string) ([]Record, []Problem, error) {
	files, err := historyFiles(dir, profile)
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	var problems []Problem
	seen := map[string][]byte{}
	for _, f := range files {
		raw, err := boundedfile.ReadFile(ctx, f, MaxFileBytes)
		if err != nil {
			return nil, nil, fmt.Errorf("history: %w", err)
		}
		recs, probs := parseFile(f, raw, seen)
		out, problems = append(out, recs...), append(problems, probs...)
	}
	slices.SortStableFunc(out, func(a, b Record) int { return cmp.Compare(a.Time, b.Time) })
	return out, problems, nil
}

func historyFiles(dir, profile string) ([]string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	pattern := filepath.Join(dir, "*", "*.jsonl")
	if profile != "" {
		if !profileName.MatchString(profile) {
			return nil, fmt.Errorf("profile name %q cannot name a history directory", profile)
		}
		pattern = filepath.Join(dir, profile, "*.jsonl")
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", dir, err)
	}
	slices.Sort(files)
	return files, nil
}

func parseFile(path string, raw []byte, seen map[string][]byte) ([]Record, []Problem) {
	var out []Record
	var problems []Problem
	for i, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n := i + 1
		if why := conflictMarker(line); why != "" {
			problems = append(problems, Problem{path, n, why})
			continue
		}
		r, err := decode(line)
		if err != nil {
			problems = append(problems, Problem{path, n, err.Error()})
			continue
		}
		if prev, ok := seen[r.ID]; ok {
			if !bytes.Equal(prev, line) {
				problems = append(problems, Problem{path, n, fmt.Sprintf("record %s differs from an earlier line with the same id (kept the earlier)", r.ID)})
			}
			continue
		}
		seen[r.ID] = line
		out = append(out, r)
	}
	return out, problems
}

func conflictMarker(line []byte) string {
	for _, m := range []string{"<<<<<<<", "=======", ">>>>>>>", "|||||||"} {
		if strings.HasPrefix(string(line), m) {
			return "a git conflict marker: every record line stands alone, so keep both sides' lines and delete the markers (DIR/.gitattributes with merge=union avoids this)"
		}
	}
	return ""
}

// CheckWritable proves dir can take records before a long run: it makes
// dir and creates and removes a file in it.
func CheckWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("history %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".writable-*")
	if err != nil {
		return fmt.Errorf("history %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
