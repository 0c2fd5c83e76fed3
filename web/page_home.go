package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
	"unhold/views"
)

// home shows how many orders and release tasks are in each state and how
// many reconciliation diffs there are now.
func (s *server) home(c *echo.Context) error {
	ctx := c.Request().Context()
	counts, err := s.store.StatusCounts(ctx)
	if err != nil {
		return err
	}
	diffs, err := s.store.Reconcile(ctx)
	if err != nil {
		return err
	}
	v := views.HomeView{Diffs: len(diffs)}
	for _, st := range []models.OrderStatus{models.OrderPending, models.OrderPaid, models.OrderClosed, models.OrderRefundPending} {
		v.Orders = append(v.Orders, views.Count{Label: string(st), N: counts.Orders[st]})
	}
	for _, st := range []models.TaskStatus{models.TaskPending, models.TaskRetry, models.TaskManual, models.TaskDone, models.TaskSuperseded} {
		v.Tasks = append(v.Tasks, views.Count{Label: string(st), N: counts.Tasks[st]})
	}
	return render(c, http.StatusOK, views.Home(v))
}
