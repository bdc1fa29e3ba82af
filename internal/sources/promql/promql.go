// Package promql reads a game server's figures from a Prometheus server.
//
// A team whose Prometheus already scrapes its servers (in a cluster, the
// only place their per-pod endpoints can be reached from) gates through
// it: a Client asks the Prometheus HTTP API, through the Prometheus
// project's own client (client_golang's api package). Its Series read
// the mapped series once a second for the swarm's timeline, as a scrape
// would, and promsource.Source.FinalQuery has the Prometheus server
// compute the figures over the hold: increase, rate and
// histogram_quantile over the hold as a range (docs/metrics.md,
// "PromQL").
package promql

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Timeout bounds one query (connect, request, answer): the swarm asks
// once a second and must never stall behind an unreachable Prometheus.
const Timeout = 5 * time.Second

// Client asks one Prometheus server.
type Client struct {
	url string
	api v1.API
}

// New is a client of the Prometheus server at url (its root:
// http://prometheus:9090). Redirects are refused: the figures are
// recorded as read from url.
func New(url string) (*Client, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, fmt.Errorf("%q: want the Prometheus server's http(s) URL", url)
	}
	hc := &http.Client{
		Timeout:   Timeout,
		Transport: &http.Transport{ResponseHeaderTimeout: Timeout, MaxResponseHeaderBytes: 64 << 10, MaxIdleConnsPerHost: 2},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirect refused: give the Prometheus server's own URL")
		},
	}
	c, err := api.NewClient(api.Config{Address: url, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", url, err)
	}
	return &Client{url: url, api: v1.NewAPI(c)}, nil
}

// URL is the Prometheus server's URL.
func (c *Client) URL() string { return c.url }

// Query evaluates expr at the instant at. Anything but an instant vector
// is an error naming the server and the expression.
func (c *Client) Query(ctx context.Context, expr string, at time.Time) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	v, _, _, err := c.api.Query(ctx, expr, at)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %w", c.url, err)
	}
	if v == nil {
		// An answer with no data at all ({}), which the client passes on.
		return nil, fmt.Errorf("prometheus %s: %s gave no result", c.url, expr)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: %s gave a %s, not an instant vector", c.url, expr, v.Type())
	}
	return vec, nil
}
