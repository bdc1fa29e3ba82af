// Package compare sets two gate runs side by side.
//
// Per leg and metric it shows run A's figure, run B's, and the delta, as a
// terminal table and as Markdown. It answers a reviewer's first question
// about a number ("compared with what?"), and it refuses to compare legs
// that did not run the same load: a different profile, pattern, client
// count or transport makes every delta meaningless, so such a leg is named
// with the reason instead.
package compare

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Run is one run directory's summary and leg reports.
type Run struct {
	Dir     string
	Summary *rundir.RunResult
	// Reports and ReportErrs are keyed by leg ID; a leg whose report.json
	// is unreadable compares its gate statuses only.
	Reports    map[string]*report.Report
	ReportErrs map[string]error
}

// Load reads summary.json and every leg's report.json of a run directory.
func Load(dir string) (*Run, error) {
	sum, err := rundir.ReadSummary(dir)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	r := &Run{Dir: dir, Summary: sum, Reports: map[string]*report.Report{}, ReportErrs: map[string]error{}}
	for _, l := range sum.Legs {
		rep, err := report.ReadReport(filepath.Join(dir, l.Leg.ID, "report.json"))
		r.Reports[l.Leg.ID], r.ReportErrs[l.Leg.ID] = rep, err
	}
	return r, nil
}

// Row is one metric of one leg in both runs. A nil figure is missing in
// that run (not measured, or its report unreadable), never zero.
type Row struct {
	Metric string
	A, B   *float64
	// AText and BText are set instead of A and B for non-numeric rows
	// (a gate's status).
	AText, BText string
}

// Delta is B − A, nil when either side is missing.
func (r Row) Delta() *float64 {
	if r.A == nil || r.B == nil {
		return nil
	}
	d := *r.B - *r.A
	return &d
}

// DeltaPct is the delta relative to A, nil when A is missing or zero.
func (r Row) DeltaPct() *float64 {
	d := r.Delta()
	if d == nil || *r.A == 0 {
		return nil
	}
	p := *d / *r.A * 100
	return &p
}

// Leg is one leg's comparison: its rows, or why it was refused.
type Leg struct {
	ID      string
	Refused string
	// Note flags differences that do not make the leg incomparable but
	// qualify its deltas (the resolved profiles differ elsewhere).
	Note string
	Rows []Row
}

// Result is the whole comparison.
type Result struct {
	A, B string
	Legs []Leg
}

// Refused lists "leg: reason" for every leg that was not compared.
func (r *Result) Refused() []string {
	var out []string
	for _, l := range r.Legs {
		if l.Refused != "" {
			out = append(out, l.ID+": "+l.Refused)
		}
	}
	return out
}

// How legs are matched (Options.LegsBy).
const (
	// LegsByProfile: the two runs are of one profile; legs match by ID.
	LegsByProfile = "profile"
	// LegsByName: legs match by ID whatever profile each run is of (two
	// sweeps over the same points, e.g. entity-churn against entity-scale);
	// the load must still match on pattern, clients and transport.
	LegsByName = "name"
)

// Options are how a comparison matches legs.
type Options struct {
	// LegsBy is LegsByProfile ("" means it) or LegsByName.
	LegsBy string
}

// Compare matches the runs' legs by ID, in A's order then B's extras; the
// two runs must be of one profile.
func Compare(a, b *Run) *Result { return CompareWith(a, b, Options{}) }

// CompareWith compares as o says.
func CompareWith(a, b *Run, o Options) *Result {
	res := &Result{A: a.Dir, B: b.Dir}
	bLegs := map[string]rundir.LegResult{}
	for _, l := range b.Summary.Legs {
		bLegs[l.Leg.ID] = l
	}
	seen := map[string]bool{}
	for _, la := range a.Summary.Legs {
		seen[la.Leg.ID] = true
		lb, ok := bLegs[la.Leg.ID]
		if !ok {
			res.Legs = append(res.Legs, Leg{ID: la.Leg.ID, Refused: "only in run A"})
			continue
		}
		res.Legs = append(res.Legs, compareLeg(a, b, la, lb, o))
	}
	for _, lb := range b.Summary.Legs {
		if !seen[lb.Leg.ID] {
			res.Legs = append(res.Legs, Leg{ID: lb.Leg.ID, Refused: "only in run B"})
		}
	}
	return res
}

func compareLeg(a, b *Run, la, lb rundir.LegResult, o Options) Leg {
	leg := Leg{ID: la.Leg.ID}
	if why := mismatch(a.Summary.Profile, b.Summary.Profile, la.Leg, lb.Leg, o.LegsBy == LegsByName); why != "" {
		leg.Refused = why
		return leg
	}
	leg.Note = profileNote(a.Summary.Profile, b.Summary.Profile)
	ra, rb := a.Reports[la.Leg.ID], b.Reports[lb.Leg.ID]
	for _, m := range metrics {
		leg.Rows = append(leg.Rows, Row{Metric: m.Title, A: value(m, ra), B: value(m, rb)})
	}
	leg.Rows = append(leg.Rows, ownRows(a.Summary.Profile, b.Summary.Profile, ra, rb)...)
	leg.Rows = append(leg.Rows, Row{Metric: "leg verdict", AText: string(la.Verdict), BText: string(lb.Verdict)})
	leg.Rows = append(leg.Rows, gateRows(la.Checks, lb.Checks)...)
	return leg
}

// mismatch names what makes two legs run different loads ("" if none).
// acrossProfiles (--legs-by name) lets the profiles differ: the legs are
// matched by name, and the note says the profiles differ.
func mismatch(pa, pb *profile.Profile, la, lb profile.Leg, acrossProfiles bool) string {
	var why []string
	if pa.Name != pb.Name && !acrossProfiles {
		why = append(why, fmt.Sprintf("profile %s vs %s (--legs-by name compares the legs of two profiles by name)", pa.Name, pb.Name))
	}
	if la.PatternLabel() != lb.PatternLabel() {
		why = append(why, fmt.Sprintf("pattern %s vs %s", la.PatternLabel(), lb.PatternLabel()))
	}
	// A capacity sweep's legs each run their own client count.
	if ca, cb := pa.ClientsFor(la), pb.ClientsFor(lb); ca != cb {
		why = append(why, fmt.Sprintf("clients %d vs %d", ca, cb))
	}
	if ta, tb := pa.TransportFor(la), pb.TransportFor(lb); ta != tb {
		why = append(why, fmt.Sprintf("transport %s vs %s", ta, tb))
	}
	if len(why) == 0 {
		return ""
	}
	return "different load: " + strings.Join(why, ", ")
}

// profileNote flags resolved profiles that differ beyond the matched keys.
func profileNote(pa, pb *profile.Profile) string {
	ha, errA := profile.Hash(pa)
	hb, errB := profile.Hash(pb)
	if errA != nil || errB != nil || ha == hb {
		return ""
	}
	if pa.Name != pb.Name {
		return fmt.Sprintf("legs matched by name across profiles %s and %s (sha256 %.12s vs %.12s): their worlds and gates may differ; read the deltas with that in mind", pa.Name, pb.Name, ha, hb)
	}
	return fmt.Sprintf("the resolved profiles differ in other settings (sha256 %.12s vs %.12s): read the deltas with that in mind", ha, hb)
}

// gateRows compares each gate's status, A's checks first.
func gateRows(ca, cb []rundir.Check) []Row {
	status := func(cs []rundir.Check) map[string]string {
		m := map[string]string{}
		for _, c := range cs {
			m[c.Gate] = string(c.Status) + " (" + orMissing(c.MeasuredText) + ")"
		}
		return m
	}
	sa, sb := status(ca), status(cb)
	var rows []Row
	seen := map[string]bool{}
	for _, cs := range [][]rundir.Check{ca, cb} {
		for _, c := range cs {
			if seen[c.Gate] {
				continue
			}
			seen[c.Gate] = true
			rows = append(rows, Row{Metric: "gate " + c.Gate, AText: orDash(sa[c.Gate]), BText: orDash(sb[c.Gate])})
		}
	}
	return rows
}

func orMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "not checked"
	}
	return s
}
