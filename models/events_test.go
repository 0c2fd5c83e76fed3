package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"unhold/models"
)

// TestEventsAfterMissesNoLateCommit: an event whose transaction took its
// id first but commits last is still read after those read before it. On
// PostgreSQL, paging by id would step over it for good; seq is given in
// the order events became visible.
func TestEventsAfterMissesNoLateCommit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		ins := "INSERT INTO events (type, order_no, occurred_at, data) VALUES (?, ?, ?, '{}')"
		now := time.Now().UTC()
		insertAlone := func(no string) {
			t.Helper()
			must(t, func() error { return b.s.W.Exec(ins, models.EventOrderClosed, no, now).Error })
		}
		read := func(after int64) []models.Event {
			t.Helper()
			if _, err := b.s.SequenceEvents(b.ctx); err != nil {
				t.Fatal(err)
			}
			evs, err := b.s.EventsAfter(b.ctx, after, 100, nil)
			if err != nil {
				t.Fatal(err)
			}
			return evs
		}
		insertAlone("A")
		var late func() error
		if b.s.Dialect == models.Postgres {
			// B takes its id, then waits; C commits meanwhile.
			tx := b.s.W.Begin()
			must(t, func() error { return tx.Exec(ins, models.EventOrderClosed, "B", now).Error })
			late = func() error { return tx.Commit().Error }
		} else {
			// SQLite commits one writer at a time: B simply comes after C.
			late = func() error { return b.s.W.Exec(ins, models.EventOrderClosed, "B", now).Error }
		}
		insertAlone("C")
		first := read(0)
		if got := orderNos(first); got != "AC" {
			t.Fatalf("first read: %q, want AC", got)
		}
		must(t, late)
		second := read(first[len(first)-1].ID)
		if got := orderNos(second); got != "B" {
			t.Fatalf("read after %d: %q, want B (the late commit)", first[len(first)-1].ID, got)
		}
		if second[0].ID <= first[1].ID {
			t.Fatalf("late event's id %d is not after %d", second[0].ID, first[1].ID)
		}
		types, err := b.s.EventsAfter(context.Background(), 0, 100, []models.EventType{models.EventTaskManual})
		if err != nil || len(types) != 0 {
			t.Fatalf("filtered by another type: %v %v", types, err)
		}
	})
}

func orderNos(evs []models.Event) string {
	var s string
	for _, e := range evs {
		s += e.OrderNo
	}
	return s
}

func TestParseEventTypes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		bad  bool
	}{
		{"", 0, false},
		{"hold.released, order.closed", 2, false},
		{"hold.released,nope", 0, true},
		{"order.closed,order.closed", 0, true},
	} {
		got, err := models.ParseEventTypes(tc.in)
		if (err != nil) != tc.bad || len(got) != tc.want {
			t.Errorf("ParseEventTypes(%q) = %v, %v", tc.in, got, err)
		}
		if tc.bad && !errors.Is(err, models.ErrInvalid) {
			t.Errorf("ParseEventTypes(%q): %v is not ErrInvalid", tc.in, err)
		}
	}
}
