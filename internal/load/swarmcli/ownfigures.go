package swarmcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// loadOwnFigures reads --server-figures: the profile's own figures, each
// checked as vet checks them against the source this swarm reads, and
// keeps that source of each for the monitor.
func (f *Flags) loadOwnFigures() error {
	if f.ownFigures == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := boundedfile.ReadFile(ctx, f.ownFigures, promsource.MaxMapBytes)
	if err != nil {
		return fmt.Errorf("swarm: --server-figures: %w", err)
	}
	ds, err := parseOwnFigures(b)
	if err != nil {
		return fmt.Errorf("swarm: --server-figures %s: %w", f.ownFigures, err)
	}
	source := f.ownSource()
	var errs []error
	for _, e := range ds.Check(source) {
		errs = append(errs, e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("swarm: --server-figures %s: %w", f.ownFigures, errors.Join(errs...))
	}
	f.ownDecl = ds
	for name, d := range ds {
		if source == gatetable.SourcePrometheus {
			if f.Cfg.OwnPrometheus == nil {
				f.Cfg.OwnPrometheus = promsource.Map{}
			}
			f.Cfg.OwnPrometheus[name] = *d.Prometheus
			continue
		}
		if f.Cfg.OwnFile == nil {
			f.Cfg.OwnFile = map[string]serverwindow.FileFigure{}
		}
		f.Cfg.OwnFile[name] = *d.File
	}
	return nil
}

// parseOwnFigures decodes the figures file; an unknown key is an error.
func parseOwnFigures(b []byte) (gatetable.OwnFigures, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ds gatetable.OwnFigures
	if err := dec.Decode(&ds); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON object")
	}
	return ds, nil
}

// ownSource is the metrics source this swarm reads: which source of an
// own figure it computes.
func (f *Flags) ownSource() string {
	if f.Cfg.ServerMetricsPrometheus != "" || f.Cfg.ServerMetricsPromQL != "" {
		return gatetable.SourcePrometheus
	}
	return gatetable.SourceFile
}
