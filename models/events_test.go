package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// TestEventsAfterMissesNoLateCommit: an event whose transaction took its
// id first but commits last is still read after those read before it. On
// PostgreSQL, paging by id would step over it for good; seq is given in
// the order events became visible.
func TestEventsAfterMissesNoLateCommit(t *testing.T) {
	// Two write turns: the late transaction stands for another
	// instance's, which has turns of its own.
	eachEngineWith(t, models.Options{Writers: 2}, func(t *testing.T, b bundle) {
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

// The cleanup deletes the events older than its bound that come first in
// the reading order, and never the newest, so what is kept runs from
// OldestEvent without a gap. Breaks if a young event went, an old one
// after a young one went (a reader would not know it missed it), or the
// table was emptied (PostgreSQL's seq would start again from 1).
func TestDeleteOldEvents(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		now := b.clock.Now()
		ins := "INSERT INTO events (type, order_no, occurred_at, data) VALUES (?, ?, ?, '{}')"
		for _, e := range []struct {
			no  string
			age time.Duration
		}{{"A", 240 * time.Hour}, {"B", 216 * time.Hour}, {"C", time.Hour}, {"D", 192 * time.Hour}, {"E", 200 * time.Hour}} {
			must(t, func() error { return b.s.W.Exec(ins, models.EventOrderClosed, e.no, now.Add(-e.age).UTC()).Error })
		}
		if _, err := b.s.SequenceEvents(b.ctx); err != nil {
			t.Fatal(err)
		}
		all, err := b.s.EventsAfter(b.ctx, 0, 100, nil)
		if err != nil || orderNos(all) != "ABCDE" {
			t.Fatalf("events = %q, %v", orderNos(all), err)
		}
		keep := func(before time.Time, deleted int64, kept string) {
			t.Helper()
			n, err := b.s.DeleteOldEvents(b.ctx, before)
			if err != nil || n != deleted {
				t.Fatalf("DeleteOldEvents(%s) = %d, %v; want %d", before, n, err, deleted)
			}
			left, err := b.s.EventsAfter(b.ctx, 0, 100, nil)
			if err != nil || orderNos(left) != kept {
				t.Fatalf("kept %q, %v; want %q", orderNos(left), err, kept)
			}
			oldest, ok, err := b.s.OldestEvent(b.ctx)
			if err != nil || !ok || oldest != left[0].ID {
				t.Fatalf("OldestEvent = %d, %v, %v; want %d", oldest, ok, err, left[0].ID)
			}
		}
		keep(now.Add(-168*time.Hour), 2, "CDE")
		keep(now.Add(-168*time.Hour), 0, "CDE")
		keep(now, 2, "E")
	})
}

// On PostgreSQL a SequenceEvents that finds nothing to number takes no
// write turn: a poller of a caught-up stream (GET /api/v1/events
// sequences first) waited behind the writes, and answered 503 BUSY when
// one held the turn past the busy timeout.
func TestSequenceEventsNothingPendingTakesNoTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, models.Postgres, models.Options{BusyTimeout: 200 * time.Millisecond, Writers: 1})
	end := modelstest.HoldWriteTurn(t, b.s)
	n, err := b.s.SequenceEvents(b.ctx)
	end()
	if n != 0 || err != nil {
		t.Errorf("sequence with nothing pending while a write holds the turn: %d, %v; want 0, nil", n, err)
	}
}
