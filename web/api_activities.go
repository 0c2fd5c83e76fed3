package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type activityView struct {
	ActivityID    string            `json:"activity_id"`
	Total         int64             `json:"total"`
	Available     int64             `json:"available"`
	Locked        int64             `json:"locked"`
	Used          int64             `json:"used"`
	ReleaseDelayS int64             `json:"release_delay_s"`
	UserLimit     *models.UserLimit `json:"user_limit,omitempty"`
}

func newActivityView(a *models.Activity) activityView {
	return activityView{ActivityID: a.ActivityID, Total: a.Total, Available: a.Available, Locked: a.Locked, Used: a.Used,
		ReleaseDelayS: a.ReleaseDelayS, UserLimit: limitView(a.PerUserOrders, a.WindowS)}
}

type putActivityBody struct {
	Total         *int64            `json:"total"`
	ReleaseDelayS int64             `json:"release_delay_s"`
	UserLimit     *models.UserLimit `json:"user_limit"`
}

// putActivity sets an activity's total quota, release delay and per-user
// limit, creating it when new. A missing release_delay_s means 0, a
// missing user_limit none.
func (s *server) putActivity(c *echo.Context) error {
	id, err := keyParam(c, "activity_id")
	if err != nil {
		return err
	}
	var body putActivityBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	if body.Total == nil {
		return invalidf("total is required")
	}
	set := models.ActivitySettings{ReleaseDelayS: body.ReleaseDelayS}
	if body.UserLimit != nil {
		set.Limit = *body.UserLimit
	}
	a, err := s.store.SetActivityWith(c.Request().Context(), id, *body.Total, set, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newActivityView(a))
}

func (s *server) getActivity(c *echo.Context) error {
	id, err := keyParam(c, "activity_id")
	if err != nil {
		return err
	}
	a, err := s.store.GetActivity(c.Request().Context(), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newActivityView(a))
}
