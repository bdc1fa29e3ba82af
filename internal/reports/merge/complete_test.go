package merge

import (
	"reflect"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// notMerged are the report fields a merged report deliberately leaves
// empty, each with the reason. Every other field must come through a
// merge: TestMergeCarriesEveryField fails on a field that does not, so a
// field added to report.Report is either merged or listed here, never
// silently lost on a sharded run.
var notMerged = map[string]string{
	"Shard":  "a merged report is no one shard: it carries Shards (which were merged) instead",
	"Phases": "per-stretch figures have no mergeable form: each shard's report keeps its own, and the merge warns",
	"Host":   "the runner samples the host for the whole leg and records it in the merged report itself; a shard's own host view is not the leg's",
	// Passed is false on this fixture by construction: the filled
	// fields include a failed assert and an aborted note.
	"Passed": "false here: the filled shards carry a failed assert and an aborted note",
	// The fixture's shard 1 read the server's metrics, so the merged
	// report carries its block and no error; with no shard reading them
	// the errors are joined (TestMergeRowServerFiguresFirstShard).
	"ServerMetricsError": "cleared when a shard read the server's metrics (the fixture's shard 1 did)",
}

// histType is filled with a real histogram, not field by field.
var histType = reflect.TypeOf(&stats.Histogram{})

// fill sets v, and everything below it, to a non-zero value: strings "x",
// numbers 1, bools true, one element per slice and map.
func fill(v reflect.Value) {
	if v.Type() == histType {
		v.Set(reflect.ValueOf(stats.HistogramOf([]float64{1, 2})))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage
			v.SetBytes([]byte(`{"schema_version":6}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// fillZero fills every zero field below v (v itself if it is zero),
// leaving what is set alone, and the subtrees named in keep untouched.
func fillZero(v reflect.Value, keep map[string]bool) {
	if v.IsZero() {
		fill(v)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		fillZero(v.Elem(), keep)
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				fillZero(v.Index(i), keep)
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() && !keep[f.Name] {
				fillZero(v.Field(i), keep)
			}
		}
	}
}

// TestMergeCarriesEveryField: shard reports with every top-level field set
// (the realistic ones from shardReport, every other one filled) merge into
// a report with every field set, but for notMerged.
func TestMergeCarriesEveryField(t *testing.T) {
	all := run(8)
	in := []Input{shardReport(t, all, 0, 2), shardReport(t, all, 1, 2)}
	rt := reflect.TypeOf(report.Report{})
	for _, s := range in {
		// Shard keeps its real index; the server block is one shard's.
		fillZero(reflect.ValueOf(s.Report).Elem(), map[string]bool{"Shard": true, "ServerTick": true, "ServerMetricsError": true, "Timeline": true})
	}
	m, err := Reports(in)
	if err != nil {
		t.Fatal(err)
	}
	out := reflect.ValueOf(m).Elem()
	for i := range rt.NumField() {
		name := rt.Field(i).Name
		if !rt.Field(i).IsExported() {
			continue
		}
		if _, skip := notMerged[name]; skip {
			continue
		}
		if out.Field(i).IsZero() {
			t.Errorf("report field %s is lost by the merge: merge it (merge.go), or list it in notMerged with the reason", name)
		}
	}
}
