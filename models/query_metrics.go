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

// ChartMinutes is how many minutes the releases-per-minute chart shows.
const ChartMinutes = 180

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
	// Minutes holds ChartMinutes one-minute buckets, oldest first, the last
	// one being the current minute.
	Minutes []MinuteCount
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

// MinuteCount is one minute of the chart: tasks released (DONE) and
// attempts failed.
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
// (outcome, finished_at), ten entries.
func (s *Store) ReleaseHealth(ctx context.Context) (Health, error) {
	now := s.Now()
	h := Health{Now: now}
	db := s.R.WithContext(ctx)

	q, err := s.ReleaseQueue(ctx)
	if err != nil {
		return h, err
	}
	h.DueBacklog, h.OldestDue, h.Retry, h.Manual = q.Due, q.OldestDue, q.Retry, q.Manual

	if err := s.attemptStats(ctx, &h); err != nil {
		return h, err
	}
	if err := s.minuteCounts(ctx, &h); err != nil {
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

// attemptStats counts the last day's attempts by outcome, type and class,
// split at an hour ago, from the rollup. Both windows start on a minute
// (windowStart), so they are up to a minute shorter than an hour and a day,
// and Since says where they start: a minute less in a day, or in an hour,
// does not change what the overview tells.
func (s *Store) attemptStats(ctx context.Context, h *Health) error {
	hour, day := windowStart(h.Now.Add(-time.Hour)), windowStart(h.Now.Add(-24*time.Hour))
	type row struct {
		Outcome      string
		ResourceType ResourceType
		ErrorClass   ErrorClass
		Recent       int
		N            int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT outcome, resource_type, error_class,
		CASE WHEN minute >= ? THEN 1 ELSE 0 END AS recent, SUM(n) AS n
		FROM attempt_minutes WHERE minute >= ? AND outcome IN ('DONE','DUPLICATE','RETRY','MANUAL')
		GROUP BY outcome, resource_type, error_class, recent`, hour.Unix(), day.Unix()).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("count attempts: %w", err)
	}
	h.LastHour, h.LastDay = newAttemptStats(hour, s.types), newAttemptStats(day, s.types)
	classes := [2]map[ErrorClass]int64{{}, {}}
	for _, r := range rows {
		windows := []*AttemptStats{&h.LastDay}
		if r.Recent == 1 {
			windows = append(windows, &h.LastHour)
		}
		for i, w := range windows {
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
				classes[i][r.ErrorClass] += r.N
			}
		}
	}
	for i, w := range []*AttemptStats{&h.LastDay, &h.LastHour} {
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

// minuteCounts reads the last ChartMinutes minutes of attempts from the
// rollup, whose minutes are the chart's.
func (s *Store) minuteCounts(ctx context.Context, h *Health) error {
	start := h.Now.Truncate(time.Minute).Add(-(ChartMinutes - 1) * time.Minute)
	type row struct {
		Minute  int64
		Outcome string
		N       int64
	}
	var rows []row
	err := s.R.WithContext(ctx).Raw(`SELECT minute, outcome, SUM(n) AS n FROM attempt_minutes
		WHERE minute >= ? AND outcome IN ('DONE','RETRY','MANUAL') GROUP BY minute, outcome`, start.Unix()).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("count attempts by minute: %w", err)
	}
	h.Minutes = make([]MinuteCount, ChartMinutes)
	for i := range h.Minutes {
		h.Minutes[i].At = start.Add(time.Duration(i) * time.Minute)
	}
	for _, r := range rows {
		i := int((r.Minute - start.Unix()) / 60)
		if i < 0 || i >= ChartMinutes {
			continue // finished after now: a clock step back
		}
		if r.Outcome == OutcomeDone {
			h.Minutes[i].Released += r.N
		} else {
			h.Minutes[i].Failed += r.N
		}
	}
	return nil
}
