package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type activityView struct {
	ActivityID string `json:"activity_id"`
	Total      int64  `json:"total"`
	Available  int64  `json:"available"`
	Locked     int64  `json:"locked"`
	Used       int64  `json:"used"`
}

func newActivityView(a *models.Activity) activityView {
	return activityView{ActivityID: a.ActivityID, Total: a.Total, Available: a.Available, Locked: a.Locked, Used: a.Used}
}

type putActivityBody struct {
	Total *int64 `json:"total"`
}

// putActivity sets an activity's total quota, creating it when new.
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
	a, err := s.store.SetActivity(c.Request().Context(), id, *body.Total, actor(c))
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
