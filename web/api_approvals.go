package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type requestBody struct {
	Action string `json:"action"`
	Reason string `json:"reason"`
}

// approvalsView is the requests' list.
type approvalsView struct {
	Requests []models.ApprovalRequest `json:"requests"`
}

// taskRequestAPI is POST /api/v1/tasks/:id/requests {"action","reason"}:
// a request to rerun or abandon a task whose rerun and abandon need
// approval (the direct endpoints answer 409 NEEDS_APPROVAL for it). 201
// with the request; an abandon is requested by an admin only.
func (s *server) taskRequestAPI(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	var body requestBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	action, err := models.ParseApprovalAction(body.Action)
	if err != nil {
		return err
	}
	d, err := s.decider(c)
	if err != nil {
		return err
	}
	r, err := s.store.RequestApproval(c.Request().Context(), id, action, d, body.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, r)
}

// apiApprovals is GET /api/v1/approvals[?status=]: pending first.
func (s *server) apiApprovals(c *echo.Context) error {
	for k := range c.Request().URL.Query() {
		if k != "status" {
			return invalidf("unknown query parameter %.32q: only status is taken", k)
		}
	}
	f, err := approvalFilter(c)
	if err != nil {
		return err
	}
	list, err := s.store.ListApprovals(c.Request().Context(), f)
	if err != nil {
		return err
	}
	if list == nil {
		list = []models.ApprovalRequest{}
	}
	return c.JSON(http.StatusOK, approvalsView{Requests: list})
}

// apiApproval is GET /api/v1/approvals/:id.
func (s *server) apiApproval(c *echo.Context) error {
	id, err := approvalIDParam(c)
	if err != nil {
		return err
	}
	r, err := s.store.ApprovalByID(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// apiDecide is POST /api/v1/approvals/:id/approve and /reject {"reason"}:
// 200 with the request as decided. 403 OWN_REQUEST for the requester,
// APPROVER_ROLE for a non-admin deciding an abandon; 409 TASK_CHANGED or
// REQUEST_EXPIRED when the approval closed the request without acting,
// REQUEST_CLOSED when it was decided already.
func (s *server) apiDecide(approve bool) echo.HandlerFunc {
	return func(c *echo.Context) error {
		id, err := approvalIDParam(c)
		if err != nil {
			return err
		}
		var body rerunBody
		if err := readJSON(c, &body, false); err != nil {
			return err
		}
		ctx := c.Request().Context()
		d, err := s.decider(c)
		if err != nil {
			return err
		}
		if !approve {
			r, err := s.store.RejectRequest(ctx, id, d, body.Reason)
			if err != nil {
				return err
			}
			return c.JSON(http.StatusOK, r)
		}
		r, err := s.store.ApproveRequest(ctx, id, d, body.Reason)
		if err != nil {
			return err
		}
		if r.Action == models.ApprovalRerun {
			s.wakeWorker()
		}
		return c.JSON(http.StatusOK, r)
	}
}
