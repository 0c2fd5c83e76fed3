package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
)

// readyTimeout bounds the readiness probe's database round trip.
const readyTimeout = 3 * time.Second

type statusView struct {
	Status string `json:"status"`
}

// healthz answers while the process serves HTTP.
func (s *server) healthz(c *echo.Context) error {
	return c.JSON(http.StatusOK, statusView{Status: "ok"})
}

// readyz answers ready when the database answers and is fully migrated.
func (s *server) readyz(c *echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), readyTimeout)
	defer cancel()
	if err := s.store.Ready(ctx); err != nil {
		s.log.WarnContext(ctx, "not ready", "error", err)
		return &apiError{Status: http.StatusServiceUnavailable, Code: "NOT_READY", Message: "the database is not ready"}
	}
	return c.JSON(http.StatusOK, statusView{Status: "ready"})
}
