package models

import (
	"context"
	"fmt"
	"time"
)

// LatencySettle is how long after a minute ends LatencyCache takes the
// minute's releases as all committed and keeps its buckets. A release's
// done_at is read inside its transaction, so the row appears only at the
// commit, later: at most the worker's try timeout later, a quarter of its
// lease (7.5 s at the default 30 s lease). Two minutes covers leases up to
// eight minutes with room for the clocks of two instances to differ; a
// release committed later still into a kept minute is missed until that
// minute leaves the window.
const LatencySettle = 2 * time.Minute

// LatencyCache reads what Store.ReleaseLatency reads, for a fraction of
// its cost: it keeps the buckets of every settled minute of the window
// (one that ended LatencySettle ago) and scans only the unsettled tail and
// the window's first, partial minute; a minute is scanned once, when it
// settles, and dropped when it leaves the window. The window is the same
// (the last LatencyWindow to the microsecond), so are the figures. It is
// safe for concurrent use; each server holds one.
type LatencyCache struct {
	s *Store
	// lock guards minutes. A channel, so a request waiting behind a
	// long fill (the first one, or after a quiet hour) can give up with
	// its ctx.
	lock    chan struct{}
	minutes map[int64][]LatencyBucket // by the minute's start, Unix seconds
}

// NewLatencyCache makes an empty cache over s.
func NewLatencyCache(s *Store) *LatencyCache {
	return &LatencyCache{s: s, lock: make(chan struct{}, 1), minutes: map[int64][]LatencyBucket{}}
}

// ReleaseLatency is Store.ReleaseLatency, from the kept minutes and two
// short scans.
func (c *LatencyCache) ReleaseLatency(ctx context.Context) (LatencyStats, error) {
	now := c.s.Now()
	since := now.Add(-LatencyWindow)
	// Kept: the whole minutes in [first, settled).
	first := since.Truncate(time.Minute)
	if first.Before(since) {
		first = first.Add(time.Minute)
	}
	settled := now.Add(-LatencySettle).Truncate(time.Minute)
	if settled.Before(first) {
		settled = first
	}
	fail := func(err error) (LatencyStats, error) {
		return LatencyStats{Since: since}, fmt.Errorf("release latency: %w", err)
	}
	buckets, err := c.settledMinutes(ctx, first, settled)
	if err != nil {
		return fail(err)
	}
	if since.Before(first) {
		head, err := c.s.scanLatency(ctx, since, first)
		if err != nil {
			return fail(err)
		}
		mergeLatency(buckets, head)
	}
	tail, err := c.s.scanLatency(ctx, settled, time.Time{})
	if err != nil {
		return fail(err)
	}
	mergeLatency(buckets, tail)
	return latencyStats(since, buckets), nil
}

// settledMinutes merges the buckets of the minutes in [from, to), scanning
// those not kept yet and forgetting those outside: past the window, or
// after to when the clock went back.
func (c *LatencyCache) settledMinutes(ctx context.Context, from, to time.Time) ([]LatencyBucket, error) {
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.lock }()
	for m := range c.minutes {
		if m < from.Unix() || m >= to.Unix() {
			delete(c.minutes, m)
		}
	}
	sum := make([]LatencyBucket, len(LatencyBuckets)+1)
	for m := from; m.Before(to); m = m.Add(time.Minute) {
		b, ok := c.minutes[m.Unix()]
		if !ok {
			var err error
			if b, err = c.s.scanLatency(ctx, m, m.Add(time.Minute)); err != nil {
				return nil, fmt.Errorf("minute %s: %w", m.Format("15:04"), err)
			}
			c.minutes[m.Unix()] = b
		}
		mergeLatency(sum, b)
	}
	return sum, nil
}
