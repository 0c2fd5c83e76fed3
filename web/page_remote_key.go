package web

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// remoteParam is the route's type when it is a remote type.
func (s *server) remoteParam(c *echo.Context) (models.ResourceType, bool) {
	t := models.ResourceType(c.Param("type"))
	_, ok := s.store.RemoteService(t)
	return t, ok
}

// remoteKey is GET /resources/:type/:key of a remote type (resourceKey
// sends it here): the key's ledger of calls, who holds it, and the
// operators' button that asks its service.
func (s *server) remoteKey(c *echo.Context, t models.ResourceType) error {
	return s.renderRemoteKey(c, t, nil)
}

// remoteKeyAsk is POST /resources/:type/:key/holds: ask the key's service
// now what it holds (Store.AskHolds: the reconciliation's call, audited)
// and show the key's page with the answer beside what unhold expects. The
// page is rendered, not redirected to: the answer is of this moment, and
// the audit log keeps it.
func (s *server) remoteKeyAsk(c *echo.Context) error {
	t, ok := s.remoteParam(c)
	if !ok {
		return s.resourceNotFound(c, t, "")
	}
	a, err := s.store.AskHolds(c.Request().Context(), t, c.Param("key"), actor(c))
	if errors.Is(err, models.ErrNotFound) {
		return s.resourceNotFound(c, t, c.Param("key"))
	}
	if err != nil {
		return err
	}
	return s.renderRemoteKey(c, t, &views.HoldsAnswer{AskedAt: a.AskedAt, Held: a.Held, NotOffered: a.NotOffered,
		Skip: string(a.Skip), Error: a.Error, Expected: a.Expected, Busy: a.Busy})
}

// renderRemoteKey shows one key of remote type t, with the service's
// answer when one was just asked.
func (s *server) renderRemoteKey(c *echo.Context, t models.ResourceType, answer *views.HoldsAnswer) error {
	key := c.Param("key")
	after, err := ledgerAfterID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	k, err := s.store.RemoteKeyOf(ctx, t, key)
	if errors.Is(err, models.ErrNotFound) {
		return s.resourceNotFound(c, t, key)
	}
	if err != nil {
		return err
	}
	flows, err := s.store.LedgerFlows(ctx, t, key, after, ledgerPageSize)
	if err != nil {
		return err
	}
	v := views.RemoteKeyView{Type: string(t), Key: key, LedgerHeld: k.LedgerHeld, HeldQty: k.HeldQty, HoldOrders: k.HoldOrders,
		TaskQty: k.TaskQty, TaskCount: k.TaskCount, Answer: answer}
	for _, h := range k.Holds {
		v.Holds = append(v.Holds, views.ResourceHoldRow{OrderNo: h.OrderNo, UserID: h.UserID, Qty: h.Qty,
			CreatedAt: h.CreatedAt, PayDeadline: h.PayDeadline})
	}
	for _, task := range k.Tasks {
		v.Tasks = append(v.Tasks, views.ResourceTaskRow{ID: task.ID, OrderNo: task.OrderNo, Qty: task.Qty,
			Status: string(task.Status), Attempts: task.Attempts, NextAt: task.NextAt})
	}
	for _, f := range flows.Flows {
		row := views.RemoteFlowRow{ID: f.ID, At: f.CreatedAt, Type: string(f.Type), Trigger: string(f.Trigger), Qty: f.Qty,
			Answer: f.StatusAfter, Actor: f.Actor}
		if f.OrderNo != nil {
			row.OrderNo = *f.OrderNo
		}
		v.Flows = append(v.Flows, row)
	}
	path := views.ResourceKeyURL(string(t), key)
	if after != 0 {
		v.Pager.FirstURL = path
	}
	if flows.Next != 0 {
		v.Pager.NextURL = views.Query(path, "after", strconv.FormatInt(flows.Next, 10))
	}
	return render(c, http.StatusOK, views.RemoteKeyPage(s.page(c, "nav.resources", "resources"), v))
}
