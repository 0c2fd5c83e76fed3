package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"
)

// ClaimTasks leases up to n due tasks to owner until now + lease. A task is
// due when it is PENDING or RETRY, its next_at has come, and no unexpired
// lease holds it, so a crashed worker's tasks come back on their own. On
// PostgreSQL, FOR UPDATE SKIP LOCKED lets several instances claim at once
// without waiting on each other.
func (s *Store) ClaimTasks(ctx context.Context, owner string, n int, lease time.Duration) ([]ReleaseTask, error) {
	now := s.Now()
	token := newToken()
	skip := ""
	if s.Dialect == Postgres {
		skip = " FOR UPDATE SKIP LOCKED"
	}
	var tasks []ReleaseTask
	err := s.W.WithContext(ctx).Raw(`UPDATE release_tasks
		SET lease_owner = ?, lease_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
		WHERE id IN (SELECT id FROM release_tasks
			WHERE status IN ('PENDING','RETRY') AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?)
			ORDER BY next_at, id LIMIT ?`+skip+`)
		RETURNING *`, owner, token, now.Add(lease), now, now, now, n).Scan(&tasks).Error
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	return tasks, nil
}

// rerunNote is what an attempt after a rerun keeps of it: who asked, and why.
func (t ReleaseTask) rerunNote() string {
	if t.RerunBy == "" {
		return ""
	}
	return "rerun by " + t.RerunBy + ": " + t.RerunReason
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// OutcomeLeaseLost means the task was no longer this worker's to finish:
// its lease went to another worker, or it was done or superseded meanwhile.
const OutcomeLeaseLost = "LEASE_LOST"

// ReleaseResult is what one try of a task came to.
type ReleaseResult struct {
	Outcome string
	Class   ErrorClass
	Err     string
}

// ReleaseTask gives back what one claimed task names, as its lease holder.
// In one transaction: the task becomes DONE (only while the lease token is
// still ours), the ledger row is inserted (a conflict means it was already
// released: DONE, counted as DUPLICATE), the conditional update is applied,
// and the attempt is recorded. A failure is then classified: permanent ones
// (LOCKED_SHORT, STATE_MISMATCH, NOT_FOUND) go MANUAL at once, transient ones
// retry on RetrySchedule until MaxFailures.
func (s *Store) ReleaseTask(ctx context.Context, t ReleaseTask, worker string) (ReleaseResult, error) {
	if t.LeaseToken == "" {
		return ReleaseResult{}, fmt.Errorf("release task %d: it was not claimed", t.ID)
	}
	start := s.Now()
	outcome := OutcomeDone
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		res := tx.Exec(`UPDATE release_tasks SET status = 'DONE', done_at = ?, updated_at = ?, last_error = '', error_class = ''
			WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`, now, now, t.ID, t.LeaseToken)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return errLeaseLost
		}
		op := Op{Kind: FlowRelease, OrderNo: t.OrderNo, Key: t.BizKey, Qty: t.Qty, Trigger: t.Trigger, Actor: "worker:" + worker, Now: now}
		err := s.apply(tx, t.ResourceType, op)
		switch {
		case errors.Is(err, errDuplicate):
			outcome = OutcomeDuplicate
		case err != nil:
			return err
		}
		if s.faults != nil {
			if err := s.faults(FaultAfterLedger, &t); err != nil {
				return err
			}
		}
		return tx.Create(&TaskAttempt{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, Worker: worker,
			Outcome: outcome, Note: t.rerunNote(), StartedAt: start, FinishedAt: s.Now()}).Error
	})
	if errors.Is(err, errLeaseLost) {
		return ReleaseResult{Outcome: OutcomeLeaseLost}, nil
	}
	if err == nil {
		return ReleaseResult{Outcome: outcome}, nil
	}
	res, ferr := s.recordFailure(ctx, t, worker, start, err)
	if ferr != nil {
		return res, fmt.Errorf("release task %d: %w (recording failure: %v)", t.ID, err, ferr)
	}
	return res, nil
}

// recordFailure schedules a retry or sends the task to MANUAL, with an
// attempt row, while the lease is still ours.
func (s *Store) recordFailure(ctx context.Context, t ReleaseTask, worker string, start time.Time, cause error) (ReleaseResult, error) {
	class, retryable := classOf(cause)
	msg := clip(cause.Error(), maxErrorLen)
	outcome := OutcomeLeaseLost
	// A cancelled or timed-out ctx must not stop the failure being recorded.
	ctx = context.WithoutCancel(ctx)
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Count from the row, not from the claimed copy: a rerun may have
		// reset the count since the claim.
		var cur []ReleaseTask
		err := tx.Raw("SELECT * FROM release_tasks WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')"+s.forUpdate(),
			t.ID, t.LeaseToken).Scan(&cur).Error
		if err != nil {
			return err
		}
		if len(cur) == 0 {
			return nil
		}
		t = cur[0]
		failures := t.Failures + 1
		status, next := TaskRetry, now.Add(RetryDelay(failures))
		outcome = OutcomeRetry
		if !retryable || failures >= MaxFailures {
			status, next, outcome = TaskManual, now, OutcomeManual
		}
		res := tx.Exec(`UPDATE release_tasks SET status = ?, failures = ?, next_at = ?, last_error = ?, error_class = ?,
			lease_until = NULL, updated_at = ? WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`,
			status, failures, next, msg, class, now, t.ID, t.LeaseToken)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			outcome = OutcomeLeaseLost
			return nil
		}
		return tx.Create(&TaskAttempt{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, Worker: worker,
			Outcome: outcome, ErrorClass: class, Error: msg, Note: t.rerunNote(), StartedAt: start, FinishedAt: now}).Error
	})
	return ReleaseResult{Outcome: outcome, Class: class, Err: msg}, err
}

// RescueLeases clears leases that expired on tasks still waiting, so the
// dashboard does not show them as owned; ClaimTasks would take them anyway.
func (s *Store) RescueLeases(ctx context.Context) (int64, error) {
	now := s.Now()
	skip := ""
	if s.Dialect == Postgres {
		skip = " FOR UPDATE SKIP LOCKED"
	}
	res := s.W.WithContext(ctx).Exec(`UPDATE release_tasks SET lease_owner = '', lease_until = NULL, updated_at = ?
		WHERE id IN (SELECT id FROM release_tasks
			WHERE status IN ('PENDING','RETRY') AND lease_until IS NOT NULL AND lease_until <= ? ORDER BY id`+skip+`)`, now, now)
	if res.Error != nil {
		return 0, fmt.Errorf("rescue leases: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// Rerun makes the RETRY or MANUAL tasks of one resource type of one order due
// now, with trigger RERUN, and audits it. It never releases anything itself:
// the worker does, and the ledger's unique key still decides. It returns how
// many tasks it made due, or ErrNothingToRerun.
func (s *Store) Rerun(ctx context.Context, orderNo string, t ResourceType, actor, reason string) (int64, error) {
	if _, err := ParseResourceType(string(t)); err != nil {
		return 0, err
	}
	target := "order:" + orderNo + "/" + string(t)
	var n int64
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Rows are locked by id, the order a late payment locks them in.
		res := tx.Exec(`UPDATE release_tasks SET status = 'PENDING', next_at = ?, failures = 0, trigger_type = 'RERUN',
			rerun_by = ?, rerun_reason = ?, updated_at = ?
			WHERE id IN (SELECT id FROM release_tasks
				WHERE order_no = ? AND resource_type = ? AND status IN ('RETRY','MANUAL') ORDER BY id`+s.forUpdate()+`)
			AND status IN ('RETRY','MANUAL')`, now, actor, reason, now, orderNo, t)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		if n == 0 {
			if _, err := orderStatus(tx, orderNo); err != nil {
				return err
			}
			return fmt.Errorf("%w: order %s has no RETRY or MANUAL %s task", ErrNothingToRerun, orderNo, t)
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: "rerun", Target: target, Reason: reason,
			Outcome: "ok", Detail: fmt.Sprintf("%d task(s) made due", n), CreatedAt: now}).Error
	})
	if err != nil {
		if errors.Is(err, ErrNothingToRerun) {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: actor, Action: "rerun", Target: target, Reason: reason,
				Outcome: "refused", Detail: "nothing to rerun", CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused rerun", slog.String("target", target), slog.Any("err", aerr))
			}
		}
		return 0, fmt.Errorf("rerun %s: %w", target, err)
	}
	return n, nil
}
