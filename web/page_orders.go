package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// ordersList is GET /orders: search by order number, user, status,
// release state, creation date, what the order held and when it was
// closed, newest or oldest first, one keyset page at a time.
func (s *server) ordersList(c *echo.Context) error {
	p := s.page(c, "orders.title", "orders")
	f, q, err := parseOrdersQuery(c, p.ShopLoc)
	if err != nil {
		return err
	}
	q.Count = models.OrderCountCap
	page, err := s.store.ListOrders(c.Request().Context(), q)
	if err != nil {
		return err
	}
	v := views.OrdersList{Filter: f, Rows: orderRows(page), Total: page.Total, Over: page.Over}
	for _, st := range models.OrderStatuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	for _, st := range models.ReleaseStates {
		v.Releases = append(v.Releases, string(st))
	}
	for _, t := range s.store.Types() {
		v.HeldTypes = append(v.HeldTypes, string(t))
	}
	if page.Next.ID != 0 {
		v.NextURL = f.URL(page.Next.String())
	}
	if q.After.ID != 0 {
		v.FirstURL = f.URL("")
	}
	return render(c, http.StatusOK, views.OrdersPage(p, v))
}

// orderRows maps a page of orders, with their release states and what
// they held, to the list's rows.
func orderRows(page models.OrderPage) []views.OrderRow {
	rows := make([]views.OrderRow, 0, len(page.Orders))
	for _, o := range page.Orders {
		rows = append(rows, views.OrderRow{No: o.OrderNo, UserID: o.UserID, Status: string(o.Status),
			Release: string(page.Release[o.OrderNo]), CloseReason: o.CloseReason, LatePaid: o.LatePaid,
			Created: o.CreatedAt, PayDeadline: o.PayDeadline, Paid: o.PaidAt, Closed: o.ClosedAt,
			Held: heldView(page.Holds[o.OrderNo])})
	}
	return rows
}

// heldView groups an order's holds by type, in the order they come (the
// registry's), each type at the worst of its keys' states.
func heldView(holds []models.HeldKey) []views.OrderHeld {
	var out []views.OrderHeld
	for _, h := range holds {
		st := string(h.State)
		if h.Paid() {
			st = views.HeldPaid
		}
		k := views.OrderHeldKey{Key: h.Key, State: st}
		if n := len(out); n > 0 && out[n-1].Type == string(h.Type) {
			g := &out[n-1]
			g.Keys = append(g.Keys, k)
			if slices.Index(views.HeldStates, st) < slices.Index(views.HeldStates, g.State) {
				g.State = st
			}
			continue
		}
		out = append(out, views.OrderHeld{Type: string(h.Type), State: st, Keys: []views.OrderHeldKey{k}})
	}
	return out
}

// trimPastedInput removes what a copy and paste brings around a number: spaces
// (full-width ones too), tabs, line breaks and zero-width characters.
func trimPastedInput(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff'
	})
}

// parseOrdersQuery reads the list's filters (release: a models.ReleaseState;
// held_type: a registered resource type, and held_key one of its keys); a
// bad one is a 400 that says what it should look like. Dates, created and
// closed, are days in loc, the shop's business zone (UNHOLD_TZ), whatever
// the viewer's zone, both ends included.
func parseOrdersQuery(c *echo.Context, loc *time.Location) (views.OrdersFilter, models.OrderQuery, error) {
	f := views.OrdersFilter{
		No:      trimPastedInput(c.QueryParam("no")),
		User:    trimPastedInput(c.QueryParam("user")),
		Status:  strings.TrimSpace(c.QueryParam("status")),
		Release: strings.TrimSpace(c.QueryParam("release")),
		From:    strings.TrimSpace(c.QueryParam("from")),
		To:      strings.TrimSpace(c.QueryParam("to")),
		Sort:    c.QueryParam("sort"),

		HeldType:   strings.TrimSpace(c.QueryParam("held_type")),
		HeldKey:    trimPastedInput(c.QueryParam("held_key")),
		ClosedFrom: strings.TrimSpace(c.QueryParam("closed_from")),
		ClosedTo:   strings.TrimSpace(c.QueryParam("closed_to")),
	}
	// ListOrders checks the held filters: the type against the registry.
	q := models.OrderQuery{OrderNo: f.No, UserID: f.User, Limit: models.DefaultPageSize,
		HeldType: models.ResourceType(f.HeldType), HeldKey: f.HeldKey}
	if f.No != "" && !models.ValidOrderNo(f.No) {
		return f, q, fmt.Errorf("%w: order number %q: use 1-40 letters, digits, '-' or '_'", models.ErrInvalid, f.No)
	}
	if f.User != "" && !models.ValidKey(f.User) {
		return f, q, fmt.Errorf("%w: user %q: use 1-64 letters, digits or -_.:", models.ErrInvalid, f.User)
	}
	if f.Status != "" {
		st, err := models.ParseOrderStatus(f.Status)
		if err != nil {
			return f, q, err
		}
		q.Status = st
	}
	if f.Release != "" {
		st, err := models.ParseReleaseState(f.Release)
		if err != nil {
			return f, q, err
		}
		q.Release = st
	}
	// day reads a day filter as its first instant and the next day's
	// (models.DayStart: a day may have no midnight).
	day := func(name, v string) (time.Time, time.Time, error) {
		if v == "" {
			return time.Time{}, time.Time{}, nil
		}
		d, err := time.Parse("2006-01-02", v)
		if err != nil {
			return time.Time{}, time.Time{}, fmt.Errorf("%w: %s date %q: use YYYY-MM-DD", models.ErrInvalid, name, v)
		}
		return models.DayStart(d.Year(), d.Month(), d.Day(), loc), models.DayStart(d.Year(), d.Month(), d.Day()+1, loc), nil
	}
	// days reads a pair of day filters as [from, the day after to).
	days := func(fromName, from, toName, to string) (time.Time, time.Time, error) {
		start, _, err := day(fromName, from)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		_, end, err := day(toName, to)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		if !start.IsZero() && !end.IsZero() && !start.Before(end) {
			return time.Time{}, time.Time{}, fmt.Errorf("%w: %s %s is after %s %s", models.ErrInvalid, fromName, from, toName, to)
		}
		return start, end, nil
	}
	var err error
	if q.From, q.To, err = days("from", f.From, "to", f.To); err != nil {
		return f, q, err
	}
	if q.ClosedFrom, q.ClosedTo, err = days("closed_from", f.ClosedFrom, "closed_to", f.ClosedTo); err != nil {
		return f, q, err
	}
	switch f.Sort {
	case "", "new":
		f.Sort = ""
	case "old":
		q.Oldest = true
	default:
		return f, q, fmt.Errorf("%w: sort must be new or old, not %q", models.ErrInvalid, f.Sort)
	}
	if q.After, err = models.ParseCursor(c.QueryParam("after")); err != nil {
		return f, q, err
	}
	return f, q, nil
}

// orderNotFound answers a request about an order that does not exist with a
// 404 page that says so; any other error goes to the error page.
func (s *server) orderNotFound(c *echo.Context, no string, err error) error {
	if !errors.Is(err, models.ErrNotFound) {
		return err
	}
	return render(c, http.StatusNotFound, views.OrderNotFound(s.page(c, "orders.notfound.title", "orders"), no))
}

// orderChain is GET /orders/:order_no: the five questions per resource the
// order held, the Rerun buttons, and one timeline of everything.
func (s *server) orderChain(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	ch, diffs, err := s.store.OrderChainReconciled(ctx, no)
	if err != nil {
		return s.orderNotFound(c, no, err)
	}
	ch.Audit = s.auditShown(c, ch.Audit)
	rec, err := s.chainRecon(ctx, ch, diffs)
	if err != nil {
		return err
	}
	v := s.chainView(ch, rec)
	v.Print = c.QueryParam("print") != ""
	notes, err := s.store.OrderNotes(ctx, no)
	if err != nil {
		return err
	}
	v.Notes = noteRows(notes, true)
	return render(c, http.StatusOK, views.OrderChainPage(s.page(c, "orders.chain.title", "orders"), v))
}

// flowURL is a ledger row's line on its key's page, "" when the key has
// none: a counter ledger's page starting at the row (its pages list rows
// below after, newest first), a coupon's ledger (a coupon has a few rows),
// anchored at the row either way.
func (s *server) flowURL(t models.ResourceType, key string, id int64) string {
	page := s.store.KeyPage(t, key)
	switch {
	case page == "":
		return ""
	case t == models.ResCoupon:
		return page + "#" + views.CouponFlowAnchor(id)
	}
	sep := "?"
	if strings.Contains(page, "?") {
		sep = "&"
	}
	return page + sep + "after=" + strconv.FormatInt(id+1, 10) + "#" + views.FlowAnchor(id)
}

// chainRecon reads the open tickets of the keys the order holds and sorts
// them and the keys' diffs into the order's own disagreements and the
// notes that are not about this order (models.ReconcileChain).
func (s *server) chainRecon(ctx context.Context, ch *models.Chain, diffs []models.Diff) (models.ChainRecon, error) {
	keys := make([]models.ResourceKey, 0, len(ch.Holds))
	for _, h := range ch.Holds {
		keys = append(keys, models.ResourceKey{Type: h.ResourceType, Key: h.BizKey})
	}
	tickets, err := s.store.OpenTickets(ctx, keys)
	if err != nil {
		return models.ChainRecon{}, err
	}
	return models.ReconcileChain(ch, diffs, tickets), nil
}

// chainView maps an order's chain and what reconciling it says to the
// page: a resource does not reconcile only where the order's hold
// disagrees with its own ledger rows; what is wrong with its key otherwise
// is a note, linked to the key's open ticket.
func (s *server) chainView(ch *models.Chain, rec models.ChainRecon) views.ChainView {
	o := ch.Order
	v := views.ChainView{No: o.OrderNo, UserID: o.UserID, Status: string(o.Status), CloseReason: o.CloseReason,
		ChannelTxnID: o.ChannelTxnID, Note: o.Note, LatePaid: o.LatePaid, Created: o.CreatedAt,
		PayDeadline: o.PayDeadline, Paid: o.PaidAt, Closed: o.ClosedAt, Life: lifeView(ch), Events: eventRows(ch.Events)}
	type key struct {
		t models.ResourceType
		k string
	}
	tasks := map[key]*models.ChainTask{}
	rerunCount := map[models.ResourceType]int{}
	for i := range ch.Tasks {
		t := &ch.Tasks[i]
		tasks[key{t.ResourceType, t.BizKey}] = t
		if t.Status.Rerunnable() {
			rerunCount[t.ResourceType]++
		}
	}
	releases := map[key][]views.ChainRelease{}
	for _, f := range ch.Flows {
		if f.Type == models.FlowRelease {
			k := key{f.ResourceType, f.BizKey}
			releases[k] = append(releases[k], views.ChainRelease{FlowID: f.ID, URL: s.flowURL(f.ResourceType, f.BizKey, f.ID),
				Epoch: f.Epoch, Qty: f.Qty, Trigger: string(f.Trigger), Actor: f.Actor, At: f.CreatedAt})
		}
	}
	diffsOf, keyTickets, keyNotes := map[key][]views.ChainDiff{}, map[key][]views.ChainDiff{}, map[key][]views.ChainDiff{}
	for _, n := range rec.Own {
		k := key{n.Resource, n.Key}
		diffsOf[k] = append(diffsOf[k], views.ChainDiff{Check: n.Check, Expected: n.Expected, Actual: n.Actual, Ticket: n.Ticket})
	}
	for _, n := range rec.Keys {
		k, d := key{n.Resource, n.Key}, views.ChainDiff{Check: n.Check, Expected: n.Expected, Actual: n.Actual, Ticket: n.Ticket}
		if n.Live {
			keyNotes[k] = append(keyNotes[k], d)
		} else {
			keyTickets[k] = append(keyTickets[k], d)
		}
	}
	holds := append([]models.Hold{}, ch.Holds...)
	sort.SliceStable(holds, func(i, j int) bool {
		if a, b := s.store.TypeRank(holds[i].ResourceType), s.store.TypeRank(holds[j].ResourceType); a != b {
			return a < b
		}
		return holds[i].BizKey < holds[j].BizKey
	})
	for _, h := range holds {
		k := key{h.ResourceType, h.BizKey}
		r := views.ChainResource{Type: string(h.ResourceType), Key: h.BizKey, KeyURL: s.store.KeyPage(h.ResourceType, h.BizKey),
			Held: h.Qty, Released: h.Released,
			Deducted: h.Deducted, Releases: releases[k], Diffs: diffsOf[k],
			KeyTickets: keyTickets[k], KeyNotes: keyNotes[k]}
		if t := tasks[k]; t != nil {
			r.Task, r.TaskOp, r.TaskID, r.TaskClass, r.TaskError = string(t.Status), string(t.Op), t.ID, string(t.ErrorClass), t.LastError
			r.RerunBy, r.RerunReason = t.RerunBy, t.RerunReason
			r.TaskLastClass, r.TaskFailures, r.TaskMaxFailures = string(t.LastErrorClass), t.Failures, t.Retry.Tries
			for _, a := range t.AttemptLog {
				if a.Outcome == models.OutcomeDuplicate {
					r.Duplicates++
				}
			}
		}
		v.Resources = append(v.Resources, r)
	}
	for _, t := range s.store.Types() {
		if n := rerunCount[t]; n > 0 {
			v.Reruns = append(v.Reruns, views.ChainRerun{Type: string(t), Tasks: n})
		}
	}
	v.Timeline = chainTimeline(ch, func(t models.ResourceType) bool {
		r := s.store.Resource(t)
		return r != nil && r.Kind() == models.KindRemote
	})
	for i := range v.Timeline {
		e := &v.Timeline[i]
		if e.Key != "" {
			e.KeyURL = s.store.KeyPage(models.ResourceType(e.Resource), e.Key)
		}
		if e.Kind == views.EventFlow {
			e.RefURL = s.flowURL(models.ResourceType(e.Resource), e.Key, e.ID)
		}
	}
	return v
}

// chainTimeline merges the order's status changes, every ledger row, every
// task attempt and every audit entry into one list in time order; at the
// same instant a status change comes first, then ledger rows, attempts and
// audit entries, each in id order. A ledger row of a type that remote
// says is kept by another service shows what the service answered.
func chainTimeline(ch *models.Chain, remote func(models.ResourceType) bool) []views.ChainEvent {
	o := ch.Order
	type ranked struct {
		e    views.ChainEvent
		rank int
		id   int64
	}
	var evs []ranked
	add := func(rank int, id int64, e views.ChainEvent) { evs = append(evs, ranked{e, rank, id}) }
	add(0, 0, views.ChainEvent{At: o.CreatedAt, Kind: views.EventStatus, Code: "created", Actor: "user:" + o.UserID})
	if o.ClosedAt != nil {
		add(0, 1, views.ChainEvent{At: *o.ClosedAt, Kind: views.EventStatus, Code: "closed", Trigger: o.CloseReason})
	}
	if o.PaidAt != nil {
		code := "paid"
		switch {
		case o.Status == models.OrderRefundPending:
			code = "refund_pending"
		case o.LatePaid:
			code = "late_paid"
		}
		e := views.ChainEvent{At: *o.PaidAt, Kind: views.EventStatus, Code: code, Detail: o.ChannelTxnID, Actor: "channel"}
		if code == "refund_pending" {
			e.Note = o.Note
		}
		add(0, 2, e)
	}
	for _, f := range ch.Flows {
		counter, answer := f.StatusBefore == "" && f.StatusAfter == "", ""
		if remote(f.ResourceType) {
			counter, answer = false, f.StatusAfter
		}
		add(1, f.ID, views.ChainEvent{At: f.CreatedAt, Kind: views.EventFlow, Code: string(f.Type), ID: f.ID,
			Resource: string(f.ResourceType), Key: f.BizKey, Ref: fmt.Sprintf("#%d", f.ID), Trigger: string(f.Trigger),
			Actor: f.Actor, Qty: f.Qty, Epoch: f.Epoch, Counter: counter, Answer: answer,
			AvailBefore: f.AvailBefore, AvailAfter: f.AvailAfter, HeldBefore: f.HeldBefore, HeldAfter: f.HeldAfter,
			SpentBefore: f.SpentBefore, SpentAfter: f.SpentAfter, StatusBefore: f.StatusBefore, StatusAfter: f.StatusAfter})
	}
	for _, t := range ch.Tasks {
		for _, a := range t.AttemptLog {
			add(2, a.ID, views.ChainEvent{At: a.FinishedAt, Kind: views.EventAttempt, Code: a.Outcome,
				Resource: string(a.ResourceType), Key: t.BizKey, Ref: fmt.Sprintf("#%d", a.ID), RefURL: views.TaskURL(t.ID),
				Actor: "worker:" + a.Worker,
				Class: string(a.ErrorClass), Error: a.Error, Note: a.Note, Op: string(t.Op)})
		}
	}
	for _, a := range ch.Audit {
		res := a.Target
		if i := strings.LastIndex(res, "/"); i >= 0 {
			res = res[i+1:]
		}
		add(3, a.ID, views.ChainEvent{At: a.CreatedAt, Kind: views.EventAudit, Code: a.Action, Resource: res,
			Ref: fmt.Sprintf("#%d", a.ID), Actor: a.Actor, Role: a.Role, IP: a.IP, Outcome: a.Outcome, Reason: a.Reason, Detail: a.Detail})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if !a.e.At.Equal(b.e.At) {
			return a.e.At.Before(b.e.At)
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		return a.id < b.id
	})
	out := make([]views.ChainEvent, len(evs))
	for i, r := range evs {
		out[i] = r.e
	}
	return out
}

// rerunTarget reads the order number and resource type of a rerun route.
func (s *server) rerunTarget(c *echo.Context) (string, models.ResourceType, error) {
	no, err := orderNoParam(c)
	if err != nil {
		return "", "", err
	}
	typ, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return "", "", err
	}
	return no, typ, nil
}

// rerunPreview is GET /orders/:order_no/resources/:type/rerun: before
// anything changes, what the rerun would make due and whether the ledger
// would stop it; 409 when there is nothing to rerun.
func (s *server) rerunPreview(c *echo.Context) error {
	no, typ, err := s.rerunTarget(c)
	if err != nil {
		return err
	}
	ch, err := s.store.OrderChain(c.Request().Context(), no)
	if err != nil {
		return s.orderNotFound(c, no, err)
	}
	v := views.RerunPreview{No: no, Type: string(typ), MaxLen: models.MaxReasonLen}
	for _, rc := range ch.Rerunnable(typ) {
		t := rc.Task
		rt := views.RerunTask{ID: t.ID, Key: t.BizKey, Qty: t.Qty, Status: string(t.Status), Class: string(t.ErrorClass),
			LastErrorClass: string(t.LastErrorClass), LastError: t.LastError, Attempts: t.Attempts, Failures: t.Failures,
			MaxFailures: s.store.RetryOf(t).Tries, NextAt: t.NextAt, RerunBy: t.RerunBy, RerunReason: t.RerunReason}
		if f := rc.Released; f != nil {
			rt.Ledger = &views.ChainRelease{FlowID: f.ID, Epoch: f.Epoch, Qty: f.Qty, Trigger: string(f.Trigger),
				Actor: f.Actor, At: f.CreatedAt}
		} else if rt.Cause, err = s.taskCause(c.Request().Context(), t, c.Request().URL.Path); err != nil {
			return err
		}
		v.Tasks = append(v.Tasks, rt)
		v.NeedApproval = v.NeedApproval || s.store.NeedsApproval(t)
	}
	status := http.StatusOK
	if len(v.Tasks) == 0 {
		status = http.StatusConflict
	}
	return render(c, status, views.RerunPreviewPage(s.page(c, "orders.rerun.title", "orders"), v))
}

// maxRerunFormBytes bounds a dashboard form body; a reason is at most 500 characters.
const maxRerunFormBytes = 64 << 10

// rerunSubmit is POST /orders/:order_no/resources/:type/rerun. It only
// parses and checks the input and maps the answer: models.Rerun does the
// compare-and-set, so a double click or a race finds nothing to rerun.
func (s *server) rerunSubmit(c *echo.Context) error {
	no, typ, err := s.rerunTarget(c)
	if err != nil {
		return err
	}
	r := c.Request()
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxRerunFormBytes)
	ctx := r.Context()
	t := views.Page{Lang: viewerLang(c)}
	chain := views.OrderURL(no)
	reason, err := models.RerunReason(c.FormValue("reason"))
	if err != nil {
		if _, err := s.store.FindOrder(ctx, no); err != nil {
			return s.orderNotFound(c, no, err)
		}
		msg := t.T("orders.flash.reason_required")
		if errors.Is(err, models.ErrReasonTooLong) {
			msg = t.Tf("orders.flash.reason_long", models.MaxReasonLen)
		}
		return redirectWithFlash(c, views.RerunURL(no, string(typ)), false, msg)
	}
	// The tasks the rerun will make due, to wait for their tries after.
	var ids []int64
	if ch, err := s.store.OrderChain(ctx, no); err == nil {
		for _, rc := range ch.Rerunnable(typ) {
			ids = append(ids, rc.Task.ID)
		}
	}
	n, err := s.store.Rerun(ctx, no, typ, actor(c), reason)
	switch {
	case errors.Is(err, models.ErrNothingToRerun):
		return redirectWithFlash(c, chain, false, t.Tf("orders.flash.nothing", t.Code(string(typ))))
	case errors.Is(err, models.ErrNeedsApproval):
		return redirectWithFlash(c, chain, false, t.Tf("orders.flash.needs_approval", t.Code(string(typ)), taskLinks(ids)))
	case err != nil:
		return s.orderNotFound(c, no, err)
	}
	s.wakeWorker()
	if s.rerunWait <= 0 || len(ids) == 0 {
		return redirectWithFlash(c, chain, true, t.Tf("orders.flash.done", n))
	}
	return s.rerunOutcome(c, chain, ids)
}

// rerunOutcome waits, up to rerunWait in all, for a try of each task a
// rerun made due, and goes back to the chain saying how they ended: all
// released, which failed again and why, or which no worker finished yet.
func (s *server) rerunOutcome(c *echo.Context, chain string, ids []int64) error {
	ctx := c.Request().Context()
	p := flashPage(c)
	deadline := time.Now().Add(s.rerunWait)
	var failed, waiting []string
	for _, id := range ids {
		task, err := s.awaitTry(ctx, id, deadline)
		if err != nil {
			return err
		}
		switch task.Status {
		case models.TaskDone, models.TaskSuperseded, models.TaskAbandoned:
		case models.TaskRetry, models.TaskManual:
			failed = append(failed, p.Tf("tasks.one.failed", id, p.Code(string(task.Status)),
				p.Class(string(task.ErrorClass)), p.ErrText(task.LastError)))
		default:
			waiting = append(waiting, p.Tf("tasks.one.waiting", id, s.rerunWait))
		}
	}
	switch {
	case len(failed) > 0:
		return redirectWithFlash(c, chain, false, strings.Join(append(failed, waiting...), " "))
	case len(waiting) > 0:
		return redirectWithFlash(c, chain, true, strings.Join(waiting, " "))
	}
	return redirectWithFlash(c, chain, true, p.Tf("orders.flash.released", len(ids)))
}

// viewerLang is the viewer's language, for a message made before a redirect.
func viewerLang(c *echo.Context) views.Lang {
	if ck, err := readCookie(c, cookieLang); err == nil {
		return views.ParseLang(ck.Value)
	}
	return views.LangZH
}
