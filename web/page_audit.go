package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// maxAuditFilter bounds a free-text filter of the audit page.
const maxAuditFilter = 128

// auditShown is what the request's principal may see of entries: all of
// them for an admin; for anyone else the operational ones, without
// request metadata (see models.Store.AuditOperational). The audit pages,
// the API and the order chain all read through it.
func (s *server) auditShown(c *echo.Context, entries []models.AuditEntry) []models.AuditEntry {
	if isAdmin(c) {
		return entries
	}
	out := make([]models.AuditEntry, 0, len(entries))
	for _, e := range entries {
		if s.store.AuditOperational(e) {
			out = append(out, e.Operational())
		}
	}
	return out
}

// auditEntry reads the entry id as the request's principal may see it: a
// non-admin asking for an admin-only entry is refused 403, and the refusal
// audited.
func (s *server) auditEntry(c *echo.Context) (models.AuditEntry, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return models.AuditEntry{}, invalidf("an audit entry id is a positive whole number, not %q", raw)
	}
	e, err := s.store.AuditEntryByID(c.Request().Context(), id)
	if err != nil {
		return models.AuditEntry{}, err
	}
	if shown := s.auditShown(c, []models.AuditEntry{e}); len(shown) == 1 {
		return shown[0], nil
	}
	return models.AuditEntry{}, s.deny(c, principalOf(c), gateAdmin)
}

// auditPage is GET /audit: who did what, filterable by actor, action,
// target and day; newest first, keyset by id. A non-admin sees the
// operational entries only, and the page says so.
func (s *server) auditPage(c *echo.Context) error {
	p := s.page(c, "audit.title", "audit")
	ctx := c.Request().Context()
	whole := isAdmin(c)
	v := views.AuditView{Actor: strings.TrimSpace(c.QueryParam("actor")), Action: c.QueryParam("action"),
		Target: strings.TrimSpace(c.QueryParam("target")), From: c.QueryParam("from"), To: c.QueryParam("to"), Operational: !whole}
	actions, err := s.store.AuditActions(ctx, !whole)
	if err != nil {
		return err
	}
	v.Actions = actions
	f := models.AuditFilter{Actor: v.Actor, Target: v.Target, Operational: !whole, Limit: 50}
	status := http.StatusOK
	bad := func(key string) {
		if v.Error == "" {
			v.Error, status = p.T(key), http.StatusBadRequest
		}
	}
	if utf8.RuneCountInString(v.Actor) > maxAuditFilter || utf8.RuneCountInString(v.Target) > maxAuditFilter {
		bad("audit.bad.long")
	}
	// The action filter takes only actions the log holds: an allow-list.
	if v.Action != "" {
		if slices.Contains(actions, v.Action) {
			f.Action = v.Action
		} else {
			bad("audit.bad.action")
		}
	}
	// From the start of "from" to the end of "to", the last day shown,
	// both the shop's days.
	if v.From != "" {
		if f.From, _, err = ledgerDay("from", v.From, p.ShopLoc); err != nil {
			bad("audit.bad.date")
		}
	}
	if v.To != "" {
		if _, f.To, err = ledgerDay("to", v.To, p.ShopLoc); err != nil {
			bad("audit.bad.date")
		}
	}
	if raw := c.QueryParam("before"); raw != "" {
		if f.Before, err = strconv.ParseInt(raw, 10, 64); err != nil || f.Before <= 0 {
			bad("audit.bad.cursor")
			f.Before = 0
		}
	}
	if v.Error != "" {
		return render(c, status, views.AuditPage(p, v))
	}
	rows, next, err := s.store.AuditLog(ctx, f)
	if err != nil {
		return err
	}
	if v.Total, v.Over, err = s.store.CountAudit(ctx, f, models.OrderCountCap); err != nil {
		return err
	}
	for _, e := range s.auditShown(c, rows) {
		v.Rows = append(v.Rows, s.auditRow(e, p))
	}
	filter := []string{"actor", v.Actor, "action", v.Action, "target", v.Target, "from", v.From, "to", v.To}
	if f.Before != 0 {
		v.FirstURL = views.Query("/audit", filter...)
	}
	if next != 0 {
		v.NextURL = views.Query("/audit", append(filter, "before", strconv.FormatInt(next, 10))...)
	}
	return render(c, status, views.AuditPage(p, v))
}

// auditRow is one entry as the pages show it.
func (s *server) auditRow(e models.AuditEntry, p views.Page) views.AuditRow {
	return views.AuditRow{ID: e.ID, At: e.CreatedAt, Actor: e.Actor, Role: e.Role, Action: e.Action,
		Target: e.Target, TargetURL: s.auditTargetURL(e.Target, p.Can("admin")), Reason: e.Reason, Outcome: e.Outcome, Detail: e.Detail,
		IP: e.IP, RequestID: e.RequestID, UserAgent: e.UserAgent}
}

// auditEntryPage is GET /audit/{id}: one entry, whole for an admin; an
// operational one, without request metadata, for anyone else.
func (s *server) auditEntryPage(c *echo.Context) error {
	p := s.page(c, "audit.entry.title", "audit")
	e, err := s.auditEntry(c)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, views.AuditEntryPage(p, s.auditRow(e, p)))
}

// auditTargetURL links an audit target to its page, when it has one that
// the viewer may open.
func (s *server) auditTargetURL(target string, admin bool) string {
	kind, rest, _ := strings.Cut(target, ":")
	switch kind {
	case "order":
		no, _, _ := strings.Cut(rest, "/")
		if models.ValidOrderNo(no) {
			return views.OrderURL(no)
		}
	case "task":
		if _, err := strconv.ParseInt(rest, 10, 64); err == nil {
			return "/tasks/" + rest
		}
	case "diff", "ticket":
		if _, err := strconv.ParseInt(rest, 10, 64); err == nil {
			return "/recon/diffs/" + rest
		}
	case "tasks":
		// tasks:<type>?<the rest of the filter>, as BulkRerunTarget writes it.
		typ, query, _ := strings.Cut(rest, "?")
		if v, err := url.ParseQuery(query); err == nil {
			v.Set("type", typ)
			if f, err := s.parseTaskFilter(v, nil, ""); err == nil {
				return tasksURL("/tasks", f)
			}
		}
	case "sku":
		return "/inventory/" + url.PathEscape(rest)
	case "coupon":
		if _, err := strconv.ParseInt(rest, 10, 64); err == nil {
			return views.Query("/coupons", "coupon", rest)
		}
	case "account":
		return views.Query("/balances", "user", rest)
	case "job":
		return "/jobs#job-" + url.PathEscape(rest)
	case "user":
		if admin {
			return "/admin/users"
		}
	case "token":
		if admin {
			return "/admin/tokens"
		}
	case "webhook":
		if id, err := strconv.ParseInt(rest, 10, 64); err == nil && admin {
			return views.WebhookURL(id)
		}
	default:
		// A declared counter's or a remote type's key: "<type>:<key>",
		// with a page of its own.
		if _, remote := s.store.RemoteService(models.ResourceType(kind)); (remote || slices.Contains(s.counters, kind)) && rest != "" {
			return "/resources/" + url.PathEscape(kind) + "/" + url.PathEscape(rest)
		}
	}
	return ""
}
