package web

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

func (s *server) ordersList(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) orderChain(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) rerunPreview(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) rerunSubmit(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}
