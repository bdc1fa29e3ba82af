package promsource

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/prometheus/common/expfmt"
)

// Limits bound the work one scrape's body may cost before and while it is
// parsed. The Prometheus project's parsers are exact but not cheap on
// every input: the text parser's time and memory grow with the square of
// a series' label count (1,000 labels: 0.28 s and 44 MB; 4,000: 3.5 s and
// 700 MB), and the OpenMetrics parser (an ABNF grammar run on each line)
// costs about 1.7 ms and 0.27 MB of allocation a line, growing with the
// square of the line's length. A body is checked against these bounds by
// one linear pass before either parser sees it, and the parse itself stops
// at the scrape's deadline. docs/security.md has the figures measured on
// the worst bodies the bounds admit.
type Limits struct {
	// MaxSeries caps the sample lines of one body.
	MaxSeries int
	// MaxLabelsPerSeries caps one sample's labels.
	MaxLabelsPerSeries int
	// MaxLabelPairs caps the labels of every sample together: what the
	// parsed families hold in memory grows with it.
	MaxLabelPairs int
	// MaxLineBytes caps one line.
	MaxLineBytes int
}

// TextLimits are the bounds of a text-format body: far above what a game
// server exports (its own series and the Go and process collectors' are
// a few hundred lines, under 10 labels each), and low enough that the
// worst admitted body parses in well under a second.
var TextLimits = Limits{MaxSeries: 50_000, MaxLabelsPerSeries: 32, MaxLabelPairs: 100_000, MaxLineBytes: 64 << 10}

// OpenMetricsLimits are the bounds of an OpenMetrics body, tighter than
// text's because each line costs the grammar a thousand times more: the
// parse deadline ends a body of many short lines, these end the lines
// whose cost grows fastest.
var OpenMetricsLimits = Limits{MaxSeries: 2_000, MaxLabelsPerSeries: 32, MaxLabelPairs: 10_000, MaxLineBytes: 1 << 10}

// limitsFor is the bounds of a format name (ChooseFormat's second value).
func limitsFor(format string) Limits {
	if format == FormatOpenMetrics {
		return OpenMetricsLimits
	}
	return TextLimits
}

// LimitError is a body refused by its Limits: which bound, the line it
// was crossed at (1-based; 0 for the whole body) and the figure seen.
type LimitError struct {
	What  string
	Line  int
	Got   int
	Limit int
}

// Error says which bound and where.
func (e *LimitError) Error() string {
	at := ""
	if e.Line > 0 {
		at = fmt.Sprintf(" at line %d", e.Line)
	}
	return fmt.Sprintf("%s%s: %d, over the limit of %d (not parsed: a body past it costs the parser more than a scrape may take)", e.What, at, e.Got, e.Limit)
}

// CheckShape checks a text or OpenMetrics body against lim in one pass
// over its bytes, allocating nothing: lines, sample lines and the labels
// of each sample (a comma outside quotes between the braces separates
// two). Protobuf bodies are not line-shaped and are not checked here.
func CheckShape(b []byte, lim Limits) error {
	series, pairs := 0, 0
	for line := 1; len(b) > 0; line++ {
		n := bytes.IndexByte(b, '\n')
		var l []byte
		if n < 0 {
			l, b = b, nil
		} else {
			l, b = b[:n], b[n+1:]
		}
		if len(l) > lim.MaxLineBytes {
			return &LimitError{What: "line length (bytes)", Line: line, Got: len(l), Limit: lim.MaxLineBytes}
		}
		l = bytes.TrimLeft(l, " \t")
		if len(l) == 0 || l[0] == '#' {
			continue
		}
		series++
		if series > lim.MaxSeries {
			return &LimitError{What: "series (sample lines)", Line: line, Got: series, Limit: lim.MaxSeries}
		}
		labels := countLabels(l)
		if labels > lim.MaxLabelsPerSeries {
			return &LimitError{What: "labels of one series", Line: line, Got: labels, Limit: lim.MaxLabelsPerSeries}
		}
		pairs += labels
		if pairs > lim.MaxLabelPairs {
			return &LimitError{What: "labels of all series", Line: line, Got: pairs, Limit: lim.MaxLabelPairs}
		}
	}
	return nil
}

// countLabels counts the label pairs of one sample line: the '='s outside
// quoted values between its first '{' and the matching '}'. A malformed
// line is counted as far as it goes; the parser then says what is wrong.
func countLabels(l []byte) int {
	open := bytes.IndexByte(l, '{')
	if open < 0 {
		return 0
	}
	n, quoted := 0, false
	for i := open + 1; i < len(l); i++ {
		switch c := l[i]; {
		case quoted && c == '\\':
			i++ // the escaped byte
		case c == '"':
			quoted = !quoted
		case !quoted && c == '=':
			n++
		case !quoted && c == '}':
			return n
		}
	}
	return n
}

// ErrParseDeadline is a parse still running at the scrape's deadline.
var ErrParseDeadline = errors.New("parse still running at the scrape's deadline")

// deadlineReader fails its reads once the deadline has passed, which
// ends the parser reading from it at its next line.
type deadlineReader struct {
	r        io.Reader
	deadline time.Time
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	if time.Now().After(d.deadline) {
		return 0, ErrParseDeadline
	}
	return d.r.Read(p)
}

// parseLineBuffer is the read buffer the parser gets: a line's worth at
// most, so that the deadline is seen a line after it passes (the
// OpenMetrics parser would otherwise take a 4 KiB buffer's lines, about
// 200, a few hundred milliseconds, past it).
const parseLineBuffer = 256

// ParseWithin parses body (Parse) and stops with ErrParseDeadline once
// deadline has passed. The parsers read a line at a time, so a parse ends
// within one line's work of the deadline; CheckShape bounds that line.
func ParseWithin(body []byte, format expfmt.Format, deadline time.Time) (Families, error) {
	r := bufio.NewReaderSize(&deadlineReader{r: bytes.NewReader(body), deadline: deadline}, parseLineBuffer)
	fams, err := Parse(r, format)
	if errors.Is(err, ErrParseDeadline) {
		return nil, ErrParseDeadline
	}
	return fams, err
}
