package promsource

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// A team's own figures (gatetable.OwnFigure): series the mapping does not
// know, scraped and computed like a mapped figure of their kind, and
// written into the block under the figure's name as an object of its
// statistics, so a gate reads server_tick.NAME.STAT whatever the kind: a
// histogram's or summary's timing object, a gauge's {min, max} over the
// window's scrapes, a counter's {increase}, a counter rate's {rate}.

// KnownFields are the server_tick fields a mapping can name, sorted: an
// own figure cannot take one of their names.
func KnownFields() []string { return sortedKeys(fields) }

// KindSelector is the entry's kind and its series as PromQL writes a
// selector (game_physics_seconds{shard="a"}), or why it has none.
func (f Figure) KindSelector() (Kind, string, error) {
	k, metric, err := f.kind()
	if err != nil {
		return "", "", err
	}
	return k, selectorString(metric, f.Labels), nil
}

// CheckOwn reports what is wrong with an own figure's entry: the checks
// of a mapping entry (metric and label names, scale), and what an own
// figure cannot be (an info series: it is not a number; quantiles: the
// figure's stats choose them).
func CheckOwn(f Figure) error {
	k, metric, err := f.kind()
	if err != nil {
		return err
	}
	var errs []error
	if k == Info {
		errs = append(errs, errors.New("an own figure is a number: info (a label's value) is for server_tick.transport only"))
	}
	if !metricNameRe.MatchString(metric) {
		errs = append(errs, fmt.Errorf("%q is not a Prometheus metric name", metric))
	}
	for _, l := range sortedKeys(f.Labels) {
		if !labelNameRe.MatchString(l) || l == "le" || l == "quantile" {
			errs = append(errs, fmt.Errorf("labels: %q is not a label a selector can match (le and quantile belong to buckets and quantiles)", l))
		}
	}
	if f.Scale != nil && !(*f.Scale > 0 && !math.IsInf(*f.Scale, 0)) {
		errs = append(errs, fmt.Errorf("scale: must be a positive finite number, got %v", *f.Scale))
	}
	if len(f.Quantiles) > 0 {
		errs = append(errs, errors.New("quantiles: an own figure's stats choose its statistics"))
	}
	if f.Label != "" {
		errs = append(errs, errors.New("label: only an info figure reads a label"))
	}
	return errors.Join(errs...)
}

// validateOwn checks the own figures of a Config: each entry by CheckOwn,
// and no name a mapping could fill (it would be two figures in one field).
func validateOwn(own Map) error {
	var errs []error
	for _, name := range sortedKeys(own) {
		if _, known := fields[name]; known || name == SourceName || name == "source" {
			errs = append(errs, fmt.Errorf("own figure %s: a built-in server_tick field", name))
			continue
		}
		if err := CheckOwn(own[name]); err != nil {
			errs = append(errs, fmt.Errorf("own figure %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// ownShape rewrites an own figure's result as the object of its
// statistics (histograms and summaries are already one).
func (b *Block) ownShape(f *figure, d *Detail) {
	v, ok := b.Numbers[f.name]
	delete(b.Numbers, f.name)
	delete(b.Counts, f.name)
	if !ok {
		return
	}
	switch f.kind {
	case Gauge:
		if d.Min != nil && d.Max != nil {
			b.Phases[f.name] = map[string]float64{"min": *d.Min, "max": *d.Max}
		}
	case Counter:
		// Unrounded: an own counter scaled to a unit is not a count.
		if d.Increase != nil {
			v = *d.Increase * f.scale
		}
		b.Phases[f.name] = map[string]float64{"increase": v}
	case CounterRate:
		b.Phases[f.name] = map[string]float64{"rate": v}
	}
}

// OwnFigures names the own figures of the source, sorted.
func (s *Source) OwnFigures() []string {
	var out []string
	for _, f := range s.figs {
		if f.own {
			out = append(out, f.name)
		}
	}
	slices.Sort(out)
	return out
}

// OwnStep is the own figures over the last two scrapes (a timeline row's
// second), "NAME.STAT" → value; nil before two scrapes.
func (s *Source) OwnStep() map[string]float64 {
	if s.prev == nil || s.last == nil {
		return nil
	}
	b := s.compute(s.prev, s.last, false)
	var out map[string]float64
	for i, f := range s.figs {
		if !f.own {
			continue
		}
		obj := b.Phases[f.name]
		if r := s.last.figs[i].r; f.kind == Gauge && r.err == "" {
			// The second's reading, not the run's extremes.
			obj = map[string]float64{"min": r.value * f.scale, "max": r.value * f.scale}
		}
		for stat, v := range obj {
			if out == nil {
				out = map[string]float64{}
			}
			out[f.name+"."+stat] = v
		}
	}
	return out
}
