package models

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RerunnableStatuses are the statuses a rerun makes due again: a failed
// task waiting for its next try (RETRY) or for a person (MANUAL).
var RerunnableStatuses = []TaskStatus{TaskRetry, TaskManual}

// Rerunnable tells whether a rerun may make a task in st due again.
func (st TaskStatus) Rerunnable() bool { return containsStatus(RerunnableStatuses, st) }

// TaskFilter selects release tasks for the task list and the bulk rerun. A
// zero field does not filter.
type TaskFilter struct {
	Statuses []TaskStatus
	Type     ResourceType
	Class    ErrorClass
	// OlderMin keeps tasks created at least this many minutes ago.
	OlderMin int
	OrderNo  string
	// Key keeps the tasks of one key (a SKU, a coupon id, an account …) of
	// Type: a key means nothing without its type.
	Key string
	// From and To keep tasks created in [From, To); zero is open.
	From, To time.Time
	// Due keeps PENDING and RETRY tasks whose next_at has come.
	Due bool
	// Owner keeps the MANUAL tasks of one owner: OwnerMine (Me's),
	// OwnerNobody (the ones no one has taken) or a name. An owner means
	// something only while its task is MANUAL, so this filter lists MANUAL
	// tasks only.
	Owner string
	// Me is who asks, for OwnerMine; it is not part of the filter's link.
	Me string
	// Age keeps the MANUAL tasks of one age bucket of the manual queue,
	// by when each went MANUAL, under the store's SLA.
	Age ManualAge
}

// The owner filter's words; any other value is an owner's name.
const (
	OwnerMine   = "mine"
	OwnerNobody = "nobody"
)

// ValidOwnerFilter checks an owner filter's value ("" does not filter);
// OwnerMine needs me, who asks.
func ValidOwnerFilter(owner, me string) error {
	switch {
	case len(owner) > maxAuditShortLen || !utf8.ValidString(owner) || strings.ContainsRune(owner, 0):
		return fmt.Errorf("%w: owner is mine, nobody or a user name of at most %d bytes", ErrInvalid, maxAuditShortLen)
	case owner == OwnerMine && me == "":
		return fmt.Errorf("%w: owner=mine needs to know who asks", ErrInvalid)
	}
	return nil
}

// ownerWhere is the condition of an owner filter on a table whose items
// are open when open holds, and its arguments; "" when owner is "".
func ownerWhere(owner, me, open string) (string, []any) {
	switch owner {
	case "":
		return "", nil
	case OwnerNobody:
		return "owner = '' AND " + open, nil
	case OwnerMine:
		owner = me
	}
	return "owner = ? AND " + open, []any{owner}
}

// MaxTaskKeyLen bounds the key filter, in bytes: longer than any key unhold keeps.
const MaxTaskKeyLen = 200

// MaxOlderMin bounds the age filter (ten years), so it never overflows a time.
const MaxOlderMin = 10 * 365 * 24 * 60

// Validate refuses a filter no list could mean.
func (f TaskFilter) Validate() error {
	for _, st := range f.Statuses {
		if _, err := ParseTaskStatus(string(st)); err != nil {
			return err
		}
	}
	if f.Type != "" && !ValidTypeName(string(f.Type)) {
		return fmt.Errorf("%w: %q is not a resource type name", ErrInvalid, f.Type)
	}
	if f.Class != "" {
		if _, err := ParseErrorClass(string(f.Class)); err != nil {
			return err
		}
	}
	if f.OlderMin < 0 || f.OlderMin > MaxOlderMin {
		return fmt.Errorf("%w: older must be 0 to %d minutes, not %d", ErrInvalid, MaxOlderMin, f.OlderMin)
	}
	if f.OrderNo != "" && !ValidOrderNo(f.OrderNo) {
		return fmt.Errorf("%w: order number %q is not one unhold makes", ErrInvalid, f.OrderNo)
	}
	if f.Key != "" && f.Type == "" {
		return fmt.Errorf("%w: a key filter needs the resource type the key belongs to", ErrInvalid)
	}
	if len(f.Key) > MaxTaskKeyLen || !utf8.ValidString(f.Key) {
		return fmt.Errorf("%w: a key is at most %d bytes of UTF-8", ErrInvalid, MaxTaskKeyLen)
	}
	if !f.From.IsZero() && !f.To.IsZero() && !f.From.Before(f.To) {
		return fmt.Errorf("%w: from (%s) must be before to (%s)", ErrInvalid,
			f.From.UTC().Format(time.RFC3339), f.To.UTC().Format(time.RFC3339))
	}
	if err := ValidOwnerFilter(f.Owner, f.Me); err != nil {
		return err
	}
	if f.Age != "" {
		if _, err := ParseManualAge(string(f.Age)); err != nil {
			return err
		}
		if f.Due || (len(f.Statuses) > 0 && !containsStatus(f.Statuses, TaskManual)) {
			return fmt.Errorf("%w: an age keeps MANUAL tasks; this filter keeps none", ErrInvalid)
		}
	}
	return nil
}

// Values is the filter as URL query parameters, in a stable order, so a
// filtered list has one link to paste in a ticket.
func (f TaskFilter) Values() url.Values {
	v := url.Values{}
	for _, st := range f.Statuses {
		v.Add("status", string(st))
	}
	if f.Type != "" {
		v.Set("type", string(f.Type))
	}
	if f.Class != "" {
		v.Set("class", string(f.Class))
	}
	if f.OlderMin > 0 {
		v.Set("older", strconv.Itoa(f.OlderMin))
	}
	if f.OrderNo != "" {
		v.Set("order", f.OrderNo)
	}
	if f.Key != "" {
		v.Set("key", f.Key)
	}
	if !f.From.IsZero() {
		v.Set("from", f.From.UTC().Format(time.RFC3339))
	}
	if !f.To.IsZero() {
		v.Set("to", f.To.UTC().Format(time.RFC3339))
	}
	if f.Due {
		v.Set("due", "1")
	}
	if f.Owner != "" {
		v.Set("owner", f.Owner)
	}
	if f.Age != "" {
		v.Set("age", string(f.Age))
	}
	return v
}

// statuses is what the filter's status condition keeps: the named statuses,
// narrowed to PENDING and RETRY when Due, to MANUAL with an age; nil keeps
// every status.
func (f TaskFilter) statuses() []TaskStatus {
	if f.Age != "" {
		if len(f.Statuses) > 0 && !containsStatus(f.Statuses, TaskManual) {
			return []TaskStatus{}
		}
		return []TaskStatus{TaskManual}
	}
	if !f.Due {
		return dedupStatuses(f.Statuses)
	}
	var out []TaskStatus
	for _, st := range []TaskStatus{TaskPending, TaskRetry} {
		if len(f.Statuses) == 0 || containsStatus(f.Statuses, st) {
			out = append(out, st)
		}
	}
	if out == nil {
		out = []TaskStatus{} // nothing can match: Due with only DONE, say
	}
	return out
}

func dedupStatuses(in []TaskStatus) []TaskStatus {
	var out []TaskStatus
	for _, st := range in {
		if !containsStatus(out, st) {
			out = append(out, st)
		}
	}
	return out
}

func containsStatus(list []TaskStatus, st TaskStatus) bool {
	for _, x := range list {
		if x == st {
			return true
		}
	}
	return false
}

// taskWhere is the filter's SQL condition now, under the store's SLA.
func (s *Store) taskWhere(f TaskFilter) (string, []any) { return f.where(s.Now(), s.manualSLA) }

// where is the filter's SQL condition, without the status one, and its
// arguments, at now under the manual queue's sla.
func (f TaskFilter) where(now time.Time, sla time.Duration) (string, []any) {
	conds, args := []string{"1 = 1"}, []any{}
	if f.Type != "" {
		conds, args = append(conds, "resource_type = ?"), append(args, f.Type)
	}
	if f.Class != "" {
		conds, args = append(conds, "error_class = ?"), append(args, f.Class)
	}
	if f.OlderMin > 0 {
		conds, args = append(conds, "created_at <= ?"), append(args, now.Add(-time.Duration(f.OlderMin)*time.Minute))
	}
	if f.OrderNo != "" {
		conds, args = append(conds, "order_no = ?"), append(args, f.OrderNo)
	}
	if f.Key != "" {
		conds, args = append(conds, "biz_key = ?"), append(args, f.Key)
	}
	if !f.From.IsZero() {
		conds, args = append(conds, "created_at >= ?"), append(args, f.From.UTC())
	}
	if !f.To.IsZero() {
		conds, args = append(conds, "created_at < ?"), append(args, f.To.UTC())
	}
	if f.Due {
		conds, args = append(conds, "next_at <= ?"), append(args, now)
	}
	if c, a := ownerWhere(f.Owner, f.Me, "status = 'MANUAL'"); c != "" {
		conds, args = append(conds, c), append(args, a...)
	}
	if f.Age != "" {
		c, a := f.Age.cond(manualSinceSQL, now, sla)
		conds, args = append(conds, c), append(args, a...)
	}
	return strings.Join(conds, " AND "), args
}

// TaskPageSize is how many tasks one page of the list shows.
const TaskPageSize = 50

// TaskPage is one page of the task list and the cursor of the next one
// (zero on the last page).
type TaskPage struct {
	Tasks []ReleaseTask
	Next  Cursor
}

// CountTasks counts the tasks the filter selects, up to limit: over says
// there are more, and n is then limit. A page counts with OrderCountCap,
// so a filter that selects a flash sale's worth reads at most that many
// index entries.
func (s *Store) CountTasks(ctx context.Context, f TaskFilter, limit int) (n int64, over bool, err error) {
	if err := s.checkFilter(f); err != nil {
		return 0, false, err
	}
	cond, args := s.taskWhere(f)
	if statuses := f.statuses(); statuses != nil {
		if len(statuses) == 0 {
			return 0, false, nil
		}
		cond, args = "status IN ? AND "+cond, append([]any{statuses}, args...)
	}
	return s.countCapped(ctx, "release_tasks", cond, args, limit)
}

// countCapped counts the rows of table that cond keeps, up to limit, as
// CountTasks says.
func (s *Store) countCapped(ctx context.Context, table, cond string, args []any, limit int) (n int64, over bool, err error) {
	sub := s.R.WithContext(ctx).Table(table).Select("1").Where(cond, args...).Limit(limit + 1)
	if err := s.R.WithContext(ctx).Table("(?) AS t", sub).Count(&n).Error; err != nil {
		return 0, false, fmt.Errorf("count %s: %w", table, err)
	}
	if n > int64(limit) {
		return int64(limit), true, nil
	}
	return n, false, nil
}

// ListTasks reads one page of the tasks the filter keeps, newest created
// first (oldest first when oldestFirst), after the cursor. Pages go by the
// immutable (created_at, id), so they neither skip nor repeat a task while
// the worker changes statuses. With several statuses each is read on its own
// index, (status, created_at, id) or (resource_type, status, created_at,
// id), and the pages merged, so no query sorts more than a page.
func (s *Store) ListTasks(ctx context.Context, f TaskFilter, after Cursor, oldestFirst bool, limit int) (TaskPage, error) {
	if err := s.checkFilter(f); err != nil {
		return TaskPage{}, err
	}
	if limit <= 0 || limit > 500 {
		limit = TaskPageSize
	}
	db := s.R.WithContext(ctx)
	cond, args := s.taskWhere(f)
	dir, cmp := "DESC", "<"
	if oldestFirst {
		dir, cmp = "ASC", ">"
	}
	if after.ID != 0 {
		cond += " AND (created_at, id) " + cmp + " (?, ?)"
		args = append(args, after.At, after.ID)
	}
	order := "created_at " + dir + ", id " + dir
	statuses := f.statuses()
	if statuses == nil && f.Type != "" {
		// The type index leads with the status: read it status by status.
		statuses = TaskStatuses
	}
	var tasks []ReleaseTask
	if statuses == nil {
		if err := db.Where(cond, args...).Order(order).Limit(limit + 1).Find(&tasks).Error; err != nil {
			return TaskPage{}, fmt.Errorf("list tasks: %w", err)
		}
	} else {
		table := "release_tasks"
		if s.Dialect == SQLite && f.Class == "" && f.OrderNo == "" && f.Key == "" {
			// Without statistics SQLite may take the (status, next_at) index
			// and sort every task of the status (a backlog of thousands)
			// for one page; the class, order and key indexes, when filtered
			// on, keep few rows and are better left to the planner.
			table += " INDEXED BY release_tasks_status_created"
			if f.Type != "" {
				table = "release_tasks INDEXED BY release_tasks_type_status_created"
			}
		}
		for _, st := range statuses {
			var part []ReleaseTask
			q := db.Table(table).Where("status = ?", st).Where(cond, args...).Order(order).Limit(limit + 1)
			if err := q.Find(&part).Error; err != nil {
				return TaskPage{}, fmt.Errorf("list %s tasks: %w", st, err)
			}
			tasks = append(tasks, part...)
		}
		sort.Slice(tasks, func(i, j int) bool {
			a, b := tasks[i], tasks[j]
			if !a.CreatedAt.Equal(b.CreatedAt) {
				return a.CreatedAt.After(b.CreatedAt) != oldestFirst
			}
			return (a.ID > b.ID) != oldestFirst
		})
	}
	page := TaskPage{Tasks: tasks}
	if len(tasks) > limit {
		page.Tasks = tasks[:limit]
		last := page.Tasks[limit-1]
		page.Next = Cursor{At: last.CreatedAt, ID: last.ID}
	}
	if page.Tasks == nil {
		page.Tasks = []ReleaseTask{}
	}
	return page, nil
}

// Task reads one task with every attempt, oldest first.
func (s *Store) Task(ctx context.Context, id int64) (*ChainTask, error) {
	db := s.R.WithContext(ctx)
	var t ChainTask
	if err := take(db.Where("id = ?", id), &t.ReleaseTask, fmt.Sprintf("task %d", id)); err != nil {
		return nil, err
	}
	if err := db.Where("task_id = ?", id).Order("id").Find(&t.AttemptLog).Error; err != nil {
		return nil, fmt.Errorf("read attempts of task %d: %w", id, err)
	}
	if t.AttemptLog == nil {
		t.AttemptLog = []TaskAttempt{}
	}
	t.Retry = s.RetryOf(t.ReleaseTask)
	return &t, nil
}

// Why a filter cannot be bulk rerun; both are ErrInvalid.
var (
	ErrBulkRerunType   = fmt.Errorf("%w: a bulk rerun needs exactly one resource type", ErrInvalid)
	ErrBulkRerunStatus = fmt.Errorf("%w: only RETRY and MANUAL tasks can be rerun (and of due tasks only RETRY ones)", ErrInvalid)
)

// checkFilter is Validate, and the type, when named, is in the registry.
func (s *Store) checkFilter(f TaskFilter) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.Type != "" {
		if _, err := s.ParseType(string(f.Type)); err != nil {
			return err
		}
	}
	return nil
}

// rerunFilter checks a bulk rerun's filter: exactly one resource type, and
// statuses among RETRY and MANUAL (both when none is named). It returns the
// statuses the rerun touches.
func (f TaskFilter) rerunFilter() ([]TaskStatus, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.Type == "" {
		return nil, ErrBulkRerunType
	}
	statuses := dedupStatuses(f.Statuses)
	for _, st := range statuses {
		if !st.Rerunnable() {
			return nil, fmt.Errorf("%w, not %s", ErrBulkRerunStatus, st)
		}
	}
	if len(statuses) == 0 {
		statuses = slices.Clone(RerunnableStatuses)
	}
	if f.Due {
		// Due tasks are PENDING or RETRY: of those only RETRY can be rerun.
		if !containsStatus(statuses, TaskRetry) {
			return nil, fmt.Errorf("%w: due MANUAL tasks do not exist", ErrBulkRerunStatus)
		}
		statuses = []TaskStatus{TaskRetry}
	}
	if f.Age != "" {
		// Validate made sure MANUAL is among them.
		statuses = []TaskStatus{TaskManual}
	}
	return statuses, nil
}

// CheckBulkRerun tells why a bulk rerun cannot have this filter
// (ErrBulkRerunType, ErrBulkRerunStatus, ErrInvalid), or nil.
func (f TaskFilter) CheckBulkRerun() error {
	_, err := f.rerunFilter()
	return err
}

// OffersBulkRerun tells whether the task list should offer to rerun what
// it shows: the filter names one resource type and only RETRY and MANUAL
// statuses.
func (f TaskFilter) OffersBulkRerun() bool {
	_, err := f.rerunFilter()
	return len(f.Statuses) > 0 && err == nil
}

// BulkRerunTarget is the audit target of a bulk rerun with this filter:
// tasks:<type>?<the rest of the filter>.
func BulkRerunTarget(f TaskFilter) string {
	v := f.Values()
	v.Del("type")
	if f.Owner == OwnerMine {
		// The audit says whose tasks they were, not "mine".
		v.Set("owner", f.Me)
	}
	target := "tasks:" + string(f.Type)
	if len(v) > 0 {
		target += "?" + v.Encode()
	}
	return target
}
