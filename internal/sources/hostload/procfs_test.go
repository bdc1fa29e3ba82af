package hostload

import (
	"strings"
	"testing"
)

// parseCase is one input of a /proc decoder and what it must give: want,
// or an error containing err.
type parseCase[T comparable] struct {
	name, in string
	want     T
	err      string
}

// checkParse runs parse over the cases.
func checkParse[T comparable](t *testing.T, parse func([]byte) (T, error), cases []parseCase[T]) {
	t.Helper()
	for _, c := range cases {
		got, err := parse([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestParseCPUStat(t *testing.T) {
	cases := []parseCase[cpuTimes]{
		{name: "10 columns", in: "cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu1 0 0 0 0 0 0 0 0 0 0\nintr 5\n",
			want: cpuTimes{1, 2, 3, 4, 5, 6, 7, 8, 10, 2}},
		{name: "7 columns (no steal)", in: "cpu 1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n",
			want: cpuTimes{1, 2, 3, 4, 5, 6, 7, 0, 7, 1}},
		{name: "4 columns (2.4)", in: "cpu 1 2 3 4\ncpu0 1 2 3 4\n", want: cpuTimes{1, 2, 3, 4, 0, 0, 0, 0, 4, 1}},
		{name: "a future 11th column is read past", in: "cpu 1 2 3 4 5 6 7 8 9 10 11\ncpu0 1 2 3 4 5 6 7 8 9 10 11\n",
			want: cpuTimes{1, 2, 3, 4, 5, 6, 7, 8, 11, 1}},
		{name: "cpu lines not first", in: "intr 1\ncpu0 1 1 1 1\ncpu 2 2 2 2\n", want: cpuTimes{2, 2, 2, 2, 0, 0, 0, 0, 4, 1}},
		{name: "empty", in: "", err: "no aggregate cpu line"},
		{name: "no per-CPU lines", in: "cpu 1 2 3 4\n", err: "no cpuN lines"},
		{name: "short", in: "cpu 1 2 3\ncpu0 1 2 3\n", err: "3 figures"},
		{name: "not a number", in: "cpu 1 2 x 4\ncpu0 1 2 3 4\n", err: "figure 3"},
		{name: "negative", in: "cpu 1 -2 3 4\ncpu0 1 2 3 4\n", err: "figure 2"},
		{name: "two aggregates", in: "cpu 1 2 3 4\ncpu 1 2 3 4\ncpu0 1 2 3 4\n", err: "two aggregate"},
	}
	checkParse(t, parseCPUStat, cases)
}

func TestCPUTimesSums(t *testing.T) {
	c := cpuTimes{user: 1, nice: 2, system: 4, idle: 8, iowait: 16, irq: 32, softirq: 64, steal: 128, columns: 10}
	if c.busy() != 1+2+4+32+64 {
		t.Errorf("busy %d: user+nice+system+irq+softirq", c.busy())
	}
	if c.total() != 255 {
		t.Errorf("total %d, want 255", c.total())
	}
}

func TestParseProcStat(t *testing.T) {
	tail := " S 77 77 77 0 -1 4194304 1 0 0 0 13 7 900 900 20 0 3 0 123456 3133440 363"
	cases := []parseCase[procStat]{
		{name: "plain", in: "42 (server)" + tail, want: procStat{ppid: 77, start: 123456, cpu: 20}},
		{name: "spaces and parentheses in the name", in: "42 (a) b (c))" + tail, want: procStat{ppid: 77, start: 123456, cpu: 20}},
		{name: "empty name", in: "42 ()" + tail, want: procStat{ppid: 77, start: 123456, cpu: 20}},
		{name: "zombie", in: "42 (x) Z 77 77 77 0 -1 4194304 1 0 0 0 13 7 0 0 20 0 1 0 123456 0 0", want: procStat{ppid: 77, start: 123456, cpu: 20}},
		{name: "no parentheses", in: "42 server S 1 2", err: "no (command)"},
		{name: "truncated", in: "42 (server) S 77 77 77 0 -1 4194304 1 0 0 0 13 7", err: "fields after the command"},
		{name: "bad ppid", in: "42 (s) S x 77 77 0 -1 4194304 1 0 0 0 13 7 0 0 20 0 1 0 1 0 0", err: "ppid"},
		{name: "bad utime", in: "42 (s) S 1 77 77 0 -1 4194304 1 0 0 0 -1 7 0 0 20 0 1 0 1 0 0", err: "utime"},
		{name: "bad stime", in: "42 (s) S 1 77 77 0 -1 4194304 1 0 0 0 1 y 0 0 20 0 1 0 1 0 0", err: "stime"},
		{name: "bad starttime", in: "42 (s) S 1 77 77 0 -1 4194304 1 0 0 0 1 1 0 0 20 0 1 0 z 0 0", err: "starttime"},
	}
	checkParse(t, parseProcStat, cases)
}

func TestParsePressure(t *testing.T) {
	cases := []parseCase[float64]{
		{name: "5.13+", in: "some avg10=1.53 avg60=0.87 avg300=0.24 total=3158374\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", want: 1.53},
		{name: "4.20 (some only)", in: "some avg10=99.99 avg60=0.87 avg300=0.24 total=3158374\n", want: 99.99},
		{name: "full first", in: "full avg10=7.00 total=0\nsome avg10=2.00 total=1\n", want: 2},
		{name: "no some", in: "full avg10=0.00\n", err: "no \"some\" line"},
		{name: "no avg10", in: "some avg60=1.00\n", err: "without avg10"},
		{name: "bad number", in: "some avg10=x\n", err: "some avg10"},
		{name: "NaN", in: "some avg10=NaN\n", err: "outside 0..100"},
		{name: "over 100", in: "some avg10=100.5\n", err: "outside 0..100"},
		{name: "empty", in: "", err: "no \"some\" line"},
	}
	checkParse(t, parsePressure, cases)
}

// The three decoders read files of the kernel's; a torn or foreign file must give an error or
// a sane value, never a panic or a figure outside its range.

func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte("cpu  1 2 3 4 5 6 7 8 9 10\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	f.Add([]byte("cpu 1 2 3 4\ncpu0 1 2 3 4\n"))
	f.Add([]byte("cpu\ncpu0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCPUStat(b)
		if err != nil {
			return
		}
		if c.columns < 4 || c.cpus < 1 {
			t.Fatalf("accepted %q as %+v", b, c)
		}
	})
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte("42 (a) b (c)) S 77 77 77 0 -1 4194304 1 0 0 0 13 7 900 900 20 0 3 0 123456 3133440 363"))
	f.Add([]byte("1 ((((((( S 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseProcStat(b)
	})
}

func FuzzParsePressure(f *testing.F) {
	f.Add([]byte("some avg10=1.53 avg60=0.87 avg300=0.24 total=3158374\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	f.Add([]byte("some avg10=1e2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parsePressure(b)
		if err == nil && !(v >= 0 && v <= 100) {
			t.Fatalf("accepted %q as %v", b, v)
		}
	})
}
