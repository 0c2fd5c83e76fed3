package web

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// overview shows whether releases are healthy right now: the due backlog
// and its oldest task, MANUAL and RETRY queues, the close→released
// quantiles of the last hour against the target, success and failures by
// type and class over the last hour and day (and week, with range=7d),
// open reconciliation diffs and duplicate releases, with a chart of
// releases over the range (param range: 1h, 24h or 7d). Every number links
// to the list behind it, a window's to the tasks of that window (from and
// to). Its main region is redrawn by static/app.js (data-live).
func (s *server) overview(c *echo.Context) error {
	ctx := c.Request().Context()
	rng, err := models.ParseOverviewRange(c.QueryParam("range"))
	if err != nil {
		return err
	}
	h, err := s.store.ReleaseHealth(ctx, rng)
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
	var skipped int64
	if last != nil {
		diffsAt, skipped = last.StartedAt, last.Skipped()
	}
	approvals, err := s.store.PendingApprovals(ctx)
	if err != nil {
		return err
	}
	failing := []models.TaskStatus{models.TaskRetry, models.TaskManual}
	done := []models.TaskStatus{models.TaskDone}
	v := views.OverviewView{
		Backlog:       h.DueBacklog,
		OldestDue:     h.OldestDue,
		OldestDueBad:  !h.OldestDue.IsZero() && h.OldestDueAge() > models.OldestDueLimit,
		Manual:        h.Manual,
		Retry:         h.Retry,
		Diffs:         diffs,
		DiffsAt:       diffsAt,
		DiffsSkipped:  skipped,
		DayDuplicates: h.LastDay.Duplicates,
		Approvals:     approvals,
		Range:         string(rng),
		LiveEvery:     views.LiveEvery,
		BacklogURL:    tasksURL("/tasks", models.TaskFilter{Due: true}),
		OldestURL:     tasksURL("/tasks", models.TaskFilter{Due: true}, "sort", "old"),
		ManualURL:     tasksURL("/tasks", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskManual}}),
		RetryURL:      tasksURL("/tasks", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskRetry}}),
		DiffsURL:      "/recon",
		Latency: views.OverviewLatency{Count: lat.Count, OverTarget: lat.OverTarget, Target: models.LatencyTarget,
			P50: lat.Quantile(0.5), P95: lat.Quantile(0.95), P99: lat.Quantile(0.99)},
	}
	if rng == models.RangeWeek {
		// A week's read scans the whole rollup (hundreds of ms on a busy
		// shop's SQLite), and its hourly chart changes slowly.
		v.LiveEvery = views.LiveSlow
	}
	for _, r := range []models.OverviewRange{models.RangeHour, models.RangeDay, models.RangeWeek} {
		v.Ranges = append(v.Ranges, views.OverviewRangeLink{ID: string(r), URL: "/?range=" + url.QueryEscape(string(r)), Active: r == rng})
	}
	type window struct {
		id    string
		stats models.AttemptStats
	}
	windows := []window{{"hour", h.LastHour}, {"day", h.LastDay}}
	if rng == models.RangeWeek {
		windows = append(windows, window{"week", h.LastWeek})
	}
	// A window's list holds the tasks of its minutes: from its first
	// minute to the end of the current one (to is exclusive).
	to := h.Now.Truncate(time.Minute).Add(time.Minute)
	inWindow := func(a models.AttemptStats, f models.TaskFilter) string {
		return tasksURL("/tasks", f, "from", a.Since.UTC().Format(time.RFC3339), "to", to.UTC().Format(time.RFC3339))
	}
	classes := map[models.ErrorClass][]int64{}
	var classOrder []models.ErrorClass
	for wi, w := range windows {
		v.Windows = append(v.Windows, views.OverviewWindow{ID: w.id, Success: w.stats.Success, Failures: w.stats.Failures,
			Duplicates: w.stats.Duplicates, SuccessURL: inWindow(w.stats, models.TaskFilter{Statuses: done}),
			FailuresURL: inWindow(w.stats, models.TaskFilter{Statuses: failing})})
		for ti, ts := range w.stats.ByType {
			if wi == 0 || ti >= len(v.Types) {
				v.Types = append(v.Types, views.OverviewTypeRow{Type: string(ts.Type)})
			}
			row := &v.Types[ti]
			row.Cells = append(row.Cells, views.OverviewTypeCell{Window: w.id, Success: ts.Success, Failures: ts.Failures,
				DoneURL:   inWindow(w.stats, models.TaskFilter{Type: ts.Type, Statuses: done}),
				FailedURL: inWindow(w.stats, models.TaskFilter{Type: ts.Type, Statuses: failing})})
		}
		for _, cl := range w.stats.ByClass {
			if _, seen := classes[cl.Class]; !seen {
				classes[cl.Class] = make([]int64, len(windows))
			}
			classes[cl.Class][wi] = cl.Failures
		}
	}
	// Classes in the widest window's order: most failures first.
	for _, cl := range windows[len(windows)-1].stats.ByClass {
		classOrder = append(classOrder, cl.Class)
	}
	for _, cl := range classOrder {
		row := views.OverviewClassRow{Class: string(cl)}
		known := true
		if _, err := models.ParseErrorClass(string(cl)); err != nil {
			known = false // an older version's class: the list of all failures
		}
		for wi, w := range windows {
			f := models.TaskFilter{Class: cl}
			if !known {
				f = models.TaskFilter{Statuses: failing}
			}
			row.Cells = append(row.Cells, views.OverviewClassCell{Window: w.id, N: classes[cl][wi], URL: inWindow(w.stats, f)})
		}
		row.URL = row.Cells[len(row.Cells)-1].URL
		v.Classes = append(v.Classes, row)
	}
	if len(h.Buckets) > 0 {
		v.ChartStart, v.Step = h.Buckets[0].At, rng.Step()
		for _, m := range h.Buckets {
			v.Released = append(v.Released, m.Released)
			v.Failed = append(v.Failed, m.Failed)
		}
	}
	for _, a := range h.RecentDuplicates {
		v.Duplicates = append(v.Duplicates, views.OverviewDuplicate{TaskID: a.TaskID, OrderNo: a.OrderNo,
			Type: string(a.ResourceType), Worker: a.Worker, At: a.FinishedAt})
	}
	if v.Forwarded, err = s.forwardedBanner(ctx, isAdmin(c)); err != nil {
		return err
	}
	if v.Ageing, err = s.overviewAgeing(ctx); err != nil {
		return err
	}
	return render(c, http.StatusOK, views.OverviewPage(s.page(c, "overview.title", "overview"), v))
}

// overviewAgeing is the manual queue by age: MANUAL tasks and unresolved
// tickets in their buckets, each count linking to a list of exactly its
// items, longest waiting first.
func (s *server) overviewAgeing(ctx context.Context) (views.OverviewAgeing, error) {
	m, err := s.store.ManualAgeing(ctx)
	if err != nil {
		return views.OverviewAgeing{}, err
	}
	manual := []models.TaskStatus{models.TaskManual}
	tasks := views.ManualQueueAges{Queue: "tasks", Oldest: m.Tasks.Oldest,
		OldestURL: tasksURL("/tasks", models.TaskFilter{Statuses: manual}, "sort", string(sortAge))}
	tickets := views.ManualQueueAges{Queue: "tickets", Oldest: m.Tickets.Oldest,
		OldestURL: reconURL(views.ReconFilter{Sort: "age"}, "")}
	for _, a := range models.ManualAges {
		tasks.Buckets = append(tasks.Buckets, views.AgeBucketCount{ID: string(a), N: m.Tasks.N[a],
			URL: tasksURL("/tasks", models.TaskFilter{Statuses: manual, Age: a}, "sort", string(sortAge))})
		tickets.Buckets = append(tickets.Buckets, views.AgeBucketCount{ID: string(a), N: m.Tickets.N[a],
			URL: reconURL(views.ReconFilter{Age: string(a), Sort: "age"}, "")})
	}
	return views.OverviewAgeing{SLA: m.SLA, Queues: []views.ManualQueueAges{tasks, tickets}}, nil
}
