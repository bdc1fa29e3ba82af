package rundir

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// ErrRunDirExists is returned for an --out directory that already exists:
// a run never overwrites another run's evidence.
var ErrRunDirExists = errors.New("run directory already exists (runs never overwrite each other)")

// CreateRunDir creates the run's artifact directory. With out set it must
// not exist; otherwise it is root/<profile>_<UTC timestamp>, suffixed -2,
// -3… should two runs start in the same second.
func CreateRunDir(out, root, profile string, now time.Time) (string, error) {
	// Absolute, so the rerun command lines in the summary work from any
	// directory.
	var err error
	if out != "" {
		if out, err = filepath.Abs(out); err != nil {
			return "", fmt.Errorf("run directory: %w", err)
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	if out != "" {
		if _, err := os.Lstat(out); err == nil {
			return "", fmt.Errorf("%s: %w", out, ErrRunDirExists)
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return "", fmt.Errorf("run directory: %w", err)
		}
		if err := os.Mkdir(out, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return "", fmt.Errorf("%s: %w", out, ErrRunDirExists)
			}
			return "", fmt.Errorf("run directory: %w", err)
		}
		return out, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	base := filepath.Join(root, profile+"_"+now.UTC().Format("20060102T150405Z"))
	for i := 1; i < 100; i++ {
		dir := base
		if i > 1 {
			dir = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("run directory: %w", err)
		}
	}
	return "", fmt.Errorf("%s: %w", base, ErrRunDirExists)
}

// TimelineColumns are timeline.csv's columns, in order: the swarm's
// figures, the host's, then the server's diagnostics of the same second
// (report.TimelineServer). Runs made before a group was added wrote a
// prefix of at least the first seven (TimelineColumnsV1); readers accept
// any such prefix and read cells by column name.
func TimelineColumns() []string { return slices.Clone(timelineColumns) }

// timelineColumns backs TimelineColumns; never handed out itself, so no caller can change it.
var timelineColumns = append(append([]string{"t_s", "connected", "tick_hz_min", "kbs", "rtt_p95_ms", "tick_ms_p99", "rss_kb",
	"worker_dt_p99_ms", "service_interval_mean_ms", "host_other_cores", "host_steal_pct", "host_cpu_pressure_avg10"},
	timelineServerColumns()...), "input_latency_p95_ms")

// TimelineColumnsV1 is the column set of timeline.csv before
// worker_dt_p99_ms and service_interval_mean_ms.
func TimelineColumnsV1() []string { return slices.Clone(timelineColumnsV1) }

// timelineColumnsV1 backs TimelineColumnsV1; never handed out itself, so no caller can change it.
var timelineColumnsV1 = timelineColumns[:7]

func timelineServerColumns() []string {
	var s report.TimelineServer
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// WriteTimelineCSV writes the per-second timeline of a report: connected
// clients, tick-Hz min, payload KB/s, RTT p95, server tick ms p99, RSS,
// the swarm's own health (worker loop dt p99, clients' service interval
// mean), the server's diagnostics (CPU, wire rate per client, slow
// ticks, GC, send queue, slow sends) and the input latency p95 of the
// Inputs acknowledged that second. An empty cell is a figure that was
// not measured that second (not zero).
func WriteTimelineCSV(path string, tl []report.TimelinePoint) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("timeline.csv: %w", err)
	}
	w := csv.NewWriter(bufio.NewWriter(f))
	own := ownColumns(tl)
	head := slices.Clone(timelineColumns)
	for _, k := range own {
		head = append(head, OwnColumnPrefix+k)
	}
	_ = w.Write(head)
	for _, p := range tl {
		var dt *float64
		if p.WorkerDtP99 > 0 { // 0: no worker iteration that second
			dt = &p.WorkerDtP99
		}
		row := []string{fmtCSV(p.TS), strconv.Itoa(p.Connected), optCSV(p.TickHzMin), fmtCSV(p.KBs),
			optCSV(p.RTTP95Ms), optCSV(p.TickMsP99), optIntCSV(p.RSSKB), optCSV(dt), optCSV(p.ServiceIntervalMeanMs),
			optCSV(p.HostOtherCores), optCSV(p.HostStealPct), optCSV(p.HostCPUPressureAvg10)}
		for _, v := range p.TimelineServer.Fields() {
			row = append(row, optCSV(*v.V))
		}
		row = append(row, optCSV(p.InputLatencyP95Ms))
		for _, k := range own {
			var v *float64
			if x, ok := p.Own[k]; ok {
				v = &x
			}
			row = append(row, optCSV(v))
		}
		_ = w.Write(row)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("timeline.csv: %w", err)
	}
	return f.Close()
}

// OwnColumnPrefix starts the timeline.csv column of an own figure's
// statistic ("own:physics_ms.p99"), after the fixed columns.
const OwnColumnPrefix = "own:"

// ownColumns are the own figures' statistics any row has, sorted.
func ownColumns(tl []report.TimelinePoint) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range tl {
		for k := range p.Own {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// WritePlayersCSV writes one row per client of a report: its pattern, how
// its run ended and why, and its own figures. An empty cell was not
// measured for that client (not zero).
func WritePlayersCSV(path string, players []report.Player) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("players.csv: %w", err)
	}
	w := csv.NewWriter(bufio.NewWriter(f))
	_ = w.Write([]string{"index", "pattern", "outcome", "reason", "connect_ms", "snapshots", "kbs",
		"tick_hz", "rtt_p95_ms", "max_snapshot_gap_ms", "updates_per_s", "max_state_gap_ms",
		"state_interval_p50_ms", "state_interval_p95_ms", "state_interval_p99_ms", "input_latency_p95_ms"})
	for _, p := range players {
		var p50, p95, p99 *float64
		if si := p.StateIntervalMs; si != nil {
			p50, p95, p99 = &si.P50, &si.P95, &si.P99
		}
		_ = w.Write([]string{strconv.Itoa(p.Index), p.Pattern, p.Outcome, p.Reason, optCSV(p.ConnectMs),
			strconv.FormatInt(p.Snapshots, 10), optCSV(p.KBs), optCSV(p.TickHz), optCSV(p.RTTP95Ms),
			optCSV(p.MaxSnapshotGapMs), optCSV(p.UpdatesPerS), optCSV(p.MaxStateGapMs),
			optCSV(p50), optCSV(p95), optCSV(p99), optCSV(p.InputLatencyP95Ms)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("players.csv: %w", err)
	}
	return f.Close()
}

func fmtCSV(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func optCSV(v *float64) string {
	if v == nil {
		return ""
	}
	return fmtCSV(*v)
}

func optIntCSV(v *int64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatInt(*v, 10)
}

// Metadata is the run's metadata.json: enough to know what ran, where, on
// which code.
type Metadata struct {
	Profile        string           `json:"profile"`
	ProfileSource  string           `json:"profile_source"`
	ProfileSHA256  string           `json:"profile_sha256"`
	Resolved       *profile.Profile `json:"resolved_profile"`
	Overrides      []string         `json:"overrides"` // the run's --set PATH=VALUE, in order (Resolved carries their values)
	Tier           gatetable.Tier   `json:"tier"`
	Strict         bool             `json:"strict"`
	UpdateBaseline bool             `json:"update_baseline"`
	Git            GitInfo          `json:"git"`
	Host           HostInfo         `json:"host"`
	GoVersion      string           `json:"go_version"`
	Version        string           `json:"scalegate_version"`
	// Commit is the commit a release build was made from ("" for a build
	// from a checkout: git.head says where it came from).
	Commit       string        `json:"scalegate_commit,omitempty"`
	CommandLine  string        `json:"command_line"`
	Legs         []LegCommands `json:"legs"`
	StartedAt    string        `json:"started_at"`
	FinishedAt   string        `json:"finished_at,omitempty"`
	Verdict      Verdict       `json:"verdict"`
	Interrupted  bool          `json:"interrupted"`
	TimingCaveat string        `json:"timing_caveat"`
}

// LegCommands are the exact command lines of a leg.
type LegCommands struct {
	ID     string `json:"id"`
	Port   int    `json:"port"`
	Server string `json:"server"`
	Swarm  string `json:"swarm"`
}

// GitInfo is the checkout the run came from. Dirty is nil when unknown.
type GitInfo struct {
	Head  string `json:"head"`
	Dirty *bool  `json:"dirty"`
	Error string `json:"error,omitempty"`
}

// HostInfo is the machine the run measured.
type HostInfo struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Kernel   string `json:"kernel,omitempty"`
	Cores    int    `json:"cores"`
	MemoryKB int64  `json:"memory_kb"`
}

// Git reads HEAD and whether the working tree is dirty, in dir.
func Git(dir string) GitInfo {
	head, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return GitInfo{Head: "unknown", Error: "git rev-parse HEAD: " + err.Error()}
	}
	g := GitInfo{Head: strings.TrimSpace(string(head))}
	st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		g.Error = "git status: " + err.Error()
		return g
	}
	dirty := len(strings.TrimSpace(string(st))) > 0
	g.Dirty = &dirty
	return g
}

// Host describes this machine.
func Host() HostInfo {
	h := HostInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, Cores: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				h.MemoryKB, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return h
}

// NewMetadata fills the run-independent part of metadata.json.
func NewMetadata(p *profile.Profile, strict, update bool, version, commandLine string) (*Metadata, error) {
	sum, err := profile.Hash(p)
	if err != nil {
		return nil, err
	}
	return &Metadata{Profile: p.Name, ProfileSource: p.Source, ProfileSHA256: sum, Resolved: p, Overrides: append([]string{}, p.Overrides...),
		Tier: p.EffectiveTier(strict), Strict: strict, UpdateBaseline: update, Git: Git("."), Host: Host(),
		GoVersion: runtime.Version(), Version: version, CommandLine: commandLine,
		StartedAt: time.Now().UTC().Format(time.RFC3339), Verdict: VerdictNotRun,
		TimingCaveat: "loopback; the swarm and the server share this machine's cores: tick timings are this machine's, byte metrics are machine-independent"}, nil
}

// Finish records the run's outcome in the metadata.
func (m *Metadata) Finish(r *RunResult) {
	m.FinishedAt, m.Verdict, m.Interrupted = r.FinishedAt, r.Verdict, r.Interrupted
	m.Legs = m.Legs[:0]
	for _, l := range r.Legs {
		m.Legs = append(m.Legs, LegCommands{ID: l.Leg.ID, Port: l.Port, Server: l.ServerCmd, Swarm: l.SwarmCmd})
	}
}
