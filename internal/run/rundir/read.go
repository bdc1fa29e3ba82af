package rundir

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// ReadSummary reads a finished run's summary.json from its directory. A
// file that is not a scalegate summary (no profile) is an error, naming it.
func ReadSummary(dir string) (*RunResult, error) {
	path := filepath.Join(dir, "summary.json")
	var sum RunResult
	if err := readJSON(path, &sum); err != nil {
		return nil, err
	}
	if sum.Profile == nil {
		return nil, fmt.Errorf("%s: no \"profile\" (not a scalegate summary)", path)
	}
	return &sum, nil
}

// ReadMetadata reads a run's metadata.json from its directory.
func ReadMetadata(dir string) (*Metadata, error) {
	var m Metadata
	if err := readJSON(filepath.Join(dir, "metadata.json"), &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// maxSummaryBytes bounds summary.json and metadata.json (a sweep's run
// with every check of every leg is a few hundred KB).
const maxSummaryBytes = 16 << 20

// readJSON reads a run directory's JSON file, bounded: the directory may be
// a downloaded CI artifact, and a FIFO or /dev/zero in it must not hang or
// exhaust the reader.
func readJSON(path string, v any) error {
	b, err := boundedfile.ReadFile(context.Background(), path, maxSummaryBytes)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
