package models

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// OldestDueLimit is how long a task may wait past its next_at before the
// overview shows it red: a longer wait means no worker is draining.
const OldestDueLimit = 10 * time.Minute

// OverviewRange is the span of the overview's chart and of its third
// window of attempts: the last hour, day or week.
type OverviewRange string

const (
	RangeHour OverviewRange = "1h"
	RangeDay  OverviewRange = "24h"
	RangeWeek OverviewRange = "7d"
)

// DefaultRange is the overview's range when the request names none.
const DefaultRange = RangeDay

// ParseOverviewRange reads a range as the overview's "range" parameter
// spells it; "" is DefaultRange.
func ParseOverviewRange(s string) (OverviewRange, error) {
	switch r := OverviewRange(s); r {
	case "":
		return DefaultRange, nil
	case RangeHour, RangeDay, RangeWeek:
		return r, nil
	}
	return "", fmt.Errorf("%w: range must be 1h, 24h or 7d, not %q", ErrInvalid, s)
}

// Span is how far back the range reaches.
func (r OverviewRange) Span() time.Duration {
	switch r {
	case RangeHour:
		return time.Hour
	case RangeWeek:
		return 7 * 24 * time.Hour
	}
	return 24 * time.Hour
}

// Step is how long one column of the range's chart is: a minute over an
// hour, ten minutes over a day, an hour over a week, so each chart has 60
// to 168 columns and a week's is summed in the database from its 10,080
// rollup minutes.
func (r OverviewRange) Step() time.Duration {
	switch r {
	case RangeHour:
		return time.Minute
	case RangeWeek:
		return time.Hour
	}
	return 10 * time.Minute
}

// Buckets is how many columns the range's chart has.
func (r OverviewRange) Buckets() int { return int(r.Span() / r.Step()) }

// Health is the numbers that say whether releases are healthy right now.
type Health struct {
	Now time.Time
	// DueBacklog counts PENDING and RETRY tasks whose next_at has come;
	// OldestDue is the earliest such next_at (zero when none is due).
	DueBacklog int64
	OldestDue  time.Time
	Manual     int64
	Retry      int64
	LastHour   AttemptStats
	LastDay    AttemptStats
	// Range is the chart's span; with RangeWeek, LastWeek counts the
	// week's attempts as LastDay the day's (else it is zero).
	Range    OverviewRange
	LastWeek AttemptStats
	// Buckets holds Range.Buckets() buckets of Range.Step(), oldest
	// first, the last one holding now.
	Buckets []MinuteCount
	// RecentDuplicates are the latest DUPLICATE attempts of the last day.
	RecentDuplicates []TaskAttempt
}

// OldestDueAge is how long the oldest due task has been waiting.
func (h Health) OldestDueAge() time.Duration {
	if h.OldestDue.IsZero() {
		return 0
	}
	return h.Now.Sub(h.OldestDue)
}

// AttemptStats counts the attempts that finished in a window. DONE and
// DUPLICATE count as successes (a duplicate was stopped by the ledger),
// RETRY and MANUAL as failures.
type AttemptStats struct {
	Since      time.Time
	Success    int64
	Failures   int64
	Duplicates int64
	// ByType has every resource type, in the registry's order.
	ByType []TypeStats
	// ByClass has every class with failures, most failures first.
	ByClass []ClassStats
}

// SuccessRate is successes over attempts, and false when there were none.
func (a AttemptStats) SuccessRate() (float64, bool) {
	n := a.Success + a.Failures
	if n == 0 {
		return 0, false
	}
	return float64(a.Success) / float64(n), true
}

// TypeStats counts one resource type's attempts in a window.
type TypeStats struct {
	Type     ResourceType
	Success  int64
	Failures int64
}

// ClassStats counts one error class's failed attempts in a window.
type ClassStats struct {
	Class    ErrorClass
	Failures int64
}

// MinuteCount is one column of the chart, starting At: tasks released
// (DONE) and attempts failed.
type MinuteCount struct {
	At       time.Time
	Released int64
	Failed   int64
}

// ReleaseHealth reads the overview's numbers. Every query is bounded by an
// index: due tasks by (status, next_at); the attempts' counts come from
// the per-minute rollup attempt_minutes (see rollup), so they cost the
// window's minutes, not its attempts (100,000 attempts in the last hour
// were two scans of 100,000 index entries); the latest duplicates by
// (outcome, finished_at), ten entries. A week's chart and window read
// 10,080 minutes of the rollup, summed in the database (see Step).
func (s *Store) ReleaseHealth(ctx context.Context, r OverviewRange) (Health, error) {
	now := s.Now()
	r, err := ParseOverviewRange(string(r))
	if err != nil {
		return Health{}, err
	}
	h := Health{Now: now, Range: r}
	db := s.R.WithContext(ctx)

	q, err := s.ReleaseQueue(ctx)
	if err != nil {
		return h, err
	}
	h.DueBacklog, h.OldestDue, h.Retry, h.Manual = q.Due, q.OldestDue, q.Retry, q.Manual

	if err := s.attemptCounts(ctx, &h); err != nil {
		return h, err
	}
	if h.LastDay.Duplicates > 0 {
		if err := db.Where("outcome = ? AND finished_at >= ?", OutcomeDuplicate, h.LastDay.Since).
			Order("finished_at DESC").Limit(10).Find(&h.RecentDuplicates).Error; err != nil {
			return h, fmt.Errorf("recent duplicates: %w", err)
		}
	}
	return h, nil
}

// attemptCounts reads the windows and the chart from the rollup in one
// pass. The windows count the last hour's, day's (and with RangeWeek the
// week's) attempts by outcome, type and class. Every window starts on a
// minute (windowStart), so they are up to a minute shorter than their
// span, and Since says where they start: a minute less in a day, or in an
// hour, does not change what the overview tells. The chart sums the
// range's minutes into columns of its step (an hour's on the hour), the
// last holding now. The rows read back are the columns' and windows'
// keys, not the span's minutes; a week reads every row of the table but
// the eighth day's, so it scans the table rather than the index (see
// BenchmarkReleaseHealthWeek).
func (s *Store) attemptCounts(ctx context.Context, h *Health) error {
	hour, day := windowStart(h.Now.Add(-time.Hour)), windowStart(h.Now.Add(-24*time.Hour))
	h.LastHour, h.LastDay = newAttemptStats(hour, s.types), newAttemptStats(day, s.types)
	// windows are the nested windows, shortest first; a row of the age
	// index i counts in windows[i:].
	windows := []*AttemptStats{&h.LastHour, &h.LastDay}
	oldest := day
	if h.Range == RangeWeek {
		oldest = windowStart(h.Now.Add(-RangeWeek.Span()))
		h.LastWeek = newAttemptStats(oldest, s.types)
		windows = append(windows, &h.LastWeek)
	}
	step, n := h.Range.Step(), h.Range.Buckets()
	start := h.Now.Truncate(step).Add(-time.Duration(n-1) * step)
	h.Buckets = make([]MinuteCount, n)
	for i := range h.Buckets {
		h.Buckets[i].At = start.Add(time.Duration(i) * step)
	}
	from, minute := oldest, "minute"
	if start.Before(from) {
		from = start
	}
	if h.Range == RangeWeek {
		minute = "+minute" // SQLite: no index for this term, a plain scan
	}
	type row struct {
		Col          int64
		Age          int
		Outcome      string
		ResourceType ResourceType
		ErrorClass   ErrorClass
		N            int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT CASE WHEN minute >= ? THEN (minute - ?) / ? ELSE -1 END AS col,
		CASE WHEN minute >= ? THEN 0 WHEN minute >= ? THEN 1 WHEN minute >= ? THEN 2 ELSE 3 END AS age,
		outcome, resource_type, error_class, SUM(n) AS n
		FROM attempt_minutes WHERE `+minute+` >= ? AND outcome IN ('DONE','DUPLICATE','RETRY','MANUAL')
		GROUP BY col, age, outcome, resource_type, error_class`,
		start.Unix(), start.Unix(), int64(step/time.Second), hour.Unix(), day.Unix(), oldest.Unix(), from.Unix()).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("count attempts: %w", err)
	}
	classes := make([]map[ErrorClass]int64, len(windows))
	for i := range classes {
		classes[i] = map[ErrorClass]int64{}
	}
	for _, r := range rows {
		if r.Col >= 0 && r.Col < int64(n) { // else before the chart, or a clock step back
			switch r.Outcome {
			case OutcomeDone:
				h.Buckets[r.Col].Released += r.N
			case OutcomeRetry, OutcomeManual:
				h.Buckets[r.Col].Failed += r.N
			}
		}
		if r.Age < 0 || r.Age >= len(windows) {
			continue
		}
		for i, w := range windows[r.Age:] {
			ts := w.typeStats(r.ResourceType)
			switch r.Outcome {
			case OutcomeDone, OutcomeDuplicate:
				w.Success += r.N
				ts.Success += r.N
				if r.Outcome == OutcomeDuplicate {
					w.Duplicates += r.N
				}
			default:
				w.Failures += r.N
				ts.Failures += r.N
				classes[r.Age+i][r.ErrorClass] += r.N
			}
		}
	}
	for i, w := range windows {
		for c, n := range classes[i] {
			w.ByClass = append(w.ByClass, ClassStats{Class: c, Failures: n})
		}
		sort.Slice(w.ByClass, func(a, b int) bool {
			if w.ByClass[a].Failures != w.ByClass[b].Failures {
				return w.ByClass[a].Failures > w.ByClass[b].Failures
			}
			return w.ByClass[a].Class < w.ByClass[b].Class
		})
	}
	return nil
}

func newAttemptStats(since time.Time, types []ResourceType) AttemptStats {
	a := AttemptStats{Since: since, ByType: make([]TypeStats, 0, len(types)), ByClass: []ClassStats{}}
	for _, t := range types {
		a.ByType = append(a.ByType, TypeStats{Type: t})
	}
	return a
}

// typeStats is the row of one type, added at the end for a type the
// registry does not know (an attempt from an older version, say).
func (a *AttemptStats) typeStats(t ResourceType) *TypeStats {
	for i := range a.ByType {
		if a.ByType[i].Type == t {
			return &a.ByType[i]
		}
	}
	a.ByType = append(a.ByType, TypeStats{Type: t})
	return &a.ByType[len(a.ByType)-1]
}
