package web

import (
	"net/http"

	"github.com/labstack/echo/v5"
)

func (s *server) inventoryList(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) skuLedger(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) couponLedger(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) balanceLedger(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) dailyReport(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}

func (s *server) dailyReportCSV(c *echo.Context) error {
	return echo.NewHTTPError(http.StatusNotImplemented, "not built yet")
}
