package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// overview shows whether releases are healthy right now: the due backlog
// and its oldest task, MANUAL and RETRY queues, the close→released
// quantiles of the last hour against the target, success and failures by
// type and class over the last hour and day, open reconciliation diffs and
// duplicate releases, with a chart of releases per minute. Every number
// links to the list behind it.
func (s *server) overview(c *echo.Context) error {
	ctx := c.Request().Context()
	h, err := s.store.ReleaseHealth(ctx)
	if err != nil {
		return err
	}
	open, err := s.store.OpenDiffCounts(ctx)
	if err != nil {
		return err
	}
	var diffs int64
	for _, n := range open {
		diffs += n
	}
	lat, err := s.store.ReleaseLatency(ctx)
	if err != nil {
		return err
	}
	last, err := s.store.LastReconRun(ctx)
	if err != nil {
		return err
	}
	var diffsAt time.Time
	if last != nil {
		diffsAt = last.StartedAt
	}
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
		DiffsURL:     "/recon",
		FailuresURL:  tasksURL("/tasks", models.TaskFilter{Statuses: failing}),
		Latency: views.OverviewLatency{Count: lat.Count, OverTarget: lat.OverTarget, Target: models.LatencyTarget,
			P50: lat.Quantile(0.5), P95: lat.Quantile(0.95), P99: lat.Quantile(0.99)},
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
