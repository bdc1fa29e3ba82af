package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scalegate/scalegate/internal/load/swarmcmd"
	"github.com/scalegate/scalegate/internal/reports/merge"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
)

// shardLead is how far ahead of the launch the shards' shared start
// instant is set: long enough for N processes (each a guardian plus a
// swarm) to start on a loaded machine, so none starts late.
func shardLead(shards int) time.Duration {
	if shards <= 1 {
		return 0
	}
	return time.Second + time.Duration(shards)*200*time.Millisecond
}

// shardReport is where shard i of a leg writes its own report.
func (r *legRun) shardReport(i int) string {
	return filepath.Join(r.res.Dir, fmt.Sprintf("report-shard%d.json", i))
}

// swarmSpecs is the leg's swarm: one process, or with shards > 1 one
// process per shard, as each would run on its own machine — same flags,
// plus --shard I/N, a shared --start-at and its own report and log. Their
// reports are merged into the leg's report.json (mergeShards).
func (r *legRun) swarmSpecs(port int) ([]launcher.Spec, error) {
	n := r.o.Profile.Shards
	if n <= 1 {
		s, err := r.swarmSpec(port, swarmcmd.Options{})
		return []launcher.Spec{s}, err
	}
	r.res.Shards = n
	r.startAt = time.Now().Add(shardLead(n))
	at := r.startAt.UTC().Format(time.RFC3339Nano)
	specs := make([]launcher.Spec, n)
	for i := range specs {
		s, err := r.swarmSpec(port, swarmcmd.Options{Report: r.shardReport(i), Shard: strconv.Itoa(i) + "/" + strconv.Itoa(n), StartAt: at})
		if err != nil {
			return nil, err
		}
		s.Name = fmt.Sprintf("swarm shard %d/%d", i, n)
		s.LogPath = filepath.Join(r.res.Dir, fmt.Sprintf("swarm-shard%d.log", i))
		specs[i] = s
	}
	return specs, nil
}

// swarmCommandLine is how a user reruns the leg's swarm: the one command,
// or every shard in the background on a fresh shared instant, then the
// merge.
func swarmCommandLine(specs []launcher.Spec, self, merged string) string {
	if len(specs) == 1 {
		return launcher.CommandLine(specs[0].Path, specs[0].Args)
	}
	var b strings.Builder
	b.WriteString("T=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)\n")
	var reports []string
	for _, s := range specs {
		args := append([]string(nil), s.Args...)
		for j := range args {
			if args[j] == "--start-at" && j+1 < len(args) {
				args[j+1] = "T_PLACEHOLDER"
			}
			if args[j] == "--json" && j+1 < len(args) {
				reports = append(reports, args[j+1])
			}
		}
		line := launcher.CommandLine(s.Path, args)
		b.WriteString(strings.Replace(line, "T_PLACEHOLDER", `"$T"`, 1) + " &\n")
	}
	b.WriteString("wait\n")
	b.WriteString(launcher.CommandLine(self, append([]string{"merge", "--out", merged}, reports...)))
	return b.String()
}

// startAll starts every swarm; if one cannot start, those started are
// stopped.
func startAll(ctx context.Context, specs []launcher.Spec) ([]*launcher.Process, error) {
	var procs []*launcher.Process
	for _, s := range specs {
		p, err := launcher.Start(ctx, s)
		if err != nil {
			stopAll(procs)
			return nil, err
		}
		procs = append(procs, p)
	}
	return procs, nil
}

// stopAll stops the processes at once (each in stages), not one grace
// period after another.
func stopAll(procs []*launcher.Process) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.Stop)
	}
	wg.Wait()
}

// swarmExit is the leg's swarm exit status: the single swarm's, or the
// first non-zero shard's (each shard's is in shard_exits), and merges the
// shards' reports into the leg's report.
func (r *legRun) swarmExit(swarms []*launcher.Process) int {
	if len(swarms) == 1 {
		return swarms[0].ExitCode()
	}
	code := 0
	for _, s := range swarms {
		c := s.ExitCode()
		r.res.ShardExits = append(r.res.ShardExits, c)
		if code == 0 {
			code = c
		}
	}
	r.mergeShards()
	return code
}

// mergeShards merges the shard reports that exist into the leg's report.
// A shard without a readable report is left out — the merge then says it
// is missing, and the leg cannot pass — with the reason in the merged
// report's warnings. When no shard left a report, none is written: the
// leg then has no report, like a single swarm that wrote none.
func (r *legRun) mergeShards() {
	var in []merge.Input
	var notes []string
	for i := range r.res.Shards {
		path := r.shardReport(i)
		rep, err := report.ReadReportContext(context.Background(), path)
		if err != nil {
			why := err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				why = "no report"
			}
			notes = append(notes, fmt.Sprintf("shard %d/%d: %s (exit %d); see %s", i, r.res.Shards, why,
				r.res.ShardExits[i], filepath.Join(r.res.Dir, fmt.Sprintf("swarm-shard%d.log", i))))
			continue
		}
		in = append(in, merge.Input{Name: path, Report: rep})
	}
	if len(in) == 0 {
		return
	}
	m, err := merge.Reports(in)
	if err != nil {
		r.artifactErr(err)
		return
	}
	m.Warnings = append(m.Warnings, notes...)
	if err := report.WriteReportAtomic(r.report, m); err != nil {
		r.artifactErr(err)
		// A stale report.json must not be read as this merge.
		_ = os.Remove(r.report)
	}
}
