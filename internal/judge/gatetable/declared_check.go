package gatetable

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// DeclError is one problem with a declared figure, at its field
// ("figures.physics_ms.stats"), so vet can point at the profile's line.
type DeclError struct {
	Path string
	Msg  string
}

// Error reads "PATH: MSG".
func (e *DeclError) Error() string { return e.Path + ": " + e.Msg }

// reservedNames are the server_tick fields a figure's name cannot take:
// the file's own (report.ServerTick) and the blocks the swarm adds. A
// figure is written into server_tick under its name, so one of these
// would overwrite a built-in field.
var reservedNames = func() map[string]bool {
	m := map[string]bool{serverwindow.Key: true, promsource.SourceName: true, "source": true}
	t := reflect.TypeOf(report.ServerTick{})
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	for _, f := range promsource.KnownFields() {
		m[f] = true
	}
	return m
}()

// Check reports every problem of the declarations when the profile reads
// its server's metrics from source: a name that is not a field name or is
// a built-in one, a direction that is neither lower nor higher, a source
// missing for the profile's metrics source or malformed, a statistic no
// kind of a declared source can give.
func (ds OwnFigures) Check(source string) []*DeclError {
	var out []*DeclError
	add := func(path, format string, a ...any) {
		out = append(out, &DeclError{Path: path, Msg: fmt.Sprintf(format, a...)})
	}
	for _, name := range sortedNames(ds) {
		d, at := ds[name], "figures."+name
		switch {
		case !ownNameRe.MatchString(name):
			add(at, "a figure's name is lower case letters, digits and _, starting with a letter")
		case reservedNames[name]:
			add(at, "%s is a built-in server_tick field: name your figure otherwise (it is written into server_tick under its name)", name)
		}
		if d.Better != "lower" && d.Better != "higher" {
			add(at+".better", "must be \"lower\" or \"higher\" (which side of a threshold holds), got %q", d.Better)
		}
		if _, _, ok := d.Source(source); !ok && d.sourceErr(source) == nil {
			add(at, "declares no %s source, and the profile reads its server's metrics from %s: add %s: {...}", source, source, source)
		}
		d.checkSources(at, add)
		if kind, where, ok := d.Source(source); ok && d.Phase && !slices.Contains(ownStats[kind], "mean") {
			add(at+".phase", "a tick phase is drawn and listed by its mean per tick, which a %s (%s: %s) does not give: a phase is a histogram or a summary", kind, source, where)
		}
	}
	return out
}

// sourceErr is what is wrong with the figure's source for a metrics
// source, nil when it is well-formed or absent.
func (d OwnFigure) sourceErr(source string) error {
	switch {
	case source == SourcePrometheus && d.Prometheus != nil:
		_, _, err := d.Prometheus.KindSelector()
		return err
	case source == SourceFile && d.File != nil:
		_, _, err := d.File.Kind()
		return err
	}
	return nil
}

// checkSources checks each declared source and the stats against its kind.
func (d OwnFigure) checkSources(at string, add func(path, format string, a ...any)) {
	for _, src := range []string{SourceFile, SourcePrometheus} {
		if err := d.sourceErr(src); err != nil {
			add(at+"."+src, "%v", err)
			continue
		}
		if src == SourcePrometheus && d.Prometheus != nil {
			if err := promsource.CheckOwn(*d.Prometheus); err != nil {
				add(at+"."+src, "%v", err)
			}
		}
		if src == SourceFile && d.File != nil {
			if err := d.File.Check(); err != nil {
				add(at+"."+src, "%v", err)
			}
		}
		kind, where, ok := d.Source(src)
		if !ok {
			continue
		}
		if ownStats[kind] == nil {
			add(at+"."+src, "an own figure is a histogram, summary, gauge, counter or counter_rate, not a %s", kind)
			continue
		}
		for _, s := range d.Stats {
			if !slices.Contains(ownStats[kind], s) {
				add(at+".stats", "%s: the %s source is a %s (%s), which offers %s%s", s, src, kind, where, strings.Join(ownStats[kind], ", "), kindHint(s, kind))
			}
		}
	}
}
