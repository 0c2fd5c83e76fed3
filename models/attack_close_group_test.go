package models_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// A timeout sweep and a close group on PostgreSQL lock orders in one
// order. The sweep took its page in pay-deadline order, a group takes
// order-number order: a group that held o-a and waited for o-b, with the
// sweep holding o-b and waiting for o-a, deadlocked, and the sweep failed.
func TestCloseGroupAndSweepLockInOneOrder(t *testing.T) {
	t.Parallel()
	h := &groupHold{}
	b := setup(t, models.Postgres, models.Options{Faults: h.fault})
	h.s = b.s
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	b.placeN(t, "o-b")
	b.clock.Advance(time.Minute)
	b.placeN(t, "o-a") // o-a expires after o-b, so the sweep takes o-b first
	b.clock.Advance(24 * time.Hour)
	// The group's update of o-a holds its lock a while before it goes on
	// to o-b; the sweep's does not sleep.
	must(t, func() error {
		return b.s.W.Exec(`CREATE FUNCTION slow_close() RETURNS trigger AS $$ BEGIN
			PERFORM pg_sleep(0.4); RETURN NEW; END $$ LANGUAGE plpgsql`).Error
	})
	must(t, func() error {
		return b.s.W.Exec(`CREATE TRIGGER slow_close BEFORE UPDATE ON orders FOR EACH ROW
			WHEN (NEW.order_no = 'o-a' AND NEW.close_reason = 'USER_CANCEL') EXECUTE FUNCTION slow_close()`).Error
	})
	group := make(chan []closeAnswer, 1)
	go func() { group <- closeTogether(t, b, h, []string{"o-a", "o-b"}) }()
	time.Sleep(150 * time.Millisecond) // the group holds o-a and sleeps
	if _, err := b.s.CloseExpired(b.ctx, 10); err != nil {
		t.Fatalf("sweep beside a close group: %v", err)
	}
	for i, a := range <-group {
		if a.err != nil {
			t.Fatalf("close %d beside the sweep: %v", i, a.err)
		}
	}
	b.closedOnce(t, "o-a")
	b.closedOnce(t, "o-b")
}

// A close returns when its context ends, as it did alone, even while its
// group waits: on PostgreSQL for a row another transaction holds, on
// SQLite for the write connection. It waited for the group's transaction,
// which ran without its cancellation: for ever on PostgreSQL.
func TestCloseGroupMemberLeavesOnItsContext(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.placeN(t, "o-1")
		lock := b.s.W.Begin() // on SQLite it holds the write turn
		must(t, func() error { return lock.Error })
		must(t, func() error { return lock.Exec("UPDATE orders SET note = note WHERE order_no = 'o-1'").Error })
		ctx, cancel := context.WithTimeout(b.ctx, 100*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := b.s.CloseOrder(ctx, "o-1", models.TriggerUserCancel, "u1")
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("close whose context ended = %v, want context.DeadlineExceeded", err)
			}
		case <-time.After(3 * time.Second):
			lock.Rollback()
			<-done
			t.Fatal("the close still waited 3s after its context ended")
		}
		must(t, func() error { return lock.Rollback().Error })
		if res, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil || !res.Won {
			t.Fatalf("close once the lock is gone = %+v, %v; want won", res, err)
		}
		b.closedOnce(t, "o-1")
	})
}

// On SQLite a close that joined a group late, when its leader's wait for
// the write turn ran out, still has its own wait: it was answered BUSY at
// once, after a fraction of the busy timeout, though the turn came soon.
func TestCloseGroupLateJoinerKeepsItsWait(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite, models.Options{BusyTimeout: time.Second})
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	b.placeN(t, "o-1", "o-2")
	lock := b.s.W.Begin() // holds the write turn
	must(t, func() error { return lock.Error })
	lead := make(chan error, 1)
	go func() { _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); lead <- err }()
	time.Sleep(700 * time.Millisecond)
	late := make(chan error, 1)
	go func() {
		res, err := b.s.CloseOrder(b.ctx, "o-2", models.TriggerUserCancel, "u1")
		if err == nil && !res.Won {
			err = errors.New("not won")
		}
		late <- err
	}()
	if err := <-lead; !models.IsBusy(err) {
		t.Fatalf("the leader's close after the whole busy timeout = %v, want BUSY", err)
	}
	must(t, func() error { return lock.Rollback().Error })
	if err := <-late; err != nil {
		t.Fatalf("the late close, the turn free well within its own wait: %v", err)
	}
	b.closedOnce(t, "o-2")
}

// A panic inside a group's transaction sends its closes alone, and is
// logged: it was swallowed, a bug of the group's own path hidden for ever.
func TestCloseGroupPanicIsLogged(t *testing.T) {
	t.Parallel()
	var once atomic.Bool
	var logs modelstest.LogBuffer
	opt := models.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Faults: func(point string, _ *models.ReleaseTask) error {
		if point == models.FaultCloseGroupCommit && once.CompareAndSwap(false, true) {
			panic("boom in the group")
		}
		return nil
	}}
	b := setup(t, models.SQLite, opt)
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	b.placeN(t, "o-1")
	if res, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil || !res.Won {
		t.Fatalf("close after its group panicked = %+v, %v; want won alone", res, err)
	}
	b.closedOnce(t, "o-1")
	if !strings.Contains(logs.String(), "boom in the group") {
		t.Fatalf("the group's panic was not logged: %q", logs.String())
	}
}
