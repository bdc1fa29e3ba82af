package rundir

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// maxTimelineBytes bounds a timeline.csv read back.
const maxTimelineBytes = 128 << 20

// ReadTimelineCSV reads a leg's timeline.csv.
func ReadTimelineCSV(path string) ([]report.TimelinePoint, error) {
	tl, _, err := ReadTimelineCSVColumns(path)
	return tl, err
}

// ReadTimelineCSVColumns reads a leg's timeline.csv and its header: a
// file from an older run has fewer columns, and a figure it has no column
// for was not "unmeasured" in that run, only not written.
func ReadTimelineCSVColumns(path string) ([]report.TimelinePoint, []string, error) {
	f, err := boundedfile.Open(path) // a regular file only, opened without blocking
	if err != nil {
		return nil, nil, fmt.Errorf("read timeline: %w", err)
	}
	defer f.Close()
	// A timeline row is under 200 bytes and a week-long leg has 604,800;
	// the cap refuses anything larger instead of reading it whole.
	lr := &io.LimitedReader{R: f, N: maxTimelineBytes + 1}
	tl, head, err := parseTimelineCSV(lr)
	if err == nil && lr.N == 0 {
		err = fmt.Errorf("larger than %d bytes", maxTimelineBytes)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return tl, head, nil
}

// ParseTimelineCSV decodes timeline.csv. Its header is
// TimelineColumns or, from older runs, a prefix of it at least as
// long as TimelineColumnsV1; cells are read by column name. An empty
// cell is a figure not measured that second and stays nil; anything
// unparsable is an error naming its line and column.
func ParseTimelineCSV(r io.Reader) ([]report.TimelinePoint, error) {
	tl, _, err := parseTimelineCSV(r)
	return tl, err
}

// parseTimelineCSV is ParseTimelineCSV, also returning the header.
func parseTimelineCSV(r io.Reader) ([]report.TimelinePoint, []string, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked against the header below
	head, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("header: %w", err)
	}
	want := timelineColumns
	all := head
	n := len(all)
	for i, h := range all {
		if strings.HasPrefix(h, OwnColumnPrefix) {
			n = i
			break
		}
	}
	head = all[:n:n]
	own, err := ownHeader(all[n:])
	if err != nil {
		return nil, nil, err
	}
	if len(head) < len(timelineColumnsV1) || len(head) > len(want) || strings.Join(head, ",") != strings.Join(want[:len(head)], ",") {
		return nil, nil, fmt.Errorf("header %q, want %q (or, from older runs, a prefix of it of at least %d columns)",
			strings.Join(head, ","), strings.Join(want, ","), len(timelineColumnsV1))
	}
	var out []report.TimelinePoint
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, head, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(rec) != len(head)+len(own.names) {
			return nil, nil, fmt.Errorf("line %d: wrong number of fields: %d, the header has %d", line, len(rec), len(head)+len(own.names))
		}
		p, err := timelineRow(head, rec[:len(head)])
		if err == nil {
			p.Own, err = own.read(rec[len(head):])
		}
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, p)
	}
}

// timelineRow reads one row by column name; a column the file does not
// have is nil, like an empty cell.
func timelineRow(head, rec []string) (report.TimelinePoint, error) {
	var p report.TimelinePoint
	var errs []error
	cell := func(name string) *float64 {
		i := slices.Index(head, name)
		if i < 0 || rec[i] == "" {
			return nil
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			return nil
		}
		return &v
	}
	req := func(name string) float64 {
		v := cell(name)
		if v == nil {
			errs = append(errs, fmt.Errorf("%s: empty", name))
			return 0
		}
		return *v
	}
	p.TS = req("t_s")
	p.Connected = int(req("connected"))
	p.TickHzMin = cell("tick_hz_min")
	p.KBs = req("kbs")
	p.RTTP95Ms = cell("rtt_p95_ms")
	p.TickMsP99 = cell("tick_ms_p99")
	if rss := cell("rss_kb"); rss != nil {
		kb := int64(*rss)
		p.RSSKB = &kb
	}
	if dt := cell("worker_dt_p99_ms"); dt != nil {
		p.WorkerDtP99 = *dt
	}
	p.ServiceIntervalMeanMs = cell("service_interval_mean_ms")
	p.HostOtherCores = cell("host_other_cores")
	p.HostStealPct = cell("host_steal_pct")
	p.HostCPUPressureAvg10 = cell("host_cpu_pressure_avg10")
	p.InputLatencyP95Ms = cell("input_latency_p95_ms")
	for _, f := range p.TimelineServer.Fields() {
		*f.V = cell(f.Name)
	}
	return p, errors.Join(errs...)
}

// ownCols are the own figures' columns after the fixed ones.
type ownCols struct{ names []string }

// ownHeader reads the own columns ("own:NAME.STAT"); any other column
// after the first of them is an error.
func ownHeader(cols []string) (ownCols, error) {
	var o ownCols
	for _, c := range cols {
		k, ok := strings.CutPrefix(c, OwnColumnPrefix)
		if !ok || k == "" {
			return o, fmt.Errorf("header: column %q after the own figures' columns: want %sNAME.STAT", c, OwnColumnPrefix)
		}
		o.names = append(o.names, k)
	}
	return o, nil
}

// read is a row's own figures (an empty cell is not measured).
func (o ownCols) read(rec []string) (map[string]float64, error) {
	var out map[string]float64
	for i, k := range o.names {
		if rec[i] == "" {
			continue
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", OwnColumnPrefix, k, err)
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[k] = v
	}
	return out, nil
}
