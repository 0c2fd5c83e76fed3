package web

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// overview shows whether releases are healthy right now: the due backlog
// and its oldest task, MANUAL and RETRY queues, success and failures by
// type and class over the last hour and day, open reconciliation diffs and
// duplicate releases, with a chart of releases per minute. Every number
// links to the list behind it.
func (s *server) overview(c *echo.Context) error {
	ctx := c.Request().Context()
	h, err := s.store.ReleaseHealth(ctx)
	if err != nil {
		return err
	}
	diffs, diffsAt := s.diffs.get(ctx, s.store, s.log)
	failing := []models.TaskStatus{models.TaskRetry, models.TaskManual}
	v := views.OverviewView{
		Backlog:      h.DueBacklog,
		OldestDue:    h.OldestDue,
		OldestDueBad: !h.OldestDue.IsZero() && h.OldestDueAge() > models.OldestDueLimit,
		Manual:       h.Manual,
		Retry:        h.Retry,
		Diffs:        diffs,
		DiffsAt:      diffsAt,
		Hour:         overviewWindow("hour", h.LastHour),
		Day:          overviewWindow("day", h.LastDay),
		BacklogURL:   tasksURL("/tasks", models.TaskFilter{Due: true}),
		OldestURL:    tasksURL("/tasks", models.TaskFilter{Due: true}, "sort", "old"),
		ManualURL:    tasksURL("/tasks", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskManual}}),
		RetryURL:     tasksURL("/tasks", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskRetry}}),
		DiffsURL:     "/inventory",
		FailuresURL:  tasksURL("/tasks", models.TaskFilter{Statuses: failing}),
	}
	for i, day := range h.LastDay.ByType {
		row := views.OverviewTypeRow{Type: string(day.Type), DaySuccess: day.Success, DayFailures: day.Failures,
			DoneURL:   tasksURL("/tasks", models.TaskFilter{Type: day.Type, Statuses: []models.TaskStatus{models.TaskDone}}),
			FailedURL: tasksURL("/tasks", models.TaskFilter{Type: day.Type, Statuses: failing})}
		if i < len(h.LastHour.ByType) && h.LastHour.ByType[i].Type == day.Type {
			row.HourSuccess, row.HourFailures = h.LastHour.ByType[i].Success, h.LastHour.ByType[i].Failures
		}
		v.Types = append(v.Types, row)
	}
	hourByClass := map[models.ErrorClass]int64{}
	for _, c := range h.LastHour.ByClass {
		hourByClass[c.Class] = c.Failures
	}
	for _, cl := range h.LastDay.ByClass {
		row := views.OverviewClassRow{Class: string(cl.Class), Hour: hourByClass[cl.Class], Day: cl.Failures}
		if _, err := models.ParseErrorClass(string(cl.Class)); err == nil {
			row.URL = tasksURL("/tasks", models.TaskFilter{Class: cl.Class})
		} else {
			row.URL = v.FailuresURL
		}
		v.Classes = append(v.Classes, row)
	}
	if len(h.Minutes) > 0 {
		v.MinuteStart = h.Minutes[0].At
		for _, m := range h.Minutes {
			v.Released = append(v.Released, m.Released)
			v.Failed = append(v.Failed, m.Failed)
		}
	}
	for _, a := range h.RecentDuplicates {
		v.Duplicates = append(v.Duplicates, views.OverviewDuplicate{TaskID: a.TaskID, OrderNo: a.OrderNo,
			Type: string(a.ResourceType), Worker: a.Worker, At: a.FinishedAt})
	}
	return render(c, http.StatusOK, views.OverviewPage(s.page(c, "overview.title", "overview"), v))
}

func overviewWindow(id string, a models.AttemptStats) views.OverviewWindow {
	return views.OverviewWindow{ID: id, Success: a.Success, Failures: a.Failures, Duplicates: a.Duplicates}
}

// diffCount keeps the count of the last reconciliation, which reads every
// key of every resource (hundreds of ms on a big shop): the overview shows
// the last count at once and refreshes it in the background when it is
// older than diffsFresh, one reconciliation at a time. No page load waits
// for it: before the first count is in, the overview says it is counting.
type diffCount struct {
	mu      sync.Mutex
	n       int64
	at      time.Time // store time the count started; zero before the first
	running chan struct{}
}

const diffsFresh = time.Minute

func (d *diffCount) get(ctx context.Context, st *models.Store, log *slog.Logger) (int64, time.Time) {
	d.mu.Lock()
	now := st.Now()
	if d.running == nil && (d.at.IsZero() || now.Sub(d.at) >= diffsFresh || now.Before(d.at)) {
		done := make(chan struct{})
		d.running = done
		go func() {
			defer close(done)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
			defer cancel()
			diffs, err := st.Reconcile(rctx)
			d.mu.Lock()
			defer d.mu.Unlock()
			d.running = nil
			if err != nil {
				log.Error("count reconciliation diffs", slog.Any("err", err))
				return
			}
			d.n, d.at = int64(len(diffs)), now
		}()
	}
	defer d.mu.Unlock()
	return d.n, d.at
}
