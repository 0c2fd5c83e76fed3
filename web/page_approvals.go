package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// decider is who sends the request, as a request's steps need them.
func (s *server) decider(c *echo.Context) (models.Decider, error) {
	d := models.Decider{Name: actor(c), Admin: isAdmin(c)}
	p := principalOf(c)
	if p == nil || p.Person == "" {
		return d, nil
	}
	// The person behind a session or a token acts under their name and
	// every token they made: each is the same person to the requests.
	tokens, err := s.auth.TokenActors(c.Request().Context(), p.Person)
	if err != nil {
		return d, err
	}
	for _, n := range append([]string{p.Person}, tokens...) {
		if n != d.Name {
			d.Aliases = append(d.Aliases, n)
		}
	}
	return d, nil
}

// approvalIDParam reads a request id from the path.
func approvalIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a request id is a positive whole number, not %q", raw)
	}
	return id, nil
}

// approvalFilter reads the list's status filter.
func approvalFilter(c *echo.Context) (models.ApprovalFilter, error) {
	var f models.ApprovalFilter
	if v := c.QueryParam("status"); v != "" {
		st, err := models.ParseApprovalStatus(v)
		if err != nil {
			return f, err
		}
		f.Status = st
	}
	return f, nil
}

// approvalRow maps a request to its row.
func approvalRow(r models.ApprovalRequest) views.ApprovalRow {
	return views.ApprovalRow{ID: r.ID, TaskID: r.TaskID, OrderNo: r.OrderNo, Type: string(r.ResourceType), Key: r.BizKey,
		Action: string(r.Action), Amount: r.Amount, Reason: r.Reason, RequestedBy: r.RequestedBy, RequestedAt: r.RequestedAt,
		ExpiresAt: r.ExpiresAt, Status: string(r.Status), TaskStatus: string(r.TaskStatus), TaskAttempts: r.TaskAttempts,
		TaskFailures: r.TaskFailures, TaskUpdatedAt: r.TaskUpdatedAt, DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt,
		DecisionReason: r.DecisionReason}
}

// approvalsList is GET /approvals: the requests, pending first, by status.
func (s *server) approvalsList(c *echo.Context) error {
	f, err := approvalFilter(c)
	if err != nil {
		return err
	}
	list, err := s.store.ListApprovals(c.Request().Context(), f)
	if err != nil {
		return err
	}
	v := views.ApprovalsView{Status: string(f.Status), Threshold: s.store.ApprovalThreshold()}
	for _, st := range models.ApprovalStatuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	for _, r := range list {
		v.Rows = append(v.Rows, approvalRow(r))
	}
	return render(c, http.StatusOK, views.ApprovalsPage(s.page(c, "approvals.title", "approvals"), v))
}

// approvalDetail is GET /approvals/:id: the request, its task as it is
// now beside what the requester saw, the forms for who may decide it, and
// its history.
func (s *server) approvalDetail(c *echo.Context) error {
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	r, err := s.store.ApprovalByID(ctx, id)
	if err != nil {
		return err
	}
	t, err := s.store.Task(ctx, r.TaskID)
	if err != nil {
		return err
	}
	history, err := s.store.ApprovalHistory(ctx, id)
	if err != nil {
		return err
	}
	v := views.ApprovalDetailView{Req: approvalRow(*r), Task: s.taskRow(t.ReleaseTask, s.store.Now()), TaskUpdatedAt: t.UpdatedAt,
		MaxReason: models.MaxReasonLen}
	if p := principalOf(c); p != nil && p.Role.Allows(gateOperator.role()) {
		d, err := s.decider(c)
		if err != nil {
			return err
		}
		switch {
		case d.Is(r.RequestedBy):
			v.NoDecide = "approvals.cannot.own"
		case r.Action == models.ApprovalAbandon && !d.Admin:
			v.NoDecide = "approvals.cannot.admin"
		default:
			v.CanDecide = true
		}
	}
	for _, e := range history {
		v.History = append(v.History, views.TaskEvent{At: e.CreatedAt, Actor: e.Actor, Action: e.Action, Outcome: e.Outcome,
			Reason: e.Reason, Detail: e.Detail})
	}
	return render(c, http.StatusOK, views.ApprovalDetailPage(s.page(c, "approvals.title", "approvals"), v))
}

// approvalFlash answers a refused step of a request with a flash on back
// naming its code; other errors pass through.
func approvalFlash(c *echo.Context, back string, err error) error {
	var me *models.Error
	if !models.IsApprovalRefusal(err) || !errors.As(err, &me) {
		return err
	}
	p := flashPage(c)
	key := "approvals.flash.refused"
	if errors.Is(err, models.ErrTaskChanged) || errors.Is(err, models.ErrRequestExpired) {
		key = "approvals.flash.closed"
	}
	return redirectWithFlash(c, back, false, p.Tf(key, me.Code, err.Error()))
}

// taskRequest is POST /tasks/:id/requests: a request to rerun or abandon a
// task that needs approval, with a reason; then to the request's page.
func (s *server) taskRequest(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	reason, back, err := taskFormReason(c, id)
	if reason == "" {
		return err
	}
	action, err := models.ParseApprovalAction(c.Request().PostForm.Get("action"))
	if err != nil {
		return err
	}
	d, err := s.decider(c)
	if err != nil {
		return err
	}
	r, err := s.store.RequestApproval(c.Request().Context(), id, action, d, reason)
	if err != nil {
		return approvalFlash(c, back, err)
	}
	return redirectWithFlash(c, views.ApprovalURL(r.ID), true, flashPage(c).Tf("approvals.flash.requested", r.ID))
}

// approvalDecide is POST /approvals/:id/approve and /reject: the decision
// with a reason (models.ApproveRequest acts in the same transaction), then
// back to the request saying what happened. An approved rerun wakes the
// worker.
func (s *server) approvalDecide(approve bool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := approvalIDParam(c)
		if err != nil {
			return err
		}
		if err := c.Request().ParseForm(); err != nil {
			return invalidf("could not read the form: %v", err)
		}
		back := views.ApprovalURL(id)
		reason, err := formReason(c, back)
		if reason == "" {
			return err
		}
		ctx := c.Request().Context()
		p := flashPage(c)
		d, err := s.decider(c)
		if err != nil {
			return err
		}
		if !approve {
			r, err := s.store.RejectRequest(ctx, id, d, reason)
			if err != nil {
				return approvalFlash(c, back, err)
			}
			return redirectWithFlash(c, back, true, p.Tf("approvals.flash.rejected", r.ID))
		}
		r, err := s.store.ApproveRequest(ctx, id, d, reason)
		if err != nil {
			return approvalFlash(c, back, err)
		}
		if r.Action == models.ApprovalRerun {
			s.wakeWorker()
		}
		return redirectWithFlash(c, back, true, p.Tf("approvals.flash.approved", r.ID, r.TaskID))
	}
}
