package models

import (
	"context"
	"fmt"
	"time"
)

// LatencyTarget is how soon after its close a task should be released: the
// overview draws it and shows a quantile past it red, and the alert rules
// warn when the p99 stays past it.
const LatencyTarget = 2 * time.Second

// LatencyWindow is how far back the overview's latency quantiles look.
const LatencyWindow = time.Hour

// LatencyBuckets are the upper bounds (inclusive) of the close→released
// latency buckets. The overview and the Prometheus histogram share them, so
// both interpolate their quantiles in the same buckets: fine below 1 s,
// edges at the 2 s target and at the 10 s alert, and a long tail for
// retries and outages. A last, unbounded bucket follows.
var LatencyBuckets = []time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
	30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

// LatencyStart is when a released task's close→released latency starts,
// and false when the task does not count. A rerun's task does not: its
// wait was a person's. A task never retried counts from when it was due,
// which is its close unless the resource delays its release on purpose (a
// SKU's release delay is the shop's choice, not slowness). A retried task
// counts from its close, retries included: its next_at has moved to the
// last retry, and the first due time is not kept, so a delayed task that
// also retried counts its delay too (rare, and it errs on the slow side).
// The rollup applies it as each task is released (rollup.addReleased), and
// migration 00019's back-fill is the same rule in SQL.
func (t ReleaseTask) LatencyStart() (time.Time, bool) {
	switch {
	case t.Trigger == TriggerRerun:
		return time.Time{}, false
	case t.Failures == 0:
		return t.NextAt, true
	}
	return t.CreatedAt, true
}

// LatencyBucket counts the latencies of one bucket, with the least and the
// greatest of them.
type LatencyBucket struct {
	Count    int64
	Min, Max time.Duration
}

// LatencyStats is the close→released latency of the tasks released since
// Since (see LatencyStart for which count), bucketed.
type LatencyStats struct {
	Since time.Time
	Count int64
	// OverTarget counts the latencies past LatencyTarget.
	OverTarget int64
	Max        time.Duration
	// Buckets has one bucket per LatencyBuckets bound and the unbounded
	// one last; empty buckets are zero.
	Buckets []LatencyBucket
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) as Prometheus does from a
// histogram: it finds the bucket the rank falls in and interpolates
// linearly inside it. Where Prometheus spans the bucket's bounds, this
// spans the least and greatest latency the bucket holds, so the estimate
// is never outside what was seen (all latencies equal give that latency)
// and the unbounded bucket needs no bound. 0 when nothing counts.
func (l LatencyStats) Quantile(q float64) time.Duration {
	q = min(max(q, 0), 1)
	var n int64
	for _, b := range l.Buckets {
		n += b.Count
	}
	if n == 0 {
		return 0
	}
	rank := q * float64(n)
	var below int64
	for _, b := range l.Buckets {
		if b.Count == 0 {
			continue
		}
		if float64(below+b.Count) >= rank {
			f := (rank - float64(below)) / float64(b.Count)
			return b.Min + time.Duration(f*float64(b.Max-b.Min))
		}
		below += b.Count
	}
	return l.Max
}

// ReleaseLatency buckets the close→released latency of the tasks released
// in the last LatencyWindow, from the rollup latency_minutes (see rollup),
// which the releases keep as they commit: in the database, so every
// instance shows the same and a restart loses nothing, and at the cost of
// the window's minutes, not its releases. The window starts on a minute
// (windowStart; Since says where), up to a minute shorter than
// LatencyWindow: a minute less in an hour moves no quantile the overview
// shows. Latencies are whole milliseconds.
func (s *Store) ReleaseLatency(ctx context.Context) (LatencyStats, error) {
	since := windowStart(s.Now().Add(-LatencyWindow))
	type row struct {
		Bucket int
		N      int64
		Lo, Hi int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT bucket, SUM(n) AS n, MIN(min_ms) AS lo, MAX(max_ms) AS hi
		FROM latency_minutes WHERE minute >= ? GROUP BY bucket`, since.Unix()).Scan(&rows).Error
	if err != nil {
		return LatencyStats{Since: since}, fmt.Errorf("release latency: %w", err)
	}
	buckets := make([]LatencyBucket, len(LatencyBuckets)+1)
	for _, r := range rows {
		if r.Bucket < 0 || r.Bucket >= len(buckets) {
			return LatencyStats{Since: since}, fmt.Errorf("release latency: bucket %d out of range", r.Bucket)
		}
		buckets[r.Bucket] = LatencyBucket{Count: r.N, Min: time.Duration(r.Lo) * time.Millisecond, Max: time.Duration(r.Hi) * time.Millisecond}
	}
	return latencyStats(since, buckets), nil
}

// latencyStats sums buckets up.
func latencyStats(since time.Time, buckets []LatencyBucket) LatencyStats {
	l := LatencyStats{Since: since, Buckets: buckets}
	for _, b := range buckets {
		l.Count += b.Count
		l.Max = max(l.Max, b.Max)
		// Exact, since the target is a bucket bound: a bucket is all past
		// it or all within.
		if b.Count > 0 && b.Min > LatencyTarget {
			l.OverTarget += b.Count
		}
	}
	return l
}
