// Package rundir defines, writes and reads back a gate run's directory.
//
// It has the types of what the directory holds (summary.json's run and leg
// results and their checks, metadata.json) and the writers of its files
// (summary.md, the terminal table, timeline.csv, players.csv), plus reading
// a finished run back. The HTML report, JUnit and compare read runs through
// it alone.
package rundir

import (
	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// Status is the outcome of one check.
type Status string

// Check outcomes. Unevaluable is its own status so the summary can say
// *why* a gate failed, but it counts exactly like Fail.
const (
	StatusPass         Status = "pass"
	StatusFail         Status = "fail"
	StatusUnevaluable  Status = "unevaluable"
	StatusInconclusive Status = "inconclusive"
	// StatusRecorded: a baseline gate under --update-baseline; the figure
	// becomes the new baseline if the whole run passes.
	StatusRecorded Status = "recorded"
)

// Verdict is the outcome of a leg or a run.
type Verdict string

// Leg and run verdicts.
const (
	VerdictPassed       Verdict = "passed"
	VerdictFailed       Verdict = "failed"
	VerdictInconclusive Verdict = "inconclusive"
	VerdictLaunchFailed Verdict = "launch failure"
	VerdictInterrupted  Verdict = "interrupted"
	VerdictNotRun       Verdict = "not run"
)

// Level names (the gate table's): hard checks fail the run, advisory
// checks never do.
const (
	LevelHard     = gatetable.LevelHard
	LevelAdvisory = gatetable.LevelAdvisory
)

// Check is one evaluated gate of one leg.
type Check struct {
	Gate      string          `json:"gate"`
	Title     string          `json:"title"`
	Level     gatetable.Level `json:"level"`
	Threshold string          `json:"threshold"`
	Measured  *float64        `json:"measured"`
	// MeasuredText is the measured value as shown (also for non-numeric
	// checks such as the transport name).
	MeasuredText string `json:"measured_text"`
	// Baseline is the committed value and delta, for baseline gates.
	Baseline string `json:"baseline,omitempty"`
	Status   Status `json:"status"`
	Detail   string `json:"detail,omitempty"`
	// Phase is the stretch of the run a phase-scoped gate read.
	Phase string `json:"phase,omitempty"`
	// Window is the window the check's figure was read over, when it needs
	// saying (the hold's span, a file's own window, the worst window):
	// gatetable.Gate.WindowRead.
	Window string `json:"window,omitempty"`
}

// Failed reports whether the check fails its leg.
func (c Check) Failed() bool {
	return c.Level == LevelHard && (c.Status == StatusFail || c.Status == StatusUnevaluable)
}

// LogSummary is what a process wrote to its log: bytes and lines, their
// rate over its life, and what the file kept under its cap (the rest left
// out at a marker in the file).
type LogSummary struct {
	Bytes     int64   `json:"bytes"`
	Lines     int64   `json:"lines"`
	BytesPerS float64 `json:"bytes_per_s"`
	LinesPerS float64 `json:"lines_per_s"`
	KeptBytes int64   `json:"kept_bytes"`
	CapBytes  int64   `json:"cap_bytes"`
	Truncated bool    `json:"truncated"`
}

// LegResult is one evaluated leg.
type LegResult struct {
	Leg        profile.Leg `json:"leg"`
	Dir        string      `json:"dir"`
	Port       int         `json:"port"`
	Verdict    Verdict     `json:"verdict"`
	Checks     []Check     `json:"checks"`
	Error      string      `json:"error,omitempty"`
	ServerCmd  string      `json:"server_command,omitempty"`
	SwarmCmd   string      `json:"swarm_command,omitempty"`
	SwarmExit  *int        `json:"swarm_exit,omitempty"`
	ServerExit *int        `json:"server_exit,omitempty"`
	StartedAt  string      `json:"started_at"`
	ElapsedS   float64     `json:"elapsed_s"`
	// AbortedAtS and AbortReason: the leg ended early, this many seconds
	// after its swarm started, and why (a hard gate could no longer pass,
	// every client ended, the server died); absent when it took its
	// duration.
	AbortedAtS  *float64 `json:"aborted_at_s,omitempty"`
	AbortReason string   `json:"abort_reason,omitempty"`
	// Shards is how many swarm processes ran the leg (profile shards > 1);
	// ShardExits their exit statuses, by shard index.
	Shards     int   `json:"shards,omitempty"`
	ShardExits []int `json:"shard_exits,omitempty"`
	// ServerLog is what the server wrote to server.log (absent when it
	// was not started).
	ServerLog *LogSummary `json:"server_log,omitempty"`

	Report *report.Report `json:"-"`
}

// RunResult is a whole gate run.
type RunResult struct {
	Profile        *profile.Profile `json:"profile"`
	Tier           gatetable.Tier   `json:"tier"`
	Strict         bool             `json:"strict"`
	UpdateBaseline bool             `json:"update_baseline"`
	Dir            string           `json:"dir"`
	Legs           []LegResult      `json:"legs"`
	// Checks are the run's checks across legs (gate.RunChecks: the
	// cross-transport wire overhead), evaluated after every leg ran; they
	// count in the run's verdict like a leg's.
	Checks          []Check `json:"checks,omitempty"`
	Verdict         Verdict `json:"verdict"`
	Interrupted     bool    `json:"interrupted"`
	BaselineUpdated bool    `json:"baseline_updated"`
	BaselineNote    string  `json:"baseline_note,omitempty"`
	// HistoryNote says what the run history did: records appended (and
	// where), or why not; HistoryPage is the trend page to link, when one
	// was written beside the history.
	HistoryNote string `json:"history_note,omitempty"`
	HistoryPage string `json:"history_page,omitempty"`
	// Capacity is the client sweep's curves and knees (sweep.clients).
	Capacity []CapacityCurve `json:"capacity,omitempty"`
	// Matrix is a sweep's figures, one row per sweep point (matrix.csv).
	Matrix     *SweepMatrix  `json:"matrix,omitempty"`
	ExitCode   exitcode.Code `json:"exit_code"`
	StartedAt  string        `json:"started_at"`
	FinishedAt string        `json:"finished_at"`
}

// CapacityPoint is one client count of a capacity curve.
type CapacityPoint struct {
	Clients int     `json:"clients"`
	LegID   string  `json:"leg"`
	Verdict Verdict `json:"verdict"`
	// The curve's figures; nil when the leg's report did not carry them.
	TickHzMin     *float64 `json:"tick_hz_min"`
	TickMsP99     *float64 `json:"tick_ms_p99"`
	KBsMean       *float64 `json:"kbs_mean"`
	WorkerDtP99Ms *float64 `json:"worker_dt_p99_ms"`
	// ServiceIntervalP99Ms is the per-client service interval p99, the
	// figure the harness check judges (WorkerDtP99Ms is information).
	ServiceIntervalP99Ms *float64 `json:"service_interval_p99_ms"`
	// CPUPctMean is the server's CPU over its tick window (% of one core);
	// CPUBoundPct the saturation bound it is held to (98 % of each thread
	// its tick may use) and CPUSaturated whether it reached it.
	CPUPctMean   *float64 `json:"cpu_pct_mean"`
	CPUBoundPct  *float64 `json:"cpu_bound_pct,omitempty"`
	CPUSaturated bool     `json:"cpu_saturated,omitempty"`
	// Failed names the checks that failed or could not be evaluated at this
	// count (any level); HarnessBound: the swarm was the limit.
	Failed       []string `json:"failed,omitempty"`
	HarnessBound bool     `json:"harness_bound"`
}

// CapacityCurve is the client sweep of one pattern at one (entity count,
// sim workers) point, in ascending client order, with its knee.
type CapacityCurve struct {
	// Group is the leg ID without its client part ("weave", "weave_e2000").
	Group  string          `json:"group"`
	Points []CapacityPoint `json:"points"`
	// Knee is the first client count at which a check failed (advisory
	// ones included: a capacity profile declares its limits advisory so the
	// run itself passes), or at which the server held its tick rate on a
	// saturated CPU (no headroom left). Nil when neither happened below the
	// harness limit.
	Knee *int `json:"knee"`
	// HarnessLimit is the first count at which the swarm, not the server,
	// was the limit (an inconclusive leg): the curve says nothing beyond
	// it, and it is not a knee.
	HarnessLimit *int `json:"harness_limit"`
	// Verdict is the curve in one sentence.
	Verdict string `json:"verdict"`
}

// SweepMatrix is a sweep read as a whole: one row per leg (a pattern at a
// sweep point), one column per figure, each read through its gatetable
// figure. Axes lists the sweep axes the rows carry, in the leg ID's order.
type SweepMatrix struct {
	Axes    []string       `json:"axes"`
	Columns []MatrixColumn `json:"columns"`
	Rows    []MatrixRow    `json:"rows"`
}

// MatrixColumn is one figure of the matrix.
type MatrixColumn struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	// OwnPhase: a tick phase the profile declares (figures: NAME: {phase:
	// true}), its mean per tick.
	OwnPhase bool `json:"own_phase,omitempty"`
}

// MatrixRow is one leg: its sweep point (its value on each of
// SweepMatrix.Axes, as text), verdict and figures (nil: missing in that
// leg, never 0), in column order.
type MatrixRow struct {
	LegID   string     `json:"leg"`
	Pattern string     `json:"pattern"`
	Point   []string   `json:"point"`
	Verdict Verdict    `json:"verdict"`
	Values  []*float64 `json:"values"`
}

// JoinDetail joins two notes of a check's detail or a leg's error with
// "; ", either of which may be empty.
func JoinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
