package impairment

import (
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string // phase names after normalisation
		err      string   // substring of the error
	}{
		{"one unnamed", `[{"start_s":10,"duration_s":5,"loss":0.1}]`, []string{"during"}, ""},
		{"sorted and named", `[{"start_s":20,"duration_s":5,"delay_ms":50},{"start_s":5,"duration_s":5,"loss":0.1,"name":"spike"},{"start_s":30,"duration_s":1,"loss":0.2}]`,
			[]string{"spike", "during", "during-2"}, ""},
		{"overlap", `[{"start_s":0,"duration_s":10,"loss":0.1},{"start_s":5,"duration_s":5,"loss":0.1}]`, nil, "must not overlap"},
		{"impairs nothing", `[{"start_s":0,"duration_s":10}]`, nil, "impairs nothing"},
		{"bad direction", `[{"start_s":0,"duration_s":10,"loss":0.1,"direction":"sideways"}]`, nil, `direction "sideways"`},
		{"loss over 1", `[{"start_s":0,"duration_s":10,"loss":1.5}]`, nil, "loss must be"},
		{"zero duration", `[{"start_s":0,"duration_s":0,"loss":0.1}]`, nil, "duration_s must be"},
		// 1e10 s overflowed time.Duration: the phase was never applied and
		// its times went negative.
		{"overflowing duration", `[{"start_s":10,"duration_s":1e10,"loss":0.1}]`, nil, "ends at 1.000000001e+10s (start_s 10 + duration_s 1e+10): a phase must end within 604800 s (7 days)"},
		{"overflowing start", `[{"start_s":1e300,"duration_s":1,"loss":0.1}]`, nil, "must end within 604800 s"},
		{"ends at the bound", `[{"start_s":604700,"duration_s":100,"loss":0.1}]`, []string{"during"}, ""},
		{"reserved name", `[{"name":"after","start_s":0,"duration_s":1,"loss":0.1}]`, nil, "reserved"},
		{"duplicate name", `[{"name":"x","start_s":0,"duration_s":1,"loss":0.1},{"name":"x","start_s":2,"duration_s":1,"loss":0.1}]`, nil, "used twice"},
		{"typo field", `[{"start_s":0,"duration_s":1,"los":0.1}]`, nil, `unknown field "los"`},
		{"empty", `[]`, nil, "empty"},
		{"not a list", `{"start_s":0}`, nil, "JSON list"},
		{"trailing", `[{"start_s":0,"duration_s":1,"loss":0.1}] []`, nil, "trailing"},
	} {
		s, err := ParseSchedule([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for _, p := range s {
			got = append(got, p.Name)
			if p.Direction != DirBoth {
				t.Errorf("%s: direction %q, want the default both", c.name, p.Direction)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: phases %v, want %v", c.name, got, c.want)
		}
	}
}

func TestScheduleAt(t *testing.T) {
	s, err := Schedule{{StartS: 10, DurationS: 5, Settings: Settings{Loss: 0.1}}, {Name: "b", StartS: 20, DurationS: 1, Direction: DirDown, Settings: Settings{DelayMs: 5}}}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   float64
		want string
	}{{0, ""}, {9.999, ""}, {10, "during"}, {14.999, "during"}, {15, ""}, {20.5, "b"}, {21, ""}} {
		got := ""
		if p := s.At(time.Duration(c.at * float64(time.Second))); p != nil {
			got = p.Name
		}
		if got != c.want {
			t.Errorf("At(%gs) = %q, want %q", c.at, got, c.want)
		}
	}
	if s.End() != 21*time.Second {
		t.Errorf("End = %v, want 21s", s.End())
	}
	if !s[1].Applies(DirDown) || s[1].Applies(DirUp) || !s[0].Applies(DirUp) {
		t.Error("Applies disagrees with the phase directions")
	}
}

func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte(`[{"start_s":10,"duration_s":5,"loss":0.1,"burst_len":3}]`))
	f.Add([]byte(`[{"start_s":1e308,"duration_s":1e308,"delay_ms":1}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSchedule(b)
		if err != nil {
			return
		}
		// A schedule that parsed is valid, ordered and impairs in every phase.
		for i := range s {
			if !s[i].Impairs() || s[i].Name == "" || (i > 0 && s[i].StartS < s[i-1].StartS) {
				t.Fatalf("parsed schedule violates its invariants: %+v", s)
			}
		}
	})
}

func TestStretches(t *testing.T) {
	s, err := Schedule{
		{Name: "a", StartS: 10, DurationS: 5, Settings: Settings{Loss: 0.1}},
		{Name: "b", StartS: 15, DurationS: 5, Settings: Settings{Loss: 0.1}},
		{Name: "c", StartS: 30, DurationS: 5, Settings: Settings{Loss: 0.1}},
	}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.StretchNames(), ",")
	if want := "before,a,b,after-b,c,after"; got != want {
		t.Fatalf("stretches %s, want %s", got, want)
	}
	st := s.Stretches()
	if st[0].To != 10*time.Second || st[3].From != 20*time.Second || st[3].To != 30*time.Second || st[5].From != 35*time.Second {
		t.Fatalf("stretch bounds %+v", st)
	}
	if Schedule(nil).Stretches() != nil {
		t.Fatal("an empty schedule has no stretches")
	}
}
