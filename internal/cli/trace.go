package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

const traceUsage = `usage: scalegate trace inspect FILE|DIR...

Summarises FLIT v1 input traces (docs/trace-format.md): records, duration,
tick rate, the range of each control, button usage, and a truncated last
record. A directory stands for its *.flit files. A file that is not a
readable FLIT v1 trace, or that a replay refuses (no records, tick rate 0,
a NaN or infinite control, ticks going backwards), is an error (exit 4)
naming it and the reason; the others are still summarised. Only regular
files are read (a FIFO or device is refused), at most 64 MiB each.
`

func init() {
	register("trace", "inspect FLIT input traces (trace inspect FILE...)", runTrace)
}

func runTrace(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), traceUsage) }
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] == "inspect" {
		// Help may follow the verb too: trace inspect -h.
		if err := parseFlags(env, fs, rest[1:]); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			return exitcode.Errorf(exitcode.Usage, "trace inspect: no FILE given")
		}
		return inspectAll(ctx, env, fs.Args())
	}
	fmt.Fprint(env.Stderr, traceUsage)
	return exitcode.Errorf(exitcode.Usage, "trace: want `trace inspect FILE...`")
}

// inspectAll summarises every file and returns an error naming how many
// could not be read or would be refused by a replay. SIGINT (ctx) ends it
// between files and abandons a read in progress.
func inspectAll(ctx context.Context, env *Env, args []string) error {
	files, err := expandTraceArgs(args)
	if err != nil {
		return exitcode.With(exitcode.InvalidProfile, fmt.Errorf("trace inspect: %w", err))
	}
	bad := 0
	for i, path := range files {
		if ctx.Err() != nil {
			return exitcode.With(exitcode.Interrupted, fmt.Errorf("trace inspect: %w", ctx.Err()))
		}
		if i > 0 {
			fmt.Fprintln(env.Stdout)
		}
		tr, err := trace.ReadFile(ctx, path)
		if err != nil {
			if ctx.Err() != nil {
				return exitcode.With(exitcode.Interrupted, fmt.Errorf("trace inspect: %w", ctx.Err()))
			}
			fmt.Fprintf(env.Stderr, "scalegate: trace inspect: %s\n", safetext.Terminal(err.Error()))
			bad++
			continue
		}
		printTraceSummary(env.Stdout, path, tr)
		// The replay's own validation: a file it refuses fails here too.
		if err := tr.Validate(); err != nil {
			fmt.Fprintf(env.Stderr, "scalegate: trace inspect: trace %s: %s: a replay refuses it\n", safetext.Terminal(path), safetext.Terminal(err.Error()))
			bad++
		}
	}
	if bad > 0 {
		return exitcode.Errorf(exitcode.InvalidProfile, "trace inspect: %d of %d file(s) unreadable or refused by a replay", bad, len(files))
	}
	return nil
}

// expandTraceArgs replaces each directory by its *.flit files (sorted); a
// directory with none is an error.
func expandTraceArgs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a) // ReadFile reports a missing file
			continue
		}
		m, err := filepath.Glob(filepath.Join(a, "*.flit"))
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("directory %s holds no .flit file", a)
		}
		sort.Strings(m)
		out = append(out, m...)
	}
	return out, nil
}

// span is a control's range over a trace.
type span struct{ min, max, sum float64 }

func (s *span) add(v float32) {
	f := float64(v)
	s.min, s.max, s.sum = math.Min(s.min, f), math.Max(s.max, f), s.sum+f
}

// buttonNames are the documented bits (docs/protocol.md).
var buttonNames = []string{"gun", "store_release", "afterburner"}

func printTraceSummary(w io.Writer, path string, tr *trace.Trace) {
	n := len(tr.Records)
	fmt.Fprintf(w, "%s\n", safetext.Terminal(path))
	fmt.Fprintf(w, "  format      FLIT v%d, tick rate %d/s\n", tr.Version, tr.TickRate)
	if n == 0 {
		fmt.Fprintf(w, "  records     0\n")
	} else {
		first, last := tr.Records[0].ServerTick, tr.Records[n-1].ServerTick
		fmt.Fprintf(w, "  records     %d, ticks %d..%d\n", n, first, last)
		fmt.Fprintf(w, "  duration    %.3f s\n", tr.Duration())
		printControls(w, tr.Records)
		printButtons(w, tr.Records)
	}
	if tr.TruncatedBytes > 0 {
		fmt.Fprintf(w, "  truncated   yes: a partial last record of %d byte(s), ignored\n", tr.TruncatedBytes)
	} else {
		fmt.Fprintf(w, "  truncated   no\n")
	}
}

func printControls(w io.Writer, recs []trace.Record) {
	inf := math.Inf(1)
	ctl := [4]span{{inf, -inf, 0}, {inf, -inf, 0}, {inf, -inf, 0}, {inf, -inf, 0}}
	for i := range recs {
		r := &recs[i]
		ctl[0].add(r.Throttle)
		ctl[1].add(r.Elevator)
		ctl[2].add(r.Aileron)
		ctl[3].add(r.Rudder)
	}
	for i, name := range []string{"throttle", "elevator", "aileron", "rudder"} {
		s := ctl[i]
		fmt.Fprintf(w, "  %-11s min %.3f  max %.3f  mean %.3f\n", name, s.min, s.max, s.sum/float64(len(recs)))
	}
}

func printButtons(w io.Writer, recs []trace.Record) {
	var bits [32]int
	none := 0
	for i := range recs {
		b := recs[i].Buttons
		if b == 0 {
			none++
		}
		for j := 0; j < 32; j++ {
			if b&(1<<j) != 0 {
				bits[j]++
			}
		}
	}
	n := float64(len(recs))
	fmt.Fprintf(w, "  buttons     none %d (%.1f%%)", none, 100*float64(none)/n)
	for j, name := range buttonNames {
		fmt.Fprintf(w, ", %s %d (%.1f%%)", name, bits[j], 100*float64(bits[j])/n)
	}
	other := 0
	for j := len(buttonNames); j < 32; j++ {
		other += bits[j]
	}
	fmt.Fprintf(w, ", undocumented bits %d\n", other)
}
