package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type rerunBody struct {
	Reason string `json:"reason"`
}

type rerunView struct {
	Tasks int64 `json:"tasks"`
}

// rerunPreviewView is a dry run's answer: what the rerun would make due,
// as the page's preview shows it.
type rerunPreviewView struct {
	DryRun bool               `json:"dry_run"`
	Tasks  []rerunPreviewTask `json:"tasks"`
}

type rerunPreviewTask struct {
	ID             int64             `json:"id"`
	BizKey         string            `json:"biz_key"`
	Qty            int64             `json:"qty"`
	Status         models.TaskStatus `json:"status"`
	ErrorClass     models.ErrorClass `json:"error_class,omitempty"`
	LastErrorClass models.ErrorClass `json:"last_error_class,omitempty"`
	LastError      string            `json:"last_error,omitempty"`
	Attempts       int               `json:"attempts"`
	Failures       int               `json:"failures"`
	NextAt         time.Time         `json:"next_at"`
	// ReleasedBy is the ledger row id of a release already applied, which
	// the worker's insert would collide with (DUPLICATE).
	ReleasedBy *int64 `json:"released_by_flow,omitempty"`
}

// rerun makes an order's RETRY or MANUAL tasks of one resource type due now
// and wakes the worker; it never releases anything itself. 202: the work is
// accepted, the worker does it. It needs a reason (models.RerunReason).
// With ?dry_run=true it answers 200 with what it would make due, as the
// page's preview does, and changes and audits nothing.
func (s *server) rerun(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	typ, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return err
	}
	// A misspelt dry_run must not become a real rerun: no other parameter
	// is taken.
	for k := range c.Request().URL.Query() {
		if k != "dry_run" {
			return invalidf("unknown query parameter %.32q: only dry_run is taken", k)
		}
	}
	dry := false
	if v := c.QueryParam("dry_run"); v != "" {
		if dry, err = strconv.ParseBool(v); err != nil {
			return invalidf("dry_run must be true or false, not %q", v)
		}
	}
	if dry {
		return s.rerunDryRun(c, no, typ)
	}
	var body rerunBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	n, err := s.store.Rerun(c.Request().Context(), no, typ, actor(c), body.Reason)
	if err != nil {
		return err
	}
	s.wakeWorker()
	return c.JSON(http.StatusAccepted, rerunView{Tasks: n})
}

// rerunDryRun answers what a rerun would make due; 409 NOTHING_TO_RERUN
// when it would make nothing due, as the rerun itself would.
func (s *server) rerunDryRun(c *echo.Context, no string, typ models.ResourceType) error {
	ch, err := s.store.OrderChain(c.Request().Context(), no)
	if err != nil {
		return err
	}
	v := rerunPreviewView{DryRun: true, Tasks: []rerunPreviewTask{}}
	for _, rc := range ch.Rerunnable(typ) {
		t := rc.Task
		pt := rerunPreviewTask{ID: t.ID, BizKey: t.BizKey, Qty: t.Qty, Status: t.Status, ErrorClass: t.ErrorClass,
			LastErrorClass: t.LastErrorClass, LastError: t.LastError, Attempts: t.Attempts, Failures: t.Failures, NextAt: t.NextAt}
		if rc.Released != nil {
			pt.ReleasedBy = &rc.Released.ID
		}
		v.Tasks = append(v.Tasks, pt)
	}
	if len(v.Tasks) == 0 {
		return fmt.Errorf("%w: order %s has no RETRY or MANUAL %s task", models.ErrNothingToRerun, no, typ)
	}
	return c.JSON(http.StatusOK, v)
}

// taskRerunAPI is POST /api/v1/tasks/:id/rerun: one RETRY or MANUAL task
// made due now, with a reason, as the task's page does; 202, the worker
// does the work. 409 NOTHING_TO_RERUN when the task is in another status.
func (s *server) taskRerunAPI(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	var body rerunBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	if err := s.store.RerunTask(c.Request().Context(), id, actor(c), body.Reason); err != nil {
		return err
	}
	s.wakeWorker()
	return c.JSON(http.StatusAccepted, rerunView{Tasks: 1})
}

// taskAbandonAPI is POST /api/v1/tasks/:id/abandon, for admins: a RETRY
// or MANUAL task no worker is trying ends ABANDONED with a reason, and
// nothing is released. It answers the task as it is now; 409
// TASK_NOT_ABANDONABLE otherwise.
func (s *server) taskAbandonAPI(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	var body rerunBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := s.store.AbandonTask(ctx, id, actor(c), body.Reason); err != nil {
		return err
	}
	t, err := s.store.Task(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}
