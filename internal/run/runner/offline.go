package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// EvaluateReport gates a report made elsewhere — typically the merge of a
// sharded run on Kubernetes or a CI matrix (docs/scale-out.md) — on one
// leg of the profile, launching nothing. The checks and the verdict are
// exactly a gate run's: the same built-in checks (load happened, every
// shard merged), the declared gates, the baseline, the schema. o.Dir is
// the run directory; the leg's directory gets the timeline.
func EvaluateReport(o Options, leg profile.Leg, path string) *rundir.RunResult {
	res := newResult(o)
	lr := rundir.LegResult{Leg: leg, Dir: filepath.Join(o.Dir, leg.ID), StartedAt: res.StartedAt}
	r := &legRun{o: o, leg: leg, res: &lr, report: path}
	if err := os.Mkdir(lr.Dir, 0o755); err != nil {
		r.notRun(fmt.Errorf("leg directory: %w", err))
	} else {
		r.evaluate(context.Background())
		if s := lr.Report; s != nil && s.Shards != nil {
			lr.Shards = s.Shards.Count
		}
	}
	r.decide()
	res.Legs = []rundir.LegResult{lr}
	return finishResult(res)
}
