package web

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

func (s *server) tasksList(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) taskDetail(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) bulkRerunPreview(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) bulkRerunSubmit(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}
