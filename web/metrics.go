package web

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
)

// routeUnmatched is the route label of a request no route matched: its raw
// path would make one series per scanner probe.
const routeUnmatched = "unmatched"

// metricsHandler serves the Prometheus metrics, when this server has them.
func (s *server) metricsHandler(c *echo.Context) error {
	if s.metrics == nil {
		return &apiError{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "metrics are not enabled on this server"}
	}
	s.metrics.Handler().ServeHTTP(c.Response(), c.Request())
	return nil
}

// httpMetrics counts every request by method, route template and status,
// and times it. It must be the outermost middleware: it hands a handler's
// error to the error handler itself, so it sees the status the client got
// (a 409 from a business error, a 500 from a recovered panic), and returns
// nil so the error is not answered twice.
func (s *server) httpMetrics(next echo.HandlerFunc) echo.HandlerFunc {
	if s.metrics == nil {
		return next
	}
	return func(c *echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			s.handleError(c, err)
		}
		_, status := echo.ResolveResponseStatus(c.Response(), err)
		s.metrics.ObserveHTTP(methodLabel(c.Request().Method), routeLabel(c), status, time.Since(start))
		return nil
	}
}

// routeLabel is the matched route's template, e.g. /orders/:order_no.
func routeLabel(c *echo.Context) string {
	if c.RouteInfo().Name == echo.NotFoundRouteName || c.Path() == "" {
		return routeUnmatched
	}
	return c.Path()
}

// methodLabel keeps the method label to the standard methods; anything else
// a client invents is OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
