// Package junit writes a gate run as JUnit XML.
//
// JUnit XML is the report format nearly every CI system other than GitHub
// Actions reads natively. The run becomes one testsuite per leg, one
// testcase per gate check. A hard check that failed or could not be
// evaluated is a failure carrying measured vs threshold; an inconclusive
// leg's checks are skipped with the reason (the harness was the limit, so
// nothing it measured is evidence either way); an advisory check never
// fails its testcase but says what it measured.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Suites is the document root.
type Suites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one leg.
type Suite struct {
	Name       string     `xml:"name,attr"`
	Tests      int        `xml:"tests,attr"`
	Failures   int        `xml:"failures,attr"`
	Errors     int        `xml:"errors,attr"`
	Skipped    int        `xml:"skipped,attr"`
	Time       string     `xml:"time,attr"`
	Timestamp  string     `xml:"timestamp,attr,omitempty"`
	Properties []Property `xml:"properties>property"`
	Cases      []Case     `xml:"testcase"`
}

// Property is a name/value pair of a suite.
type Property struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// Case is one gate check (or the leg itself when it did not run).
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      string   `xml:"time,attr"`
	Failure   *Outcome `xml:"failure"`
	Error     *Outcome `xml:"error"`
	Skipped   *Outcome `xml:"skipped"`
	SystemOut string   `xml:"system-out,omitempty"`
}

// Outcome is a failure, error or skip with its message.
type Outcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// Build turns a run into the JUnit document.
func Build(r *rundir.RunResult) *Suites {
	s := &Suites{Name: "scalegate " + r.Profile.Name}
	var total float64
	for _, l := range r.Legs {
		suite := buildSuite(r, l)
		s.Tests += suite.Tests
		s.Failures += suite.Failures
		s.Errors += suite.Errors
		s.Skipped += suite.Skipped
		total += l.ElapsedS
		s.Suites = append(s.Suites, suite)
	}
	s.Time = seconds(total)
	return s
}

func buildSuite(r *rundir.RunResult, l rundir.LegResult) Suite {
	su := Suite{Name: r.Profile.Name + "/" + l.Leg.ID, Time: seconds(l.ElapsedS), Timestamp: l.StartedAt,
		Properties: []Property{
			{"verdict", string(l.Verdict)}, {"pattern", l.Leg.PatternLabel()}, {"baseline_key", l.Leg.BaselineKey},
			{"transport", r.Profile.TransportFor(l.Leg)}, {"clients", fmt.Sprint(r.Profile.ClientsFor(l.Leg))}, {"tier", string(r.Tier)},
		}}
	if l.AbortedAtS != nil {
		// An early end is the first thing a reader of a red leg needs: when
		// and why the load stopped (the check it names fails as its own case).
		su.Properties = append(su.Properties, Property{"aborted_at_s", fmt.Sprintf("%.1f", *l.AbortedAtS)},
			Property{"abort_reason", l.AbortReason})
	}
	class := "scalegate." + r.Profile.Name + "." + l.Leg.ID
	skipWhy := ""
	if l.Verdict == rundir.VerdictInconclusive {
		skipWhy = "leg inconclusive: " + inconclusiveReason(l)
	}
	if l.Error != "" && l.Verdict != rundir.VerdictPassed {
		// What stopped the leg (launch failure, server died, interrupted)
		// is its own testcase: the checks alone would not say it.
		su.Cases = append(su.Cases, Case{Name: "leg " + l.Leg.ID, Classname: class, Time: "0",
			Error: &Outcome{Message: string(l.Verdict) + ": " + l.Error, Type: string(l.Verdict)}})
	}
	for _, c := range l.Checks {
		su.Cases = append(su.Cases, checkCase(class, c, skipWhy))
	}
	for _, c := range su.Cases {
		su.Tests++
		switch {
		case c.Failure != nil:
			su.Failures++
		case c.Error != nil:
			su.Errors++
		case c.Skipped != nil:
			su.Skipped++
		}
	}
	return su
}

// inconclusiveReason collects why the leg's inconclusive checks were.
func inconclusiveReason(l rundir.LegResult) string {
	var why []string
	for _, c := range l.Checks {
		if c.Status == rundir.StatusInconclusive {
			why = append(why, fmt.Sprintf("%s: measured %s, threshold %s%s", c.Title, c.MeasuredText, c.Threshold, detail(c)))
		}
	}
	if len(why) == 0 {
		return "no reason recorded"
	}
	return strings.Join(why, "; ")
}

func detail(c rundir.Check) string {
	if c.Detail == "" {
		return ""
	}
	return " (" + c.Detail + ")"
}

// checkCase maps one check to its testcase.
func checkCase(class string, c rundir.Check, skipWhy string) Case {
	tc := Case{Name: c.Gate + ": " + c.Title, Classname: class, Time: "0"}
	measured := fmt.Sprintf("measured %s, threshold %s", orMissing(c.MeasuredText), c.Threshold)
	if c.Baseline != "" {
		measured += ", baseline " + c.Baseline
	}
	switch {
	case skipWhy != "":
		tc.Skipped = &Outcome{Message: skipWhy}
		tc.SystemOut = string(c.Level) + " " + string(c.Status) + ": " + measured
	case c.Failed():
		tc.Failure = &Outcome{Message: measured, Type: string(c.Status), Text: c.Detail}
	case c.Status == rundir.StatusInconclusive:
		tc.Skipped = &Outcome{Message: "inconclusive: " + measured + detail(c)}
	default:
		tc.SystemOut = string(c.Level) + " " + string(c.Status) + ": " + measured + detail(c)
	}
	return tc
}

func orMissing(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}

func seconds(s float64) string { return fmt.Sprintf("%.3f", s) }

// Write writes the run's JUnit XML to w.
func Write(w io.Writer, r *rundir.RunResult) error {
	b, err := xml.MarshalIndent(Build(r), "", "  ")
	if err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	return nil
}

// WriteFile writes the run's JUnit XML to path atomically.
func WriteFile(path string, r *rundir.RunResult) error {
	var sb strings.Builder
	if err := Write(&sb, r); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(path, []byte(sb.String())); err != nil {
		return fmt.Errorf("junit: %w", err)
	}
	return nil
}
