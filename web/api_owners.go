package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// assignBody is an assignment: to is a user name or null (let go); from
// is who the caller believes has the item, a name or null, and omitted
// means nobody, so a blind call can take a free item but never another
// operator's. Both are raw to tell a missing to from a null one.
type assignBody struct {
	To   json.RawMessage `json:"to"`
	From json.RawMessage `json:"from"`
}

// ownerName reads a name or null ("") of an assignment's field.
func ownerName(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var n string
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", invalidf("%s must be a user name or null", field)
	}
	return n, nil
}

// ownerView is the API's answer about an item's owner: who has it now
// (null: nobody) and since when.
type ownerView struct {
	Owner      *string    `json:"owner"`
	OwnedSince *time.Time `json:"owned_since"`
}

// taskAssignAPI is POST /api/v1/tasks/:id/assign: take (to is the caller),
// hand over (to another enabled operator or admin) or let go (to null) of a
// MANUAL task, a compare-and-set from "from". 200 with the owner now; 409
// TAKEN naming the owner when from is stale, 409 NOT_OPEN when the task is
// not MANUAL, 422 BAD_ASSIGNEE for a name that cannot act.
func (s *server) taskAssignAPI(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	return s.assignAPI(c, models.ItemTask, id)
}

// ticketIDParam reads the API's ticket id from the path.
func ticketIDParam(c *echo.Context) (int64, error) {
	raw := c.Param("ticket_id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, invalidf("a ticket id is a positive whole number, not %q", raw)
	}
	return id, nil
}

// ticketAssignAPI is POST /api/v1/recon/tickets/:ticket_id/assign, as
// taskAssignAPI for a ticket not yet resolved.
func (s *server) ticketAssignAPI(c *echo.Context) error {
	id, err := ticketIDParam(c)
	if err != nil {
		return err
	}
	return s.assignAPI(c, models.ItemTicket, id)
}

func (s *server) assignAPI(c *echo.Context, kind models.ItemKind, id int64) error {
	var body assignBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	if len(body.To) == 0 {
		return invalidf("to is required: a user name, or null to let go")
	}
	to, err := ownerName("to", body.To)
	if err != nil {
		return err
	}
	from, err := ownerName("from", body.From)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	var v ownerView
	if kind == models.ItemTicket {
		if err := s.store.AssignTicket(ctx, id, actor(c), from, to); err != nil {
			return err
		}
		d, err := s.store.GetDiff(ctx, id)
		if err != nil {
			return err
		}
		v = ownerOf(d.Owner, d.OwnedSince)
	} else {
		if err := s.store.AssignTask(ctx, id, actor(c), from, to); err != nil {
			return err
		}
		t, err := s.store.Task(ctx, id)
		if err != nil {
			return err
		}
		v = ownerOf(t.Owner, t.OwnedSince)
	}
	return c.JSON(http.StatusOK, v)
}

func ownerOf(owner string, since *time.Time) ownerView {
	v := ownerView{OwnedSince: since}
	if owner != "" {
		v.Owner = &owner
	}
	return v
}

// assignDoc is assignBody as the API document shows it.
type assignDoc struct {
	To   *string `json:"to"`
	From *string `json:"from,omitempty"`
}

type noteBody struct {
	Text string `json:"text"`
}

// taskNoteAPI is POST /api/v1/tasks/:id/notes: a note appended to the
// task; 201 with the note. An empty, too long or non-text note is 400.
func (s *server) taskNoteAPI(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	return s.noteAPI(c, models.ItemTask, id)
}

// ticketNoteAPI is POST /api/v1/recon/tickets/:ticket_id/notes, as
// taskNoteAPI.
func (s *server) ticketNoteAPI(c *echo.Context) error {
	id, err := ticketIDParam(c)
	if err != nil {
		return err
	}
	return s.noteAPI(c, models.ItemTicket, id)
}

func (s *server) noteAPI(c *echo.Context, kind models.ItemKind, id int64) error {
	var body noteBody
	if err := readJSON(c, &body, true); err != nil {
		return err
	}
	n, err := s.store.AddNote(c.Request().Context(), kind, id, actor(c), body.Text)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, n)
}

// ticketView is one ticket with its notes.
type ticketView struct {
	*models.DiffTicket
	Notes []models.Note `json:"notes"`
}

// apiTicket is GET /api/v1/recon/tickets/:ticket_id: one ticket, its
// owner and its notes.
func (s *server) apiTicket(c *echo.Context) error {
	id, err := ticketIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := s.store.GetDiff(ctx, id)
	if err != nil {
		return err
	}
	ns, err := s.store.Notes(ctx, models.ItemTicket, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ticketView{DiffTicket: d, Notes: ns})
}

// ownerParam is a list's owner filter; what lists which items.
func ownerParam(what string) apiParam {
	return apiParam{Name: "owner", Desc: "mine (the caller's; a token's as token:<name>), nobody, or a user name: only " + what + " of that owner",
		Schema: map[string]any{"type": "string", "maxLength": 256}}
}
