package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// A rerun or an abandon of a task that gives money back (balance, points,
// or a declared type with approval: true) is a request first: another
// person approves it, and only then does it act, through the rerun and
// abandon code, in the approval's transaction. Nobody alone can give money
// back twice by a slip of the hand.

// ApprovalTTL is how long a request can be approved.
const ApprovalTTL = 24 * time.Hour

// ApprovalAction is what a request asks to do to its task.
type ApprovalAction string

// Actions a request can ask for.
const (
	ApprovalRerun   ApprovalAction = "rerun"
	ApprovalAbandon ApprovalAction = "abandon"
)

// ParseApprovalAction reads "rerun" or "abandon".
func ParseApprovalAction(v string) (ApprovalAction, error) {
	switch a := ApprovalAction(v); a {
	case ApprovalRerun, ApprovalAbandon:
		return a, nil
	}
	return "", invalid("action must be rerun or abandon, not %.32q", v)
}

// ApprovalStatus is where a request is.
type ApprovalStatus string

// Request statuses. STALE: the task changed after the request (the worker
// finished or retried it, another path reran it), so an approval found
// nothing it could safely act on and closed the request.
const (
	ApprovalPending  ApprovalStatus = "PENDING"
	ApprovalApproved ApprovalStatus = "APPROVED"
	ApprovalRejected ApprovalStatus = "REJECTED"
	ApprovalExpired  ApprovalStatus = "EXPIRED"
	ApprovalStale    ApprovalStatus = "STALE"
)

// ApprovalStatuses are the statuses, in the list's filter order.
var ApprovalStatuses = []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalExpired, ApprovalStale}

// ParseApprovalStatus reads a request status.
func ParseApprovalStatus(v string) (ApprovalStatus, error) {
	if st := ApprovalStatus(v); slices.Contains(ApprovalStatuses, st) {
		return st, nil
	}
	return "", invalid("status must be one of PENDING, APPROVED, REJECTED, EXPIRED, STALE, not %.32q", v)
}

// Refusals of a request's steps.
var (
	ErrNeedsApproval  = &Error{"NEEDS_APPROVAL", "this task's rerun or abandon needs a second person's approval; request it"}
	ErrNoApproval     = &Error{"APPROVAL_NOT_NEEDED", "this task's rerun or abandon needs no approval; do it directly"}
	ErrRequestOpen    = &Error{"REQUEST_OPEN", "a request for this task and action is already open"}
	ErrOwnRequest     = &Error{"OWN_REQUEST", "the requester cannot approve or reject their own request"}
	ErrApproverRole   = &Error{"APPROVER_ROLE", "an abandon is approved, rejected or requested by an admin only"}
	ErrRequestClosed  = &Error{"REQUEST_CLOSED", "the request is no longer pending"}
	ErrRequestExpired = &Error{"REQUEST_EXPIRED", "the request expired; request again"}
	ErrTaskChanged    = &Error{"TASK_CHANGED", "the task changed since the request; nothing to approve"}
)

// approvalPolicy says which tasks need a second person.
type approvalPolicy struct {
	threshold int64
	types     map[ResourceType]bool
}

func newApprovalPolicy(threshold int64, declared []ResourceType) approvalPolicy {
	p := approvalPolicy{threshold: threshold, types: map[ResourceType]bool{ResBalance: true, ResPoints: true}}
	for _, t := range declared {
		p.types[t] = true
	}
	return p
}

// needs tells whether a rerun or abandon of t needs approval: its type
// moves money and its amount is at least the threshold.
func (p approvalPolicy) needs(t ReleaseTask) bool {
	return p.types[t.ResourceType] && t.Qty >= p.threshold
}

// NeedsApproval tells whether a rerun or abandon of t is a request.
func (s *Store) NeedsApproval(t ReleaseTask) bool { return s.approval.needs(t) }

// ApprovalThreshold is the configured threshold.
func (s *Store) ApprovalThreshold() int64 { return s.approval.threshold }

// ApprovalRequest is one request to rerun or abandon a task, with the task
// as the requester saw it (Task*) and the decision.
type ApprovalRequest struct {
	ID             int64          `json:"id"`
	TaskID         int64          `json:"task_id"`
	OrderNo        string         `json:"order_no"`
	ResourceType   ResourceType   `json:"resource_type"`
	BizKey         string         `json:"biz_key"`
	Action         ApprovalAction `json:"action"`
	Amount         int64          `json:"amount"`
	Reason         string         `json:"reason"`
	RequestedBy    string         `json:"requested_by"`
	RequestedAt    time.Time      `json:"requested_at"`
	ExpiresAt      time.Time      `json:"expires_at"`
	Status         ApprovalStatus `json:"status"`
	TaskStatus     TaskStatus     `json:"task_status"`
	TaskAttempts   int            `json:"task_attempts"`
	TaskFailures   int            `json:"task_failures"`
	TaskUpdatedAt  time.Time      `json:"task_updated_at"`
	DecidedBy      string         `json:"decided_by,omitempty"`
	DecidedAt      *time.Time     `json:"decided_at,omitempty"`
	DecisionReason string         `json:"decision_reason,omitempty"`
}

// TableName is the requests' table.
func (ApprovalRequest) TableName() string { return "approval_requests" }

// ApprovalTarget is the audit target of one request.
func ApprovalTarget(id int64) string { return "approval:" + strconv.FormatInt(id, 10) }

// readAt sets a PENDING request past its expiry to EXPIRED, as every read
// shows it: the row says so only once something closes it.
func (r *ApprovalRequest) readAt(now time.Time) {
	if r.Status == ApprovalPending && !now.Before(r.ExpiresAt) {
		r.Status = ApprovalExpired
	}
}

// Decider is who requests, approves or rejects: the name audited, the
// other names the same person acts under (their session's name, the API
// tokens they made), and whether they are an admin (an abandon needs one,
// as it does directly).
type Decider struct {
	Name    string
	Aliases []string
	Admin   bool
}

// Is tells whether actor is the decider under any of their names.
func (d Decider) Is(actor string) bool {
	return actor == d.Name || slices.Contains(d.Aliases, actor)
}

// RequestApproval opens a request to rerun or abandon task id, which must
// need approval and be RETRY or MANUAL (an abandon: with no worker trying
// it), keeping the task as it is now; audited on the task and the request.
// An open request for the same task and action is ErrRequestOpen; a PENDING
// one past its expiry is closed EXPIRED first.
func (s *Store) RequestApproval(ctx context.Context, id int64, action ApprovalAction, by Decider, reason string) (*ApprovalRequest, error) {
	if id <= 0 {
		return nil, invalid("a task id is a positive whole number, not %d", id)
	}
	if _, err := ParseApprovalAction(string(action)); err != nil {
		return nil, err
	}
	reason, err := RerunReason(reason)
	if err != nil {
		return nil, err
	}
	if action == ApprovalAbandon && !by.Admin {
		return nil, fmt.Errorf("%w: %s may not request an abandon", ErrApproverRole, by.Name)
	}
	var r ApprovalRequest
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		var t ReleaseTask
		if err := take(tx.Raw(`SELECT * FROM release_tasks WHERE id = ?`+s.forUpdate(), id), &t, fmt.Sprintf("task %d", id)); err != nil {
			return err
		}
		if !s.approval.needs(t) {
			return fmt.Errorf("%w: task %d", ErrNoApproval, id)
		}
		switch {
		case action == ApprovalRerun && !t.Status.Rerunnable():
			return fmt.Errorf("%w: task %d is %s", ErrNothingToRerun, id, t.Status)
		case action == ApprovalAbandon:
			if why := abandonRefusal(t, now); why != "" {
				return fmt.Errorf("%w: task %d: %s", ErrTaskNotAbandonable, id, why)
			}
		}
		// An expired request no longer holds the task's one open place.
		if err := tx.Exec(`UPDATE approval_requests SET status = 'EXPIRED' WHERE task_id = ? AND action = ? AND status = 'PENDING' AND expires_at <= ?`,
			id, action, now).Error; err != nil {
			return err
		}
		var open []int64
		if err := tx.Raw(`SELECT id FROM approval_requests WHERE task_id = ? AND action = ? AND status = 'PENDING'`, id, action).
			Scan(&open).Error; err != nil {
			return err
		}
		if len(open) > 0 {
			return fmt.Errorf("%w: request #%d", ErrRequestOpen, open[0])
		}
		r = ApprovalRequest{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, BizKey: t.BizKey, Action: action,
			Amount: t.Qty, Reason: reason, RequestedBy: by.Name, RequestedAt: now, ExpiresAt: now.Add(ApprovalTTL),
			Status: ApprovalPending, TaskStatus: t.Status, TaskAttempts: t.Attempts, TaskFailures: t.Failures, TaskUpdatedAt: t.UpdatedAt}
		if err := tx.Create(&r).Error; err != nil {
			if IsUniqueViolation(err) {
				return fmt.Errorf("%w: task %d", ErrRequestOpen, id)
			}
			return err
		}
		detail := fmt.Sprintf("request #%d to %s %d of %s %s, expires %s", r.ID, action, r.Amount, t.ResourceType, t.BizKey,
			r.ExpiresAt.Format(time.RFC3339))
		return s.auditBoth(tx, r, by.Name, "request_"+string(action), reason, "ok", detail, now)
	})
	if err != nil {
		return nil, fmt.Errorf("request %s of task %d: %w", action, id, err)
	}
	return &r, nil
}

// auditBoth writes one audit row on the request's task and one on the
// request itself.
func (s *Store) auditBoth(tx *gorm.DB, r ApprovalRequest, actor, action, reason, outcome, detail string, now time.Time) error {
	for _, target := range []string{TaskTarget(r.TaskID), ApprovalTarget(r.ID)} {
		if err := tx.Create(&AuditEntry{Actor: actor, Action: action, Target: target, Reason: reason, Outcome: outcome,
			Detail: detail, CreatedAt: now}).Error; err != nil {
			return err
		}
	}
	return nil
}

// taskChange says how t differs from the task the request r saw, or "":
// another status, another try (the worker's), or a rerun meanwhile.
func taskChange(r ApprovalRequest, t ReleaseTask) string {
	switch {
	case t.Status != r.TaskStatus:
		return fmt.Sprintf("task %d is %s since %s (was %s when requested)", t.ID, t.Status,
			t.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"), r.TaskStatus)
	case t.Attempts != r.TaskAttempts || t.Failures != r.TaskFailures:
		return fmt.Sprintf("task %d was tried again since the request (attempts %d → %d, failures %d → %d)",
			t.ID, r.TaskAttempts, t.Attempts, r.TaskFailures, t.Failures)
	}
	return ""
}

// ApproveRequest approves request id and, in the same transaction, acts:
// a compare-and-set of the request PENDING → APPROVED, a check that the
// task is still what the requester saw, and the rerun or abandon through
// their own code. The decider must not be the requester (ErrOwnRequest)
// and, for an abandon, must be an admin (ErrApproverRole); both refusals
// change nothing but an audit row. A request past its expiry is closed
// EXPIRED (ErrRequestExpired); one whose task changed is closed STALE
// (ErrTaskChanged, saying what changed); neither acts.
func (s *Store) ApproveRequest(ctx context.Context, id int64, by Decider, reason string) (*ApprovalRequest, error) {
	return s.decide(ctx, id, by, reason, true)
}

// RejectRequest closes request id REJECTED with the decider's reason;
// nothing is done to the task. The same people may reject as may approve.
func (s *Store) RejectRequest(ctx context.Context, id int64, by Decider, reason string) (*ApprovalRequest, error) {
	return s.decide(ctx, id, by, reason, false)
}

// decide is an approval (approve) or a rejection.
func (s *Store) decide(ctx context.Context, id int64, by Decider, reason string, approve bool) (*ApprovalRequest, error) {
	verb := "reject"
	if approve {
		verb = "approve"
	}
	if id <= 0 {
		return nil, invalid("a request id is a positive whole number, not %d", id)
	}
	reason, err := RerunReason(reason)
	if err != nil {
		return nil, err
	}
	// The task is locked before its request, as a new request does.
	var first ApprovalRequest
	if err := take(s.R.WithContext(ctx).Where("id = ?", id), &first, fmt.Sprintf("request %d", id)); err != nil {
		return nil, err
	}
	var r ApprovalRequest
	refused := ""   // why the decider was refused, audited on the request alone
	var after error // a refusal that closed the request: committed, then returned
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		var t ReleaseTask
		if err := take(tx.Raw(`SELECT * FROM release_tasks WHERE id = ?`+s.forUpdate(), first.TaskID), &t,
			fmt.Sprintf("task %d", first.TaskID)); err != nil {
			return err
		}
		if err := take(tx.Raw(`SELECT * FROM approval_requests WHERE id = ?`+s.forUpdate(), id), &r, fmt.Sprintf("request %d", id)); err != nil {
			return err
		}
		switch {
		case by.Is(r.RequestedBy):
			refused = "own request"
			return fmt.Errorf("%w: request #%d is %s's", ErrOwnRequest, id, r.RequestedBy)
		case r.Action == ApprovalAbandon && !by.Admin:
			refused = "an abandon needs an admin"
			return fmt.Errorf("%w: %s may not decide request #%d", ErrApproverRole, by.Name, id)
		case r.Status != ApprovalPending:
			return fmt.Errorf("%w: request #%d is %s (by %s)", ErrRequestClosed, id, r.Status, r.DecidedBy)
		}
		status, detail := ApprovalRejected, fmt.Sprintf("request #%d of %s rejected", id, r.RequestedBy)
		switch change := taskChange(r, t); {
		case !now.Before(r.ExpiresAt):
			status, detail = ApprovalExpired, fmt.Sprintf("request #%d expired at %s", id, r.ExpiresAt.Format(time.RFC3339))
			after = fmt.Errorf("%w: request #%d expired at %s", ErrRequestExpired, id, r.ExpiresAt.Format(time.RFC3339))
		case !approve:
		case change != "":
			status, detail = ApprovalStale, change
			after = fmt.Errorf("%w: %s", ErrTaskChanged, change)
		default:
			status, detail = ApprovalApproved, fmt.Sprintf("request #%d of %s approved", id, r.RequestedBy)
		}
		res := tx.Exec(`UPDATE approval_requests SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ?
			WHERE id = ? AND status = 'PENDING'`, status, by.Name, now, reason, id)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("%w: request #%d was decided meanwhile", ErrRequestClosed, id)
		}
		r.Status, r.DecidedBy, r.DecidedAt, r.DecisionReason = status, by.Name, &now, reason
		outcome := "ok"
		if after != nil {
			outcome = "refused"
		}
		if err := s.auditBoth(tx, r, by.Name, verb+"_request", reason, outcome, detail, now); err != nil {
			return err
		}
		if status != ApprovalApproved {
			return nil
		}
		return s.actOnApproval(tx, r, t, by.Name, now)
	})
	if err != nil {
		if refused != "" {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: by.Name, Action: verb + "_request", Target: ApprovalTarget(id),
				Reason: reason, Outcome: "refused", Detail: refused, CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused decision", slog.Int64("request", id), slog.Any("err", aerr))
			}
		}
		return nil, fmt.Errorf("%s request %d: %w", verb, id, err)
	}
	if after != nil {
		return &r, fmt.Errorf("%s request %d: %w", verb, id, after)
	}
	return &r, nil
}

// actOnApproval does what the approved request r asks to the locked task t,
// which is still as the requester saw it, through the rerun and abandon
// code; the rerun is the requester's, with their reason.
func (s *Store) actOnApproval(tx *gorm.DB, r ApprovalRequest, t ReleaseTask, approver string, now time.Time) error {
	detail := fmt.Sprintf("approved request #%d of %s", r.ID, r.RequestedBy)
	switch r.Action {
	case ApprovalRerun:
		if err := s.makeDue(tx, []ReleaseTask{t}, r.RequestedBy, r.Reason, now); err != nil {
			return err
		}
		return tx.Create(&AuditEntry{Actor: approver, Action: "rerun", Target: TaskTarget(t.ID), Reason: r.Reason, Outcome: "ok",
			Detail: "1 task(s) made due; " + detail, CreatedAt: now}).Error
	case ApprovalAbandon:
		if why := abandonRefusal(t, now); why != "" {
			return fmt.Errorf("%w: task %d: %s", ErrTaskNotAbandonable, t.ID, why)
		}
		if err := abandonIn(tx, t, now); err != nil {
			return err
		}
		return tx.Create(&AuditEntry{Actor: approver, Action: "abandon_task", Target: TaskTarget(t.ID), Reason: r.Reason, Outcome: "ok",
			Detail: fmt.Sprintf("was %s; nothing released; %s", t.Status, detail), CreatedAt: now}).Error
	}
	return fmt.Errorf("request #%d has unknown action %q", r.ID, r.Action)
}

// ApprovalByID reads one request, its status as of now.
func (s *Store) ApprovalByID(ctx context.Context, id int64) (*ApprovalRequest, error) {
	var r ApprovalRequest
	if err := take(s.R.WithContext(ctx).Where("id = ?", id), &r, fmt.Sprintf("request %d", id)); err != nil {
		return nil, err
	}
	r.readAt(s.Now())
	return &r, nil
}

// MaxApprovalList bounds one page of the requests' list.
const MaxApprovalList = 200

// ApprovalFilter picks requests: by status as read now (none: all), and
// of one task (0: any).
type ApprovalFilter struct {
	Status ApprovalStatus
	TaskID int64
}

// ListApprovals lists requests, pending first, newest first, at most
// MaxApprovalList.
func (s *Store) ListApprovals(ctx context.Context, f ApprovalFilter) ([]ApprovalRequest, error) {
	now := s.Now()
	q := s.R.WithContext(ctx).Model(&ApprovalRequest{})
	switch f.Status {
	case "":
	case ApprovalPending:
		q = q.Where("status = 'PENDING' AND expires_at > ?", now)
	case ApprovalExpired:
		q = q.Where("status = 'EXPIRED' OR (status = 'PENDING' AND expires_at <= ?)", now)
	default:
		q = q.Where("status = ?", f.Status)
	}
	if f.TaskID > 0 {
		q = q.Where("task_id = ?", f.TaskID)
	}
	var out []ApprovalRequest
	err := q.Order(gorm.Expr("CASE WHEN status = 'PENDING' AND expires_at > ? THEN 0 ELSE 1 END, id DESC", now)).
		Limit(MaxApprovalList).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("list approval requests: %w", err)
	}
	for i := range out {
		out[i].readAt(now)
	}
	return out, nil
}

// PendingApprovals counts the requests waiting for a decision now.
func (s *Store) PendingApprovals(ctx context.Context) (int64, error) {
	var n int64
	err := s.R.WithContext(ctx).Model(&ApprovalRequest{}).Where("status = 'PENDING' AND expires_at > ?", s.Now()).Count(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count pending approval requests: %w", err)
	}
	return n, nil
}

// ApprovalHistory lists what people did to one request, oldest first.
func (s *Store) ApprovalHistory(ctx context.Context, id int64) ([]AuditEntry, error) {
	return s.targetHistory(ctx, ApprovalTarget(id), maxTaskHistory)
}

// IsApprovalRefusal tells the errors of a request's steps that a person
// can act on (a flash, not a failure page).
func IsApprovalRefusal(err error) bool {
	for _, e := range []error{ErrNeedsApproval, ErrNoApproval, ErrRequestOpen, ErrOwnRequest, ErrApproverRole,
		ErrRequestClosed, ErrRequestExpired, ErrTaskChanged, ErrNothingToRerun, ErrTaskNotAbandonable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
