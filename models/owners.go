package models

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// ItemKind is what an owner or a note is on: a MANUAL release task or a
// reconciliation ticket, the two queues a person works.
type ItemKind string

// The item kinds, as item_notes.item_kind stores them.
const (
	ItemTask   ItemKind = "task"
	ItemTicket ItemKind = "ticket"
)

// TicketTarget is the audit target of one reconciliation ticket.
func TicketTarget(id int64) string { return "diff:" + strconv.FormatInt(id, 10) }

// target is the audit target of item id of kind k.
func (k ItemKind) target(id int64) string {
	if k == ItemTicket {
		return TicketTarget(id)
	}
	return TaskTarget(id)
}

// ErrTaken: the item's owner is not the one the caller saw; nothing
// changed. A TakenError names the owner now.
var ErrTaken = &Error{"TAKEN", "someone else has this item now"}

// ErrBadAssignee: an item can be handed only to an enabled dashboard user
// who may act (an operator or an admin).
var ErrBadAssignee = &Error{"BAD_ASSIGNEE", "an item can be handed only to an enabled operator or admin"}

// ErrNotOpen: only a MANUAL task or a ticket not yet resolved has an owner
// to change; the one left on a finished item is history.
var ErrNotOpen = &Error{"NOT_OPEN", "only a MANUAL task or an open ticket can be taken, handed over or let go"}

// TakenError is ErrTaken naming who has the item now ("": nobody) and
// since when.
type TakenError struct {
	Kind  ItemKind
	ID    int64
	Owner string
	Since *time.Time
}

func (e *TakenError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%s %d has no owner now: it was let go; read it again", e.Kind, e.ID)
	}
	since := ""
	if e.Since != nil {
		since = " since " + e.Since.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %d is %s's now%s", e.Kind, e.ID, e.Owner, since)
}

// Unwrap makes a TakenError ErrTaken.
func (e *TakenError) Unwrap() error { return ErrTaken }

// AssignTask changes the owner of a MANUAL task from from to to ("" is
// nobody): to == actor takes it, another name hands it over, "" lets it
// go. It is a compare-and-set: when the owner is not from any more,
// nothing changes and the error is a *TakenError naming the owner now, so
// two operators taking one task at once leave it with exactly one. Only
// the owner columns are written: the task's status, next_at and updated_at,
// which the worker's compare-and-sets and the queue's ageing read, stay.
func (s *Store) AssignTask(ctx context.Context, id int64, actor, from, to string) error {
	return s.assign(ctx, ItemTask, id, actor, from, to)
}

// AssignTicket is AssignTask for a reconciliation ticket not yet resolved;
// its updated_at stays too.
func (s *Store) AssignTicket(ctx context.Context, id int64, actor, from, to string) error {
	return s.assign(ctx, ItemTicket, id, actor, from, to)
}

// ownerRow is what an assignment reads of its item.
type ownerRow struct {
	Status     string
	Owner      string
	OwnedSince *time.Time
}

func (s *Store) assign(ctx context.Context, kind ItemKind, id int64, actor, from, to string) error {
	if id <= 0 {
		return fmt.Errorf("%w: a %s id is a positive whole number, not %d", ErrInvalid, kind, id)
	}
	from, to = strings.TrimSpace(from), strings.TrimSpace(to)
	for _, n := range []string{from, to} {
		if len(n) > maxAuditShortLen || !utf8.ValidString(n) || strings.ContainsRune(n, 0) {
			return fmt.Errorf("%w: an owner is a user name of at most %d bytes of UTF-8", ErrInvalid, maxAuditShortLen)
		}
	}
	action := "hand_over"
	switch to {
	case "":
		action = "let_go"
	case actor:
		action = "take"
	}
	target := kind.target(id)
	table, open := "release_tasks", "status = 'MANUAL'"
	if kind == ItemTicket {
		table, open = "recon_diffs", "status <> '"+DiffResolved+"'"
	}
	refused := ""
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		if action == "hand_over" {
			if err := assignee(tx, to); err != nil {
				refused = err.Error()
				return err
			}
		}
		var row ownerRow
		if err := take(tx.Raw(`SELECT status, owner, owned_since FROM `+table+` WHERE id = ?`+s.forUpdate(), id), &row,
			fmt.Sprintf("%s %d", kind, id)); err != nil {
			return err
		}
		if !itemOpen(kind, row.Status) {
			refused = fmt.Sprintf("%s is %s", kind, row.Status)
			return fmt.Errorf("%w: %s %d is %s", ErrNotOpen, kind, id, row.Status)
		}
		if row.Owner != from {
			te := &TakenError{Kind: kind, ID: id, Owner: row.Owner, Since: row.OwnedSince}
			refused = te.Error()
			return te
		}
		if row.Owner == to {
			return nil // already so: nothing to change or audit
		}
		var since *time.Time
		if to != "" {
			since = &now
		}
		res := tx.Exec(`UPDATE `+table+` SET owner = ?, owned_since = ? WHERE id = ? AND owner = ? AND `+open, to, since, id, from)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			// The row is locked (PostgreSQL) or the writer is alone (SQLite).
			return fmt.Errorf("assign of locked %s %d changed %d rows", kind, id, res.RowsAffected)
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: action, Target: target, Outcome: "ok",
			Detail: fmt.Sprintf("owner %s → %s", ownerName(from), ownerName(to)), CreatedAt: now}).Error
	})
	if err != nil {
		if refused != "" {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: actor, Action: action, Target: target, Outcome: "refused",
				Detail: fmt.Sprintf("owner %s → %s: %s", ownerName(from), ownerName(to), refused), CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused assign", slog.String("target", target), slog.Any("err", aerr))
			}
		}
		var te *TakenError
		if errors.As(err, &te) {
			return err // its text already names the item and the owner
		}
		return fmt.Errorf("assign %s %d: %w", kind, id, err)
	}
	return nil
}

// ownerName is an owner as an audit detail says it.
func ownerName(n string) string {
	if n == "" {
		return "nobody"
	}
	return n
}

// itemOpen tells whether an item in status is in its queue, where its
// owner means something.
func itemOpen(kind ItemKind, status string) bool {
	if kind == ItemTicket {
		return status != DiffResolved
	}
	return TaskStatus(status) == TaskManual
}

// assignee checks, in the assignment's transaction, that name is an
// enabled dashboard user who may act: the users table is auth's, on this
// database; a viewer, a disabled account or a name no user has is
// ErrBadAssignee.
func assignee(tx *gorm.DB, name string) error {
	var users []struct {
		Role     string
		Disabled bool
	}
	if err := tx.Raw(`SELECT role, disabled FROM users WHERE name = ?`, name).Scan(&users).Error; err != nil {
		return fmt.Errorf("read user %s: %w", name, err)
	}
	switch {
	case len(users) == 0:
		return fmt.Errorf("%w: no user is named %q", ErrBadAssignee, name)
	case users[0].Disabled:
		return fmt.Errorf("%w: user %s is disabled", ErrBadAssignee, name)
	case users[0].Role != "operator" && users[0].Role != "admin":
		return fmt.Errorf("%w: user %s is a %s, who cannot act on it", ErrBadAssignee, name, users[0].Role)
	}
	return nil
}

// Note is one note on a task or a ticket: who wrote what, when. Notes are
// never changed or deleted (the table refuses it).
type Note struct {
	ID       int64    `json:"id"`
	ItemKind ItemKind `json:"item_kind"`
	ItemID   int64    `json:"item_id"`
	// OrderNo is a task note's order; a ticket's notes name none, its
	// orders are on the ticket.
	OrderNo   string    `json:"order_no,omitempty"`
	Author    string    `json:"author"`
	Text      string    `json:"text"`
	CreatedAt time.Time `json:"created_at"`
}

// TableName is the notes table.
func (Note) TableName() string { return "item_notes" }

// MaxNoteLen bounds a note, in bytes of UTF-8: the audit log's text bound,
// so the audit row of a note keeps all of it.
const MaxNoteLen = maxTextLen

// Why a note is refused; each is ErrInvalid.
var (
	ErrNoteEmpty   = fmt.Errorf("%w: a note needs some text", ErrInvalid)
	ErrNoteTooLong = fmt.Errorf("%w: a note is at most %d bytes of UTF-8", ErrInvalid, MaxNoteLen)
	ErrNoteNotText = fmt.Errorf("%w: a note must be UTF-8 text without NUL", ErrInvalid)
)

// NoteText is the one rule for a note's text: UTF-8 without NUL, trimmed,
// not empty, at most MaxNoteLen bytes. It returns the text trimmed.
func NoteText(text string) (string, error) {
	if !utf8.ValidString(text) || strings.ContainsRune(text, 0) {
		return "", ErrNoteNotText
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", ErrNoteEmpty
	case len(text) > MaxNoteLen:
		return "", ErrNoteTooLong
	}
	return text, nil
}

// AddNote appends a note by actor to a task or a ticket, in whatever
// status it is (a note after the fact is still worth keeping), audited on
// the item with the text as its reason. Like an assignment it writes
// nothing of the item itself.
func (s *Store) AddNote(ctx context.Context, kind ItemKind, id int64, actor, text string) (Note, error) {
	if kind != ItemTask && kind != ItemTicket {
		return Note{}, fmt.Errorf("%w: notes are on a task or a ticket, not %q", ErrInvalid, kind)
	}
	if id <= 0 {
		return Note{}, fmt.Errorf("%w: a %s id is a positive whole number, not %d", ErrInvalid, kind, id)
	}
	text, err := NoteText(text)
	if err != nil {
		return Note{}, err
	}
	n := Note{ItemKind: kind, ItemID: id, Author: actor, Text: text}
	err = s.write(ctx, func(tx *gorm.DB) error {
		n.CreatedAt = s.Now()
		if kind == ItemTask {
			var t ReleaseTask
			if err := take(tx.Select("order_no").Where("id = ?", id), &t, fmt.Sprintf("task %d", id)); err != nil {
				return err
			}
			n.OrderNo = t.OrderNo
		} else {
			var d DiffTicket
			if err := take(tx.Select("id").Where("id = ?", id), &d, fmt.Sprintf("ticket %d", id)); err != nil {
				return err
			}
		}
		if err := tx.Create(&n).Error; err != nil {
			return err
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: "note", Target: kind.target(id), Reason: text, Outcome: "ok",
			Detail: fmt.Sprintf("note #%d", n.ID), CreatedAt: n.CreatedAt}).Error
	})
	if err != nil {
		return Note{}, fmt.Errorf("note on %s %d: %w", kind, id, err)
	}
	return n, nil
}

// maxItemNotes bounds the notes a page shows of one item or one order:
// the newest ones.
const maxItemNotes = 200

// Notes lists the notes of one task or ticket, oldest first (the newest
// maxItemNotes).
func (s *Store) Notes(ctx context.Context, kind ItemKind, id int64) ([]Note, error) {
	var out []Note
	err := s.R.WithContext(ctx).Where("item_kind = ? AND item_id = ?", kind, id).Order("id DESC").Limit(maxItemNotes).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("notes of %s %d: %w", kind, id, err)
	}
	return oldestFirst(out), nil
}

// OrderNotes lists the notes of an order's tasks and of the tickets that
// name the order, oldest first (the newest maxItemNotes): what its chain
// page shows.
func (s *Store) OrderNotes(ctx context.Context, orderNo string) ([]Note, error) {
	var out []Note
	// A ticket's orders are a comma-separated list; the few tickets there
	// are make a scan of them cheap. '_' in an order number is LIKE's
	// wildcard, so it is escaped.
	like := "%," + strings.ReplaceAll(orderNo, "_", `\_`) + ",%"
	err := s.R.WithContext(ctx).Raw(`SELECT * FROM item_notes WHERE (item_kind = 'task' AND order_no = ?)
		OR (item_kind = 'ticket' AND item_id IN (SELECT id FROM recon_diffs WHERE ',' || orders || ',' LIKE ? ESCAPE '\'))
		ORDER BY id DESC LIMIT ?`, orderNo, like, maxItemNotes).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("notes of order %s: %w", orderNo, err)
	}
	return oldestFirst(out), nil
}

// oldestFirst reverses notes read newest first.
func oldestFirst(ns []Note) []Note {
	for i, j := 0, len(ns)-1; i < j; i, j = i+1, j-1 {
		ns[i], ns[j] = ns[j], ns[i]
	}
	if ns == nil {
		ns = []Note{}
	}
	return ns
}
