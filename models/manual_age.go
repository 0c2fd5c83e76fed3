package models

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DefaultManualSLA is how long a MANUAL task or an unresolved ticket may
// wait for a person unless Options say otherwise.
const DefaultManualSLA = 4 * time.Hour

// ManualSLA is how long a MANUAL task or an unresolved ticket may wait for
// a person before it is past the SLA.
func (s *Store) ManualSLA() time.Duration { return s.manualSLA }

// ManualAge is an age bucket of the manual queue: what waits for a person,
// MANUAL tasks (aged since they went MANUAL) and unresolved reconciliation
// tickets (aged since they were opened).
type ManualAge string

// The buckets, young to old. An item is past the SLA once its age reaches
// the SLA; before that it is under an hour old, or between an hour and the
// SLA. With an SLA of an hour or less the middle bucket is always empty.
const (
	AgeUnderHour ManualAge = "lt_1h"
	AgeUnderSLA  ManualAge = "lt_sla"
	AgePastSLA   ManualAge = "past_sla"
)

// ManualAges lists the buckets, young to old.
var ManualAges = []ManualAge{AgeUnderHour, AgeUnderSLA, AgePastSLA}

// ParseManualAge accepts a bucket's name.
func ParseManualAge(s string) (ManualAge, error) {
	for _, a := range ManualAges {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("%w: age must be lt_1h, lt_sla or past_sla, not %q", ErrInvalid, s)
}

// AgeBucket is the bucket of an item that has waited age, under sla.
func AgeBucket(age, sla time.Duration) ManualAge {
	switch {
	case age >= sla:
		return AgePastSLA
	case age < time.Hour:
		return AgeUnderHour
	}
	return AgeUnderSLA
}

// since is the bucket as a range of the instants its items began to wait,
// (after, notAfter]; a zero end is open. It is AgeBucket turned around, so
// a list filtered by the bucket holds exactly the items counted in it.
func (a ManualAge) since(now time.Time, sla time.Duration) (after, notAfter time.Time) {
	switch a {
	case AgeUnderHour:
		return now.Add(-min(time.Hour, sla)), time.Time{}
	case AgeUnderSLA:
		return now.Add(-sla), now.Add(-time.Hour)
	}
	return time.Time{}, now.Add(-sla)
}

// cond is the SQL condition keeping the bucket's items, col being when
// each began to wait.
func (a ManualAge) cond(col string, now time.Time, sla time.Duration) (string, []any) {
	after, notAfter := a.since(now, sla)
	var conds []string
	var args []any
	if !after.IsZero() {
		conds, args = append(conds, col+" > ?"), append(args, after)
	}
	if !notAfter.IsZero() {
		conds, args = append(conds, col+" <= ?"), append(args, notAfter)
	}
	return strings.Join(conds, " AND "), args
}

// manualSinceSQL is when a MANUAL task began to wait: manual_since, or for
// a row set MANUAL by hand in SQL, which has none, its updated_at. The
// index release_tasks_manual_age holds it for the MANUAL tasks; a query
// must repeat it, and status = 'MANUAL', to use it.
const manualSinceSQL = "COALESCE(manual_since, updated_at)"

// unresolvedSQL keeps the tickets waiting for a person, in the words of
// the index recon_diffs_unresolved_age, so a query repeating it uses it.
const unresolvedSQL = "status IN ('OPEN','ACKED')"

// UnresolvedStatuses are the statuses of a ticket still waiting for a
// person: the ones the manual queue ages.
var UnresolvedStatuses = []string{DiffOpen, DiffAcked}

// ManualQueue is one queue's items by age bucket, and when its oldest item
// began to wait (zero when the queue is empty).
type ManualQueue struct {
	N      map[ManualAge]int64
	Oldest time.Time
}

// Total is how many items wait.
func (q ManualQueue) Total() int64 {
	var n int64
	for _, c := range q.N {
		n += c
	}
	return n
}

// ManualAgeing is the manual queue by age at Now under SLA: the MANUAL
// tasks and the unresolved tickets (both kinds, DIFF and UNCHECKED: each
// is a ticket someone works).
type ManualAgeing struct {
	Now     time.Time
	SLA     time.Duration
	Tasks   ManualQueue
	Tickets ManualQueue
}

// OldestAge is how long q's oldest item has waited; zero when it is empty.
func (m ManualAgeing) OldestAge(q ManualQueue) time.Duration {
	if q.Oldest.IsZero() {
		return 0
	}
	return max(m.Now.Sub(q.Oldest), 0)
}

// ManualAgeing counts the manual queue by age, exactly: per bucket a range
// count on the partial indexes of MANUAL tasks and unresolved tickets,
// which hold only what waits for a person, and the oldest of each read
// first off the same index. The dashboard and each metrics scrape read it.
func (s *Store) ManualAgeing(ctx context.Context) (ManualAgeing, error) {
	m := ManualAgeing{Now: s.Now(), SLA: s.manualSLA}
	db := s.R.WithContext(ctx)
	var err error
	m.Tasks, err = s.manualQueue(ctx, "release_tasks"+s.indexedBy("release_tasks_manual_age"), "status = 'MANUAL'", manualSinceSQL, m.Now)
	if err != nil {
		return m, fmt.Errorf("manual tasks by age: %w", err)
	}
	var oldest []struct {
		ManualSince *time.Time
		UpdatedAt   time.Time
	}
	err = db.Raw(`SELECT manual_since, updated_at FROM release_tasks` + s.indexedBy("release_tasks_manual_age") +
		` WHERE status = 'MANUAL' ORDER BY ` + manualSinceSQL + `, id LIMIT 1`).Scan(&oldest).Error
	if err != nil {
		return m, fmt.Errorf("oldest manual task: %w", err)
	}
	if len(oldest) == 1 {
		m.Tasks.Oldest = oldest[0].UpdatedAt
		if oldest[0].ManualSince != nil {
			m.Tasks.Oldest = *oldest[0].ManualSince
		}
	}
	m.Tickets, err = s.manualQueue(ctx, "recon_diffs"+s.indexedBy("recon_diffs_unresolved_age"), unresolvedSQL, "created_at", m.Now)
	if err != nil {
		return m, fmt.Errorf("unresolved tickets by age: %w", err)
	}
	var first []DiffTicket
	err = db.Raw(`SELECT id, created_at FROM recon_diffs` + s.indexedBy("recon_diffs_unresolved_age") +
		` WHERE ` + unresolvedSQL + ` ORDER BY created_at, id LIMIT 1`).Scan(&first).Error
	if err != nil {
		return m, fmt.Errorf("oldest unresolved ticket: %w", err)
	}
	if len(first) == 1 {
		m.Tickets.Oldest = first[0].CreatedAt
	}
	return m, nil
}

// manualQueue counts the rows of table that cond keeps in each bucket, by
// when each began to wait (since).
func (s *Store) manualQueue(ctx context.Context, table, cond, since string, now time.Time) (ManualQueue, error) {
	q := ManualQueue{N: make(map[ManualAge]int64, len(ManualAges))}
	for _, a := range ManualAges {
		ac, args := a.cond(since, now, s.manualSLA)
		var n int64
		if err := s.R.WithContext(ctx).Raw(`SELECT COUNT(*) FROM `+table+` WHERE `+cond+` AND `+ac, args...).Scan(&n).Error; err != nil {
			return q, fmt.Errorf("count %s: %w", a, err)
		}
		q.N[a] = n
	}
	return q, nil
}

// ListManualByAge reads one page of the MANUAL tasks the filter keeps,
// oldest in the queue first (by when each went MANUAL), after the cursor
// (its At is that instant). The filter must keep MANUAL tasks only: name
// MANUAL alone, or an age bucket.
func (s *Store) ListManualByAge(ctx context.Context, f TaskFilter, after Cursor, limit int) (TaskPage, error) {
	if err := s.checkFilter(f); err != nil {
		return TaskPage{}, err
	}
	if st := f.statuses(); len(st) != 1 || st[0] != TaskManual {
		return TaskPage{}, ErrAgeSortManual
	}
	if limit <= 0 || limit > 500 {
		limit = TaskPageSize
	}
	cond, args := s.taskWhere(f)
	if after.ID != 0 {
		cond += " AND (" + manualSinceSQL + ", id) > (?, ?)"
		args = append(args, after.At, after.ID)
	}
	table := "release_tasks"
	if f.Class == "" && f.OrderNo == "" && f.Key == "" && f.Type == "" {
		// As ListTasks: without statistics SQLite may sort every MANUAL
		// task by another index for one page.
		table += s.indexedBy("release_tasks_manual_age")
	}
	var tasks []ReleaseTask
	err := s.R.WithContext(ctx).Table(table).Where("status = 'MANUAL'").Where(cond, args...).
		Order(manualSinceSQL + ", id").Limit(limit + 1).Find(&tasks).Error
	if err != nil {
		return TaskPage{}, fmt.Errorf("list manual tasks by age: %w", err)
	}
	page := TaskPage{Tasks: tasks}
	if len(tasks) > limit {
		page.Tasks = tasks[:limit]
		last := page.Tasks[limit-1]
		page.Next = Cursor{At: last.WaitingSince(), ID: last.ID}
	}
	if page.Tasks == nil {
		page.Tasks = []ReleaseTask{}
	}
	return page, nil
}

// ErrAgeSortManual refuses to sort by age in the manual queue a list that
// is not all MANUAL tasks.
var ErrAgeSortManual = fmt.Errorf("%w: sorting by age in the manual queue lists MANUAL tasks only: filter status=MANUAL or an age", ErrInvalid)

// WaitingSince is when a MANUAL task began to wait for a person, as the
// manual queue ages it (see manualSinceSQL).
func (t ReleaseTask) WaitingSince() time.Time {
	if t.ManualSince != nil {
		return *t.ManualSince
	}
	return t.UpdatedAt
}
