package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
