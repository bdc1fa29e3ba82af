package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/trace"
)

// tracePrefix marks a replayed-recording pattern, "trace:PATH", PATH
// relative to the profile's directory (the swarm's --pattern trace:PATH).
const tracePrefix = "trace:"

// traceFile is one recording a trace pattern replays, read from the
// profile's directory when the profile is loaded.
type traceFile struct {
	Path string // relative to the profile directory
	Name string // base name
	Data []byte
}

// tracePath returns PATH of a "trace:PATH" pattern.
func tracePath(pattern string) (string, bool) {
	return strings.CutPrefix(pattern, tracePrefix)
}

var legIDUnsafe = regexp.MustCompile(`[^a-z0-9_-]+`)

// traceLegID names a trace leg's artifact directory and baseline key:
// "trace-" and the file (or directory) name without .flit, so
// "trace:traces/sample.flit" is leg "trace-sample".
func traceLegID(p string) string {
	base := strings.TrimSuffix(path.Base(path.Clean(p)), ".flit")
	return "trace-" + strings.Trim(legIDUnsafe.ReplaceAllString(strings.ToLower(base), "-"), "-")
}

// loadTraces reads every trace pattern's files from fsys (the profile's
// directory) and checks each is a replayable FLIT v1 recording, so a bad
// recording is a profile error at load, not a failed leg after the server
// started. Files are kept in the profile and their SHA-256 recorded in the
// canonical profile, so the artifacts say exactly what was replayed.
func (p *Profile) loadTraces(fsys fs.FS, prefix string) []string {
	var errs []string
	for _, pat := range p.Patterns {
		rel, ok := tracePath(pat)
		if !ok {
			continue
		}
		files, err := readTraceFiles(fsys, prefix, rel)
		if err != nil {
			errs = append(errs, fmt.Sprintf("pattern %q: %v", pat, err))
			continue
		}
		if p.traces == nil {
			p.traces, p.TraceSHA256 = map[string][]traceFile{}, map[string]string{}
		}
		p.traces[pat] = files
		for _, f := range files {
			sum := sha256.Sum256(f.Data)
			p.TraceSHA256[f.Path] = hex.EncodeToString(sum[:])
		}
	}
	ids := map[string]string{}
	for _, l := range p.Legs() {
		if other, dup := ids[l.ID]; dup && l.Pattern != other {
			errs = append(errs, fmt.Sprintf("patterns %q and %q would share leg %s: rename one file", other, l.Pattern, l.ID))
		}
		ids[l.ID] = l.Pattern
	}
	return errs
}

// readTraceFiles reads rel (a file, or a directory's *.flit files) from
// fsys and validates each.
func readTraceFiles(fsys fs.FS, prefix, rel string) ([]traceFile, error) {
	clean := path.Clean(rel)
	if !fs.ValidPath(clean) || clean == "." {
		return nil, fmt.Errorf("trace path %q must be relative to the profile directory and inside it", rel)
	}
	st, err := fs.Stat(fsys, clean)
	if err != nil {
		return nil, fmt.Errorf("trace %s%s: %w", prefix, clean, err)
	}
	names := []string{clean}
	if st.IsDir() {
		if names, err = fs.Glob(fsys, path.Join(clean, "*.flit")); err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("trace directory %s%s holds no .flit file: nothing to replay", prefix, clean)
		}
		sort.Strings(names)
	}
	var out []traceFile
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("trace %s%s: %w", prefix, n, err)
		}
		tr, err := trace.Decode(b)
		switch {
		case err != nil:
			return nil, fmt.Errorf("%s%s: %w", prefix, n, err)
		case len(tr.Records) == 0:
			return nil, fmt.Errorf("trace %s%s: no records (header only): nothing to replay", prefix, n)
		case tr.TickRate == 0:
			return nil, fmt.Errorf("trace %s%s: tick rate 0: replay cannot be paced", prefix, n)
		}
		out = append(out, traceFile{Path: n, Name: path.Base(n), Data: b})
	}
	return out, nil
}

// materializeTrace writes the leg's recording into its artifact directory
// (the embedded profiles' recordings exist only inside the binary, and the
// artifacts should hold what was replayed) and returns the swarm's
// --pattern value pointing at it.
func (r *legRun) materializeTrace() (string, error) {
	pat := r.leg.Pattern
	files, ok := r.o.Profile.traces[pat]
	if !ok {
		return "", fmt.Errorf("pattern %s: recording not loaded with the profile", pat)
	}
	rel, _ := tracePath(pat)
	dir := filepath.Join(r.res.Dir, "trace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("trace: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return "", fmt.Errorf("trace: %w", err)
		}
	}
	if len(files) == 1 && files[0].Path == path.Clean(rel) {
		return tracePrefix + filepath.Join(dir, files[0].Name), nil
	}
	return tracePrefix + dir, nil
}

// Thresholds of the trace_replay check.
const (
	// traceAcceptedMin: the server must have accepted this share of the
	// Inputs the swarm sent (loopback; the last few in flight at each
	// disconnect are lost, and the final metrics read may be up to one
	// write interval old).
	traceAcceptedMin = 0.9
	// traceSkippedMax: more records skipped than this share of those
	// replayed, and the swarm was not reproducing the recording.
	traceSkippedMax = 0.05
	// traceCoveredMin: the clients together must have played this share
	// of the recording (or of what they replayed, when the run is shorter
	// than the recording).
	traceCoveredMin = 0.9
)

// traceCheck is the trace_replay check every trace leg carries, hard, with
// no profile declaration: a leg named after a recording must prove the
// recording was played to the server. A hollow pass would be a swarm that
// loaded the file and sent nothing (or another pattern), one fragment
// replayed over and over, a swarm too slow to keep up that skipped most of
// it, or a server that dropped the Inputs; each fails here.
//
// Skipped records are a harness symptom: the swarm's own loop fell more
// than a second behind the recording (the server cannot make it skip), so
// a failure on that ground alone makes the leg inconclusive, like a
// harness-bound leg's timing gates; every other failure stands.
func traceCheck(rep *report.Report, repErr error) Check {
	c := Check{Gate: "trace_replay", Title: "recording replayed to the server", Level: LevelHard,
		Threshold: fmt.Sprintf("every admitted client replayed; ≥ %.0f%% of the recording covered; ≤ %.0f%% skipped; server accepted ≥ %.0f%% of inputs",
			traceCoveredMin*100, traceSkippedMax*100, traceAcceptedMin*100),
		MeasuredText: "—"}
	if rep == nil {
		c.Status, c.Detail = StatusUnevaluable, fmt.Sprintf("no report: %v", repErr)
		return c
	}
	if len(rep.Traces) != 1 {
		c.Status, c.Detail = StatusUnevaluable, fmt.Sprintf("the report carries %d traces entries, want 1: the swarm did not replay the recording", len(rep.Traces))
		return c
	}
	t := rep.Traces[0]
	replayed := float64(t.RecordsReplayed)
	c.Measured = &replayed
	c.MeasuredText = fmt.Sprintf("%d/%d clients replayed %d records (%d of %d covered, %d skipped)",
		t.ClientsReplayed, rep.ClientsConnected, t.RecordsReplayed, t.RecordsCovered, t.Records, t.RecordsSkipped)
	var why []string
	if rep.ClientsConnected == 0 || t.ClientsReplayed < rep.ClientsConnected {
		why = append(why, fmt.Sprintf("%d of %d admitted clients replayed any record", t.ClientsReplayed, rep.ClientsConnected))
	}
	skippedTooMany := float64(t.RecordsSkipped) > traceSkippedMax*replayed
	if skippedTooMany {
		why = append(why, fmt.Sprintf("%d records skipped against %d replayed: the swarm fell behind the recording", t.RecordsSkipped, t.RecordsReplayed))
	}
	if want := traceCoveredMin * float64(min(t.Records, t.RecordsReplayed)); float64(t.RecordsCovered) < want || t.RecordsCovered == 0 {
		why = append(why, fmt.Sprintf("only %d of %d records covered: a fragment was replayed, not the recording", t.RecordsCovered, t.Records))
	}
	if rep.InputsSent < t.RecordsReplayed {
		why = append(why, fmt.Sprintf("inputs_sent %d < records_replayed %d", rep.InputsSent, t.RecordsReplayed))
	}
	st, err := rep.ServerTickParsed()
	switch {
	case err != nil:
		c.Status, c.Detail = StatusUnevaluable, fmt.Sprintf("cannot prove the server took the inputs: %v", err)
		return c
	case st.InputsAccepted == nil:
		c.Status, c.Detail = StatusUnevaluable, "server metrics carry no inputs_accepted: cannot prove the server took the replayed inputs (docs/metrics.md)"
		return c
	default:
		c.MeasuredText += fmt.Sprintf("; server accepted %d of %d inputs", *st.InputsAccepted, rep.InputsSent)
		if float64(*st.InputsAccepted) < traceAcceptedMin*float64(rep.InputsSent) || *st.InputsAccepted == 0 {
			why = append(why, fmt.Sprintf("server accepted %d of the %d inputs sent", *st.InputsAccepted, rep.InputsSent))
		}
	}
	c.Status = StatusPass
	switch {
	case len(why) == 1 && skippedTooMany:
		c.Status, c.Detail = StatusInconclusive, why[0]+": the harness could not keep the recording's pace, so the leg cannot judge the server"
	case len(why) > 0:
		c.Status, c.Detail = StatusFail, strings.Join(why, "; ")
	}
	return c
}
