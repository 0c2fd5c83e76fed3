package web

import (
	"bytes"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v5"
)

// render writes a component to a buffer first, so a render error can still
// become a 500 instead of half a page.
func render(c *echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}
