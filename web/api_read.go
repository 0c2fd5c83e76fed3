package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// The JSON read API: what the dashboard's pages show, with their filters,
// read through the same Store queries and checked by the same parsers.
// Every list answers one keyset page, {"items": [...], "next": "..."}: next
// is "" on the last page, and otherwise goes back as ?after= for the next.

// maxListLimit is the most rows one list page answers.
const maxListLimit = 500

// listPage is one page of a list.
type listPage[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next"`
}

// newListPage is the page of items; a nil list answers [].
func newListPage[T any](items []T, next string) listPage[T] {
	if items == nil {
		items = []T{}
	}
	return listPage[T]{Items: items, Next: next}
}

// listLimit reads ?limit, 1 to most; absent, def.
func listLimit(c *echo.Context, def, most int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, invalidf("limit must be a whole number from 1 to %d, not %q", most, v)
	}
	return n, nil
}

// idCursor reads an ?after= that is a row id: the keyset of the lists
// that page by id alone; "" is the first page.
func idCursor(c *echo.Context) (int64, error) {
	v := c.QueryParam("after")
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("after %q is not a cursor this list made; use its next", v)
	}
	return id, nil
}

// idNext is the next of a list paged by id: "" after the last page.
func idNext(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// orderItem is one order of GET /api/v1/orders with what it held, each
// hold with where it stands, as the orders page's held column shows it.
type orderItem struct {
	models.Order
	Holds []models.HeldKey `json:"holds"`
}

// apiOrders is GET /api/v1/orders: the orders page's search (no, user,
// status, release, from, to, held_type, held_key, closed_from, closed_to:
// days in the server's time zone, sort), a page at a time.
func (s *server) apiOrders(c *echo.Context) error {
	_, q, err := parseOrdersQuery(c, s.loc)
	if err != nil {
		return err
	}
	if q.Limit, err = listLimit(c, models.DefaultPageSize, maxListLimit); err != nil {
		return err
	}
	page, err := s.store.ListOrders(c.Request().Context(), q)
	if err != nil {
		return err
	}
	items := make([]orderItem, len(page.Orders))
	for i, o := range page.Orders {
		items[i] = orderItem{Order: o, Holds: page.Holds[o.OrderNo]}
		if items[i].Holds == nil {
			items[i].Holds = []models.HeldKey{}
		}
	}
	return c.JSON(http.StatusOK, newListPage(items, page.Next.String()))
}

// orderChainView is the answer of GET /api/v1/orders/:order_no/chain: the
// chain, what reconciling the keys it holds finds now key-wide (Diffs),
// and, as the page says it, whether the order's holds agree with its own
// ledger rows and the notes about its keys that are not about this order.
type orderChainView struct {
	*models.Chain
	Diffs []models.Diff `json:"diffs"`
	models.ChainRecon
}

// apiOrderChain is GET /api/v1/orders/:order_no/chain, what the order's
// page shows: its chain and its keys' diffs, read in one snapshot.
func (s *server) apiOrderChain(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	ch, diffs, err := s.store.OrderChainReconciled(c.Request().Context(), no)
	if err != nil {
		return err
	}
	ch.Audit = s.auditShown(c, ch.Audit)
	rec, err := s.chainRecon(c.Request().Context(), ch, diffs)
	if err != nil {
		return err
	}
	if diffs == nil {
		diffs = []models.Diff{}
	}
	return c.JSON(http.StatusOK, orderChainView{Chain: ch, Diffs: diffs, ChainRecon: rec})
}

// apiTasks is GET /api/v1/tasks: the task list's filter (status,
// repeatable; type, class, older, order, key, from, to, due, age) and
// sort, a page at a time.
func (s *server) apiTasks(c *echo.Context) error {
	f, order, after, err := s.parseTaskQuery(c.QueryParams(), nil, actor(c))
	if err != nil {
		return err
	}
	limit, err := listLimit(c, models.TaskPageSize, maxListLimit)
	if err != nil {
		return err
	}
	page, err := s.listTasks(c.Request().Context(), f, order, after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newListPage(page.Tasks, page.Next.String()))
}

// apiTask is GET /api/v1/tasks/:id: one task and every attempt at it.
func (s *server) apiTask(c *echo.Context) error {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return invalidf("a task id is a positive whole number, not %q", raw)
	}
	t, err := s.store.Task(c.Request().Context(), id)
	if err != nil {
		return err
	}
	ns, err := s.store.Notes(c.Request().Context(), models.ItemTask, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, taskView{ChainTask: t, Notes: ns})
}

// taskView is one task with its attempts and its notes.
type taskView struct {
	*models.ChainTask
	Notes []models.Note `json:"notes"`
}

// apiLedger is GET /api/v1/ledgers/:type: one page of a registered type's
// ledger rows, newest first, of one key when ?key= names it.
func (s *server) apiLedger(c *echo.Context) error {
	t, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return err
	}
	after, err := idCursor(c)
	if err != nil {
		return err
	}
	limit, err := listLimit(c, ledgerPageSize, maxListLimit)
	if err != nil {
		return err
	}
	page, err := s.store.LedgerFlows(c.Request().Context(), t, ledgerParam(c, "key"), after, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newListPage(page.Flows, idNext(page.Next)))
}

// apiReconTickets is GET /api/v1/recon/tickets: the reconciliation page's
// ticket list (status, repeatable, OPEN and ACKED when absent; resource;
// sign), newest first.
func (s *server) apiReconTickets(c *echo.Context) error {
	_, dq, err := s.parseReconFilter(c.QueryParams(), actor(c))
	if err != nil {
		return err
	}
	if dq.Limit, err = listLimit(c, models.DiffPageSize, maxListLimit); err != nil {
		return err
	}
	page, err := s.store.DiffTickets(c.Request().Context(), dq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newListPage(page.Tickets, idNext(page.Next)))
}

// apiAudit is GET /api/v1/audit: the audit page's filter (actor, action,
// target prefix, from and to as days in the server's time zone), newest
// first, under the page's policy: everything for an admin, the
// operational entries without request metadata for anyone else.
func (s *server) apiAudit(c *echo.Context) error {
	ctx := c.Request().Context()
	whole := isAdmin(c)
	f := models.AuditFilter{Actor: strings.TrimSpace(c.QueryParam("actor")), Action: c.QueryParam("action"),
		Target: strings.TrimSpace(c.QueryParam("target")), Operational: !whole}
	if utf8.RuneCountInString(f.Actor) > maxAuditFilter || utf8.RuneCountInString(f.Target) > maxAuditFilter {
		return invalidf("actor and target must be at most %d characters", maxAuditFilter)
	}
	// The action filter takes only actions the log holds: an allow-list.
	if f.Action != "" {
		actions, err := s.store.AuditActions(ctx, !whole)
		if err != nil {
			return err
		}
		if !slices.Contains(actions, f.Action) {
			return invalidf("action %.64q is not one the audit log holds", f.Action)
		}
	}
	var err error
	if v := c.QueryParam("from"); v != "" {
		if f.From, _, err = ledgerDay("from", v, s.loc); err != nil {
			return err
		}
	}
	if v := c.QueryParam("to"); v != "" {
		if _, f.To, err = ledgerDay("to", v, s.loc); err != nil {
			return err
		}
	}
	if f.Before, err = idCursor(c); err != nil {
		return err
	}
	if f.Limit, err = listLimit(c, models.AuditPageSize, models.MaxAuditPageSize); err != nil {
		return err
	}
	rows, next, err := s.store.AuditLog(ctx, f)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newListPage(s.auditShown(c, rows), idNext(next)))
}

// apiAuditEntry is GET /api/v1/audit/:id: one entry, as the entry's page
// shows it; 403 for a non-admin asking for an admin-only one.
func (s *server) apiAuditEntry(c *echo.Context) error {
	e, err := s.auditEntry(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}
