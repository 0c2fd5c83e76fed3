package web

import (
	"errors"
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
// (repeatable), type, class, older (minutes since created), order, due.
func (s *server) parseTaskFilter(q url.Values) (models.TaskFilter, error) {
	var f models.TaskFilter
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
	switch v := q.Get("due"); v {
	case "", "0":
	case "1", "on", "true":
		f.Due = true
	default:
		return f, invalidf("due must be 1 or absent, not %q", v)
	}
	return f, f.Validate()
}

// parseTaskQuery reads the task list's filter, sort and page position,
// as the page and the API take them.
func (s *server) parseTaskQuery(q url.Values) (f models.TaskFilter, oldestFirst bool, after models.Cursor, err error) {
	if f, err = s.parseTaskFilter(q); err != nil {
		return
	}
	if oldestFirst, err = parseTaskSort(q.Get("sort")); err != nil {
		return
	}
	after, err = models.ParseCursor(q.Get("after"))
	return
}

// parseTaskSort reads the list order: newest created first, or "old".
func parseTaskSort(v string) (oldestFirst bool, err error) {
	switch v {
	case "", "new":
		return false, nil
	case "old":
		return true, nil
	}
	return false, invalidf("sort must be new or old, not %q", v)
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

func taskFilterForm(f models.TaskFilter, oldestFirst bool) views.TaskFilterForm {
	form := views.TaskFilterForm{Type: string(f.Type), Class: string(f.Class), Order: f.OrderNo, Due: f.Due, OldFirst: oldestFirst}
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
func taskRow(t models.ReleaseTask, now time.Time) views.TaskRow {
	r := views.TaskRow{ID: t.ID, OrderNo: t.OrderNo, Type: string(t.ResourceType), Key: t.BizKey, Qty: t.Qty, Op: string(t.Op),
		Status: string(t.Status), Class: string(t.ErrorClass), Failures: t.Failures, Attempts: t.Attempts,
		NextAt: t.NextAt, LastError: t.LastError, LastClass: string(t.LastErrorClass), MaxFailures: models.MaxFailures}
	if t.LeaseUntil != nil && t.LeaseUntil.After(now) {
		r.LeaseOwner = t.LeaseOwner
	}
	return r
}

// tasksList shows release tasks by status, type, class, age and order,
// newest created first, a page at a time.
func (s *server) tasksList(c *echo.Context) error {
	q := c.QueryParams()
	f, oldestFirst, after, err := s.parseTaskQuery(q)
	if err != nil {
		return err
	}
	page, err := s.store.ListTasks(c.Request().Context(), f, after, oldestFirst, models.TaskPageSize)
	if err != nil {
		return err
	}
	sortParam := ""
	if oldestFirst {
		sortParam = "old"
	}
	v := views.TasksView{Filter: taskFilterForm(f, oldestFirst), Rows: make([]views.TaskRow, 0, len(page.Tasks))}
	for _, st := range models.TaskStatuses {
		v.StatusOptions = append(v.StatusOptions, string(st))
	}
	for _, t := range s.store.Types() {
		v.TypeOptions = append(v.TypeOptions, string(t))
	}
	for _, cl := range models.ErrorClasses {
		v.ClassOptions = append(v.ClassOptions, string(cl))
	}
	for _, t := range page.Tasks {
		v.Rows = append(v.Rows, taskRow(t, s.store.Now()))
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

// taskDetail shows one task and every attempt at it.
func (s *server) taskDetail(c *echo.Context) error {
	raw := c.Param("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return invalidf("a task id is a positive whole number, not %q", raw)
	}
	t, err := s.store.Task(c.Request().Context(), id)
	if err != nil {
		return err
	}
	v := views.TaskDetailView{Task: taskRow(t.ReleaseTask, s.store.Now()), Trigger: string(t.Trigger), CreatedAt: t.CreatedAt,
		UpdatedAt: t.UpdatedAt, DoneAt: t.DoneAt, RerunBy: t.RerunBy, RerunReason: t.RerunReason}
	if v.Task.LeaseOwner != "" {
		v.LeaseUntil = t.LeaseUntil
	}
	if t.Status.Rerunnable() {
		v.RerunURL = "/orders/" + url.PathEscape(t.OrderNo) + "/resources/" + string(t.ResourceType) + "/rerun"
	}
	for _, a := range t.AttemptLog {
		v.Attempts = append(v.Attempts, views.TaskAttemptRow{ID: a.ID, Worker: a.Worker, Outcome: a.Outcome,
			Class: string(a.ErrorClass), Error: a.Error, Note: a.Note, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt})
	}
	return render(c, http.StatusOK, views.TaskDetailPage(s.page(c, "tasks.title", "tasks"), v))
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

// bulkRerunPreview says how many RETRY/MANUAL tasks of one type a rerun
// with this filter would make due, and asks for a reason.
func (s *server) bulkRerunPreview(c *echo.Context) error {
	f, err := s.parseTaskFilter(c.QueryParams())
	if err != nil {
		return err
	}
	return s.renderBulkRerun(c, http.StatusOK, f, nil)
}

// renderBulkRerun renders the bulk rerun's confirmation with the count of
// now; confirmed, when not nil, is the count a refused submit had
// confirmed, which the page says changed.
func (s *server) renderBulkRerun(c *echo.Context, status int, f models.TaskFilter, confirmed *int64) error {
	n, err := s.store.CountRerunnable(c.Request().Context(), f)
	if err != nil {
		return s.bulkRerunRefused(c, f, err)
	}
	v := views.BulkRerunView{Type: string(f.Type), Class: string(f.Class), Order: f.OrderNo, Due: f.Due, Count: n,
		BackURL: tasksURL("/tasks", f), MaxReason: models.MaxReasonLen}
	if confirmed != nil {
		v.Changed, v.Confirmed = true, *confirmed
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
	return render(c, status, views.BulkRerunPage(s.page(c, "tasks.bulk.title", "tasks"), v))
}

// sortHidden keeps hidden fields in a stable order, so the page renders alike.
func sortHidden(h []views.BulkHidden) {
	sort.SliceStable(h, func(i, j int) bool { return h[i].Name < h[j].Name })
}

// bulkRerunSubmit makes the confirmed set of tasks due in one transaction,
// wakes the worker and goes back to the list with what it did.
func (s *server) bulkRerunSubmit(c *echo.Context) error {
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	form := c.Request().PostForm
	f, err := s.parseTaskFilter(form)
	if err != nil {
		return err
	}
	expected, err := strconv.ParseInt(form.Get("expected"), 10, 64)
	if err != nil || expected < 0 {
		return invalidf("expected must be the count the preview showed, not %q", form.Get("expected"))
	}
	p := flashPage(c)
	reason, err := models.RerunReason(form.Get("reason"))
	switch {
	case errors.Is(err, models.ErrReasonRequired):
		return redirectWithFlash(c, tasksURL("/tasks/rerun", f), false, p.T("tasks.bulk.noreason"))
	case errors.Is(err, models.ErrReasonTooLong):
		return redirectWithFlash(c, tasksURL("/tasks/rerun", f), false, p.Tf("tasks.bulk.longreason", models.MaxReasonLen))
	}
	n, err := s.store.BulkRerun(c.Request().Context(), f, actor(c), reason, expected)
	switch {
	case errors.Is(err, models.ErrNothingToRerun):
		return redirectWithFlash(c, tasksURL("/tasks", f), false, p.T("tasks.bulk.nothing"))
	case errors.Is(err, models.ErrCountChanged):
		return s.renderBulkRerun(c, http.StatusConflict, f, &expected)
	case err != nil:
		return s.bulkRerunRefused(c, f, err)
	}
	s.wakeWorker()
	return redirectWithFlash(c, tasksURL("/tasks", f), true, p.Tf("tasks.bulk.done", n))
}
