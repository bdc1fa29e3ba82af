package runner

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/history"
	"github.com/scalegate/scalegate/internal/reports/trendpage"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// historyDir is the history the session reads and appends to: the
// command line's, else the profile's ("" = none).
func (s *Session) historyDir() string { return cmp.Or(s.HistoryDir, s.Profile.History.Dir) }

// history judges the run's legs against the run history and appends
// their records (unless read-only, interrupted, or run with overrides). A
// history that cannot be read fails the run's history checks as
// unevaluable; one that cannot be written is an error (the records the
// user asked for were not kept).
func (s *Session) history(ctx context.Context, res *rundir.RunResult, meta *rundir.Metadata, base *baseline.Committed) error {
	dir := s.historyDir()
	if dir == "" {
		return nil
	}
	if res.Interrupted {
		res.HistoryNote = fmt.Sprintf("interrupted: nothing judged or appended to %s", dir)
		return nil
	}
	now := time.Now().UTC().Format(time.RFC3339)
	run := history.Run{ID: history.RunID(filepath.Base(res.Dir), meta.Host.Hostname, now), Time: now,
		Commit: commit(meta.Git.Head), Branch: branch(), ProfileHash: meta.ProfileSHA256, Runner: history.ThisRunner(ctx, meta.Host.Cores, meta.Host.Kernel), Class: os.Getenv(history.ClassEnv),
		Accepted: res.BaselineUpdated, Baseline: base}
	records := history.FromRun(res, run)
	past, problems, err := history.Load(ctx, dir, s.Profile.Name)
	for _, p := range problems {
		fmt.Fprintf(s.Stderr, "scalegate: history: warning: %s (line skipped)\n", p)
	}
	res.Checks = append(res.Checks, historyChecks(s.Profile.History, past, records, err)...)
	res.Verdict = gate.RunVerdict(res)
	if err == nil {
		s.writeTrendPage(res, append(past, records...), records)
	}
	return s.appendHistory(dir, records, res)
}

// writeTrendPage writes RUN/history.html: the trend page of this
// profile's series on this run's runner class, this run included. A page
// that cannot be written is a warning: the verdict and the records do not
// depend on it.
func (s *Session) writeTrendPage(res *rundir.RunResult, all, records []history.Record) {
	if len(records) == 0 {
		return
	}
	series := history.Build(all, history.Filter{Profile: s.Profile.Name, RunnerClass: records[0].RunnerClass})
	as := history.AnalyzeAll(series, s.Profile.History.PValue)
	if err := trendpage.Write(filepath.Join(res.Dir, TrendPageFile), as); err != nil {
		fmt.Fprintf(s.Stderr, "scalegate: history: warning: trend page: %v\n", err)
		return
	}
	res.HistoryPage = TrendPageFile
}

// TrendPageFile is the trend page's name in a run directory.
const TrendPageFile = "history.html"

func (s *Session) appendHistory(dir string, records []history.Record, res *rundir.RunResult) error {
	switch {
	case s.HistoryReadOnly:
		res.HistoryNote = fmt.Sprintf("judged against %s (read-only: nothing appended)", dir)
		return nil
	case len(s.Profile.Overrides) > 0:
		res.HistoryNote = fmt.Sprintf("judged against %s; not appended: a run with --set overrides is not the committed profile", dir)
		return nil
	case len(records) == 0:
		res.HistoryNote = fmt.Sprintf("no leg measured anything; nothing appended to %s", dir)
		return nil
	}
	if err := history.Append(dir, records); err != nil {
		res.HistoryNote = fmt.Sprintf("not appended: %v", err)
		return err
	}
	f, _ := history.FileFor(dir, records[0])
	res.HistoryNote = fmt.Sprintf("appended %d record(s) to %s (runner class %s)", len(records), f, history.ClassID(records[0].RunnerClass))
	return nil
}

// historyChecks are one history check per record (leg).
func historyChecks(policy profile.HistoryPolicy, past []history.Record, records []history.Record, loadErr error) []rundir.Check {
	g := history.Gate{MinRuns: policy.MinRuns, PValue: policy.PValue, MaxChangePct: policy.MaxChangePct}.WithDefaults()
	out := make([]rundir.Check, 0, len(records))
	for _, r := range records {
		c := rundir.Check{Gate: gatetable.CheckHistory, Title: "history: " + r.Leg, Level: rundir.LevelHard,
			Threshold: fmt.Sprintf("≤ %g %% worse than the reference level across a change point (p %g)", g.MaxChangePct, g.PValue)}
		switch {
		case loadErr != nil:
			c.Status, c.MeasuredText, c.Detail = rundir.StatusUnevaluable, "unread", loadErr.Error()
		case r.Verdict == string(rundir.VerdictInconclusive):
			c.Level, c.Status, c.MeasuredText = rundir.LevelAdvisory, rundir.StatusPass, "not judged"
			c.Detail = "the leg was inconclusive: its timings are the machine's, so the history does not judge (or count) it"
		default:
			judgeRecord(&c, g, past, r)
		}
		out = append(out, c)
	}
	return out
}

// judgeRecord judges every figure of r against its series in past (the
// same profile, leg and runner class) with r appended. Only figures whose
// gate is hard can fail the check; while the class has fewer than
// MinRuns records the check is advisory and says so.
func judgeRecord(c *rundir.Check, g history.Gate, past []history.Record, r history.Record) {
	all := append(append([]history.Record{}, past...), r)
	series := history.Build(all, history.Filter{Profile: r.Profile, Leg: r.Leg, RunnerClass: r.RunnerClass})
	var hard, soft []string
	runs := 0
	for _, s := range series {
		if len(s.Points) == 0 || s.Points[len(s.Points)-1].ID != r.ID {
			continue
		}
		j := g.Judge(s)
		runs = max(runs, j.Runs)
		if !j.Breach {
			continue
		}
		if s.Points[len(s.Points)-1].Level == rundir.LevelHard {
			hard = append(hard, j.Text(g))
		} else {
			soft = append(soft, j.Text(g)+" (advisory: its gate is not hard)")
		}
	}
	c.Measured = nil
	c.MeasuredText = fmt.Sprintf("%d run(s) of class %s", runs, history.ClassID(r.RunnerClass))
	if runs < g.MinRuns {
		c.Level = rundir.LevelAdvisory
		c.Detail = fmt.Sprintf("advisory: %d of the %d runs of this runner class the gate needs", runs, g.MinRuns)
	}
	c.Status = rundir.StatusPass
	if len(hard) > 0 {
		c.Status = rundir.StatusFail
	}
	c.Detail = rundir.JoinDetail(c.Detail, strings.Join(append(hard, soft...), "; "))
	if c.Detail == "" {
		c.Detail = fmt.Sprintf("no figure moved more than %g %% worse across a change point", g.MaxChangePct)
	}
}

// commit is the checkout's HEAD, else the commit CI names (GITHUB_SHA),
// else "unknown".
func commit(head string) string {
	if head != "" && head != "unknown" {
		return head
	}
	return cmp.Or(os.Getenv("GITHUB_SHA"), "unknown")
}

// branch is the branch CI names (GITHUB_HEAD_REF on a pull request,
// GITHUB_REF_NAME otherwise), else the checkout's ("" when detached).
func branch() string {
	if b := cmp.Or(os.Getenv("GITHUB_HEAD_REF"), os.Getenv("GITHUB_REF_NAME")); b != "" {
		return b
	}
	out, err := exec.Command("git", "rev-parse", "--abbrev-ref", "HEAD").Output()
	if b := strings.TrimSpace(string(out)); err == nil && b != "HEAD" {
		return b
	}
	return ""
}
