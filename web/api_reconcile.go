package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// reconcileView is the answer of POST /api/v1/reconcile: the run (with
// what each remote type's HELD check covered), what a PARTIAL run left
// unchecked in words, the tickets it opened (the first
// models.MaxOpenedTickets of run.opened), and the tickets left unresolved,
// per resource.
type reconcileView struct {
	Run       *models.ReconRun              `json:"run"`
	Unchecked string                        `json:"unchecked,omitempty"`
	Tickets   []models.DiffTicket           `json:"tickets"`
	OpenDiffs map[models.ResourceType]int64 `json:"open_diffs"`
}

// apiReconcile runs a reconciliation now and answers when it is done. The
// body may be empty or {}; the run is recorded with the caller as actor.
func (s *server) apiReconcile(c *echo.Context) error {
	b, err := readBody(c, false)
	if err != nil {
		return err
	}
	if b != nil {
		var body *struct{}
		if err := decodeJSON(bytes.NewReader(b), &body); err != nil {
			return err
		}
		if body == nil {
			return invalidf("the body must be {} or empty, not null")
		}
	}
	ctx := c.Request().Context()
	run, err := s.store.RunReconciliation(ctx, models.ReconByAPI, actor(c))
	entry := models.AuditEntry{Actor: actor(c), Action: "recon_run_now", Target: "recon", Outcome: "ok"}
	if err != nil {
		entry.Outcome, entry.Detail = "failed", err.Error()
	} else {
		entry.Detail = fmt.Sprintf("run %d: %d diffs found, %d new tickets, %d closed", run.ID, run.Found, run.Opened, run.Closed)
		if u := run.Unchecked(); u != "" {
			entry.Detail += "; partial: " + u
		}
	}
	if aerr := s.store.RecordAudit(ctx, entry); aerr != nil {
		return errors.Join(err, aerr)
	}
	if err != nil {
		return err
	}
	opened, err := s.store.OpenedTickets(ctx, run)
	if err != nil {
		return err
	}
	open, err := s.store.OpenDiffCounts(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reconcileView{Run: run, Unchecked: run.Unchecked(), Tickets: opened, OpenDiffs: open})
}
