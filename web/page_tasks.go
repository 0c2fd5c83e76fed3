package web

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// parseTaskFilter reads the task filter from query or form values: status
// (repeatable), type, class, older (minutes since created), order, key (of
// the type), from and to (created in [from, to); see parseTaskTime for
// local), due, owner (mine, me being who asks; nobody; a name), age (a
// bucket of the manual queue).
func (s *server) parseTaskFilter(q url.Values, local *time.Location, me string) (models.TaskFilter, error) {
	f := models.TaskFilter{Owner: q.Get("owner"), Me: me}
	for _, v := range q["status"] {
		if v == "" {
			continue
		}
		st, err := models.ParseTaskStatus(v)
		if err != nil {
			return f, err
		}
		f.Statuses = append(f.Statuses, st)
	}
	if v := q.Get("type"); v != "" {
		t, err := s.store.ParseType(v)
		if err != nil {
			return f, err
		}
		f.Type = t
	}
	if v := q.Get("class"); v != "" {
		c, err := models.ParseErrorClass(v)
		if err != nil {
			return f, err
		}
		f.Class = c
	}
	if v := strings.TrimSpace(q.Get("older")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return f, invalidf("older must be a whole number of minutes, not %q", v)
		}
		f.OlderMin = n
	}
	f.OrderNo = strings.TrimSpace(q.Get("order"))
	f.Key = strings.TrimSpace(q.Get("key"))
	var err error
	if f.From, err = parseTaskTime("from", q.Get("from"), local); err != nil {
		return f, err
	}
	if f.To, err = parseTaskTime("to", q.Get("to"), local); err != nil {
		return f, err
	}
	switch v := q.Get("due"); v {
	case "", "0":
	case "1", "on", "true":
		f.Due = true
	default:
		return f, invalidf("due must be 1 or absent, not %q", v)
	}
	if v := q.Get("age"); v != "" {
		if f.Age, err = models.ParseManualAge(v); err != nil {
			return f, err
		}
	}
	return f, f.Validate()
}

// The layouts of a datetime-local field's value: a wall clock without a
// zone, to the minute, or to the second when the value has seconds (a
// fraction after them time.Parse takes anyway).
const (
	localTimeLayout  = "2006-01-02T15:04"
	localTimeLayoutS = "2006-01-02T15:04:05"
)

// parseTaskTime reads a window's end; "" is open. RFC 3339 is always
// taken, as the API and every link the server makes write it. With local
// (the dashboard's form, the shop's zone) a datetime-local value is taken
// too, read in local; the API passes nil and keeps to RFC 3339.
func parseTaskTime(name, v string, local *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.UTC(), nil
	}
	if local == nil {
		return time.Time{}, invalidf("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not %.40q", name, v)
	}
	for _, layout := range []string{localTimeLayout, localTimeLayoutS} {
		if t, err := time.ParseInLocation(layout, v, local); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, invalidf("%s must be a date and time such as 2026-01-02T15:04 (shop time, %s) or an RFC 3339 time such as 2026-01-02T15:04:05Z, not %.40q",
		name, local, v)
}

// localTime is t as a datetime-local field shows it, on loc's wall clock:
// to the minute, or to the second when it has seconds.
func localTime(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	if t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(localTimeLayout)
	}
	return t.Format(localTimeLayoutS)
}

// parseTaskQuery reads the task list's filter, sort and page position,
// as the page (local: the shop's zone) and the API (nil) take them.
func (s *server) parseTaskQuery(q url.Values, local *time.Location, me string) (f models.TaskFilter, order taskSort, after models.Cursor, err error) {
	if f, err = s.parseTaskFilter(q, local, me); err != nil {
		return
	}
	if order, err = parseTaskSort(q.Get("sort")); err != nil {
		return
	}
	after, err = models.ParseCursor(q.Get("after"))
	return
}

// taskSort is the task list's order: newest created first (""), oldest
// created first ("old"), or longest in the manual queue first ("age", of
// MANUAL tasks only).
type taskSort string

const (
	sortNew taskSort = ""
	sortOld taskSort = "old"
	sortAge taskSort = "age"
)

// parseTaskSort reads the list order: new (or nothing), old or age.
func parseTaskSort(v string) (taskSort, error) {
	switch v {
	case "", "new":
		return sortNew, nil
	case "old":
		return sortOld, nil
	case "age":
		return sortAge, nil
	}
	return "", invalidf("sort must be new, old or age, not %q", v)
}

// listTasks reads one page of the task list in the order asked for.
func (s *server) listTasks(ctx context.Context, f models.TaskFilter, order taskSort, after models.Cursor, limit int) (models.TaskPage, error) {
	if order == sortAge {
		return s.store.ListManualByAge(ctx, f, after, limit)
	}
	return s.store.ListTasks(ctx, f, after, order == sortOld, limit)
}

// tasksURL is a link to path with the filter and the extra pairs.
func tasksURL(path string, f models.TaskFilter, kv ...string) string {
	v := f.Values()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

// taskFilterForm is the filter as the list's form shows it, its window
// on the shop's (loc's) wall clock.
func taskFilterForm(f models.TaskFilter, order taskSort, loc *time.Location) views.TaskFilterForm {
	form := views.TaskFilterForm{Type: string(f.Type), Class: string(f.Class), Order: f.OrderNo, Key: f.Key, Due: f.Due,
		OldFirst: order == sortOld, ByAge: order == sortAge, Age: string(f.Age), Owner: f.Owner}
	if !f.From.IsZero() {
		form.From = localTime(f.From, loc)
	}
	if !f.To.IsZero() {
		form.To = localTime(f.To, loc)
	}
	for _, st := range f.Statuses {
		form.Statuses = append(form.Statuses, string(st))
	}
	if f.OlderMin > 0 {
		form.Older = strconv.Itoa(f.OlderMin)
	}
	return form
}

// taskRow maps a task to its row; the lease owner shows only while the
// lease runs, since a finished try leaves the name behind.
func (s *server) taskRow(t models.ReleaseTask, now time.Time) views.TaskRow {
	retry := s.store.RetryOf(t)
	r := views.TaskRow{ID: t.ID, OrderNo: t.OrderNo, Type: string(t.ResourceType), Key: t.BizKey, Qty: t.Qty, Op: string(t.Op),
		Status: string(t.Status), Class: string(t.ErrorClass), Failures: t.Failures, Attempts: t.Attempts,
		NextAt: t.NextAt, LastError: t.LastError, LastClass: string(t.LastErrorClass), MaxFailures: retry.Tries,
		Try: retry.Try, Policy: retry.Policy, KeyURL: s.store.KeyPage(t.ResourceType, t.BizKey), Owner: t.Owner}
	if t.LeaseUntil != nil && t.LeaseUntil.After(now) {
		r.LeaseOwner = t.LeaseOwner
	}
	if t.Status == models.TaskManual {
		r.ManualSince = t.WaitingSince()
		r.PastSLA = models.AgeBucket(now.Sub(r.ManualSince), s.store.ManualSLA()) == models.AgePastSLA
	}
	return r
}

// taskRows maps tasks to rows, and reads what each key of a MANUAL
// LOCKED_SHORT counter task holds now (once per key), so its reason can
// say how short it is.
func (s *server) taskRows(ctx context.Context, tasks []models.ReleaseTask) []views.TaskRow {
	now := s.store.Now()
	var short []models.ResourceKey
	for _, t := range tasks {
		if t.Status == models.TaskManual && t.ErrorClass == models.ClassLockedShort {
			short = append(short, models.ResourceKey{Type: t.ResourceType, Key: t.BizKey})
		}
	}
	// Only counters have a held amount; the reason then says less, as it
	// does when the ledgers cannot be read.
	held, err := s.store.CounterLedgersOf(ctx, short)
	if err != nil {
		s.log.WarnContext(ctx, "stopped tasks' ledgers", slog.Any("err", err))
	}
	rows := make([]views.TaskRow, 0, len(tasks))
	for _, t := range tasks {
		r := s.taskRow(t, now)
		if t.Status == models.TaskManual && t.ErrorClass == models.ClassLockedShort {
			if l, ok := held[models.ResourceKey{Type: t.ResourceType, Key: t.BizKey}]; ok {
				r.HeldNow, r.Short = &l.Row.Locked, string(l.Short())
				r.LedgerHeld, r.ExpectedHeld = l.Ledger.Locked, l.Expected
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// tasksList shows release tasks by status, type, class, age and order,
// newest created first, a page at a time.
func (s *server) tasksList(c *echo.Context) error {
	q := c.QueryParams()
	f, order, after, err := s.parseTaskQuery(q, s.loc, actor(c))
	if err != nil {
		return err
	}
	page, err := s.listTasks(c.Request().Context(), f, order, after, models.TaskPageSize)
	if err != nil {
		return err
	}
	sortParam := string(order)
	v := views.TasksView{Filter: taskFilterForm(f, order, s.loc), SLA: s.store.ManualSLA()}
	for _, st := range models.TaskStatuses {
		v.StatusOptions = append(v.StatusOptions, string(st))
	}
	for _, t := range s.store.Types() {
		v.TypeOptions = append(v.TypeOptions, string(t))
	}
	for _, cl := range models.ErrorClasses {
		v.ClassOptions = append(v.ClassOptions, string(cl))
	}
	if v.OwnerOptions, err = s.operatorNames(c.Request().Context()); err != nil {
		return err
	}
	v.Rows = s.taskRows(c.Request().Context(), page.Tasks)
	if v.Total, v.Over, err = s.store.CountTasks(c.Request().Context(), f, models.OrderCountCap); err != nil {
		return err
	}
	if page.Next.ID != 0 {
		v.NextURL = tasksURL("/tasks", f, "sort", sortParam, "after", page.Next.String())
	}
	if after.ID != 0 {
		v.FirstURL = tasksURL("/tasks", f, "sort", sortParam)
	}
	if f.OffersBulkRerun() {
		v.RerunURL = tasksURL("/tasks/rerun", f)
	}
	return render(c, http.StatusOK, views.TasksPage(s.page(c, "tasks.title", "tasks"), v))
}

// taskIDParam reads a task id from the path.
func taskIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a task id is a positive whole number, not %q", raw)
	}
	return id, nil
}

// taskDetail shows one task, why it stopped when it is MANUAL, every
// attempt at it, what people did to it, and the rerun and abandon forms
// its status allows.
func (s *server) taskDetail(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	t, err := s.store.Task(ctx, id)
	if err != nil {
		return err
	}
	history, err := s.store.TaskHistory(ctx, id)
	if err != nil {
		return err
	}
	v := views.TaskDetailView{Task: s.taskRows(ctx, []models.ReleaseTask{t.ReleaseTask})[0], Trigger: string(t.Trigger),
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, DoneAt: t.DoneAt, RerunBy: t.RerunBy, RerunReason: t.RerunReason,
		MaxReason: models.MaxReasonLen}
	if v.Task.LeaseOwner != "" {
		v.LeaseUntil = t.LeaseUntil
	}
	v.NeedsApproval = s.store.NeedsApproval(t.ReleaseTask)
	if t.Status.Rerunnable() && !v.NeedsApproval {
		v.RerunURL = "/orders/" + url.PathEscape(t.OrderNo) + "/resources/" + string(t.ResourceType) + "/rerun"
	}
	open, err := s.store.ListApprovals(ctx, models.ApprovalFilter{Status: models.ApprovalPending, TaskID: id})
	if err != nil {
		return err
	}
	for _, r := range open {
		v.Requests = append(v.Requests, views.ApprovalLink{ID: r.ID, Action: string(r.Action), RequestedBy: r.RequestedBy,
			ExpiresAt: r.ExpiresAt})
	}
	// The reconciliation tickets of the task's key: what ops works on the
	// key is one click away from the task stuck on it.
	tickets, err := s.store.OpenTickets(ctx, []models.ResourceKey{{Type: t.ResourceType, Key: t.BizKey}})
	if err != nil {
		return err
	}
	for _, tk := range tickets {
		v.Tickets = append(v.Tickets, tk.ID)
	}
	if v.Cause, err = s.taskCause(ctx, t.ReleaseTask, c.Request().URL.Path); err != nil {
		return err
	}
	if v.Cause != nil {
		// The abandon form is on this page.
		v.Cause.AbandonURL = ""
	}
	for _, a := range t.AttemptLog {
		v.Attempts = append(v.Attempts, views.TaskAttemptRow{ID: a.ID, Worker: a.Worker, Outcome: a.Outcome,
			Class: string(a.ErrorClass), Error: a.Error, Note: a.Note, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt})
	}
	for _, e := range history {
		ev := views.TaskEvent{At: e.CreatedAt, Actor: e.Actor, Action: e.Action, Outcome: e.Outcome, Reason: e.Reason, Detail: e.Detail}
		if isAssign(e.Action) {
			// An assignment has no reason; its detail says from whom to whom.
			ev.Reason = e.Detail
		}
		v.History = append(v.History, ev)
	}
	// The owner box shows while the task is MANUAL, or when it had an
	// owner, as history.
	if t.Status == models.TaskManual || t.Owner != "" {
		ov, err := s.ownerView(c, models.ItemTask, id, t.Owner, t.OwnedSince, t.Status == models.TaskManual)
		if err != nil {
			return err
		}
		v.Owner = &ov
	}
	if v.Notes, err = s.notesView(ctx, models.ItemTask, id); err != nil {
		return err
	}
	return render(c, http.StatusOK, views.TaskDetailPage(s.page(c, "tasks.title", "tasks"), v))
}

// taskFormReason reads a task form's reason; an empty or too long one goes
// back to the task with a flash, and changes nothing.
func taskFormReason(c *echo.Context, id int64) (reason string, back string, err error) {
	if err := c.Request().ParseForm(); err != nil {
		return "", "", invalidf("could not read the form: %v", err)
	}
	back = "/tasks/" + strconv.FormatInt(id, 10)
	reason, err = formReason(c, back)
	return reason, back, err
}

// formReason reads a parsed form's reason for an operator's action by the
// one rule (models.RerunReason); an empty or too long one goes back to
// back with a flash that says so, and changes nothing.
func formReason(c *echo.Context, back string) (string, error) {
	reason, err := models.RerunReason(c.Request().PostForm.Get("reason"))
	p := flashPage(c)
	switch {
	case errors.Is(err, models.ErrReasonRequired):
		return "", redirectWithFlash(c, back, false, p.T("tasks.one.noreason"))
	case errors.Is(err, models.ErrReasonTooLong):
		return "", redirectWithFlash(c, back, false, p.Tf("tasks.bulk.longreason", models.MaxReasonLen))
	}
	return reason, err
}

// taskRerun is POST /tasks/:id/rerun: one RETRY or MANUAL task made due
// now (a compare-and-set on its status, audited), the worker woken, and
// back to the task with what happened.
func (s *server) taskRerun(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	reason, back, err := taskFormReason(c, id)
	if reason == "" {
		return err
	}
	ctx := c.Request().Context()
	p := flashPage(c)
	err = s.store.RerunTask(ctx, id, actor(c), reason)
	switch {
	case errors.Is(err, models.ErrNothingToRerun):
		return s.taskRefused(c, id, back, "tasks.one.nothing")
	case errors.Is(err, models.ErrNeedsApproval):
		return redirectWithFlash(c, back, false, p.Tf("tasks.one.needs_approval", id))
	case err != nil:
		return err
	}
	s.wakeWorker()
	if s.rerunWait <= 0 {
		return redirectWithFlash(c, back, true, p.Tf("tasks.one.done", id))
	}
	t, err := s.awaitTry(ctx, id, time.Now().Add(s.rerunWait))
	if err != nil {
		return err
	}
	switch t.Status {
	case models.TaskDone:
		return redirectWithFlash(c, back, true, p.Tf("tasks.one.released", id))
	case models.TaskRetry, models.TaskManual:
		return redirectWithFlash(c, back, false, p.Tf("tasks.one.failed", id, p.Code(string(t.Status)),
			p.Class(string(t.ErrorClass)), p.ErrText(t.LastError)))
	}
	return redirectWithFlash(c, back, true, p.Tf("tasks.one.waiting", id, s.rerunWait))
}

// awaitTry reads task id until a try of it has ended (it is no longer
// PENDING) or the deadline has passed, and returns it as last read.
func (s *server) awaitTry(ctx context.Context, id int64, deadline time.Time) (*models.ChainTask, error) {
	for {
		t, err := s.store.Task(ctx, id)
		if err != nil || t.Status != models.TaskPending || !time.Now().Before(deadline) {
			return t, err
		}
		select {
		case <-ctx.Done():
			return t, nil
		case <-time.After(rerunPoll):
		}
	}
}

// rerunPoll is how often awaitTry reads the task.
const rerunPoll = 100 * time.Millisecond

// taskAbandon is POST /tasks/:id/abandon, for admins: a RETRY or MANUAL
// task no worker is trying ends ABANDONED, nothing released, audited.
func (s *server) taskAbandon(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	reason, back, err := taskFormReason(c, id)
	if reason == "" {
		return err
	}
	p := flashPage(c)
	err = s.store.AbandonTask(c.Request().Context(), id, actor(c), reason)
	switch {
	case errors.Is(err, models.ErrTaskNotAbandonable):
		return s.taskRefused(c, id, back, "tasks.abandon.refused")
	case errors.Is(err, models.ErrNeedsApproval):
		return redirectWithFlash(c, back, false, p.Tf("tasks.one.needs_approval", id))
	case err != nil:
		return err
	}
	return redirectWithFlash(c, back, true, p.Tf("tasks.abandon.done", id))
}

// taskRefused goes back to the task saying, from its status now, why the
// action was refused.
func (s *server) taskRefused(c *echo.Context, id int64, back, key string) error {
	t, err := s.store.Task(c.Request().Context(), id)
	if err != nil {
		return err
	}
	p := flashPage(c)
	return redirectWithFlash(c, back, false, p.Tf(key, id, p.Code(string(t.Status))))
}

// bulkRerunRefused answers a bulk rerun whose filter cannot be one with a
// page that says how to make one that can; other errors pass through.
func (s *server) bulkRerunRefused(c *echo.Context, f models.TaskFilter, err error) error {
	key := ""
	switch {
	case errors.Is(err, models.ErrBulkRerunType):
		key = "tasks.bulk.needtype"
	case errors.Is(err, models.ErrBulkRerunStatus):
		key = "tasks.bulk.needstatus"
	default:
		return err
	}
	return render(c, http.StatusBadRequest, views.BulkRerunRefusedPage(s.page(c, "tasks.bulk.title", "tasks"), key, tasksURL("/tasks", f)))
}

// bulkRerunPreview lists the RETRY/MANUAL tasks of one type a rerun with
// this filter would make due, each with a box, and asks for a reason.
func (s *server) bulkRerunPreview(c *echo.Context) error {
	f, err := s.parseTaskFilter(c.QueryParams(), s.loc, actor(c))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	tasks, more, err := s.store.RerunnableTasks(ctx, f)
	if err != nil {
		return s.bulkRerunRefused(c, f, err)
	}
	v := views.BulkRerunView{Type: string(f.Type), Class: string(f.Class), Order: f.OrderNo, Key: f.Key, Due: f.Due,
		Tasks: s.taskRows(ctx, tasks), More: more, BackURL: tasksURL("/tasks", f), MaxReason: models.MaxReasonLen}
	for _, t := range tasks {
		if s.store.NeedsApproval(t) {
			v.NeedApproval++
		}
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = models.RerunnableStatuses
	}
	for _, st := range statuses {
		v.Statuses = append(v.Statuses, string(st))
	}
	if f.OlderMin > 0 {
		v.Older = strconv.Itoa(f.OlderMin)
	}
	list := f
	list.Statuses = statuses
	v.ListURL = tasksURL("/tasks", list)
	for name, vals := range f.Values() {
		for _, val := range vals {
			v.Hidden = append(v.Hidden, views.BulkHidden{Name: name, Value: val})
		}
	}
	sortHidden(v.Hidden)
	return render(c, http.StatusOK, views.BulkRerunPage(s.page(c, "tasks.bulk.title", "tasks"), v))
}

// sortHidden keeps hidden fields in a stable order, so the page renders alike.
func sortHidden(h []views.BulkHidden) {
	sort.SliceStable(h, func(i, j int) bool { return h[i].Name < h[j].Name })
}

// bulkRerunSubmit makes due exactly the ticked tasks that are still RETRY
// or MANUAL, in one transaction, wakes the worker and goes back to the
// list saying what it did and which ticked tasks changed meanwhile.
func (s *server) bulkRerunSubmit(c *echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	form := c.Request().PostForm
	f, err := s.parseTaskFilter(form, s.loc, actor(c))
	if err != nil {
		return err
	}
	if err := f.CheckBulkRerun(); err != nil {
		return s.bulkRerunRefused(c, f, err)
	}
	var ids []int64
	for _, v := range form["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			return invalidf("id must be a task id from the list, not %.40q", v)
		}
		ids = append(ids, id)
	}
	p := flashPage(c)
	preview := tasksURL("/tasks/rerun", f)
	if len(ids) == 0 {
		return redirectWithFlash(c, preview, false, p.T("tasks.picked.none"))
	}
	reason, err := models.RerunReason(form.Get("reason"))
	switch {
	case errors.Is(err, models.ErrReasonRequired):
		return redirectWithFlash(c, preview, false, p.T("tasks.bulk.noreason"))
	case errors.Is(err, models.ErrReasonTooLong):
		return redirectWithFlash(c, preview, false, p.Tf("tasks.bulk.longreason", models.MaxReasonLen))
	}
	r, err := s.store.RerunTasks(c.Request().Context(), f, ids, actor(c), reason)
	switch {
	case errors.Is(err, models.ErrNothingToRerun):
		return redirectWithFlash(c, tasksURL("/tasks", f), false, p.Tf("tasks.picked.nothing", changedList(p, r.Changed)))
	case errors.Is(err, models.ErrNeedsApproval):
		return redirectWithFlash(c, tasksURL("/tasks", f), false, p.Tf("tasks.picked.needs_approval", len(r.NeedApproval),
			taskLinks(r.NeedApproval)))
	case err != nil:
		return s.bulkRerunRefused(c, f, err)
	}
	s.wakeWorker()
	msg := p.Tf("tasks.picked.done", len(r.Made))
	if len(r.Changed) > 0 {
		msg += " " + p.Tf("tasks.picked.changed", len(r.Changed), changedList(p, r.Changed))
	}
	if len(r.NeedApproval) > 0 {
		msg += " " + p.Tf("tasks.picked.needs_approval", len(r.NeedApproval), taskLinks(r.NeedApproval))
	}
	return redirectWithFlash(c, tasksURL("/tasks", f), true, msg)
}

// taskLinks names tasks by the paths of their pages, where each is
// requested: "/tasks/3, /tasks/4".
func taskLinks(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "/tasks/" + strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

// changedList names tasks with their status now: "#3 DONE, #4 PENDING".
func changedList(p views.Page, tasks []models.ReleaseTask) string {
	parts := make([]string, 0, len(tasks))
	for _, t := range tasks {
		parts = append(parts, "#"+strconv.FormatInt(t.ID, 10)+" "+p.Code(string(t.Status)))
	}
	return strings.Join(parts, ", ")
}
