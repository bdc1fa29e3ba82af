package rundir

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/olekukonko/tablewriter"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// WriteTable prints one row per check of every leg to w.
func WriteTable(w io.Writer, r *RunResult) error {
	if err := writeChecksTable(w, r); err != nil {
		return err
	}
	for _, l := range r.Legs {
		writeLegLines(w, l)
	}
	for _, c := range r.Checks {
		if c.Status != StatusPass && c.Detail != "" {
			fmt.Fprintf(w, "run check %s: %s: %s\n", c.Title, strings.ToUpper(string(c.Status)), c.Detail)
		}
	}
	for _, c := range r.Capacity {
		fmt.Fprintf(w, "capacity %s: %s\n", safetext.Terminal(c.Group), safetext.Terminal(c.Verdict))
	}
	fmt.Fprintf(w, "scalegate: profile %s (%s tier): %s; artifacts in %s\n", safetext.Terminal(r.Profile.Name), r.Tier, strings.ToUpper(string(r.Verdict)), safetext.Terminal(r.Dir))
	if r.HistoryNote != "" {
		fmt.Fprintf(w, "scalegate: history: %s\n", safetext.Terminal(r.HistoryNote))
	}
	if r.BaselineNote != "" {
		fmt.Fprintf(w, "scalegate: %s\n", safetext.Terminal(r.BaselineNote))
	}
	return nil
}

// writeChecksTable renders the table of WriteTable: the run checks, then
// every leg's checks (a leg without any gets one row with its verdict).
func writeChecksTable(w io.Writer, r *RunResult) error {
	t := tablewriter.NewWriter(w)
	t.Header("leg", "gate", "level", "threshold", "measured", "baseline", "status")
	for _, c := range r.Checks {
		if err := t.Append("(run)", c.Title, c.Level, c.Threshold, c.MeasuredText, c.Baseline, statusText(c)); err != nil {
			return err
		}
	}
	for _, l := range r.Legs {
		if len(l.Checks) == 0 {
			_ = t.Append(l.Leg.ID, "(leg)", "", "", "", "", string(l.Verdict))
		}
		for _, c := range l.Checks {
			if err := t.Append(term(l.Leg.ID, c.Title, string(c.Level), c.Threshold, c.MeasuredText, c.Baseline, statusText(c))...); err != nil {
				return err
			}
		}
	}
	return t.Render()
}

// writeLegLines prints a leg's lines under the table: its verdict, then
// an early end, a capped server.log and the details of its checks that
// need one.
func writeLegLines(w io.Writer, l LegResult) {
	line := fmt.Sprintf("leg %s: %s", safetext.Terminal(l.Leg.ID), strings.ToUpper(string(l.Verdict)))
	if l.Shards > 1 {
		line += fmt.Sprintf(" (%d swarm shards, merged)", l.Shards)
	}
	if l.AbortedAtS != nil {
		line += fmt.Sprintf(" (ended early at %.1f s)", *l.AbortedAtS)
	}
	if l.Error != "" {
		line += " — " + safetext.Terminal(l.Error)
	}
	fmt.Fprintln(w, line)
	if l.AbortedAtS != nil {
		fmt.Fprintf(w, "  ended early at %.1f s: %s\n", *l.AbortedAtS, safetext.Terminal(l.AbortReason))
	}
	if s := l.ServerLog; s != nil && s.Truncated {
		fmt.Fprintf(w, "  server.log capped at %s: the server wrote %s (%s lines/s); %s left out\n",
			byteSize(float64(s.CapBytes)), byteSize(float64(s.Bytes)), gatetable.FormatNumber(math.Round(s.LinesPerS)), byteSize(float64(s.Bytes-s.KeptBytes)))
	}
	for _, c := range l.Checks {
		if c.Detail != "" && (c.Status != StatusPass || c.Level == LevelHard && c.Gate == gatetable.CheckBaselineKBs) {
			fmt.Fprintf(w, "  %s: %s\n", safetext.Terminal(c.Title), safetext.Terminal(c.Detail))
		}
	}
}

// term escapes a table row's cells for the terminal: outside text (a
// server's words in a detail, a leg name) cannot move the cursor or
// recolour a line into a fake PASSED.
func term(cells ...string) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		out[i] = safetext.Terminal(c)
	}
	return out
}

func statusText(c Check) string {
	s := string(c.Status)
	if c.Level == LevelAdvisory && (c.Status == StatusFail || c.Status == StatusUnevaluable) {
		s += " (advisory)"
	}
	return s
}

// Markdown renders the run summary: a verdict line, then per leg every
// gate (threshold, measured, baseline delta, hard/advisory, verdict) and the
// command lines that rerun that leg's server and swarm.
func Markdown(r *RunResult) string {
	var b strings.Builder
	icon := map[Verdict]string{VerdictPassed: "✅", VerdictFailed: "❌", VerdictInconclusive: "⚠️",
		VerdictLaunchFailed: "💥", VerdictInterrupted: "⏹️", VerdictNotRun: "⏭️"}
	b.WriteString(headerMarkdown(r, icon))
	b.WriteString(capacityMarkdown(r.Capacity))
	b.WriteString(matrixMarkdown(r.Matrix))
	if len(r.Checks) > 0 {
		b.WriteString("### run checks (across legs)\n\n")
		b.WriteString(checksMarkdown(r.Checks))
	}
	for _, l := range r.Legs {
		b.WriteString(legMarkdown(l, r.Profile.DurationS, icon))
	}
	return b.String()
}

// headerMarkdown is the summary's top: the verdict heading, the profile's
// description and run line, then the notes on overrides, an interrupt and
// the baseline.
func headerMarkdown(r *RunResult, icon map[Verdict]string) string {
	var b strings.Builder
	// Every string that comes from outside (the profile's text, a server's
	// words, paths) goes through safetext for its place: a description
	// starting "<!--" must not hide the tables, a fence in an entity type
	// must not break out of the rerun block.
	fmt.Fprintf(&b, "## scalegate: profile %s — %s %s\n\n", safetext.MarkdownInlineCode(r.Profile.Name), icon[r.Verdict], strings.ToUpper(string(r.Verdict)))
	fmt.Fprintf(&b, "%s  \n", safetext.MarkdownText(r.Profile.Description))
	warm := ""
	if r.Profile.WarmupS > 0 {
		// Windowed figures leave the first warmup_s of the hold out: said
		// on the page, since a figure means something else without it.
		warm = fmt.Sprintf(" · warm-up %s s excluded", gatetable.FormatNumber(r.Profile.WarmupS))
	}
	fmt.Fprintf(&b, "tier **%s**%s · transport **%s** · %d clients · %s s per leg%s · artifacts %s\n\n",
		safetext.MarkdownCell(string(r.Tier)), map[bool]string{true: " (--strict)", false: ""}[r.Strict], safetext.MarkdownCell(strings.Join(r.Profile.TransportNames(), ", ")), r.Profile.Clients,
		gatetable.FormatNumber(r.Profile.DurationS), warm, safetext.MarkdownInlineCode(r.Dir))
	if len(r.Profile.Overrides) > 0 {
		var sets []string
		for _, o := range r.Profile.Overrides {
			sets = append(sets, safetext.MarkdownInlineCode("--set "+o))
		}
		fmt.Fprintf(&b, "**Overrides** %s: this run is not the committed profile, and the baseline is never updated from it.\n\n", strings.Join(sets, " "))
	}
	if r.Interrupted {
		b.WriteString("**Interrupted**: the run was stopped before it finished; legs below are partial.\n\n")
	}
	if r.HistoryNote != "" {
		fmt.Fprintf(&b, "History: %s\n\n", safetext.MarkdownText(r.HistoryNote))
	}
	if r.HistoryPage != "" {
		fmt.Fprintf(&b, "Trend page: %s (beside summary.md in the run directory)\n\n", safetext.MarkdownInlineCode(r.HistoryPage))
	}
	if r.BaselineNote != "" {
		fmt.Fprintf(&b, "Baseline: %s\n\n", safetext.MarkdownText(r.BaselineNote))
	}
	return b.String()
}

// legMarkdown is one leg's section: heading and verdict, its shards, error
// and early end (of a durationS-second run), its checks, diagnostics and
// server log, and the command lines that rerun it.
func legMarkdown(l LegResult, durationS float64, icon map[Verdict]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### leg %s (%s) — %s %s\n\n", safetext.MarkdownInlineCode(l.Leg.ID), safetext.MarkdownCell(l.Leg.PatternLabel()), icon[l.Verdict], l.Verdict)
	if l.Shards > 1 {
		fmt.Fprintf(&b, "%d swarm shards ran this leg, each its own process; the gates read their merged report (exits %v).\n\n", l.Shards, l.ShardExits)
	}
	if l.Error != "" {
		fmt.Fprintf(&b, "> %s\n\n", safetext.MarkdownText(l.Error))
	}
	if l.AbortedAtS != nil {
		fmt.Fprintf(&b, "**Ended early** at %.1f s of %s s: %s\n\n", *l.AbortedAtS, gatetable.FormatNumber(durationS), safetext.MarkdownText(l.AbortReason))
	}
	if len(l.Checks) > 0 {
		b.WriteString(checksMarkdown(l.Checks))
	}
	b.WriteString(diagnosticsMarkdown(l))
	b.WriteString(snapshotsMarkdown(l))
	b.WriteString(linkMarkdown(l))
	b.WriteString(serverLogMarkdown(l.ServerLog))
	if l.ServerCmd != "" {
		fmt.Fprintf(&b, "Rerun this leg:\n\n%s\n", safetext.MarkdownCode("sh", l.ServerCmd+" &\n"+l.SwarmCmd))
		if strings.Contains(l.SwarmCmd, "/go-build") {
			b.WriteString("(This run came from `go run`: its binary lives in the Go build cache and may be gone; substitute your own `scalegate` build for that path.)\n\n")
		}
	}
	return b.String()
}

// diagLabels are the diagnostics line's short labels, by figure name.
var diagLabels = map[string]string{
	gatetable.CPUPctMean.Name:   "CPU mean",
	gatetable.CPUPctMax.Name:    "busiest second",
	gatetable.SlowTicks.Name:    "slow ticks",
	gatetable.GCPauseP99.Name:   "GC pause p99",
	gatetable.GCCount.Name:      "GC cycles",
	gatetable.SendQueueMax.Name: "send queue max",
	gatetable.SlowSends.Name:    "slow sends",
}

// diagnosticsMarkdown is a leg's server diagnostics in one line (why a
// tick was slow: gatetable.Diagnostics()), from the metrics block the swarm
// captured while its clients were connected. A figure the server did not
// write reads "missing"; a leg without a report has no line.
func diagnosticsMarkdown(l LegResult) string {
	if l.Report == nil {
		return ""
	}
	m := gatetable.FromReport(l.Report)
	if err := m.TickErr(); err != nil {
		return fmt.Sprintf("Server diagnostics: missing (%s).\n\n", safetext.MarkdownText(err.Error()))
	}
	parts := make([]string, 0, len(gatetable.Diagnostics()))
	read := 0
	for _, f := range gatetable.Diagnostics() {
		if _, err := f.Read(m); err == nil {
			read++
		}
		parts = append(parts, diagLabels[f.Name]+" "+figureText(f, m))
	}
	if read == 0 {
		// A server that exports none of them (most custom servers) gets
		// one short line, not seven "missing" on every run.
		return "Server diagnostics: none exported (CPU, slow ticks, GC, send queue: docs/metrics.md, \"Why a tick was slow\").\n\n"
	}
	if h := m.Hold(); h != nil && m.OverHold("cpu_pct_mean") {
		return fmt.Sprintf("Server diagnostics (over the hold, t=%.1f–%.1f s: CPU %% of one core and its busiest second, slow ticks, GC, slow sends%s): %s\n\n",
			h.FromS, h.ToS, queueWindow(m), strings.Join(parts, " · "))
	}
	window := "the tick window"
	if w, err := m.Tick("window_s"); err == nil {
		window = fmt.Sprintf("the %s s tick window", gatetable.FormatNumber(w))
	}
	return fmt.Sprintf("Server diagnostics (CPU %% of one core over %s; slow ticks, GC and slow sends since the server started; send queue over its last metrics write): %s\n\n",
		window, strings.Join(parts, " · "))
}

// linkMarkdown is what the state updates cost on the link where the swarm
// can know it (raw UDP: each message one datagram, report
// downstream_link_kbs_per_client), beside their payload. A team's server
// reports its own wire figure, which may or may not count the headers.
func linkMarkdown(l LegResult) string {
	if l.Report == nil || l.Report.DownstreamLinkKBsPerClient == nil || l.Report.DownstreamKBsPerClient == nil {
		return ""
	}
	f := gatetable.FormatNumber
	link, pay := l.Report.DownstreamLinkKBsPerClient, l.Report.DownstreamKBsPerClient
	return fmt.Sprintf("On the link (as the bots received it, IP and UDP headers included): %s KB/s per client (max %s), of which payload %s.\n\n",
		f(link.Mean), f(link.Max), f(pay.Mean))
}

// snapshotsMarkdown is a leg's snapshot bytes in one line: per snapshot,
// per entity of the full and the delta snapshots, and the share of deltas
// (a swarm that never acknowledges shows 0 % here). Legs whose bodies were
// not decoded have none.
func snapshotsMarkdown(l LegResult) string {
	if l.Report == nil || l.Report.SnapshotsDecoded == 0 {
		return ""
	}
	m := gatetable.FromReport(l.Report)
	parts := make([]string, 0, 5)
	for _, f := range []gatetable.Figure{gatetable.BytesPerSnapshot, gatetable.BytesPerEntity, gatetable.BytesPerEntityFull, gatetable.BytesPerEntityDelta} {
		parts = append(parts, f.Title+" "+figureText(f, m))
	}
	share := "missing"
	if v, err := gatetable.DeltaShare.Read(m); err == nil {
		share = fmt.Sprintf("%.1f %%", 100*v)
	}
	parts = append(parts, "delta share "+share)
	if v, err := gatetable.IdleFloor.Read(m); err == nil {
		parts = append(parts, fmt.Sprintf("idle floor (every bot flying %s) %s KB/s per client", gatetable.StationaryPattern, gatetable.FormatNumber(v)))
	}
	return "Snapshots: " + strings.Join(parts, " · ") + ".\n\n"
}

// queueWindow says what the send queue's mark of a block over the hold
// covers: the hold when the server honoured the reset at its start.
func queueWindow(m *gatetable.Metrics) string {
	if m.OverHold("send_queue_max") {
		return ", the send queue's deepest"
	}
	return "; the send queue over the server's last metrics write (it did not reset its mark at the hold's start)"
}

// serverLogMarkdown is a leg's server.log in one line: what the server
// wrote, at what rate, and what the cap left out.
func serverLogMarkdown(s *LogSummary) string {
	if s == nil {
		return ""
	}
	line := fmt.Sprintf("Server log (`server.log`): %s written, %s lines (%s lines/s, %s/s)",
		byteSize(float64(s.Bytes)), gatetable.FormatNumber(float64(s.Lines)), gatetable.FormatNumber(math.Round(s.LinesPerS)), byteSize(s.BytesPerS))
	if s.Truncated {
		line += fmt.Sprintf("; **capped** at %s (`server.log_max_mb`): %s left out, marked in the file", byteSize(float64(s.CapBytes)), byteSize(float64(s.Bytes-s.KeptBytes)))
	}
	return line + ".\n\n"
}

// ServerLogText is serverLogMarkdown's line as plain text (report.html).
func ServerLogText(s *LogSummary) string {
	if s == nil {
		return ""
	}
	line := fmt.Sprintf("server.log: %s written, %s lines (%s lines/s, %s/s)",
		byteSize(float64(s.Bytes)), gatetable.FormatNumber(float64(s.Lines)), gatetable.FormatNumber(math.Round(s.LinesPerS)), byteSize(s.BytesPerS))
	if s.Truncated {
		line += fmt.Sprintf("; capped at %s (server.log_max_mb): %s left out, marked in the file", byteSize(float64(s.CapBytes)), byteSize(float64(s.Bytes-s.KeptBytes)))
	}
	return line
}

// byteSize shows a byte count in decimal units (1 MB = 10^6 B), as every
// rate of the project does.
func byteSize(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1f GB", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1f MB", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1f kB", v/1e3)
	}
	return fmt.Sprintf("%.0f B", v)
}

// figureText is a figure's value with its unit, or "missing".
func figureText(f gatetable.Figure, m *gatetable.Metrics) string {
	v, err := f.Read(m)
	if err != nil {
		return "missing"
	}
	s := gatetable.FormatNumber(v)
	switch f.Unit {
	case "":
	case "%":
		s += " %"
	default:
		s += " " + f.Unit
	}
	return s
}

// checksMarkdown is the gate table of a leg (or of the run's checks
// across legs).
func checksMarkdown(checks []Check) string {
	var b strings.Builder
	b.WriteString("| gate | level | threshold | measured | window | baseline Δ | verdict | detail |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, c := range checks {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", safetext.MarkdownCell(c.Title), c.Level, safetext.MarkdownCell(c.Threshold),
			safetext.MarkdownCell(c.MeasuredText), safetext.MarkdownCell(c.Window), safetext.MarkdownCell(c.Baseline), statusText(c), safetext.MarkdownCell(c.Detail))
	}
	b.WriteString("\n")
	return b.String()
}

// AppendFile appends text to path (the $GITHUB_STEP_SUMMARY contract).
func AppendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("summary %s: %w", path, err)
	}
	if _, err := io.WriteString(f, text); err != nil {
		f.Close()
		return fmt.Errorf("summary %s: %w", path, err)
	}
	return f.Close()
}

// capacityMarkdown renders the curves for summary.md.
func capacityMarkdown(curves []CapacityCurve) string {
	var b strings.Builder
	for _, c := range curves {
		fmt.Fprintf(&b, "### capacity %s — %s\n\n", safetext.MarkdownInlineCode(c.Group), safetext.MarkdownCell(c.Verdict))
		b.WriteString("| clients | tick-Hz min | tick-ms p99 | KB/s per client | server CPU % mean | swarm dt p99 ms | service interval p99 ms | leg | failed |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
		for _, p := range c.Points {
			mark := ""
			if c.Knee != nil && p.Clients == *c.Knee {
				mark = " ◀ knee"
			}
			if c.HarnessLimit != nil && p.Clients == *c.HarnessLimit {
				mark = " ◀ harness limit"
			}
			cpu := optNum(p.CPUPctMean)
			if p.CPUSaturated {
				cpu += " (saturated)"
			}
			fmt.Fprintf(&b, "| %d%s | %s | %s | %s | %s | %s | %s | %s (%s) | %s |\n", p.Clients, mark, optNum(p.TickHzMin), optNum(p.TickMsP99),
				optNum(p.KBsMean), cpu, optNum(p.WorkerDtP99Ms), optNum(p.ServiceIntervalP99Ms), safetext.MarkdownCell(p.LegID), p.Verdict, safetext.MarkdownCell(strings.Join(p.Failed, ", ")))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func optNum(v *float64) string {
	if v == nil {
		return "—"
	}
	return gatetable.FormatNumber(*v)
}
