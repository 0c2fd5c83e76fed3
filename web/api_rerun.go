package web

import (
	"net/http"
	"unicode/utf8"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// maxReasonLen is the longest rerun reason, in characters.
const maxReasonLen = 500

type rerunBody struct {
	Reason string `json:"reason"`
}

type rerunView struct {
	Tasks int64 `json:"tasks"`
}

// rerun makes an order's RETRY or MANUAL tasks of one resource type due now
// and wakes the worker; it never releases anything itself. 202: the work is
// accepted, the worker does it.
func (s *server) rerun(c *echo.Context) error {
	no, err := orderNoParam(c)
	if err != nil {
		return err
	}
	typ, err := models.ParseResourceType(c.Param("type"))
	if err != nil {
		return err
	}
	var body rerunBody
	if err := readJSON(c, &body, false); err != nil {
		return err
	}
	if utf8.RuneCountInString(body.Reason) > maxReasonLen {
		return invalidf("reason must be at most %d characters", maxReasonLen)
	}
	n, err := s.store.Rerun(c.Request().Context(), no, typ, actor(c), body.Reason)
	if err != nil {
		return err
	}
	s.wakeWorker()
	return c.JSON(http.StatusAccepted, rerunView{Tasks: n})
}
