package web

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

func (s *server) overview(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}
