// Package history keeps a run history in git and judges a run against it.
//
// A record is one leg of one run: its commit, its runner class and every
// gate figure's value. Records are JSON lines appended to
// DIR/<profile>/<YYYY-MM>.jsonl and never rewritten, so concurrent
// branches merge (DIR/.gitattributes asks git for a union merge) and a
// history needs no server. docs/history.md is the format's contract.
package history

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// SchemaVersion is the record format this code writes. A reader keeps
// reading every version it knows; a line of a newer version is reported
// and skipped, never guessed at.
const SchemaVersion = 1

// Better says which way a figure improves.
type Better string

// The two directions.
const (
	Lower  Better = "lower"
	Higher Better = "higher"
)

// Record is one leg of one run.
type Record struct {
	SchemaVersion int `json:"schema_version"`
	// ID is unique per record (the run's id and the leg), so a record
	// merged in twice is read once.
	ID string `json:"id"`
	// Time is when the run finished, RFC 3339 in UTC.
	Time string `json:"time"`
	// Commit is the checkout's HEAD; Branch its branch ("" when detached
	// and not told by CI).
	Commit string `json:"commit"`
	Branch string `json:"branch,omitempty"`
	// Profile and ProfileHash name the profile run and its resolved
	// content (profile.Hash): a record of an edited profile says so.
	Profile     string `json:"profile"`
	ProfileHash string `json:"profile_hash"`
	// Leg is the leg's baseline key ("pr/weave").
	Leg string `json:"leg"`
	// RunnerClass names the machine class (Runner.Class): records of
	// different classes are never compared.
	RunnerClass string `json:"runner_class"`
	Runner      Runner `json:"runner"`
	// Verdict is the leg's verdict in its run. Inconclusive legs (a host
	// busy with other work, a harness-bound swarm) are kept but not
	// judged: their timings are the machine's, not the code's.
	Verdict string `json:"verdict"`
	// Accepted marks a run that updated the baseline: the level the
	// history gate measures creep from starts here.
	Accepted bool `json:"accepted,omitempty"`
	// Figures maps a figure's name to its value in this leg.
	Figures map[string]Value `json:"figures"`
}

// Value is one figure of a record.
type Value struct {
	// Value is the figure, or the median of N runs.
	Value float64 `json:"value"`
	// Sigma and N: under --runs N, σ̂ from the MAD of the N runs and N.
	Sigma *float64 `json:"sigma,omitempty"`
	N     int      `json:"n,omitempty"`
	Unit  string   `json:"unit,omitempty"`
	// Better is which way the figure improves.
	Better Better `json:"better"`
	// Level is the figure's gate level in the run ("hard", "advisory");
	// "" for a figure recorded without a gate (the bandwidth figures of a
	// profile that does not baseline).
	Level gatetable.Level `json:"level,omitempty"`
	// Threshold is the gate's bound and Baseline the committed baseline's
	// reference, when there were any: the trend page draws them.
	Threshold *float64 `json:"threshold,omitempty"`
	Baseline  *float64 `json:"baseline,omitempty"`
}

// Encode renders r as one line (without the newline).
func Encode(r Record) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// decode parses one line; an error says what is wrong with it.
func decode(line []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return Record{}, fmt.Errorf("not a record: %w", err)
	}
	if r.SchemaVersion != SchemaVersion {
		return Record{}, fmt.Errorf("schema_version %d: this scalegate reads version %d", r.SchemaVersion, SchemaVersion)
	}
	return r, r.check()
}

func (r Record) check() error {
	for field, v := range map[string]string{"id": r.ID, "time": r.Time, "commit": r.Commit, "profile": r.Profile, "leg": r.Leg, "runner_class": r.RunnerClass} {
		if v == "" {
			return fmt.Errorf("%s is empty", field)
		}
	}
	for name, v := range r.Figures {
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return fmt.Errorf("figure %s: %v is not a number", name, v.Value)
		}
		if v.Better != Lower && v.Better != Higher {
			return fmt.Errorf("figure %s: better %q, want %q or %q", name, v.Better, Lower, Higher)
		}
	}
	return nil
}
