package history

import (
	"strings"
	"testing"
)

// FuzzParseFile: any bytes as a history file either load as records that
// pass the record checks, or are reported line by line; never a panic, and
// every line is accounted for once.
func FuzzParseFile(f *testing.F) {
	good, _ := Encode(synthetic([]float64{1}, Lower)[0])
	f.Add(string(good) + "\n")
	f.Add("<<<<<<< HEAD\n" + string(good) + "\n=======\n>>>>>>> x\n")
	f.Add(`{"schema_version":1,"id":"a","time":"t","commit":"c","profile":"p","leg":"l","runner_class":"r","figures":{"f":{"value":1e400,"better":"lower"}}}`)
	f.Add("\n\n{\n")
	f.Fuzz(func(t *testing.T, body string) {
		recs, problems := parseFile("h.jsonl", []byte(body), map[string][]byte{})
		lines := 0
		for _, l := range strings.Split(body, "\n") {
			if strings.TrimSpace(l) != "" {
				lines++
			}
		}
		if len(recs)+len(problems) > lines {
			t.Fatalf("%d records and %d problems from %d lines", len(recs), len(problems), lines)
		}
		for _, r := range recs {
			if err := r.check(); err != nil {
				t.Fatalf("a loaded record fails its checks: %v", err)
			}
		}
		for _, p := range problems {
			if p.Line < 1 || p.Why == "" {
				t.Fatalf("problem without a place or a reason: %+v", p)
			}
		}
	})
}
