package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// RollupRetention is how long the per-minute rollups (attempt_minutes,
// latency_minutes) are kept: the longest window read from them, the
// overview's last week (RangeWeek), and a day more, so a week read just
// before the daily cleanup, or by an instance whose clock runs behind,
// still finds every minute. A week of a busy shop is about 10,080 minutes
// times the few outcome, type and class keys of each: tens of thousands of
// small rows.
const RollupRetention = 8 * 24 * time.Hour

// The rollups sum what the overview reads per minute, as the attempts are
// written: attempt_minutes counts the attempts by the minute they
// finished, outcome, resource type and error class; latency_minutes
// buckets the close→released latency of the tasks LatencyStart counts by
// the minute they were released (done_at). A minute is its start in Unix
// seconds.

type attemptKey struct {
	minute  int64
	outcome string
	typ     ResourceType
	class   ErrorClass
}

type latencyKey struct {
	minute int64
	bucket int
}

// latencySum is one latency bucket of one minute, in whole milliseconds.
type latencySum struct {
	n, lo, hi int64
}

// rollup is what one write transaction adds to the rollups. The attempts
// of a transaction add to it as they are written (insertAttempts), and
// write flushes it as the transaction's last statements: so on PostgreSQL
// the hot rows (every release of a minute adds to the same few) are held
// only through the commit, and since every transaction upserts them in the
// same key order, two never wait on each other in a cycle.
type rollup struct {
	attempts map[attemptKey]int64
	latency  map[latencyKey]latencySum
	released []int64 // the tasks of DONE attempts, whose latency flush adds
}

// maxReleasedRead bounds the keys of one read of released tasks, well
// under PostgreSQL's 65,535 parameters.
const maxReleasedRead = 10000

type rollupCtxKey struct{}

func newRollup() *rollup {
	return &rollup{attempts: map[attemptKey]int64{}, latency: map[latencyKey]latencySum{}}
}

func minuteOf(t time.Time) int64 { return t.Truncate(time.Minute).Unix() }

// windowStart is where a window read from the rollups that would start at
// t starts: the first minute at or after t, so that, whole minutes being
// all the rollups keep, the window holds nothing from before t.
func windowStart(t time.Time) time.Time {
	m := t.Truncate(time.Minute)
	if m.Before(t) {
		m = m.Add(time.Minute)
	}
	return m
}

// latencyBucket is the index in LatencyBuckets of the bucket of a latency
// of ms milliseconds, or len(LatencyBuckets) past the last bound.
func latencyBucket(ms int64) int {
	for i, le := range LatencyBuckets {
		if ms <= le.Milliseconds() {
			return i
		}
	}
	return len(LatencyBuckets)
}

// addReleased adds the latency of each task LatencyStart counts, released
// at its DoneAt. Latencies are whole milliseconds, as before the rollups
// (SQLite's date functions keep no more); one below zero (the clocks of
// two instances apart) counts as zero.
func (r *rollup) addReleased(tasks []ReleaseTask) {
	for _, t := range tasks {
		start, ok := t.LatencyStart()
		if !ok || t.DoneAt == nil {
			continue
		}
		ms := max(t.DoneAt.Sub(start).Round(time.Millisecond).Milliseconds(), 0)
		k := latencyKey{minute: minuteOf(*t.DoneAt), bucket: latencyBucket(ms)}
		s, seen := r.latency[k]
		if !seen {
			s = latencySum{lo: ms, hi: ms}
		}
		r.latency[k] = latencySum{n: s.n + 1, lo: min(s.lo, ms), hi: max(s.hi, ms)}
	}
}

// addAttempts rolls up attempt rows just inserted in tx: each counts in
// its minute, and each DONE one's task (which went DONE in tx, with its
// done_at) will add its latency when flush reads it back. It is read back
// by key rather than carried from the release, so the rule is
// LatencyStart's on the row as committed, whichever path released it, and
// once for the whole transaction. A DUPLICATE adds none: its task was
// released before (a redelivered task, counted at its first release) or
// by a rerun (which does not count).
func (r *rollup) addAttempts(as []TaskAttempt) {
	for _, a := range as {
		r.attempts[attemptKey{minute: minuteOf(a.FinishedAt), outcome: a.Outcome, typ: a.ResourceType, class: a.ErrorClass}]++
		if a.Outcome == OutcomeDone {
			r.released = append(r.released, a.TaskID)
		}
	}
}

// rollUpAttempts adds attempt rows just inserted in tx to the rollups: to
// its transaction's rollup when write began tx, or at once otherwise. The
// rollup does not follow savepoints: a try in one (releaseSaved) inserts
// its attempt as its last statement, so nothing rolls an attempt back
// once it has been added.
func rollUpAttempts(tx *gorm.DB, as []TaskAttempt) error {
	if r, ok := tx.Statement.Context.Value(rollupCtxKey{}).(*rollup); ok {
		r.addAttempts(as)
		return nil
	}
	r := newRollup()
	r.addAttempts(as)
	return r.flush(tx)
}

// merge adds what o rolled up to r: a write of a shared transaction
// (runWrites) rolls up apart, and counts once its savepoint is released.
func (r *rollup) merge(o *rollup) {
	for k, n := range o.attempts {
		r.attempts[k] += n
	}
	for k, v := range o.latency {
		if s, seen := r.latency[k]; seen {
			v = latencySum{n: s.n + v.n, lo: min(s.lo, v.lo), hi: max(s.hi, v.hi)}
		}
		r.latency[k] = v
	}
	r.released = append(r.released, o.released...)
}

// flush reads the released tasks back and upserts the sums into the
// rollup tables, attempt_minutes first, each in one statement, the rows in
// key order (minute first).
func (r *rollup) flush(tx *gorm.DB) error {
	for ids := r.released; len(ids) > 0; {
		n := min(len(ids), maxReleasedRead)
		var tasks []ReleaseTask
		err := tx.Raw(`SELECT id, trigger_type, failures, next_at, created_at, done_at FROM release_tasks
			WHERE id IN ? AND done_at IS NOT NULL`, ids[:n]).Scan(&tasks).Error
		if err != nil {
			return fmt.Errorf("read released tasks: %w", err)
		}
		r.addReleased(tasks)
		ids = ids[n:]
	}
	if len(r.attempts) > 0 {
		keys := make([]attemptKey, 0, len(r.attempts))
		for k := range r.attempts {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b attemptKey) int {
			return cmp.Or(cmp.Compare(a.minute, b.minute), strings.Compare(a.outcome, b.outcome),
				strings.Compare(string(a.typ), string(b.typ)), strings.Compare(string(a.class), string(b.class)))
		})
		var q strings.Builder
		q.WriteString("INSERT INTO attempt_minutes (minute, outcome, resource_type, error_class, n) VALUES ")
		args := make([]any, 0, 5*len(keys))
		for i, k := range keys {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?)")
			args = append(args, k.minute, k.outcome, k.typ, k.class, r.attempts[k])
		}
		q.WriteString(` ON CONFLICT (minute, outcome, resource_type, error_class) DO UPDATE SET n = attempt_minutes.n + excluded.n`)
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return fmt.Errorf("roll up attempts: %w", err)
		}
	}
	if len(r.latency) > 0 {
		keys := make([]latencyKey, 0, len(r.latency))
		for k := range r.latency {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b latencyKey) int {
			return cmp.Or(cmp.Compare(a.minute, b.minute), cmp.Compare(a.bucket, b.bucket))
		})
		var q strings.Builder
		q.WriteString("INSERT INTO latency_minutes (minute, bucket, n, min_ms, max_ms) VALUES ")
		args := make([]any, 0, 5*len(keys))
		for i, k := range keys {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?)")
			s := r.latency[k]
			args = append(args, k.minute, k.bucket, s.n, s.lo, s.hi)
		}
		// SQLite's MIN and MAX of two arguments are scalar, as
		// PostgreSQL's LEAST and GREATEST.
		least, greatest := "MIN", "MAX"
		if tx.Dialector.Name() == "postgres" {
			least, greatest = "LEAST", "GREATEST"
		}
		q.WriteString(` ON CONFLICT (minute, bucket) DO UPDATE SET n = latency_minutes.n + excluded.n,
			min_ms = ` + least + `(latency_minutes.min_ms, excluded.min_ms),
			max_ms = ` + greatest + `(latency_minutes.max_ms, excluded.max_ms)`)
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return fmt.Errorf("roll up latency: %w", err)
		}
	}
	return nil
}

// DeleteOldRollups deletes the rollup minutes that started before before.
// They are few (one row per minute and key), so one statement each.
func (s *Store) DeleteOldRollups(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	for _, table := range []string{"attempt_minutes", "latency_minutes"} {
		res := s.W.WithContext(ctx).Exec("DELETE FROM "+table+" WHERE minute < ?", minuteOf(before))
		if res.Error != nil {
			return n, fmt.Errorf("delete old rollups: %w", res.Error)
		}
		n += res.RowsAffected
	}
	return n, nil
}
