package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/load/trace"
)

// loadTraces reads every trace pattern's files from fsys (the profile's
// directory) and checks each is a replayable FLIT v1 recording, so a bad
// recording is a profile error at load, not a failed leg after the server
// started. Files are kept in the profile and their SHA-256 recorded in the
// canonical profile, so the artifacts say exactly what was replayed.
func loadTraces(p *profile.Profile, fsys fs.FS, prefix string) []string {
	var errs []string
	budget := trace.NewSetBudget("the trace files of profile " + p.Name)
	for _, pat := range p.Patterns {
		rel, ok := profile.TracePath(pat)
		if !ok {
			continue
		}
		files, err := readTraceFiles(fsys, prefix, rel, budget)
		if err != nil {
			errs = append(errs, fmt.Sprintf("pattern %q: %v", pat, err))
			continue
		}
		if n := minClients(p); len(files) > n {
			errs = append(errs, fmt.Sprintf("pattern %q: %d recordings but the leg runs %d clients: each recording is replayed by its own clients (client i replays recording i mod %d), so %d would never be played; add clients or remove recordings",
				pat, len(files), n, len(files), len(files)-n))
			continue
		}
		if p.Traces == nil {
			p.Traces, p.TraceSHA256 = map[string][]profile.TraceFile{}, map[string]string{}
		}
		p.Traces[pat] = files
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
func readTraceFiles(fsys fs.FS, prefix, rel string, budget *boundedfile.Budget) ([]profile.TraceFile, error) {
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
	var out []profile.TraceFile
	for _, n := range names {
		// Bounded: a recording in a repository may be a symlink to
		// /dev/zero, a FIFO or huge; refused by bytes read, per file and
		// for the profile's recordings together.
		b, err := budget.ReadFS(context.Background(), fsys, n, trace.MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("trace %s%s: %w", prefix, n, err)
		}
		tr, err := trace.Decode(b)
		if err == nil {
			// The replay's own rule: vet refuses exactly what the swarm
			// and trace inspect refuse.
			err = tr.Validate()
		}
		if err != nil {
			return nil, fmt.Errorf("trace %s%s: %w", prefix, n, err)
		}
		out = append(out, profile.TraceFile{Path: n, Name: path.Base(n), Data: b})
	}
	return out, nil
}

// minClients is the fewest clients any leg of the profile runs (a client
// sweep's smallest point, else clients).
func minClients(p *profile.Profile) int {
	n := p.Clients
	if p.Sweep != nil && len(p.Sweep.Clients) > 0 {
		n = slices.Min(p.Sweep.Clients)
	}
	return n
}
