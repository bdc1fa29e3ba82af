// Package impairment is the relay's schedule and counts, as data.
//
// A schedule is the phases of a bad link (loss, delay, jitter, reordering,
// duplication, a rate limit), each relative to the run's start; Stats is
// what the relay did to the traffic. The swarm report carries both, so
// they live here, apart from the relay's sockets: the JSON contract
// imports these types without the relay.
package impairment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// Directions a phase applies to. Down is server → client, up is
// client → server.
const (
	DirDown = "down"
	DirUp   = "up"
	DirBoth = "both"
)

// MaxScheduleS bounds where a phase may end, in seconds from the run's
// start: 7 days, longer than any gate run. Past about 292 years a time
// would overflow (a phase "applied" never, with negative times), so a
// bound is needed; this one is far below that and says so.
const MaxScheduleS = 7 * 24 * 3600

// DefaultPhaseName names a schedule's only unnamed phase; the report's
// stretches around it are "before" and "after".
const DefaultPhaseName = "during"

// DefaultQueueMs bounds the rate limiter's queue when a phase does not: a
// datagram that would wait longer than this behind the limit is
// tail-dropped, like a router with a 200 ms buffer.
const DefaultQueueMs = 200

// Settings is what one direction of a link suffers during a phase. The
// zero value is a clean link.
type Settings struct {
	// Loss is the fraction of datagrams dropped, 0..1.
	Loss float64 `json:"loss"`
	// BurstLen is the mean length of a run of consecutive drops
	// (Gilbert-Elliott); ≤ 1 means independent drops.
	BurstLen float64 `json:"burst_len"`
	// DelayMs is the one-way delay added to every datagram.
	DelayMs float64 `json:"delay_ms"`
	// JitterMs spreads the delay uniformly over ±JitterMs (never below 0).
	JitterMs float64 `json:"jitter_ms"`
	// Reorder lets jittered datagrams overtake each other; false keeps
	// the order they arrived in.
	Reorder bool `json:"reorder"`
	// Duplicate is the fraction of datagrams delivered twice, 0..1.
	Duplicate float64 `json:"duplicate"`
	// RateKbps limits the direction to this many kbit/s (0 = no limit).
	RateKbps float64 `json:"rate_kbps"`
	// QueueMs bounds the wait behind the rate limit (0 = DefaultQueueMs).
	QueueMs float64 `json:"queue_ms"`
}

// Phase is one stretch of the schedule, relative to the start of the run.
type Phase struct {
	// Name labels the phase in the report ("during" when unnamed).
	Name      string  `json:"name"`
	StartS    float64 `json:"start_s"`
	DurationS float64 `json:"duration_s"`
	// Direction is down, up or both (the default).
	Direction string `json:"direction"`
	Settings
}

// Start is the phase's start as a duration from the run's start.
func (p *Phase) Start() time.Duration { return seconds(p.StartS) }

// End is the phase's end as a duration from the run's start.
func (p *Phase) End() time.Duration { return seconds(p.StartS + p.DurationS) }

// Applies reports whether the phase impairs direction dir (DirDown/DirUp).
func (p *Phase) Applies(dir string) bool { return p.Direction == DirBoth || p.Direction == dir }

// Impairs reports whether the settings change anything at all.
func (s *Settings) Impairs() bool {
	return s.Loss > 0 || s.DelayMs > 0 || s.JitterMs > 0 || s.Duplicate > 0 || s.RateKbps > 0
}

// Schedule is the phases of a run in start order; outside them the link
// is clean.
type Schedule []Phase

// Normalize fills defaults (direction both, names), sorts by start and
// validates. Every problem is reported at once, naming the phase.
func (s Schedule) Normalize() (Schedule, error) {
	out := append(Schedule(nil), s...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartS < out[j].StartS })
	unnamed := 0
	for i := range out {
		if out[i].Direction == "" {
			out[i].Direction = DirBoth
		}
		if out[i].Name == "" {
			unnamed++
			out[i].Name = DefaultPhaseName
			if unnamed > 1 {
				out[i].Name = fmt.Sprintf("%s-%d", DefaultPhaseName, unnamed)
			}
		}
	}
	return out, out.Validate()
}

// Validate checks a normalized schedule: every problem at once, naming
// the phase. The relay refuses a schedule that does not validate.
func (s Schedule) Validate() error {
	var errs []error
	seen := map[string]bool{}
	for i := range s {
		p := &s[i]
		var why []string
		if seen[p.Name] {
			why = append(why, "name used twice (each phase is one row of the report)")
		}
		seen[p.Name] = true
		why = append(why, p.problems()...)
		if i > 0 && p.StartS < s[i-1].StartS+s[i-1].DurationS {
			why = append(why, fmt.Sprintf("starts at %gs, before phase %q ends at %gs: phases must not overlap", p.StartS, s[i-1].Name, s[i-1].StartS+s[i-1].DurationS))
		}
		for _, w := range why {
			errs = append(errs, fmt.Errorf("phase %q: %s", p.Name, w))
		}
	}
	return errors.Join(errs...)
}

// problems are what is wrong with the phase on its own: a reserved name,
// its span, its direction, a figure out of range, or nothing impaired.
func (p *Phase) problems() []string {
	var why []string
	bad := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	if p.Name == "before" || p.Name == "after" {
		bad("name is reserved for the clean stretches around the phases")
	}
	if !finite(p.StartS) || p.StartS < 0 {
		bad("start_s must be a finite number ≥ 0, got %g", p.StartS)
	}
	if !finite(p.DurationS) || p.DurationS <= 0 {
		bad("duration_s must be a finite number > 0, got %g", p.DurationS)
	}
	if finite(p.StartS) && finite(p.DurationS) && p.StartS+p.DurationS > MaxScheduleS {
		bad("ends at %gs (start_s %g + duration_s %g): a phase must end within %d s (7 days) of the run's start", p.StartS+p.DurationS, p.StartS, p.DurationS, MaxScheduleS)
	}
	switch p.Direction {
	case DirDown, DirUp, DirBoth:
	default:
		bad("direction %q: want down, up or both", p.Direction)
	}
	for _, f := range []struct {
		name   string
		v, max float64
	}{{"loss", p.Loss, 1}, {"duplicate", p.Duplicate, 1}, {"burst_len", p.BurstLen, math.MaxFloat64},
		{"delay_ms", p.DelayMs, 60000}, {"jitter_ms", p.JitterMs, 60000}, {"rate_kbps", p.RateKbps, math.MaxFloat64},
		{"queue_ms", p.QueueMs, 60000}} {
		if !finite(f.v) || f.v < 0 || f.v > f.max {
			bad("%s must be a finite number in [0, %g], got %g", f.name, f.max, f.v)
		}
	}
	if p.Loss >= 1 && p.BurstLen > 1 {
		bad("loss 1 with burst_len > 1: a link that drops everything has no bursts")
	}
	if !p.Impairs() {
		bad("impairs nothing (no loss, delay, jitter, duplication or rate limit): an impairment phase must impair something")
	}
	return why
}

// At returns the phase active at elapsed time t, or nil (clean).
func (s Schedule) At(t time.Duration) *Phase {
	for i := range s {
		if t >= s[i].Start() && t < s[i].End() {
			return &s[i]
		}
	}
	return nil
}

// End is the end of the last phase (0 for an empty schedule).
func (s Schedule) End() time.Duration {
	var end time.Duration
	for i := range s {
		end = max(end, s[i].End())
	}
	return end
}

// Stretch is one part of an impaired run, [From, To) from its start: the
// clean stretch "before" the first phase, each phase by name, and the clean
// stretch after each phase ("after-NAME" between two phases, "after" after
// the last, which runs to the end of the run).
type Stretch struct {
	Name     string
	From, To time.Duration
}

// Stretches cuts a run at the schedule's edges (nil for an empty schedule).
func (s Schedule) Stretches() []Stretch {
	if len(s) == 0 {
		return nil
	}
	out := []Stretch{{Name: "before", To: s[0].Start()}}
	for i := range s {
		p := &s[i]
		out = append(out, Stretch{Name: p.Name, From: p.Start(), To: p.End()})
		next, name := time.Duration(math.MaxInt64), "after"
		if i+1 < len(s) {
			next, name = s[i+1].Start(), "after-"+p.Name
			if next <= p.End() {
				continue
			}
		}
		out = append(out, Stretch{Name: name, From: p.End(), To: next})
	}
	return out
}

// StretchNames lists the names of Stretches, in order.
func (s Schedule) StretchNames() []string {
	var out []string
	for _, st := range s.Stretches() {
		out = append(out, st.Name)
	}
	return out
}

// ParseSchedule decodes a schedule: a JSON list of phases, each with the
// Phase fields (unknown fields are an error, so a typo is never a clean
// link). It normalizes the result.
func ParseSchedule(b []byte) (Schedule, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Schedule
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("impairment schedule: want a JSON list of phases: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("impairment schedule: trailing data after the list of phases")
	}
	if len(s) == 0 {
		return nil, errors.New("impairment schedule: the list of phases is empty")
	}
	return s.Normalize()
}

// maxScheduleBytes bounds a schedule file: a phase is about 200 bytes.
const maxScheduleBytes = 1 << 20

// ReadSchedule reads and parses a schedule file, naming it on error. Only
// a regular file of at most 1 MiB is read (internal/guard/boundedfile).
func ReadSchedule(path string) (Schedule, error) {
	b, err := boundedfile.ReadFile(context.Background(), path, maxScheduleBytes)
	if err != nil {
		return nil, fmt.Errorf("read impairment schedule: %w", err)
	}
	s, err := ParseSchedule(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Stats are the relay's counts. Dropped* are the drops the schedule asked
// for (loss and the rate limiter's tail drops); Overflow are the relay's own
// drops, which no schedule asked for.
type Stats struct {
	DatagramsDown int64 `json:"datagrams_down"`
	DatagramsUp   int64 `json:"datagrams_up"`
	DroppedDown   int64 `json:"dropped_down"`
	DroppedUp     int64 `json:"dropped_up"`
	// QueueDropped is the part of Dropped* the rate limiter's bounded
	// queue tail-dropped.
	QueueDropped int64 `json:"queue_dropped"`
	// Delayed counts datagrams held for later delivery (copies included).
	Delayed    int64 `json:"delayed"`
	Duplicated int64 `json:"duplicated"`
	// Overflow: held-datagram cap exceeded, a failed socket write, or the
	// kernel dropping datagrams on a relay socket's full receive buffer.
	// The three causes are also counted apart.
	Overflow       int64 `json:"overflow"`
	OverflowHeld   int64 `json:"overflow_held"`
	OverflowWrite  int64 `json:"overflow_write"`
	OverflowKernel int64 `json:"overflow_kernel"`
	// Late counts held datagrams delivered more than LateThreshold after
	// their due time (the relay fell behind its own schedule).
	Late int64 `json:"late"`
	// Stray counts datagrams dropped because they came from neither the
	// server nor the link's own client socket (Expect): anything else on
	// this machine sending to a relay port. They never reach the server,
	// never take a link over, and are the harness's business, not the
	// server's.
	Stray int64 `json:"stray"`
}

// Impaired reports whether the relay changed anything: a drop, a held
// datagram or a duplicate.
func (s Stats) Impaired() bool {
	return s.DroppedDown+s.DroppedUp+s.Delayed+s.Duplicated > 0
}
