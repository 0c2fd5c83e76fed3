package web

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// The pages of the counter types a shop declares in its resources file:
// a type's keys, one key, and the operators' form that sets a key's
// available amount. Built-in types have pages of their own.

// builtinPages are the built-in resource types' own pages, where a
// /resources/:type of one of them points.
var builtinPages = map[models.ResourceType]string{
	models.ResInventory: "/inventory",
	models.ResCoupon:    "/coupons",
	models.ResBalance:   "/balances",
	models.ResPoints:    "/balances",
}

// declaredParam reads the :type of a resources route; ok is false unless
// it names a declared type.
func (s *server) declaredParam(c *echo.Context) (t models.ResourceType, ok bool) {
	name := c.Param("type")
	return models.ResourceType(name), slices.Contains(s.counters, name)
}

// remoteType shows a remote type's service: its URL, timeout, whether a
// token is sent, and whether its answers are verified.
func (s *server) remoteType(c *echo.Context, t models.ResourceType, rs models.RemoteService) error {
	v := views.RemoteTypeView{Type: string(t), URL: rs.URL, Timeout: rs.Timeout, Token: rs.Token, Strict: rs.Strict}
	return render(c, http.StatusOK, views.RemoteTypePage(s.page(c, string(t), "resources"), v))
}

// resourceNotFound answers 404 with why: a key the declared type lacks
// (key set), or a type that is built in or unknown.
func (s *server) resourceNotFound(c *echo.Context, t models.ResourceType, key string) error {
	v := views.ResourceNotFoundView{Type: string(t), Key: key}
	if _, err := models.ParseResourceType(string(t)); err == nil && key == "" {
		v.Builtin, v.BuiltinURL = true, builtinPages[t]
	}
	return render(c, http.StatusNotFound, views.ResourceNotFoundPage(s.page(c, "res.notfound.title", "resources"), v))
}

// resourceList is GET /resources/:type: one page of the type's keys, those
// starting with a prefix when one is given; for a remote type, its
// service's settings (remoteType).
func (s *server) resourceList(c *echo.Context) error {
	t, ok := s.declaredParam(c)
	if !ok {
		if rs, remote := s.store.RemoteService(t); remote {
			return s.remoteType(c, t, rs)
		}
		return s.resourceNotFound(c, t, "")
	}
	prefix, after := ledgerParam(c, "prefix"), c.QueryParam("after")
	page, err := s.store.ListDeclaredKeys(c.Request().Context(), t,
		models.DeclaredKeyQuery{Prefix: prefix, After: after, Limit: ledgerPageSize})
	if err != nil {
		return err
	}
	v := views.ResourceListView{Type: string(t), Prefix: prefix, Total: page.Total, Over: page.Over,
		Rows: make([]views.ResourceKeyRow, 0, len(page.Keys))}
	for _, k := range page.Keys {
		v.Rows = append(v.Rows, views.ResourceKeyRow{Key: k.Key, Available: k.Available, Locked: k.Locked,
			Spent: k.Spent, UpdatedAt: k.UpdatedAt})
	}
	path := views.ResourceTypeURL(string(t))
	if after != "" {
		v.Pager.FirstURL = views.Query(path, "prefix", prefix)
	}
	if page.Next != "" {
		v.Pager.NextURL = views.Query(path, "prefix", prefix, "after", page.Next)
	}
	return render(c, http.StatusOK, views.ResourceListPage(s.page(c, "nav.resources", "resources"), v))
}

// resourceKey is GET /resources/:type/:key. A built-in type's key is shown
// on the type's own page (a SKU's, a coupon's, an account's): the route
// sends it there, keeping ?for=.
func (s *server) resourceKey(c *echo.Context) error {
	if t, ok := s.remoteParam(c); ok {
		return s.remoteKey(c, t)
	}
	if _, ok := s.declaredParam(c); !ok {
		t := models.ResourceType(c.Param("type"))
		if page := s.store.KeyPage(t, c.Param("key")); page != "" {
			return c.Redirect(http.StatusSeeOther, withFor(page, fixFor(c), c.QueryParam("back")))
		}
	}
	return s.renderResourceKey(c, http.StatusOK, false, "")
}

// renderResourceKey shows one key: its amounts, the orders holding it now
// and one page of its ledger. With bad set, the set form refused value,
// and the page says what was wrong with it.
func (s *server) renderResourceKey(c *echo.Context, status int, bad bool, value string) error {
	t, ok := s.declaredParam(c)
	if !ok {
		return s.resourceNotFound(c, t, "")
	}
	key := c.Param("key")
	after, err := ledgerAfterID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	k, err := s.store.DeclaredKeyOf(ctx, t, key)
	if errors.Is(err, models.ErrNotFound) {
		return s.resourceNotFound(c, t, key)
	}
	if err != nil {
		return err
	}
	flows, err := s.store.DeclaredFlows(ctx, t, key, after, ledgerPageSize)
	if err != nil {
		return err
	}
	v := views.ResourceKeyView{Type: string(t),
		Key:     views.ResourceKeyRow{Key: k.Key, Available: k.Available, Locked: k.Locked, Spent: k.Spent, UpdatedAt: k.UpdatedAt},
		HeldQty: k.HeldQty, HoldOrders: k.HoldOrders, TaskQty: k.TaskQty, TaskCount: k.TaskCount,
		Flows: s.ledgerFlowRows(flows.Flows), MaxAvailable: models.MaxAmount, SetBad: bad, SetValue: value}
	for _, h := range k.Holds {
		v.Holds = append(v.Holds, views.ResourceHoldRow{OrderNo: h.OrderNo, UserID: h.UserID, Qty: h.Qty,
			CreatedAt: h.CreatedAt, PayDeadline: h.PayDeadline})
	}
	for _, task := range k.Tasks {
		v.Tasks = append(v.Tasks, views.ResourceTaskRow{ID: task.ID, OrderNo: task.OrderNo, Qty: task.Qty,
			Status: string(task.Status), Attempts: task.Attempts, NextAt: task.NextAt})
	}
	if v.Fix, err = s.counterFix(c, t, key, string(t)); err != nil {
		return err
	}
	path := views.ResourceKeyURL(string(t), key)
	if after != 0 {
		v.Pager.FirstURL = path
	}
	if flows.Next != 0 {
		v.Pager.NextURL = views.Query(path, "after", strconv.FormatInt(flows.Next, 10))
	}
	return render(c, status, views.ResourceKeyPage(s.page(c, "nav.resources", "resources"), v))
}

// resourceSet is POST /resources/:type/:key: set the key's available amount
// through Store.SetDeclared, as PUT /api/v1/resources/:type/:key does (an
// ADJUST ledger row and an audit entry). A value that is not a number in
// range shows the key's page again, 400, with what was wrong; nothing
// changes.
func (s *server) resourceSet(c *echo.Context) error {
	t, ok := s.declaredParam(c)
	if !ok {
		return s.resourceNotFound(c, t, "")
	}
	key := c.Param("key")
	ctx := c.Request().Context()
	before, err := s.store.Counter(ctx, t, key)
	if errors.Is(err, models.ErrNotFound) || errors.Is(err, models.ErrInvalid) {
		return s.resourceNotFound(c, t, key)
	}
	if err != nil {
		return err
	}
	raw := strings.TrimSpace(c.FormValue("available"))
	// Digits only: ParseInt would take "+3" for 3.
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || strings.TrimLeft(raw, "0123456789") != "" || n > models.MaxAmount {
		return s.renderResourceKey(c, http.StatusBadRequest, true, raw)
	}
	if _, err := s.store.SetDeclared(ctx, t, key, n, actor(c)); err != nil {
		return err
	}
	p := flashPage(c)
	p.Labels, p.Counters = s.labels, s.counters
	return redirectWithFlash(c, views.ResourceKeyURL(string(t), key), true,
		p.Tf("res.flash.set", p.Code(string(t))+" "+key, p.Num(before.Available), p.Num(n)))
}
