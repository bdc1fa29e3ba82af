package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// EvaluateReport gates a report made elsewhere — typically the merge of a
// sharded run on Kubernetes or a CI matrix (docs/scale-out.md) — on one
// leg of the profile, launching nothing. The checks are exactly a gate
// run's: the same built-in checks (load happened, every shard merged),
// the declared gates, the baseline, the schema. o.Dir is the run
// directory; the leg's directory gets the timeline.
func EvaluateReport(o Options, leg Leg, path string) *RunResult {
	now := time.Now().UTC().Format(time.RFC3339)
	res := &RunResult{Profile: o.Profile, Tier: EffectiveTier(o.Profile, o.Strict), Strict: o.Strict,
		UpdateBaseline: o.UpdateBaseline, Dir: o.Dir, StartedAt: now}
	lr := LegResult{Leg: leg, Dir: filepath.Join(o.Dir, leg.ID), StartedAt: now}
	r := &legRun{o: o, leg: leg, res: &lr, report: path}
	if err := os.Mkdir(lr.Dir, 0o755); err != nil {
		r.launchFailed(fmt.Errorf("leg directory: %w", err))
	} else {
		r.evaluate()
		lr.Verdict = LegVerdict(lr.Checks)
		if lr.Error != "" && lr.Verdict != VerdictFailed {
			lr.Verdict = VerdictFailed
		}
		if s := lr.Report; s != nil && s.Shards != nil {
			lr.Shards = s.Shards.Count
		}
	}
	res.Legs = []LegResult{lr}
	res.Verdict = RunVerdict(res)
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return res
}

// LegByID finds a leg of the profile; with id "" the profile must have
// exactly one.
func (p *Profile) LegByID(id string) (Leg, error) {
	legs := p.Legs()
	if id == "" {
		if len(legs) == 1 {
			return legs[0], nil
		}
		return Leg{}, fmt.Errorf("profile %s has %d legs (%s): say which one the report is with --leg ID", p.Name, len(legs), legIDs(legs))
	}
	for _, l := range legs {
		if l.ID == id {
			return l, nil
		}
	}
	return Leg{}, fmt.Errorf("profile %s has no leg %q (legs: %s)", p.Name, id, legIDs(legs))
}

func legIDs(legs []Leg) string {
	s := ""
	for i, l := range legs {
		if i > 0 {
			s += ", "
		}
		s += l.ID
	}
	return s
}
