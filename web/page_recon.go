package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

const (
	// reconRunsShown is how many recent runs the page lists.
	reconRunsShown = 10
	// maxDiffNote is the longest ticket note, in characters, as the domain counts it.
	maxDiffNote = 1000
)

// defaultDiffStatuses is what the ticket list shows without a status filter.
var defaultDiffStatuses = []string{models.DiffOpen, models.DiffAcked}

// parseReconFilter reads the ticket list's filter: status (repeatable;
// OPEN and ACKED when absent), resource, sign (1 or -1), owner (mine, me
// being who asks; nobody; a name), age (a bucket of the manual queue),
// sort (age: the oldest first) and after (the keyset: the last ticket id
// shown).
func (s *server) parseReconFilter(q url.Values, me string) (views.ReconFilter, models.DiffQuery, error) {
	var f views.ReconFilter
	dq := models.DiffQuery{Limit: models.DiffPageSize}
	for _, v := range q["status"] {
		if v == "" {
			continue
		}
		st, err := models.ParseDiffStatus(v)
		if err != nil {
			return f, dq, err
		}
		if !slices.Contains(f.Statuses, st) {
			f.Statuses = append(f.Statuses, st)
		}
	}
	if len(f.Statuses) == 0 {
		f.Statuses = append(f.Statuses, defaultDiffStatuses...)
	}
	dq.Statuses = f.Statuses
	if v := q.Get("resource"); v != "" {
		t, err := s.store.ParseType(v)
		if err != nil {
			return f, dq, err
		}
		f.Resource, dq.Resource = v, t
	}
	switch v := q.Get("sign"); v {
	case "":
	case "1", "-1":
		f.Sign = v
		dq.Sign, _ = strconv.Atoi(v)
	default:
		return f, dq, invalidf("sign must be 1 (actual above expected) or -1 (below), not %q", v)
	}
	if v := q.Get("age"); v != "" {
		a, err := models.ParseManualAge(v)
		if err != nil {
			return f, dq, err
		}
		f.Age, dq.Age = v, a
		if len(dq.KeptStatuses()) == 0 {
			return f, dq, invalidf("an age keeps unresolved (OPEN or ACKED) tickets; this filter keeps none")
		}
	}
	switch v := q.Get("sort"); v {
	case "", "new":
	case "age":
		f.Sort, dq.OldestFirst = v, true
	default:
		return f, dq, invalidf("sort must be new or age, not %q", v)
	}
	if v := q.Get("after"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return f, dq, invalidf("after must be a ticket number from this list's next-page link, not %q", v)
		}
		if dq.OldestFirst {
			dq.After = id
		} else {
			dq.Before = id
		}
	}
	f.Owner, dq.Owner, dq.Me = q.Get("owner"), q.Get("owner"), me
	return f, dq, models.ValidOwnerFilter(dq.Owner, me)
}

// reconURL is the reconciliation page with filter f, from after ("" for the
// first page).
func reconURL(f views.ReconFilter, after string) string {
	v := url.Values{}
	for _, st := range f.Statuses {
		v.Add("status", st)
	}
	if f.Resource != "" {
		v.Set("resource", f.Resource)
	}
	if f.Sign != "" {
		v.Set("sign", f.Sign)
	}
	if f.Owner != "" {
		v.Set("owner", f.Owner)
	}
	if f.Age != "" {
		v.Set("age", f.Age)
	}
	if f.Sort != "" {
		v.Set("sort", f.Sort)
	}
	if after != "" {
		v.Set("after", after)
	}
	if len(v) == 0 {
		return "/recon"
	}
	return "/recon?" + v.Encode()
}

// reconRunRow maps a run to its row.
func reconRunRow(r models.ReconRun) views.ReconRunRow {
	row := views.ReconRunRow{ID: r.ID, Trigger: r.Trigger, Actor: r.Actor, Status: r.Status, Error: r.Error,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, Found: r.Found, Opened: r.Opened, Closed: r.Closed}
	for _, c := range r.Coverage {
		cr := views.ReconCoverageRow{Resource: string(c.ResourceType), Compared: c.Compared, NotOffered: !c.HeldOffered}
		for _, why := range models.SkipReasons {
			if n := c.SkippedBy(why); n > 0 {
				cr.Skipped = append(cr.Skipped, views.ReconSkip{Reason: string(why), N: n})
			}
		}
		row.Coverage = append(row.Coverage, cr)
	}
	return row
}

// reconTicketRow maps a ticket to its row; runs names the runs it was seen in.
func (s *server) reconTicketRow(d models.DiffTicket, runs map[int64]models.ReconRun) views.ReconTicketRow {
	r := views.ReconTicketRow{ID: d.ID, Resource: string(d.ResourceType), Key: d.BizKey, KeyURL: s.store.KeyPage(d.ResourceType, d.BizKey),
		Check: d.CheckName, Expected: d.Expected, Actual: d.Actual, Sign: d.Sign, Status: d.Status,
		FirstRun: d.FirstRunID, LastRun: d.LastRunID, AutoClosed: d.AutoClosed, Kind: d.Kind, Streak: d.Streak, Owner: d.Owner}
	if d.Reasons != "" {
		r.Reasons = strings.Split(d.Reasons, ",")
	}
	for _, c := range d.Checks {
		r.Checks = append(r.Checks, views.ReconCheck{Check: c.Check, Expected: c.Expected, Actual: c.Actual})
	}
	for _, no := range strings.Split(d.Orders, ",") {
		if no = strings.TrimSpace(no); no != "" {
			r.Orders = append(r.Orders, no)
		}
	}
	if run, ok := runs[d.FirstRunID]; ok {
		r.FirstAt = run.StartedAt
	}
	if run, ok := runs[d.LastRunID]; ok {
		r.LastAt = run.StartedAt
	}
	if slices.Contains(models.UnresolvedStatuses, d.Status) {
		r.OpenedAt = d.CreatedAt
		r.PastSLA = models.AgeBucket(s.store.Now().Sub(d.CreatedAt), s.store.ManualSLA()) == models.AgePastSLA
	}
	return r
}

// reconRunsOf reads the runs the tickets were first and last seen in that
// known does not have yet, and adds them to it.
func (s *server) reconRunsOf(ctx context.Context, tickets []models.DiffTicket, known map[int64]models.ReconRun) error {
	var ids []int64
	for _, d := range tickets {
		for _, id := range []int64{d.FirstRunID, d.LastRunID} {
			if _, ok := known[id]; !ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	runs, err := s.store.ReconRunsByID(ctx, ids)
	if err != nil {
		return err
	}
	for id, r := range runs {
		known[id] = r
	}
	return nil
}

// reconPage is GET /recon: the last runs, the unresolved tickets by
// resource and sign, and one page of the ticket list.
func (s *server) reconPage(c *echo.Context) error {
	f, dq, err := s.parseReconFilter(c.QueryParams(), actor(c))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	runs, err := s.store.ReconRuns(ctx, reconRunsShown)
	if err != nil {
		return err
	}
	summary, err := s.store.OpenDiffSummary(ctx)
	if err != nil {
		return err
	}
	page, err := s.store.DiffTickets(ctx, dq)
	if err != nil {
		return err
	}
	total, over, err := s.store.CountDiffTickets(ctx, dq, models.OrderCountCap)
	if err != nil {
		return err
	}
	known := make(map[int64]models.ReconRun, len(runs))
	for _, r := range runs {
		known[r.ID] = r
	}
	if err := s.reconRunsOf(ctx, page.Tickets, known); err != nil {
		return err
	}
	v := views.ReconView{Filter: f, StatusOptions: models.DiffStatuses, Tickets: make([]views.ReconTicketRow, 0, len(page.Tickets)),
		Total: total, Over: over, SLA: s.store.ManualSLA()}
	for _, t := range s.store.Types() {
		v.ResourceOptions = append(v.ResourceOptions, string(t))
	}
	if v.OwnerOptions, err = s.operatorNames(ctx); err != nil {
		return err
	}
	for _, r := range runs {
		v.Runs = append(v.Runs, reconRunRow(r))
	}
	if len(runs) > 0 && runs[0].Status == models.ReconRunning {
		v.Running = &v.Runs[0]
	}
	v.Summary = reconSummary(summary)
	for _, d := range page.Tickets {
		v.Tickets = append(v.Tickets, s.reconTicketRow(d, known))
	}
	if page.Next != 0 {
		v.NextURL = reconURL(f, strconv.FormatInt(page.Next, 10))
	}
	if dq.Before != 0 || dq.After != 0 {
		v.FirstURL = reconURL(f, "")
	}
	return render(c, http.StatusOK, views.ReconPage(s.page(c, "recon.title", "recon"), v))
}

// reconSummary folds the counts by resource and sign into one row per
// resource, each count linking to its open tickets.
func reconSummary(sums []models.DiffSummary) []views.ReconSummaryRow {
	var out []views.ReconSummaryRow
	index := map[models.ResourceType]int{}
	for _, d := range sums {
		i, ok := index[d.Resource]
		if !ok {
			i = len(out)
			index[d.Resource] = i
			f := views.ReconFilter{Resource: string(d.Resource)}
			out = append(out, views.ReconSummaryRow{Resource: string(d.Resource),
				PosURL: reconURL(withSign(f, "1"), ""), NegURL: reconURL(withSign(f, "-1"), "")})
		}
		if d.Sign > 0 {
			out[i].Pos, out[i].PosAcked = d.Open, d.Acked
		} else {
			out[i].Neg, out[i].NegAcked = d.Open, d.Acked
		}
	}
	return out
}

func withSign(f views.ReconFilter, sign string) views.ReconFilter {
	f.Sign = sign
	return f
}

// reconRunNow is POST /recon/run: it audits the request, starts a run in
// the background (a big shop takes seconds) and goes back to the page. A
// run still RUNNING, unless stale, is not doubled by a second click.
func (s *server) reconRunNow(c *echo.Context) error {
	ctx := c.Request().Context()
	p := flashPage(c)
	last, err := s.store.LastReconRun(ctx)
	if err != nil {
		return err
	}
	if last != nil && last.Status == models.ReconRunning && s.store.Now().Sub(last.StartedAt) < models.ReconAbandoned {
		return redirectWithFlash(c, "/recon", false, p.Tf("recon.run.busy", last.ID))
	}
	who := actor(c)
	if err := s.store.AuditReconRunNow(ctx, who); err != nil {
		return err
	}
	bg := context.WithoutCancel(ctx)
	go func() {
		start := time.Now()
		run, err := s.store.RunReconciliation(bg, models.ReconByOps, who)
		if err != nil {
			s.log.ErrorContext(bg, "reconciliation run failed", slog.String("trigger", models.ReconByOps),
				slog.String("actor", who), slog.Any("err", err))
			return
		}
		s.log.InfoContext(bg, "reconciliation run", slog.Int64("run_id", run.ID), slog.String("trigger", run.Trigger),
			slog.String("actor", who), slog.Int64("found", run.Found), slog.Int64("opened", run.Opened),
			slog.Int64("closed", run.Closed), slog.Duration("took", time.Since(start)))
	}()
	return redirectWithFlash(c, "/recon", true, p.T("recon.run.started"))
}

// diffIDParam reads a ticket id from the path.
func diffIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a ticket number is a positive whole number, not %q", raw)
	}
	return id, nil
}

// diffNotFound answers a request about a ticket that does not exist with a
// 404 page that says so; any other error goes to the error page.
func (s *server) diffNotFound(c *echo.Context, id int64, err error) error {
	if !errors.Is(err, models.ErrNotFound) {
		return err
	}
	return render(c, http.StatusNotFound, views.ReconDiffNotFound(s.page(c, "recon.notfound.title", "recon"), id))
}

// reconDiff is GET /recon/diffs/:id: one ticket, its history, and the
// acknowledge and resolve forms its status allows.
func (s *server) reconDiff(c *echo.Context) error {
	id, err := diffIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := s.store.GetDiff(ctx, id)
	if err != nil {
		return s.diffNotFound(c, id, err)
	}
	history, err := s.store.DiffHistory(ctx, id)
	if err != nil {
		return err
	}
	runs := map[int64]models.ReconRun{}
	if err := s.reconRunsOf(ctx, []models.DiffTicket{*d}, runs); err != nil {
		return err
	}
	v := views.ReconDiffView{Ticket: s.reconTicketRow(*d, runs), Note: d.Note, AckedBy: d.AckedBy, AckedAt: d.AckedAt,
		ResolvedBy: d.ResolvedBy, ResolvedAt: d.ResolvedAt, MaxNote: maxDiffNote,
		CanAck: d.Status == models.DiffOpen, CanResolve: d.Status == models.DiffOpen || d.Status == models.DiffAcked}
	if d.AutoClosed {
		closer, err := s.store.ReconRunAfter(ctx, d.LastRunID)
		if err != nil {
			return err
		}
		if closer != nil {
			v.ClosedByRun = closer.ID
		}
	}
	v.History = reconHistory(d, history, runs, v.ClosedByRun)
	if v.Owner, err = s.ownerView(c, models.ItemTicket, id, d.Owner, d.OwnedSince, d.Status != models.DiffResolved); err != nil {
		return err
	}
	if v.Notes, err = s.notesView(ctx, models.ItemTicket, id); err != nil {
		return err
	}
	abandoned, err := s.store.AbandonedTasks(ctx, d.ResourceType, d.BizKey)
	if err != nil {
		return err
	}
	for _, a := range abandoned {
		v.Abandoned = append(v.Abandoned, views.ReconAbandoned{TaskID: a.ID, OrderNo: a.OrderNo, Qty: a.Qty, By: a.By, Reason: a.Reason})
	}
	return render(c, http.StatusOK, views.ReconDiffPage(s.page(c, "recon.diff.page", "recon"), v))
}

// reconHistory is a ticket's story in time order: the run that found it,
// the last run that saw it, what people did, and the automatic close.
func reconHistory(d *models.DiffTicket, audit []models.AuditEntry, runs map[int64]models.ReconRun, closedBy int64) []views.ReconEvent {
	at := func(run int64, def time.Time) time.Time {
		if r, ok := runs[run]; ok {
			return r.StartedAt
		}
		return def
	}
	evs := []views.ReconEvent{{At: at(d.FirstRunID, d.CreatedAt), Kind: "found", Run: d.FirstRunID}}
	if d.LastRunID != d.FirstRunID {
		evs = append(evs, views.ReconEvent{At: at(d.LastRunID, d.UpdatedAt), Kind: "seen", Run: d.LastRunID})
	}
	for _, a := range audit {
		kind := strings.TrimPrefix(a.Action, "diff_")
		if kind != "ack" && kind != "resolve" {
			continue
		}
		evs = append(evs, views.ReconEvent{At: a.CreatedAt, Kind: kind, Actor: a.Actor, Note: a.Reason})
	}
	if d.AutoClosed && d.ResolvedAt != nil {
		kind := "auto"
		if d.Kind == models.TicketUnchecked && closedBy != 0 {
			kind = "compared"
		}
		evs = append(evs, views.ReconEvent{At: *d.ResolvedAt, Kind: kind, Run: closedBy})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].At.Before(evs[j].At) })
	return evs
}

// reconAck is POST /recon/diffs/:id/ack: an OPEN ticket becomes ACKED.
func (s *server) reconAck(c *echo.Context) error { return s.reconMove(c, false) }

// reconResolve is POST /recon/diffs/:id/resolve: an OPEN or ACKED ticket
// becomes RESOLVED, with a note saying what was done.
func (s *server) reconResolve(c *echo.Context) error { return s.reconMove(c, true) }

// reconMove parses the form, asks the domain to move the ticket (a
// compare-and-set on its status, audited there), and goes back to the
// ticket with what happened.
func (s *server) reconMove(c *echo.Context, resolve bool) error {
	id, err := diffIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.store.GetDiff(ctx, id); err != nil {
		return s.diffNotFound(c, id, err)
	}
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	note := strings.TrimSpace(c.Request().PostForm.Get("note"))
	p := flashPage(c)
	back := "/recon/diffs/" + strconv.FormatInt(id, 10)
	switch {
	case resolve && note == "":
		return redirectWithFlash(c, back, false, p.T("recon.resolve.nonote"))
	case utf8.RuneCountInString(note) > maxDiffNote:
		return redirectWithFlash(c, back, false, p.Tf("recon.note.long", maxDiffNote))
	}
	who := actor(c)
	done := "recon.ack.done"
	if resolve {
		done = "recon.resolve.done"
		err = s.store.ResolveDiff(ctx, id, who, note)
	} else {
		err = s.store.AckDiff(ctx, id, who, note)
	}
	switch {
	case errors.Is(err, models.ErrDiffState):
		return s.diffStateRefused(c, p, id, back)
	case errors.Is(err, models.ErrNotFound):
		return s.diffNotFound(c, id, err)
	case err != nil:
		return err
	}
	return redirectWithFlash(c, back, true, p.Tf(done, id))
}

// diffStateRefused explains, from the ticket's status now, why the move
// was refused.
func (s *server) diffStateRefused(c *echo.Context, p views.Page, id int64, back string) error {
	d, err := s.store.GetDiff(c.Request().Context(), id)
	if err != nil {
		return s.diffNotFound(c, id, err)
	}
	var msg string
	switch {
	case d.AutoClosed:
		msg = p.Tf("recon.state.auto", id)
	case d.Status == models.DiffResolved:
		msg = p.Tf("recon.state.RESOLVED", id, d.ResolvedBy)
	default:
		msg = p.Tf("recon.state.ACKED", id, d.AckedBy)
	}
	return redirectWithFlash(c, back, false, msg)
}
