package merge

import (
	"fmt"
	"reflect"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// sameImpairment checks every shard ran the same impairment schedule
// (none, or the same phases): shards of one run share one.
func sameImpairment(in []Input) error {
	first := in[0]
	for _, s := range in[1:] {
		if !reflect.DeepEqual(s.Report.Impairment, first.Report.Impairment) {
			return fmt.Errorf("merge: %s ran another impairment schedule than %s: not shards of one run", s.Name, first.Name)
		}
	}
	return nil
}

// addRelay adds one shard's relay counts to out's. Every field of the
// relay's counts is a count, so they add; a field of another kind would
// not, and is refused rather than dropped.
func addRelay(out *report.Report, r *report.Report, name string) error {
	if r.Relay == nil {
		return nil
	}
	if out.Relay == nil {
		out.Relay = &report.RelayStats{Seed: r.Relay.Seed}
	}
	dst := reflect.ValueOf(&out.Relay.Stats).Elem()
	src := reflect.ValueOf(r.Relay.Stats)
	for i := range dst.NumField() {
		if dst.Field(i).Kind() != reflect.Int64 {
			return fmt.Errorf("merge: %s: relay field %s is not a count; this build cannot merge it", name, dst.Type().Field(i).Name)
		}
		dst.Field(i).SetInt(dst.Field(i).Int() + src.Field(i).Int())
	}
	return nil
}
