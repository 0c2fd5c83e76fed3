package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// EventType names a fact other systems can hear of (docs/events.md).
type EventType string

// The event types.
const (
	// EventHoldReleased: one resource of one order came back (a RELEASE
	// ledger row was written, by the worker or a line cancel).
	EventHoldReleased EventType = "hold.released"
	// EventOrderClosed: an order left PENDING unpaid (closed, timed out,
	// its placement aborted).
	EventOrderClosed EventType = "order.closed"
	// EventOrderRefunded: a refund was recorded on an order.
	EventOrderRefunded EventType = "order.refunded"
	// EventReturnInbound: returned units were received at the warehouse.
	EventReturnInbound EventType = "return.inbound"
	// EventTaskManual: a release task went to the manual queue.
	EventTaskManual EventType = "task.manual"
	// EventTicketOpened: reconciliation opened a ticket.
	EventTicketOpened EventType = "recon.ticket_opened"
)

// EventTypes are every event type, in the order the API documents them.
var EventTypes = []EventType{EventHoldReleased, EventOrderClosed, EventOrderRefunded, EventReturnInbound,
	EventTaskManual, EventTicketOpened}

// ParseEventTypes reads a comma-separated list of event types ("" is none),
// refusing an unknown or repeated one as ErrInvalid.
func ParseEventTypes(s string) ([]EventType, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []EventType
	for _, p := range strings.Split(s, ",") {
		t := EventType(strings.TrimSpace(p))
		if !slices.Contains(EventTypes, t) {
			return nil, fmt.Errorf("%w: unknown event type %q (known: %s)", ErrInvalid, t, joinEventTypes(EventTypes))
		}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("%w: event type %q is named twice", ErrInvalid, t)
		}
		out = append(out, t)
	}
	return out, nil
}

func joinEventTypes(ts []EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Event is one fact as readers see it. ID is its place in the order events
// became visible (the PostgreSQL seq, the SQLite id): a reader that has
// seen every event up to ID and asks for those after it misses none.
// Data holds the ids needed to fetch the rest through the read API.
type Event struct {
	ID         int64           `json:"id"`
	Type       EventType       `json:"type"`
	OccurredAt time.Time       `json:"occurred_at"`
	OrderNo    string          `json:"order_no,omitempty"`
	Data       json.RawMessage `json:"data"`
}

// newEvent is an event to write in the transaction of its fact.
type newEvent struct {
	Type    EventType
	OrderNo string
	At      time.Time
	Data    any // marshalled to the row's data, a JSON object
}

// maxEventRows bounds the rows of one events insert (4 values each).
const maxEventRows = 200

// emitEvents writes evs in tx, in their order, a few statements for many.
func emitEvents(tx *gorm.DB, evs []newEvent) error {
	for len(evs) > 0 {
		n := min(len(evs), maxEventRows)
		var q strings.Builder
		q.WriteString("INSERT INTO events (type, order_no, occurred_at, data) VALUES ")
		args := make([]any, 0, 4*n)
		for i, e := range evs[:n] {
			data, err := json.Marshal(e.Data)
			if err != nil {
				return fmt.Errorf("event %s: %w", e.Type, err)
			}
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?)")
			args = append(args, e.Type, e.OrderNo, e.At.UTC(), string(data))
		}
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return fmt.Errorf("write events: %w", err)
		}
		evs = evs[n:]
	}
	return nil
}

// eventPos is the column that orders events as readers see them.
func (s *Store) eventPos() string {
	if s.Dialect == Postgres {
		return "seq"
	}
	return "id"
}

// eventSequencerLock is the advisory lock that lets one SequenceEvents run
// at a time on PostgreSQL (an arbitrary constant: "unhold:events").
const eventSequencerLock = 0x756e686f6c64_01

// maxSequenced bounds the events one SequenceEvents transaction numbers.
const maxSequenced = 2000

// SequenceEvents gives the committed events not yet numbered their seq, in
// id order, after every seq given before, and returns how many it
// numbered (up to maxSequenced per call). On SQLite events are readable as
// they commit and it does nothing. Concurrent calls, from this process or
// another, take turns on an advisory lock, so two never give one seq.
func (s *Store) SequenceEvents(ctx context.Context) (int64, error) {
	if s.Dialect != Postgres {
		return 0, nil
	}
	var n int64
	err := s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var pending bool
		if err := tx.Raw("SELECT EXISTS (SELECT 1 FROM events WHERE seq IS NULL)").Scan(&pending).Error; err != nil {
			return err
		}
		if !pending {
			return nil
		}
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(eventSequencerLock)).Error; err != nil {
			return err
		}
		// A new statement, a new snapshot: it sees what the sequencer
		// before this one committed.
		res := tx.Exec(`UPDATE events SET seq = base.m + next.n
			FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events WHERE seq IS NULL ORDER BY id LIMIT ?) next,
			     (SELECT COALESCE(MAX(seq), 0) AS m FROM events) base
			WHERE events.id = next.id`, maxSequenced)
		n = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return 0, fmt.Errorf("sequence events: %w", err)
	}
	return n, nil
}

// EventsAfter returns up to limit events after position after, oldest
// first, of the given types (none: every type). On PostgreSQL only
// sequenced events are read (SequenceEvents).
func (s *Store) EventsAfter(ctx context.Context, after int64, limit int, types []EventType) ([]Event, error) {
	pos := s.eventPos()
	q := "SELECT " + pos + " AS id, type, order_no, occurred_at, data FROM events WHERE " + pos + " > ?"
	args := []any{after}
	if len(types) > 0 {
		q += " AND type IN ?"
		args = append(args, types)
	}
	q += " ORDER BY " + pos + " LIMIT ?"
	args = append(args, limit)
	var rows []struct {
		ID         int64
		Type       EventType
		OrderNo    string
		OccurredAt time.Time
		Data       string
	}
	if err := s.R.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, Type: r.Type, OccurredAt: r.OccurredAt.UTC(), OrderNo: r.OrderNo, Data: json.RawMessage(r.Data)}
	}
	return out, nil
}
