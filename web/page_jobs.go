package web

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v5"

	"unhold/jobs"
	"unhold/models"
	"unhold/views"
)

// Runs shown per job on the Jobs page, and on one job's page of runs.
const (
	jobsRecentRuns = 10
	jobsPageRuns   = models.DefaultPageSize
)

// jobsLinks are the pages where a job's work shows.
var jobsLinks = map[string]string{
	jobs.JobReleaseSweep: "/tasks",
	jobs.JobLeaseRescue:  "/tasks",
	jobs.JobReconcile:    "/recon",
	jobs.JobLedgerReport: "/reports/daily",
}

// jobsPage lists every job with its schedule, next run, lease holder and
// last runs; ?job=NAME shows one job's runs, newest first, a page at a
// time (?before=ID). Without a scheduler in this process it lists the jobs
// the database has leases for, with their recorded runs.
func (s *server) jobsPage(c *echo.Context) error {
	ctx := c.Request().Context()
	q := c.Request().URL.Query()
	one := q.Get("job")
	var before int64
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return invalidf("before must be a run id, not %q", b)
		}
		before = n
	}
	locks, err := s.store.JobLocks(ctx)
	if err != nil {
		return err
	}
	lockOf := map[string]models.JobLock{}
	for _, l := range locks {
		lockOf[l.Name] = l
	}
	var infos []jobs.JobInfo
	if s.sched != nil {
		infos = s.sched.Jobs()
	} else {
		for _, l := range locks {
			infos = append(infos, jobs.JobInfo{Name: l.Name})
		}
	}
	if one != "" {
		i := -1
		for k, in := range infos {
			if in.Name == one {
				i = k
			}
		}
		if i < 0 {
			return fmt.Errorf("%w: no job named %q", models.ErrNotFound, one)
		}
		infos = infos[i : i+1]
	}

	p := s.page(c, "jobs.title", "jobs")
	v := views.JobsView{Running: s.sched != nil, One: one != ""}
	if s.sched != nil {
		v.Instance, v.Zone = s.sched.Instance(), s.sched.Location().String()
	}
	now := s.store.Now()
	for _, in := range infos {
		jv := views.JobView{Name: in.Name, Spec: in.Spec, Local: in.Local, Next: in.Next, LinkURL: jobsLinks[in.Name]}
		if s.sched != nil {
			jv.RunURL = "/jobs/" + url.PathEscape(in.Name) + "/run"
		}
		if l, ok := lockOf[in.Name]; ok && !in.Local {
			switch {
			case l.Running(now) || l.Abandoned(now):
				jv.Holder = &views.JobHolder{Owner: l.Owner, TriggeredBy: l.TriggeredBy, Since: l.TakenAt, Until: l.LeaseUntil, Lost: l.Abandoned(now)}
			case l.Owner != "":
				jv.Last = &views.JobLast{Owner: l.Owner, TriggeredBy: l.TriggeredBy, At: l.TakenAt}
			}
		}
		limit, from := jobsRecentRuns, int64(0)
		if v.One {
			limit, from = jobsPageRuns, before
		} else {
			jv.MoreURL = views.Query("/jobs", "job", in.Name)
		}
		page, err := s.store.JobRuns(ctx, in.Name, from, limit)
		if err != nil {
			return err
		}
		for _, r := range page.Runs {
			jv.Runs = append(jv.Runs, views.JobRunRow{ID: r.ID, Instance: r.Instance, TriggeredBy: r.TriggeredBy,
				Outcome: string(r.Outcome), Summary: r.Summary, Detail: r.Detail, Error: r.Error, Started: r.StartedAt, Took: r.Duration()})
		}
		if v.One {
			if page.Next != 0 {
				v.NextURL = views.Query("/jobs", "job", in.Name, "before", strconv.FormatInt(page.Next, 10))
			}
			if before != 0 {
				v.FirstURL = views.Query("/jobs", "job", in.Name)
			}
		}
		v.Jobs = append(v.Jobs, jv)
	}
	return render(c, 200, views.JobsPage(p, v))
}

// jobRunNow runs a job now, in the background, through the job's lease:
// the scheduler refuses when a run holds the job. It audits the request
// either way and goes back to the Jobs page with what happened.
func (s *server) jobRunNow(c *echo.Context) error {
	name := c.Param("name")
	p := s.page(c, "jobs.title", "jobs")
	if s.sched == nil {
		return redirectWithFlash(c, "/jobs", false, p.T("jobs.flash.norun"))
	}
	err := s.sched.RunNow(c.Request().Context(), name, actor(c))
	var busy *jobs.RunningError
	switch {
	case errors.Is(err, jobs.ErrUnknownJob):
		return fmt.Errorf("%w: no job named %q", models.ErrNotFound, name)
	case errors.As(err, &busy) && busy.Since.IsZero(): // a local job, which keeps no lease row
		return redirectWithFlash(c, "/jobs", false, p.Tf("jobs.flash.busy.here", views.JobTitle(p, name)))
	case errors.As(err, &busy):
		return redirectWithFlash(c, "/jobs", false, p.Tf("jobs.flash.busy", views.JobTitle(p, name), busy.Owner, p.Time(busy.Since)))
	case errors.Is(err, jobs.ErrStopped):
		return redirectWithFlash(c, "/jobs", false, p.T("jobs.flash.stop"))
	case err != nil:
		return err
	}
	return redirectWithFlash(c, "/jobs", true, p.Tf("jobs.flash.start", views.JobTitle(p, name)))
}
