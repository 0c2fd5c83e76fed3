package models

import (
	"context"
	"fmt"
	"time"
)

// ReleaseQueue is the outbox as a metrics scrape sees it: the due backlog,
// its oldest task, and the tasks waiting on a retry or on a person. It is
// read from the database on every scrape, so it is right after a restart
// and the same whichever instance answers.
type ReleaseQueue struct {
	Now time.Time
	// Due counts PENDING and RETRY tasks whose next_at has come; OldestDue
	// is the earliest such next_at (zero when none is due).
	Due       int64
	OldestDue time.Time
	Retry     int64
	Manual    int64
}

// OldestDueAge is how long the oldest due task has been waiting.
func (q ReleaseQueue) OldestDueAge() time.Duration {
	if q.OldestDue.IsZero() {
		return 0
	}
	return q.Now.Sub(q.OldestDue)
}

// ReleaseQueue reads the outbox's gauges: a few index range reads on
// release_tasks (status, next_at), none of task_attempts, so a scrape every
// few seconds costs little even on a big shop.
func (s *Store) ReleaseQueue(ctx context.Context) (ReleaseQueue, error) {
	now := s.Now()
	q := ReleaseQueue{Now: now}
	db := s.R.WithContext(ctx)
	if err := db.Raw(`SELECT COUNT(*) FROM release_tasks WHERE status IN ('PENDING','RETRY') AND next_at <= ?`, now).
		Scan(&q.Due).Error; err != nil {
		return q, fmt.Errorf("count due tasks: %w", err)
	}
	// One read per status keeps each an index range walk in next_at order:
	// with both statuses in one IN list, the engine would sort.
	for _, st := range []TaskStatus{TaskPending, TaskRetry} {
		var first []ReleaseTask
		if err := db.Select("id, next_at").Where("status = ? AND next_at <= ?", st, now).
			Order("next_at").Limit(1).Find(&first).Error; err != nil {
			return q, fmt.Errorf("oldest due %s task: %w", st, err)
		}
		if len(first) == 1 && (q.OldestDue.IsZero() || first[0].NextAt.Before(q.OldestDue)) {
			q.OldestDue = first[0].NextAt
		}
	}
	var open []struct {
		Status TaskStatus
		N      int64
	}
	if err := db.Raw(`SELECT status, COUNT(*) AS n FROM release_tasks
		WHERE status IN ('RETRY','MANUAL') GROUP BY status`).Scan(&open).Error; err != nil {
		return q, fmt.Errorf("count failed tasks: %w", err)
	}
	for _, c := range open {
		switch c.Status {
		case TaskRetry:
			q.Retry = c.N
		case TaskManual:
			q.Manual = c.N
		}
	}
	return q, nil
}
