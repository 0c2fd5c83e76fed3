package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// MaxRerunIDs bounds the tasks one rerun by ids names: the bulk rerun's
// page lists at most this many.
const MaxRerunIDs = 200

// TaskRerun is what a rerun by ids did: the tasks it made due, and the ones
// it was asked for that were no longer RETRY or MANUAL (a worker finished
// them, another operator reran them) as they are now, so the operator sees
// what changed meanwhile.
type TaskRerun struct {
	Made    []int64       `json:"made"`
	Changed []ReleaseTask `json:"changed"`
	// NeedApproval are the ticked tasks left as they were because their
	// rerun needs a second person (RequestApproval): a bulk rerun never
	// makes them due.
	NeedApproval []int64 `json:"need_approval,omitempty"`
}

// TaskTarget is the audit target of one task.
func TaskTarget(id int64) string { return "task:" + strconv.FormatInt(id, 10) }

// RerunTask makes one RETRY or MANUAL task due now, as Rerun does for an
// order's tasks of one type: a compare-and-set on the status, with the
// operator's reason, audited on the task. A task in another status is
// ErrNothingToRerun (audited as refused); a missing one ErrNotFound; one
// whose rerun needs approval ErrNeedsApproval (audited as refused).
func (s *Store) RerunTask(ctx context.Context, id int64, actor, reason string) error {
	if id <= 0 {
		return fmt.Errorf("%w: a task id is a positive whole number, not %d", ErrInvalid, id)
	}
	_, err := s.rerunTasks(ctx, []int64{id}, nil, "rerun", TaskTarget(id), actor, reason)
	return err
}

// RerunTasks makes due now exactly the tasks of ids that are still RETRY
// or MANUAL, in one transaction with one audit row (action bulk_rerun,
// target BulkRerunTarget(f)). The ids are the ones the bulk rerun's page
// listed for the filter f: a task of another type, order or key is
// ErrInvalid and changes nothing.
// It compares sets, not counts: the tasks that changed state since the
// operator saw them are left as they are and returned in Changed; an id
// that names no task is ErrNotFound and changes nothing. A task whose
// rerun needs approval is left as it is and returned in NeedApproval. None
// left to rerun is ErrNeedsApproval when some need approval, else
// ErrNothingToRerun.
func (s *Store) RerunTasks(ctx context.Context, f TaskFilter, ids []int64, actor, reason string) (TaskRerun, error) {
	if err := s.checkFilter(f); err != nil {
		return TaskRerun{}, err
	}
	if _, err := f.rerunFilter(); err != nil {
		return TaskRerun{}, err
	}
	return s.rerunTasks(ctx, ids, &f, "bulk_rerun", BulkRerunTarget(f), actor, reason)
}

// rerunTasks reruns the tasks of ids still RETRY or MANUAL; with f, every
// task must be of f's type, and of its order and key when f names them.
func (s *Store) rerunTasks(ctx context.Context, ids []int64, f *TaskFilter, action, target, actor, reason string) (TaskRerun, error) {
	var out TaskRerun
	ids, err := rerunIDs(ids)
	if err != nil {
		return out, err
	}
	if reason, err = RerunReason(reason); err != nil {
		return out, err
	}
	refused := "" // why the rerun was refused, for its audit row
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Rows are locked by id, the order a late payment locks them in,
		// all in this one read.
		var held []ReleaseTask
		if err := tx.Raw(`SELECT * FROM release_tasks WHERE id IN ? ORDER BY id`+s.forUpdate(), ids).Scan(&held).Error; err != nil {
			return err
		}
		if len(held) != len(ids) {
			return fmt.Errorf("%w: %s", ErrNotFound, missingIDs(ids, held))
		}
		var due []ReleaseTask
		for _, t := range held {
			if f != nil && (t.ResourceType != f.Type || (f.OrderNo != "" && t.OrderNo != f.OrderNo) || (f.Key != "" && t.BizKey != f.Key)) {
				return fmt.Errorf("%w: task %d is not one this filter lists", ErrInvalid, t.ID)
			}
			switch {
			case !t.Status.Rerunnable():
				out.Changed = append(out.Changed, t)
			case s.approval.needs(t):
				out.NeedApproval = append(out.NeedApproval, t.ID)
			default:
				due = append(due, t)
				out.Made = append(out.Made, t.ID)
			}
		}
		if len(due) == 0 {
			if len(out.NeedApproval) > 0 {
				refused = "needs approval: " + idList(out.NeedApproval)
				return fmt.Errorf("%w: %s", ErrNeedsApproval, idList(out.NeedApproval))
			}
			refused = "nothing to rerun: " + statusList(out.Changed)
			return fmt.Errorf("%w: %s", ErrNothingToRerun, statusList(out.Changed))
		}
		if err := s.makeDue(tx, due, actor, reason, now); err != nil {
			return err
		}
		detail := fmt.Sprintf("%d task(s) made due", len(out.Made))
		if len(out.NeedApproval) > 0 {
			detail += "; left for approval: " + idList(out.NeedApproval)
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: action, Target: target, Reason: reason, Outcome: "ok",
			Detail: detail, CreatedAt: now}).Error
	})
	if err != nil {
		if refused != "" {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: actor, Action: action, Target: target, Reason: reason,
				Outcome: "refused", Detail: refused, CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused rerun", slog.String("target", target), slog.Any("err", aerr))
			}
		}
		return TaskRerun{Changed: out.Changed, NeedApproval: out.NeedApproval}, fmt.Errorf("rerun %s: %w", target, err)
	}
	return out, nil
}

// makeDue makes the locked tasks due, all still RETRY or MANUAL: the SET
// of a rerun, with the rerun's actor and reason.
func (s *Store) makeDue(tx *gorm.DB, due []ReleaseTask, actor, reason string, now time.Time) error {
	// A try whose lease has already run out was made before this
	// rerun: counted first, it falls in the budget the rerun resets.
	if _, err := s.countLostTries(tx, due, now); err != nil {
		return err
	}
	ids := make([]int64, len(due))
	for i, t := range due {
		ids[i] = t.ID
	}
	res := tx.Exec(`UPDATE release_tasks SET `+rerunSet+` WHERE id IN ? AND status IN ('RETRY','MANUAL')`,
		now, actor, reason, now, ids)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != int64(len(ids)) {
		// The rows are locked (PostgreSQL) or the writer is alone (SQLite).
		return fmt.Errorf("rerun made %d of %d locked task(s) due", res.RowsAffected, len(ids))
	}
	return nil
}

// idList names task ids: "#3, #4".
func idList(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "#" + strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

// rerunIDs checks a rerun's ids: 1 to MaxRerunIDs positive ids; repeats
// count once. It returns them sorted.
func rerunIDs(ids []int64) ([]int64, error) {
	out := slices.Clone(ids)
	slices.Sort(out)
	out = slices.Compact(out)
	switch {
	case len(out) == 0:
		return nil, fmt.Errorf("%w: tick at least one task to rerun", ErrInvalid)
	case len(out) > MaxRerunIDs:
		return nil, fmt.Errorf("%w: at most %d tasks at once, not %d", ErrInvalid, MaxRerunIDs, len(out))
	case out[0] <= 0:
		return nil, fmt.Errorf("%w: a task id is a positive whole number, not %d", ErrInvalid, out[0])
	}
	return out, nil
}

// missingIDs names the ids no task in found has.
func missingIDs(ids []int64, found []ReleaseTask) string {
	var miss []string
	for _, id := range ids {
		if !slices.ContainsFunc(found, func(t ReleaseTask) bool { return t.ID == id }) {
			miss = append(miss, "#"+strconv.FormatInt(id, 10))
		}
	}
	return "no task " + strings.Join(miss, ", ")
}

// statusList says each task's status: "#3 DONE, #4 PENDING".
func statusList(tasks []ReleaseTask) string {
	parts := make([]string, 0, len(tasks))
	for _, t := range tasks {
		parts = append(parts, fmt.Sprintf("#%d %s", t.ID, t.Status))
	}
	return strings.Join(parts, ", ")
}

// ErrTaskNotAbandonable: only a RETRY or MANUAL task no worker is trying
// can be abandoned.
var ErrTaskNotAbandonable = &Error{"TASK_NOT_ABANDONABLE", "only a RETRY or MANUAL task no worker is trying can be abandoned"}

// Why an abandon's reason is refused; both are ErrInvalid.
var (
	ErrAbandonReasonRequired = fmt.Errorf("%w: abandoning a task needs a reason", ErrInvalid)
	ErrAbandonReasonTooLong  = fmt.Errorf("%w: an abandon reason is at most %d characters", ErrInvalid, MaxReasonLen)
)

// AbandonTask ends a RETRY or MANUAL task that can never succeed (its key
// was deleted, its hold was settled by hand elsewhere) as ABANDONED: a
// compare-and-set on the status, refused while a worker's lease runs, since
// that worker's call may be landing. Nothing is released; the audit keeps
// who and why. The task no longer counts as unfinished, so reconciliation
// finds its key holding more than expected and opens a ticket naming it.
// A task whose abandon needs approval is ErrNeedsApproval (audited as
// refused): RequestApproval makes it a request.
func (s *Store) AbandonTask(ctx context.Context, id int64, actor, reason string) error {
	if id <= 0 {
		return fmt.Errorf("%w: a task id is a positive whole number, not %d", ErrInvalid, id)
	}
	reason, err := RerunReason(reason)
	switch {
	case errors.Is(err, ErrReasonRequired):
		return ErrAbandonReasonRequired
	case errors.Is(err, ErrReasonTooLong):
		return ErrAbandonReasonTooLong
	}
	target := TaskTarget(id)
	refused := ""
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		var t ReleaseTask
		if err := take(tx.Raw(`SELECT * FROM release_tasks WHERE id = ?`+s.forUpdate(), id), &t, fmt.Sprintf("task %d", id)); err != nil {
			return err
		}
		if refused = abandonRefusal(t, now); refused != "" {
			return fmt.Errorf("%w: task %d: %s", ErrTaskNotAbandonable, id, refused)
		}
		if s.approval.needs(t) {
			refused = "needs approval"
			return fmt.Errorf("%w: task %d: its abandon needs a second person; request it", ErrNeedsApproval, id)
		}
		if err := abandonIn(tx, t, now); err != nil {
			return err
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: "abandon_task", Target: target, Reason: reason, Outcome: "ok",
			Detail: fmt.Sprintf("was %s; nothing released", t.Status), CreatedAt: now}).Error
	})
	if err != nil {
		if refused != "" {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: actor, Action: "abandon_task", Target: target, Reason: reason,
				Outcome: "refused", Detail: refused, CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused abandon", slog.String("target", target), slog.Any("err", aerr))
			}
		}
		return fmt.Errorf("abandon task %d: %w", id, err)
	}
	return nil
}

// abandonRefusal says why the locked task t cannot be abandoned now, or "".
func abandonRefusal(t ReleaseTask, now time.Time) string {
	switch {
	case !t.Status.Rerunnable():
		return fmt.Sprintf("task is %s", t.Status)
	case t.LeaseUntil != nil && t.LeaseUntil.After(now):
		return fmt.Sprintf("worker %s is trying it until %s", t.LeaseOwner, t.LeaseUntil.UTC().Format(time.RFC3339))
	}
	return ""
}

// abandonIn ends the locked task t, which abandonRefusal let pass, as
// ABANDONED.
func abandonIn(tx *gorm.DB, t ReleaseTask, now time.Time) error {
	res := tx.Exec(`UPDATE release_tasks SET status = 'ABANDONED', lease_token = '', lease_until = NULL, updated_at = ?
		WHERE id = ? AND status IN ('RETRY','MANUAL')`, now, t.ID)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected != 1 {
		return fmt.Errorf("abandon of locked task %d changed %d rows", t.ID, res.RowsAffected)
	}
	return nil
}

// maxTaskHistory bounds the audit entries a task's page shows.
const maxTaskHistory = 50

// TaskHistory lists what people did to one task itself (reruns of it,
// its abandon), oldest first, from the audit log's (target, id) index.
func (s *Store) TaskHistory(ctx context.Context, id int64) ([]AuditEntry, error) {
	return s.targetHistory(ctx, TaskTarget(id), maxTaskHistory)
}

// targetHistory lists the first limit audit entries of one target, oldest
// first, from the audit log's (target, id) index: what people did to a
// task, a ticket or a request.
func (s *Store) targetHistory(ctx context.Context, target string, limit int) ([]AuditEntry, error) {
	var out []AuditEntry
	err := s.R.WithContext(ctx).Where("target = ?", target).Order("id").Limit(limit).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", target, err)
	}
	return out, nil
}

// RerunnableTasks lists the tasks a bulk rerun with this filter would make
// due now, oldest first, at most MaxRerunIDs, and whether more match: the
// bulk rerun's page shows them with a box each.
func (s *Store) RerunnableTasks(ctx context.Context, f TaskFilter) ([]ReleaseTask, bool, error) {
	if err := s.checkFilter(f); err != nil {
		return nil, false, err
	}
	statuses, err := f.rerunFilter()
	if err != nil {
		return nil, false, err
	}
	cond, args := s.taskWhere(f)
	var tasks []ReleaseTask
	err = s.R.WithContext(ctx).Where("status IN ?", statuses).Where(cond, args...).Order("created_at, id").
		Limit(MaxRerunIDs + 1).Find(&tasks).Error
	if err != nil {
		return nil, false, fmt.Errorf("list rerunnable %s tasks: %w", f.Type, err)
	}
	more := len(tasks) > MaxRerunIDs
	if more {
		tasks = tasks[:MaxRerunIDs]
	}
	return tasks, more, nil
}
