package web

import (
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

type putCounterBody struct {
	Available *int64 `json:"available"`
}

// counterTarget reads the :type and :key of a counter route.
func (s *server) counterTarget(c *echo.Context) (models.ResourceType, string, error) {
	t, err := s.store.ParseType(c.Param("type"))
	if err != nil {
		return "", "", err
	}
	key, err := keyParam(c, "key")
	return t, key, err
}

// getCounter reads one key of any counter type, built-in or declared:
// {"available", "locked", "spent"}.
func (s *server) getCounter(c *echo.Context) error {
	t, key, err := s.counterTarget(c)
	if err != nil {
		return err
	}
	st, err := s.store.Counter(c.Request().Context(), t, key)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

// putCounter sets a declared counter key's available amount, creating the
// key when new.
func (s *server) putCounter(c *echo.Context) error {
	t, key, err := s.counterTarget(c)
	if err != nil {
		return err
	}
	var body putCounterBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	if body.Available == nil {
		return invalidf("available is required")
	}
	st, err := s.store.SetDeclared(c.Request().Context(), t, key, *body.Available, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
