package swarm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Shard selects the part of a run one process drives: shard Index of
// Count runs clients [⌊Index·C/Count⌋, ⌊(Index+1)·C/Count⌋) of a C-client
// run. Each client keeps the index, name, ramp slot and pattern it has in
// the unsharded run, so N shards on N machines put the same load on the
// server as one process would, and their reports merge into its report.
// The zero value is the whole run.
type Shard struct {
	Index int
	Count int
}

// ParseShard parses "I/N" (0 ≤ I < N).
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	idx, err1 := strconv.Atoi(strings.TrimSpace(i))
	cnt, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 0/4", s)
	}
	sh := Shard{Index: idx, Count: cnt}
	if err := sh.validate(); err != nil {
		return Shard{}, err
	}
	return sh, nil
}

func (s Shard) validate() error {
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("shard %d/%d: want 0 ≤ I < N and N ≥ 1", s.Index, s.Count)
	}
	return nil
}

// count is Count with the zero value meaning one shard.
func (s Shard) count() int { return max(1, s.Count) }

// Range is the half-open client index range [lo, hi) of a clients-client
// run this shard drives.
func (s Shard) Range(clients int) (lo, hi int) {
	n := s.count()
	// int64: index × clients may exceed 2^31 on 32-bit platforms.
	lo = int(int64(s.Index) * int64(clients) / int64(n))
	hi = int(int64(s.Index+1) * int64(clients) / int64(n))
	return lo, hi
}

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.count()) }

// ShardClients is how many clients this process drives.
func (c *Config) ShardClients() int {
	lo, hi := c.Shard.Range(c.Clients)
	return hi - lo
}

// sharded reports whether the run is part of a larger one or on a shared
// clock, so the report carries its shard block.
func (c *Config) sharded() bool { return c.Shard.count() > 1 || !c.StartAt.IsZero() }

// waitStart waits for the shared start instant and returns the run's
// start: StartAt when given (even when this process is late, so every
// shard's timeline counts from the same instant), else now. late is how
// far past StartAt the process was when it could begin. A cancelled ctx
// ends the wait early; the run then ends at once and is marked aborted.
func waitStart(ctx context.Context, at time.Time) (start time.Time, late time.Duration) {
	now := time.Now()
	if at.IsZero() {
		return now, 0
	}
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return at, 0
	}
	return at, now.Sub(at)
}
