package promsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Bounds of one scrape.
const (
	// DefaultTimeout bounds one scrape (connect, request, body): a swarm
	// sampling once a second never stalls behind an unreachable server.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxBytes caps an exposition's (decompressed) body. A game
	// server with the Go and process collectors exports 10-30 KB; one near
	// this cap is not a metrics endpoint meant to be scraped every second.
	DefaultMaxBytes = 8 << 20
)

// acceptHeader asks for the text format first, then OpenMetrics.
// Prometheus prefers OpenMetrics; this does not because the Prometheus
// project's OpenMetrics parser (expfmt, an ABNF grammar) costs about a
// millisecond a line on a 2-core machine (a few seconds to build its
// grammar once), against microseconds for the text parser, and the swarm
// scrapes every second beside the server it measures. A server that
// answers only OpenMetrics is still parsed as OpenMetrics: the parser
// follows the Content-Type of the answer, not the request.
const acceptHeader = "text/plain;version=0.0.4;q=0.5,application/openmetrics-text;version=1.0.0;q=0.4,application/openmetrics-text;version=0.0.1;q=0.3,*/*;q=0.1"

// Scraper fetches and parses one endpoint. The zero value of each
// optional field takes its default.
type Scraper struct {
	// URL is the endpoint (http or https).
	URL string
	// Fallback is the format assumed when the Content-Type names none
	// (FormatText or FormatOpenMetrics); "" makes that an error, as in
	// Prometheus 3.
	Fallback string
	// Client does the request; nil uses one with DefaultTimeout that opens
	// a fresh connection per scrape (no idle connection holds one of the
	// endpoint's few slots between scrapes).
	Client *http.Client
	// MaxBytes caps the body; 0 is DefaultMaxBytes.
	MaxBytes int64
}

var defaultClient = &http.Client{
	Timeout:       DefaultTimeout,
	Transport:     &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: DefaultTimeout, MaxResponseHeaderBytes: 64 << 10},
	CheckRedirect: refuseRedirect,
}

// refuseRedirect refuses every redirect. The figures are recorded as the
// URL the profile names; following a 302 to another port or host would
// gate another process's metrics under that name.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	status := ""
	if req.Response != nil {
		status = req.Response.Status + " "
	}
	return fmt.Errorf("%sredirect to %s refused: scrape the final URL itself (set server.metrics.url to it)", status, req.URL.Redacted())
}

// ScrapeError is a scrape that failed: the URL and why.
type ScrapeError struct {
	URL string
	Err error
}

// Error names the URL.
func (e *ScrapeError) Error() string { return "scrape " + e.URL + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ScrapeError) Unwrap() error { return e.Err }

// Origin is the endpoint's URL.
func (s *Scraper) Origin() string { return s.URL }

// Fetch scrapes the endpoint once: anything but a 200 with a body that
// parses in the format its Content-Type names is an error naming the URL.
// It returns the families and the format parsed.
func (s *Scraper) Fetch(ctx context.Context) (Families, string, error) {
	fams, format, err := s.fetch(ctx)
	if err != nil {
		return nil, "", &ScrapeError{URL: s.URL, Err: err}
	}
	return fams, format, nil
}

func (s *Scraper) fetch(ctx context.Context) (Families, string, error) {
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		return nil, "", errors.New("not an http(s) URL")
	}
	c := s.Client
	if c == nil {
		c = defaultClient
	}
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	deadline := scrapeDeadline(ctx, c, time.Now())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", acceptHeader)
	req.Header.Set("User-Agent", "scalegate-swarm")
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	return s.parseResponse(resp, limit, deadline)
}

// parseResponse judges an answer once the request is done: its status,
// the format its Content-Type names, the body's size and shape (within
// limit), then the parse, which must be done by deadline. The caller owns
// and closes the body.
func (s *Scraper) parseResponse(resp *http.Response, limit int64, deadline time.Time) (Families, string, error) {
	body := io.LimitReader(resp.Body, limit+1)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(body, 200))
		return nil, "", fmt.Errorf("status %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	format, name, err := ChooseFormat(resp.Header.Get("Content-Type"), s.Fallback)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, "", fmt.Errorf("reading the body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("body over %d bytes: not an exposition meant to be scraped every second", limit)
	}
	if len(b) == 0 {
		return nil, "", errors.New("empty body")
	}
	if name != FormatProtobuf {
		if err := CheckShape(b, limitsFor(name)); err != nil {
			return nil, "", fmt.Errorf("%s exposition: %w", name, err)
		}
	}
	fams, err := ParseWithin(b, format, deadline)
	if err != nil {
		return nil, "", fmt.Errorf("%s exposition: %w", name, err)
	}
	return fams, name, nil
}

// scrapeDeadline is when a scrape started at start must be done, body
// parsed: the client's timeout, or ctx's deadline if that comes first.
func scrapeDeadline(ctx context.Context, c *http.Client, start time.Time) time.Time {
	d := start.Add(DefaultTimeout)
	if c.Timeout > 0 {
		d = start.Add(c.Timeout)
	}
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		d = cd
	}
	return d
}

// Ready is the readiness check of a server measured through Prometheus:
// the endpoint answers 200 with a body that parses, and every series the
// mapping names resolves to exactly one series of the right type. The
// process_* defaults do not hold readiness up (a server without them
// leaves rss_kb and cpu_pct missing, which their gates report). The error
// names the URL and each series that is not there.
func Ready(ctx context.Context, s Fetcher, m Map) error {
	fams, _, err := s.Fetch(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range sortedKeys(m) {
		f := m[name]
		k, metric, err := f.kind()
		if err != nil {
			errs = append(errs, fmt.Errorf("map.%s %w", name, err))
			continue
		}
		if r := read(fams, k, metric, f.Labels, f.Label); r.err != "" {
			errs = append(errs, fmt.Errorf("%s: %s", name, r.err))
		}
	}
	if len(errs) > 0 {
		return &ScrapeError{URL: s.Origin(), Err: errors.Join(errs...)}
	}
	return nil
}
