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

// maxEventRows bounds the rows of one events insert (4 values each): a
// worker's largest batch (-worker-batch 1000), so that a batch's events
// are one statement.
const maxEventRows = 1000

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

// MaxSequenced bounds the events one SequenceEvents transaction numbers.
const MaxSequenced = 2000

// SequenceEvents gives the committed events not yet numbered their seq, in
// id order, after every seq given before, and returns how many it
// numbered (up to MaxSequenced per call). On SQLite events are readable as
// they commit and it does nothing. Concurrent calls, from this process or
// another, take turns on an advisory lock, so two never give one seq.
// Whether anything waits is read first, without a write turn: a poller of
// a caught-up stream does not wait behind the writes.
func (s *Store) SequenceEvents(ctx context.Context) (int64, error) {
	if s.Dialect != Postgres {
		return 0, nil
	}
	var pending bool
	if err := s.R.WithContext(ctx).Raw("SELECT EXISTS (SELECT 1 FROM events WHERE seq IS NULL)").Scan(&pending).Error; err != nil {
		return 0, fmt.Errorf("sequence events: %w", err)
	}
	if !pending {
		return 0, nil
	}
	var n int64
	err := s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", int64(eventSequencerLock)).Error; err != nil {
			return err
		}
		// A new statement, a new snapshot: it sees what the sequencer
		// before this one committed.
		res := tx.Exec(`UPDATE events SET seq = base.m + next.n
			FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM events WHERE seq IS NULL ORDER BY id LIMIT ?) next,
			     (SELECT COALESCE(MAX(seq), 0) AS m FROM events) base
			WHERE events.id = next.id`, MaxSequenced)
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
	evs, err := scanEvents(s.R.WithContext(ctx), q, args...)
	if err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	return evs, nil
}

// orderEvents reads the events of one order inside db, in the order they
// were written.
func (s *Store) orderEvents(db *gorm.DB, orderNo string) ([]Event, error) {
	evs, err := scanEvents(db, "SELECT COALESCE("+s.eventPos()+", 0) AS id, type, order_no, occurred_at, data FROM events WHERE order_no = ? ORDER BY events.id", orderNo)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", orderNo, err)
	}
	return evs, nil
}

// scanEvents runs q, which selects id, type, order_no, occurred_at and
// data, and returns its rows as events.
func scanEvents(db *gorm.DB, q string, args ...any) ([]Event, error) {
	var rows []struct {
		ID         int64
		Type       EventType
		OrderNo    string
		OccurredAt time.Time
		Data       string
	}
	if err := db.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ID: r.ID, Type: r.Type, OccurredAt: r.OccurredAt.UTC(), OrderNo: r.OrderNo, Data: json.RawMessage(r.Data)}
	}
	return out, nil
}

// The data of each event type (docs/events.md): the ids a consumer needs
// to fetch the rest through the read API, and the few facts it acts on.
type (
	releasedData struct {
		OrderNo      string       `json:"order_no"`
		ResourceType ResourceType `json:"resource_type"`
		Key          string       `json:"key"`
		Qty          int64        `json:"qty"`
		Trigger      Trigger      `json:"trigger"`
		Epoch        int          `json:"epoch"`
		TaskID       int64        `json:"task_id,omitempty"`
	}
	closedData struct {
		OrderNo string  `json:"order_no"`
		Trigger Trigger `json:"trigger"`
		Tasks   int     `json:"tasks"`
	}
	lifeData struct {
		OrderNo  string      `json:"order_no"`
		RefundID string      `json:"refund_id,omitempty"`
		ReturnID string      `json:"return_id,omitempty"`
		Status   OrderStatus `json:"status"`
		Lines    []LineQty   `json:"lines"`
	}
	manualData struct {
		OrderNo      string       `json:"order_no"`
		TaskID       int64        `json:"task_id"`
		ResourceType ResourceType `json:"resource_type"`
		Key          string       `json:"key"`
		ErrorClass   ErrorClass   `json:"error_class"`
		Failures     int          `json:"failures"`
	}
	ticketData struct {
		TicketID     int64        `json:"ticket_id"`
		Kind         string       `json:"kind"`
		ResourceType ResourceType `json:"resource_type"`
		Key          string       `json:"key"`
		Check        string       `json:"check"`
		RunID        int64        `json:"run_id"`
	}
)

// taskReleased is the hold.released event of worker task t, released
// (its RELEASE ledger row written) with trigger at at.
func taskReleased(t ReleaseTask, trigger Trigger, at time.Time) newEvent {
	return newEvent{Type: EventHoldReleased, OrderNo: t.OrderNo, At: at, Data: releasedData{OrderNo: t.OrderNo,
		ResourceType: t.ResourceType, Key: t.BizKey, Qty: t.Qty, Trigger: trigger, TaskID: t.ID}}
}

// ticketOpened is the recon.ticket_opened event of ticket d, just created.
func ticketOpened(d DiffTicket, at time.Time) newEvent {
	return newEvent{Type: EventTicketOpened, At: at, Data: ticketData{TicketID: d.ID, Kind: d.Kind,
		ResourceType: d.ResourceType, Key: d.BizKey, Check: d.CheckName, RunID: d.FirstRunID}}
}

// eventsDeleteBatch bounds the events one cleanup statement deletes: a
// short hold of SQLite's one writer.
const eventsDeleteBatch = 1000

// DeleteOldEvents deletes the events that occurred before before, in
// batches of eventsDeleteBatch each its own statement, and returns how
// many it deleted. It deletes only a prefix of the reading order: the
// events before the first one still young (on PostgreSQL, the first
// sequenced one; an event not sequenced yet no reader has seen), and
// never the newest, so that positions never start again from 1 (a
// sequencer numbers after the largest seq left). What is kept is then
// every event from OldestEvent on, without a gap: a reader whose after is
// before it missed events, and is told so (410 EVENTS_GONE). On
// PostgreSQL it sequences the events first, as a sequencer would.
func (s *Store) DeleteOldEvents(ctx context.Context, before time.Time) (int64, error) {
	if _, err := s.SequenceEvents(ctx); err != nil {
		return 0, fmt.Errorf("delete old events: %w", err)
	}
	pos := s.eventPos()
	var bound *int64
	err := s.R.WithContext(ctx).Raw(`SELECT COALESCE((SELECT MIN(`+pos+`) FROM events WHERE occurred_at >= ?),
		(SELECT MAX(`+pos+`) FROM events))`, before.UTC()).Scan(&bound).Error
	if err != nil {
		return 0, fmt.Errorf("delete old events: %w", err)
	}
	if bound == nil {
		return 0, nil
	}
	var total int64
	for {
		res := s.W.WithContext(ctx).Exec(`DELETE FROM events WHERE id IN (
			SELECT id FROM events WHERE `+pos+` < ? ORDER BY `+pos+` LIMIT ?)`, *bound, eventsDeleteBatch)
		if res.Error != nil {
			return total, fmt.Errorf("delete old events: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < eventsDeleteBatch {
			return total, nil
		}
	}
}

// OldestEvent returns the position of the oldest event kept (readable:
// on PostgreSQL, sequenced), and false when there is none.
func (s *Store) OldestEvent(ctx context.Context) (int64, bool, error) {
	pos := s.eventPos()
	var oldest *int64
	if err := s.R.WithContext(ctx).Raw("SELECT MIN(" + pos + ") FROM events").Scan(&oldest).Error; err != nil {
		return 0, false, fmt.Errorf("oldest event: %w", err)
	}
	if oldest == nil {
		return 0, false, nil
	}
	return *oldest, true, nil
}
