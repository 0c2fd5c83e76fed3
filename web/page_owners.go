package web

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
	"unhold/views"
)

// operatorNames are the enabled operators and admins, by name: whom an
// item can be handed to, and the owner filter's names.
func (s *server) operatorNames(ctx context.Context) ([]string, error) {
	users, err := s.auth.Users(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range users {
		if !u.Disabled && u.Role.Allows(auth.RoleOperator) {
			out = append(out, u.Name)
		}
	}
	return out, nil
}

// itemURL is the page of a task or a ticket.
func itemURL(kind models.ItemKind, id int64) string {
	if kind == models.ItemTicket {
		return "/recon/diffs/" + strconv.FormatInt(id, 10)
	}
	return "/tasks/" + strconv.FormatInt(id, 10)
}

// ownerView is an item's owner box; the hand-over choices are read only
// when the box has forms.
func (s *server) ownerView(c *echo.Context, kind models.ItemKind, id int64, owner string, since *time.Time, open bool) (views.OwnerView, error) {
	v := views.OwnerView{Owner: owner, Since: since, Open: open, AssignURL: itemURL(kind, id) + "/assign"}
	if open && isOperator(c) {
		names, err := s.operatorNames(c.Request().Context())
		if err != nil {
			return v, err
		}
		v.Operators = names
	}
	return v, nil
}

// notesView is an item's notes and the form that adds one.
func (s *server) notesView(ctx context.Context, kind models.ItemKind, id int64) (views.NotesView, error) {
	ns, err := s.store.Notes(ctx, kind, id)
	if err != nil {
		return views.NotesView{}, err
	}
	return views.NotesView{Notes: noteRows(ns, false), AddURL: itemURL(kind, id) + "/notes", MaxNote: models.MaxNoteLen}, nil
}

// noteRows maps notes to rows; linked, each names and links its item, as
// an order's chain shows them.
func noteRows(ns []models.Note, linked bool) []views.NoteRow {
	rows := make([]views.NoteRow, 0, len(ns))
	for _, n := range ns {
		r := views.NoteRow{At: n.CreatedAt, Author: n.Author, Text: n.Text}
		if linked {
			r.ItemKind, r.ItemID, r.ItemURL = string(n.ItemKind), n.ItemID, itemURL(n.ItemKind, n.ItemID)
		}
		rows = append(rows, r)
	}
	return rows
}

// taskAssign is POST /tasks/:id/assign: take, hand over or let go of a
// MANUAL task, from the owner the page showed; back to the task with what
// happened.
func (s *server) taskAssign(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	return s.assignSubmit(c, models.ItemTask, id)
}

// ticketAssign is POST /recon/diffs/:id/assign, as taskAssign for an open
// ticket.
func (s *server) ticketAssign(c *echo.Context) error {
	id, err := diffIDParam(c)
	if err != nil {
		return err
	}
	return s.assignSubmit(c, models.ItemTicket, id)
}

func (s *server) assignSubmit(c *echo.Context, kind models.ItemKind, id int64) error {
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	form := c.Request().PostForm
	from, to := form.Get("from"), form.Get("to")
	me := actor(c)
	var err error
	if kind == models.ItemTicket {
		err = s.store.AssignTicket(c.Request().Context(), id, me, from, to)
	} else {
		err = s.store.AssignTask(c.Request().Context(), id, me, from, to)
	}
	p := flashPage(c)
	back := itemURL(kind, id)
	var te *models.TakenError
	switch {
	case errors.As(err, &te) && te.Owner == "":
		return redirectWithFlash(c, back, false, p.Tf("own.flash.free", id))
	case errors.As(err, &te):
		return redirectWithFlash(c, back, false, p.Tf("own.flash.taken", id, te.Owner))
	case errors.Is(err, models.ErrBadAssignee):
		return redirectWithFlash(c, back, false, p.Tf("own.flash.bad", err.Error()))
	case errors.Is(err, models.ErrNotOpen):
		status, err := s.itemStatus(c.Request().Context(), kind, id)
		if err != nil {
			return err
		}
		return redirectWithFlash(c, back, false, p.Tf("own.flash.notopen", id, p.Code(status)))
	case err != nil:
		return err
	}
	switch to {
	case "":
		return redirectWithFlash(c, back, true, p.Tf("own.flash.letgo", id))
	case me:
		return redirectWithFlash(c, back, true, p.Tf("own.flash.take", id))
	}
	return redirectWithFlash(c, back, true, p.Tf("own.flash.hand", id, to))
}

// taskNote is POST /tasks/:id/notes: a note appended to the task.
func (s *server) taskNote(c *echo.Context) error {
	id, err := taskIDParam(c)
	if err != nil {
		return err
	}
	return s.noteSubmit(c, models.ItemTask, id)
}

// ticketNote is POST /recon/diffs/:id/notes: a note appended to the ticket.
func (s *server) ticketNote(c *echo.Context) error {
	id, err := diffIDParam(c)
	if err != nil {
		return err
	}
	return s.noteSubmit(c, models.ItemTicket, id)
}

func (s *server) noteSubmit(c *echo.Context, kind models.ItemKind, id int64) error {
	if err := c.Request().ParseForm(); err != nil {
		return invalidf("could not read the form: %v", err)
	}
	_, err := s.store.AddNote(c.Request().Context(), kind, id, actor(c), c.Request().PostForm.Get("text"))
	p := flashPage(c)
	back := itemURL(kind, id)
	switch {
	case errors.Is(err, models.ErrNoteEmpty):
		return redirectWithFlash(c, back, false, p.T("notes.flash.empty"))
	case errors.Is(err, models.ErrNoteTooLong):
		return redirectWithFlash(c, back, false, p.Tf("notes.flash.long", models.MaxNoteLen, models.MaxNoteLen/3))
	case errors.Is(err, models.ErrNoteNotText):
		return redirectWithFlash(c, back, false, p.T("notes.flash.text"))
	case err != nil:
		return err
	}
	return redirectWithFlash(c, back, true, p.T("notes.flash.added"))
}

// isOperator tells whether the request may act: an operator or an admin.
func isOperator(c *echo.Context) bool {
	p := principalOf(c)
	return p != nil && p.Role.Allows(auth.RoleOperator)
}

// isAssign tells whether an audit action is a change of owner.
func isAssign(action string) bool {
	return action == "take" || action == "hand_over" || action == "let_go"
}

// itemStatus reads a task's or a ticket's status now, for a refusal to say.
func (s *server) itemStatus(ctx context.Context, kind models.ItemKind, id int64) (string, error) {
	if kind == models.ItemTicket {
		d, err := s.store.GetDiff(ctx, id)
		if err != nil {
			return "", err
		}
		return d.Status, nil
	}
	t, err := s.store.Task(ctx, id)
	if err != nil {
		return "", err
	}
	return string(t.Status), nil
}
