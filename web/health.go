package web

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/buildinfo"
)

// readyTimeout bounds the readiness probe's database round trip.
const readyTimeout = 3 * time.Second

type statusView struct {
	Status string `json:"status"`
}

// healthView is /healthz's answer: alive, and which binary answers.
type healthView struct {
	Status  string         `json:"status"`
	Version buildinfo.Info `json:"version"`
}

// healthz answers while the process serves HTTP, with the binary's
// version (no database round trip: that is /readyz's).
func (s *server) healthz(c *echo.Context) error {
	return c.JSON(http.StatusOK, healthView{Status: "ok", Version: s.version})
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
