package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Buckets is a distribution held as counts in fixed buckets: what a
// server accumulates from its start (the metrics file's cumulative
// tick-time histogram), and what the difference of two such readings is
// (the ticks of one second, or of the hold). Bucket i holds the
// observations in (Lo[i], Hi[i]]; Hi of the last bucket may be +Inf (an
// open top). Buckets are ascending and do not overlap; a bucket absent
// from the list holds nothing, so a reading lists only the buckets that
// hold something and two readings of one layout subtract and merge by
// their bounds.
//
// Percentiles follow PromQL's histogram_quantile (HistogramQuantile): the
// estimate interpolates inside the bucket that holds the rank and is off
// by at most that bucket's width, which BucketQuantile reports.
type Buckets struct {
	Lo, Hi []float64
	N      []uint64
	// Count is Σ N; Sum the sum of the observations (their mean is
	// Sum/Count).
	Count uint64
	Sum   float64
}

// MaxBuckets bounds the buckets a decoded histogram may list: a file is
// read once a second and a layout finer than this buys no precision a
// gate can use.
const MaxBuckets = 20000

// Empty reports whether b holds no observation.
func (b *Buckets) Empty() bool { return b == nil || b.Count == 0 }

// Mean is Sum/Count, NaN when empty.
func (b *Buckets) Mean() float64 {
	if b.Empty() {
		return math.NaN()
	}
	return b.Sum / float64(b.Count)
}

// Validate checks the invariants above, naming the first one broken.
func (b *Buckets) Validate() error {
	n := len(b.N)
	if len(b.Lo) != n || len(b.Hi) != n {
		return fmt.Errorf("buckets: %d lower bounds, %d upper bounds, %d counts", len(b.Lo), len(b.Hi), n)
	}
	if n > MaxBuckets {
		return fmt.Errorf("buckets: %d buckets, more than %d", n, MaxBuckets)
	}
	var total uint64
	for i := range n {
		lo, hi := b.Lo[i], b.Hi[i]
		switch {
		case math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, -1):
			return fmt.Errorf("buckets: bucket %d (%g, %g]: bounds must be numbers (the upper may be +Inf)", i, lo, hi)
		case !(lo < hi):
			return fmt.Errorf("buckets: bucket %d (%g, %g]: lower bound not below the upper", i, lo, hi)
		case i > 0 && lo < b.Hi[i-1]:
			return fmt.Errorf("buckets: bucket %d (%g, %g] overlaps or precedes bucket %d (%g, %g]", i, lo, hi, i-1, b.Lo[i-1], b.Hi[i-1])
		case math.IsInf(hi, 1) && i != n-1:
			return fmt.Errorf("buckets: bucket %d is open to +Inf but is not the last", i)
		}
		if total+b.N[i] < total {
			return errors.New("buckets: counts overflow")
		}
		total += b.N[i]
	}
	switch {
	case total != b.Count:
		return fmt.Errorf("buckets: the buckets hold %d observations, count says %d", total, b.Count)
	case math.IsNaN(b.Sum) || math.IsInf(b.Sum, 0):
		return fmt.Errorf("buckets: sum %g is not a number", b.Sum)
	}
	return nil
}

// Sub is b − prev: the observations b holds that prev did not, when b is a
// later reading of the same cumulative histogram. It fails (a reset: the
// server restarted, or changed its layout) when prev holds a bucket b does
// not, or more in one than b.
func (b *Buckets) Sub(prev *Buckets) (*Buckets, error) {
	if prev.Empty() {
		return b.Clone(), nil
	}
	if prev.Count > b.Count {
		return nil, fmt.Errorf("buckets: count went down from %d to %d", prev.Count, b.Count)
	}
	out := &Buckets{Sum: b.Sum - prev.Sum}
	keep := func(i int, n uint64) {
		if n > 0 {
			out.Lo, out.Hi, out.N = append(out.Lo, b.Lo[i]), append(out.Hi, b.Hi[i]), append(out.N, n)
			out.Count += n
		}
	}
	i := 0
	for j := range prev.N {
		for i < len(b.N) && b.Hi[i] <= prev.Lo[j] && !(b.Lo[i] == prev.Lo[j] && b.Hi[i] == prev.Hi[j]) {
			keep(i, b.N[i]) // a bucket the earlier reading did not list yet
			i++
		}
		if i == len(b.N) || b.Lo[i] != prev.Lo[j] || b.Hi[i] != prev.Hi[j] {
			return nil, fmt.Errorf("buckets: bucket (%g, %g] of the earlier reading is gone from the later one", prev.Lo[j], prev.Hi[j])
		}
		if prev.N[j] > b.N[i] {
			return nil, fmt.Errorf("buckets: bucket (%g, %g] went down from %d to %d", b.Lo[i], b.Hi[i], prev.N[j], b.N[i])
		}
		keep(i, b.N[i]-prev.N[j])
		i++
	}
	for ; i < len(b.N); i++ {
		keep(i, b.N[i])
	}
	if out.Count == 0 {
		out.Sum = 0
	}
	return out, nil
}

// Add merges o into b: the histogram of both sets of observations. It
// fails when a bucket of o overlaps one of b without matching it (two
// layouts cannot merge).
func (b *Buckets) Add(o *Buckets) error {
	if o.Empty() {
		return nil
	}
	var lo, hi []float64
	var n []uint64
	i, j := 0, 0
	for i < len(b.N) || j < len(o.N) {
		switch {
		case j == len(o.N) || i < len(b.N) && b.Hi[i] <= o.Lo[j] && !(b.Lo[i] == o.Lo[j] && b.Hi[i] == o.Hi[j]):
			lo, hi, n = append(lo, b.Lo[i]), append(hi, b.Hi[i]), append(n, b.N[i])
			i++
		case i == len(b.N) || o.Hi[j] <= b.Lo[i]:
			lo, hi, n = append(lo, o.Lo[j]), append(hi, o.Hi[j]), append(n, o.N[j])
			j++
		case b.Lo[i] == o.Lo[j] && b.Hi[i] == o.Hi[j]:
			lo, hi, n = append(lo, b.Lo[i]), append(hi, b.Hi[i]), append(n, b.N[i]+o.N[j])
			i++
			j++
		default:
			return fmt.Errorf("buckets: (%g, %g] and (%g, %g] overlap: two layouts do not merge", b.Lo[i], b.Hi[i], o.Lo[j], o.Hi[j])
		}
	}
	b.Lo, b.Hi, b.N = lo, hi, n
	b.Count += o.Count
	b.Sum += o.Sum
	return nil
}

// Clone is a copy sharing nothing with b.
func (b *Buckets) Clone() *Buckets {
	if b == nil {
		return nil
	}
	return &Buckets{Lo: slices.Clone(b.Lo), Hi: slices.Clone(b.Hi), N: slices.Clone(b.N), Count: b.Count, Sum: b.Sum}
}

// Cumulative is b in Prometheus's classic layout: ascending upper bounds
// ending at +Inf and the observations ≤ each, a gap between two listed
// buckets standing as one empty bucket. It is what HistogramQuantile and
// HistogramMaxBound read.
func (b *Buckets) Cumulative() (upper, cum []float64) {
	var seen float64
	prevHi := math.Inf(-1)
	for i := range b.N {
		if b.Lo[i] > prevHi {
			// The bucket's own lower bound, so the interpolation inside it
			// starts there and not at the previous listed bucket's top.
			upper, cum = append(upper, b.Lo[i]), append(cum, seen)
		}
		seen += float64(b.N[i])
		upper, cum = append(upper, b.Hi[i]), append(cum, seen)
		prevHi = b.Hi[i]
	}
	if !math.IsInf(prevHi, 1) {
		upper, cum = append(upper, math.Inf(1)), append(cum, seen)
	}
	return upper, cum
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) with its bucket.
func (b *Buckets) Quantile(q float64) BucketQuantile {
	if b.Empty() {
		return BucketQuantile{}
	}
	upper, cum := b.Cumulative()
	return HistogramQuantile(q, upper, cum)
}

// MaxBound is a ceiling on the largest observation: the upper bound of the
// highest bucket that holds one, with its lower bound; aboveFinite when
// that bucket is open to +Inf. ok is false when b is empty.
func (b *Buckets) MaxBound() (lo, hi float64, aboveFinite, ok bool) {
	if b.Empty() {
		return 0, 0, false, false
	}
	i := len(b.N) - 1
	for i >= 0 && b.N[i] == 0 {
		i--
	}
	if i < 0 {
		return 0, 0, false, false
	}
	return b.Lo[i], b.Hi[i], math.IsInf(b.Hi[i], 1), true
}

// MinBound is a floor on the smallest observation: the lower bound of the
// lowest bucket that holds one. ok is false when b is empty.
func (b *Buckets) MinBound() (lo float64, ok bool) {
	if b.Empty() {
		return 0, false
	}
	for i := range b.N {
		if b.N[i] > 0 {
			return b.Lo[i], true
		}
	}
	return 0, false
}

// FromCumulative is the Buckets of a classic cumulative histogram (upper
// ascending, ending at +Inf; cum[i] observations ≤ upper[i]; a Prometheus
// histogram's buckets). The first bucket starts at 0, as HistogramQuantile
// reads it, so a first bound ≤ 0 is refused: such a histogram has
// observations at or below 0 with no lower bound to put them in.
func FromCumulative(upper, cum []float64, sum float64) (*Buckets, error) {
	if len(upper) != len(cum) || len(upper) == 0 || !math.IsInf(upper[len(upper)-1], 1) {
		return nil, errors.New("buckets: a cumulative histogram needs matching bounds and counts ending at +Inf")
	}
	if !(upper[0] > 0) {
		return nil, fmt.Errorf("buckets: first upper bound %g: observations must be above 0", upper[0])
	}
	b := &Buckets{Sum: sum}
	prevLo, prevCum := 0.0, 0.0
	for i, u := range upper {
		c := cum[i]
		if math.IsNaN(c) || c < prevCum || c != math.Trunc(c) {
			return nil, fmt.Errorf("buckets: cumulative count %g at bound %g is not a non-decreasing whole number", c, u)
		}
		if n := c - prevCum; n > 0 {
			b.Lo, b.Hi, b.N = append(b.Lo, prevLo), append(b.Hi, u), append(b.N, uint64(n))
			b.Count += uint64(n)
		}
		prevLo, prevCum = u, c
	}
	return b, b.Validate()
}

// MarshalJSON implements json.Marshaler. The wire form is {"count",
// "sum", "buckets": [[lo, hi, n], ...]} with hi null for +Inf: what a
// metrics file's cumulative histograms and a timeline row's tick_hist
// hold.
func (b *Buckets) MarshalJSON() ([]byte, error) {
	// Appended by hand, not through fmt and json.Marshal per number: a
	// server writes every cumulative histogram several times a second, and
	// the garbage of ~9 allocations per bucket set off its collector every
	// few seconds (each cycle a slow tick or two).
	buf := make([]byte, 0, 48+40*len(b.N))
	buf = append(buf, `{"count":`...)
	buf = strconv.AppendUint(buf, b.Count, 10)
	buf = append(buf, `,"sum":`...)
	buf = appendFloat(buf, b.Sum)
	buf = append(buf, `,"buckets":[`...)
	for i := range b.N {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '[')
		buf = appendFloat(buf, b.Lo[i])
		buf = append(buf, ',')
		if math.IsInf(b.Hi[i], 1) {
			buf = append(buf, "null"...)
		} else {
			buf = appendFloat(buf, b.Hi[i])
		}
		buf = append(buf, ',')
		buf = strconv.AppendUint(buf, b.N[i], 10)
		buf = append(buf, ']')
	}
	return append(buf, "]}"...), nil
}

// appendFloat appends v (finite: Validate and the callers keep it so) as
// encoding/json writes a float64: the shortest form that reads back
// exactly, in exponent form below 1e-6 or from 1e21 on, with the
// exponent's leading zero dropped (TestAppendFloatIsJSONs).
func appendFloat(b []byte, v float64) []byte {
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-09 → e-9
		b = b[:n-1]
	}
	return b
}

// UnmarshalJSON implements json.Unmarshaler: it refuses anything Validate
// refuses, and a bucket that is not [number, number|null, whole number].
//
// The histogram is read by a scanner of the one shape MarshalJSON writes
// (parseBuckets: "count", "sum" and "buckets" in that order); anything
// else, well-formed or not, goes through encoding/json (bucketsSlow),
// which decides and names the error. A swarm reads the server's metrics
// file every second, eight histograms of up to 190 buckets, and decoding
// them through encoding/json bucket by bucket was 4.7 ms of CPU a second
// taken beside the server whose tick the gate times.
// FuzzParseBucketsMatchesJSON holds the two paths together.
func (b *Buckets) UnmarshalJSON(data []byte) error {
	var out Buckets
	if !parseBuckets(data, &out) {
		out = Buckets{}
		if err := bucketsSlow(data, &out); err != nil {
			return err
		}
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*b = out
	return nil
}

// bucketsSlow decodes a histogram through encoding/json into out, naming
// what is wrong with it (Validate is the caller's).
func bucketsSlow(data []byte, out *Buckets) error {
	var w struct {
		Count   *uint64            `json:"count"`
		Sum     *float64           `json:"sum"`
		Buckets *[]json.RawMessage `json:"buckets"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("buckets: %w", err)
	}
	switch {
	case w.Count == nil:
		return errors.New(`buckets: field "count" missing`)
	case w.Sum == nil:
		return errors.New(`buckets: field "sum" missing`)
	case w.Buckets == nil:
		return errors.New(`buckets: field "buckets" missing`)
	case len(*w.Buckets) > MaxBuckets:
		return fmt.Errorf("buckets: %d buckets, more than %d", len(*w.Buckets), MaxBuckets)
	}
	out.Count, out.Sum = *w.Count, *w.Sum
	for i, raw := range *w.Buckets {
		var e []*float64
		if err := json.Unmarshal(raw, &e); err != nil || len(e) != 3 || e[0] == nil || e[2] == nil {
			return fmt.Errorf("buckets: bucket %d: want [lower, upper or null, count]", i)
		}
		hi := math.Inf(1)
		if e[1] != nil {
			hi = *e[1]
		}
		if err := out.add(i, *e[0], hi, *e[2]); err != nil {
			return err
		}
	}
	return nil
}

// add appends bucket i, refusing a count that is not a whole number.
func (b *Buckets) add(i int, lo, hi, n float64) error {
	if n < 0 || n != math.Trunc(n) || n > 1<<53 {
		return fmt.Errorf("buckets: bucket %d: count %g is not a whole number ≥ 0", i, n)
	}
	b.Lo, b.Hi, b.N = append(b.Lo, lo), append(b.Hi, hi), append(b.N, uint64(n))
	return nil
}

// parseBuckets reads data into out when it is {"count": whole number,
// "sum": number, "buckets": [[number, number|null, whole number], …]}
// (white space anywhere JSON allows it, at most MaxBuckets buckets), and
// reports whether it did. It declines anything else, leaving it to
// bucketsSlow; what it accepts is valid JSON that bucketsSlow reads the
// same.
func parseBuckets(data []byte, out *Buckets) bool {
	p := jsonScan{b: data}
	if !p.next('{') || !p.key("count") {
		return false
	}
	count, ok := p.uint()
	if !ok || !p.next(',') || !p.key("sum") {
		return false
	}
	sum, ok := p.number()
	if !ok || !p.next(',') || !p.key("buckets") || !p.list(out) || !p.next('}') || !p.end() {
		return false
	}
	out.Count, out.Sum = count, sum
	return true
}

// list reads a bucket list into out's Lo, Hi and N.
func (p *jsonScan) list(out *Buckets) bool {
	if !p.next('[') {
		return false
	}
	if p.next(']') {
		return true
	}
	for i := 0; ; i++ {
		if i == MaxBuckets || !p.next('[') {
			return false
		}
		lo, ok := p.number()
		if !ok || !p.next(',') {
			return false
		}
		hi := math.Inf(1)
		if !p.null() {
			if hi, ok = p.number(); !ok {
				return false
			}
		}
		if !p.next(',') {
			return false
		}
		n, ok := p.number()
		if !ok || !p.next(']') || out.add(i, lo, hi, n) != nil {
			return false
		}
		if p.next(']') {
			return true
		}
		if !p.next(',') {
			return false
		}
	}
}

// jsonScan reads the tokens of a histogram (parseBuckets).
type jsonScan struct {
	b []byte
	i int
}

func (p *jsonScan) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\n' || p.b[p.i] == '\t' || p.b[p.i] == '\r') {
		p.i++
	}
}

// next consumes c (after white space) when it comes next.
func (p *jsonScan) next(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// null consumes a null when it comes next.
func (p *jsonScan) null() bool {
	p.space()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// number consumes a number (JSON's grammar); ok is false when none comes
// next or it does not parse as a float64 (out of range).
func (p *jsonScan) number() (float64, bool) {
	tok, ok := p.numberToken()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(tok, 64)
	return v, err == nil
}

// uint consumes a whole number without sign, fraction or exponent that
// fits a uint64, as encoding/json decodes one into a uint64.
func (p *jsonScan) uint() (uint64, bool) {
	tok, ok := p.numberToken()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(tok, 10, 64)
	return v, err == nil
}

// numberToken consumes the text of a JSON number: -?(0|[1-9]d*)(.d+)?
// ([eE][+-]?d+)?, followed by a delimiter.
func (p *jsonScan) numberToken() (string, bool) {
	p.space()
	start := p.i
	p.skip('-')
	switch {
	case p.skip('0'):
	case p.digit1():
		p.digits()
	default:
		return "", false
	}
	if p.skip('.') && p.digits() == 0 {
		return "", false
	}
	if p.skip('e') || p.skip('E') {
		if !p.skip('+') {
			p.skip('-')
		}
		if p.digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.b) && !delimiter(p.b[p.i]) {
		return "", false
	}
	return string(p.b[start:p.i]), true
}

func delimiter(c byte) bool {
	return c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' || c == '\t' || c == '\r'
}

// skip consumes c when it comes next (no white space first).
func (p *jsonScan) skip(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// digit1 consumes a digit 1–9.
func (p *jsonScan) digit1() bool {
	if p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9' {
		p.i++
		return true
	}
	return false
}

// digits consumes digits and returns how many.
func (p *jsonScan) digits() int {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i - start
}

// key consumes "name" and the colon after it.
func (p *jsonScan) key(name string) bool {
	p.space()
	n := len(name) + 2
	if len(p.b)-p.i < n || p.b[p.i] != '"' || string(p.b[p.i+1:p.i+n-1]) != name || p.b[p.i+n-1] != '"' {
		return false
	}
	p.i += n
	return p.next(':')
}

// end reports whether only white space is left.
func (p *jsonScan) end() bool {
	p.space()
	return p.i == len(p.b)
}

// LogLinear accumulates observations into a fixed log-linear layout: each
// power-of-two octave from 2^LogLinearMinExp to 2^LogLinearMaxExp is cut
// into LogLinearSub equal buckets, so a bucket is at most 1/LogLinearSub
// of its lower bound wide (0.25 ms at 16 ms with milliseconds, the width of the
// Prometheus layout around a 60 Hz budget: a p99 read from it is off by less). Below the first octave is one bucket
// from 0, above the last one bucket open to +Inf. Recording is O(1) and
// allocates nothing; the zero value is not usable (NewLogLinear).
type LogLinear struct {
	n     []uint64
	count uint64
	sum   float64
}

// The LogLinear layout.
const (
	LogLinearSub    = 64
	LogLinearMinExp = -7 // 2^-7 = 0.0078125
	LogLinearMaxExp = 14 // 2^14 = 16384
)

const logLinearSlots = (LogLinearMaxExp-LogLinearMinExp)*LogLinearSub + 2

// NewLogLinear returns an empty accumulator.
func NewLogLinear() *LogLinear { return &LogLinear{n: make([]uint64, logLinearSlots)} }

// logLinearSlot is the bucket v falls in: 0 for (0, 2^MinExp] (and
// anything ≤ 0), the last for (2^MaxExp, +Inf).
func logLinearSlot(v float64) int {
	lowest, highest := math.Ldexp(1, LogLinearMinExp), math.Ldexp(1, LogLinearMaxExp)
	switch {
	case !(v > lowest):
		return 0
	case v > highest:
		return logLinearSlots - 1
	}
	frac, exp := math.Frexp(v) // v = frac·2^exp, frac in [0.5, 1)
	octave := exp - 1 - LogLinearMinExp
	// The bucket (lo, hi] holds hi, so a value on a bound belongs below it.
	sub := int(math.Ceil((frac*2-1)*LogLinearSub)) - 1
	if sub < 0 { // v is a power of two: the top of the octave below
		octave, sub = octave-1, LogLinearSub-1
	}
	return 1 + octave*LogLinearSub + sub
}

// logLinearBounds are slot i's (lo, hi].
func logLinearBounds(i int) (lo, hi float64) {
	switch i {
	case 0:
		return 0, math.Ldexp(1, LogLinearMinExp)
	case logLinearSlots - 1:
		return math.Ldexp(1, LogLinearMaxExp), math.Inf(1)
	}
	octave, sub := (i-1)/LogLinearSub, (i-1)%LogLinearSub
	base := math.Ldexp(1, LogLinearMinExp+octave)
	return base * (1 + float64(sub)/LogLinearSub), base * (1 + float64(sub+1)/LogLinearSub)
}

// Record adds one observation; NaN is ignored.
func (l *LogLinear) Record(v float64) {
	if math.IsNaN(v) {
		return
	}
	l.n[logLinearSlot(v)]++
	l.count++
	l.sum += v
}

// Count is the observations recorded.
func (l *LogLinear) Count() uint64 { return l.count }

// Snapshot is what l holds, listing only the buckets that hold something.
func (l *LogLinear) Snapshot() *Buckets {
	b := &Buckets{}
	l.SnapshotInto(b)
	return b
}

// SnapshotInto is Snapshot into b, reusing b's slices where they are large
// enough. A server that writes its cumulative histograms ten times a second
// keeps one Buckets for each: snapshots grown afresh were about half of
// what an 8-client reference server allocated.
func (l *LogLinear) SnapshotInto(b *Buckets) {
	b.Count, b.Sum = l.count, l.sum
	b.Lo, b.Hi, b.N = b.Lo[:0], b.Hi[:0], b.N[:0]
	for i, n := range l.n {
		if n > 0 {
			lo, hi := logLinearBounds(i)
			b.Lo, b.Hi, b.N = append(b.Lo, lo), append(b.Hi, hi), append(b.N, n)
		}
	}
}
