package models_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// groupHold holds the first close group at FaultCloseGroup (with writes,
// the first group of placements and payments at FaultWriteGroup) until
// want have joined it, so a test knows which share a transaction; fail,
// when set, then fails that transaction. failAtCommit fails the next
// group of placements and payments once its writes are made.
type groupHold struct {
	s            *models.Store
	writes       bool
	want         atomic.Int32
	fail         error
	failAtCommit atomic.Pointer[error]
}

func (h *groupHold) fault(point string, _ *models.ReleaseTask) error {
	hold, forming := models.FaultCloseGroup, h.s.CloseGroupForming
	if h.writes {
		hold, forming = models.FaultWriteGroup, h.s.WriteGroupForming
	}
	if point == models.FaultWriteGroupCommit {
		if err := h.failAtCommit.Swap(nil); err != nil {
			return *err
		}
	}
	if point != hold {
		return nil
	}
	n := h.want.Swap(0)
	if n == 0 {
		return nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for forming() < int(n) {
		if time.Now().After(deadline) {
			return errors.New("the group never had all its closes")
		}
		time.Sleep(time.Millisecond)
	}
	return h.fail
}

// eachEngineHeld runs fn on each engine with a store whose first close
// group is held by h.
func eachEngineHeld(t *testing.T, fn func(t *testing.T, b bundle, h *groupHold)) {
	t.Helper()
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := &groupHold{}
			b := setup(t, d, models.Options{Faults: h.fault})
			h.s = b.s
			fn(t, b, h)
		})
	}
}

type closeAnswer struct {
	res models.CloseResult
	err error
}

// closeTogether closes every one of nos at once, in one group (h holds
// it until they all joined), and returns each one's answer.
func closeTogether(t *testing.T, b bundle, h *groupHold, nos []string) []closeAnswer {
	t.Helper()
	h.want.Store(int32(len(nos)))
	out := make([]closeAnswer, len(nos))
	var wg sync.WaitGroup
	for i, no := range nos {
		wg.Go(func() {
			res, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1")
			out[i] = closeAnswer{res, err}
		})
	}
	wg.Wait()
	return out
}

func (b bundle) placeN(t *testing.T, nos ...string) {
	t.Helper()
	for _, no := range nos {
		req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
}

// closedOnce checks that order no is CLOSED with one task and one
// order.closed event.
func (b bundle) closedOnce(t *testing.T, no string) {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil {
		t.Fatal(err)
	}
	closed := 0
	for _, e := range c.Events {
		if e.Type == models.EventOrderClosed {
			closed++
		}
	}
	if c.Order.Status != models.OrderClosed || len(c.Tasks) != 1 || closed != 1 {
		t.Fatalf("%s is %s with %d tasks and %d order.closed events, want CLOSED, 1 and 1", no, c.Order.Status, len(c.Tasks), closed)
	}
}

// untouched checks that order no is still PENDING with no task and no
// order.closed event.
func (b bundle) untouched(t *testing.T, no string) {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range c.Events {
		if e.Type == models.EventOrderClosed {
			t.Fatalf("%s has an order.closed event", no)
		}
	}
	if c.Order.Status != models.OrderPending || len(c.Tasks) != 0 {
		t.Fatalf("%s is %s with %d tasks, want PENDING and none", no, c.Order.Status, len(c.Tasks))
	}
}

// Closes that share a transaction each get their own answer: a close of a
// paid order or of no order is refused alone, a second close of an order
// in the same group finds it closed, and every other close commits with
// its task and its event, in one transaction.
func TestCloseGroupAnswersEachClose(t *testing.T) {
	eachEngineHeld(t, func(t *testing.T, b bundle, h *groupHold) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.placeN(t, "o-1", "o-2", "o-3", "o-paid")
		if _, err := b.s.PayOrder(b.ctx, "o-paid", "txn-1"); err != nil {
			t.Fatal(err)
		}
		nos := []string{"o-2", "o-1", "o-paid", "o-none", "o-3", "o-1"}
		got := closeTogether(t, b, h, nos)
		won := 0
		for i, no := range nos {
			a := got[i]
			switch no {
			case "o-paid":
				if !errors.Is(a.err, models.ErrOrderNotClosable) {
					t.Fatalf("close of the paid order = %+v, %v; want ORDER_NOT_CLOSABLE", a.res, a.err)
				}
			case "o-none":
				if !errors.Is(a.err, models.ErrNotFound) {
					t.Fatalf("close of no order = %+v, %v; want NOT_FOUND", a.res, a.err)
				}
			default:
				if a.err != nil || a.res.Status != models.OrderClosed || a.res.Tasks != 1 {
					t.Fatalf("close of %s = %+v, %v; want CLOSED with 1 task", no, a.res, a.err)
				}
				if a.res.Won {
					won++
				}
			}
		}
		if won != 3 {
			t.Fatalf("%d closes won, want 3: one for each of o-1, o-2, o-3", won)
		}
		for _, no := range []string{"o-1", "o-2", "o-3"} {
			b.closedOnce(t, no)
		}
		if groups, closes := b.s.CloseGroupStats(); groups != 1 || closes != int64(len(nos)) {
			t.Fatalf("%d groups answered %d closes, want 1 and %d", groups, closes, len(nos))
		}
	})
}

// A close whose own statement fails inside a group fails the group's
// transaction; every close of it is tried again alone, so the others
// commit and the failing one answers its own error and changes nothing.
// The same when the group's transaction fails for none of them (a lost
// connection): every close commits alone.
func TestCloseGroupFailureRetriesAlone(t *testing.T) {
	eachEngineHeld(t, func(t *testing.T, b bundle, h *groupHold) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		refuseClosing(t, b, "o-bad")
		b.placeN(t, "o-1", "o-bad", "o-2", "o-3", "o-4", "o-5")
		nos := []string{"o-1", "o-bad", "o-2"}
		got := closeTogether(t, b, h, nos)
		for i, no := range nos {
			a := got[i]
			if no == "o-bad" {
				var domain *models.Error
				if a.err == nil || errors.As(a.err, &domain) || !strings.Contains(a.err.Error(), "o-bad may not close") {
					t.Fatalf("close of o-bad = %+v, %v; want its own statement's error", a.res, a.err)
				}
				continue
			}
			if a.err != nil || !a.res.Won || a.res.Tasks != 1 {
				t.Fatalf("close of %s beside a failing close = %+v, %v; want won with 1 task", no, a.res, a.err)
			}
			b.closedOnce(t, no)
		}
		b.untouched(t, "o-bad")
		if groups, _ := b.s.CloseGroupStats(); groups != 0 {
			t.Fatalf("%d groups committed, want 0: the group failed and each close went alone", groups)
		}

		h.fail = errors.New("connection lost")
		for i, a := range closeTogether(t, b, h, []string{"o-3", "o-4", "o-5"}) {
			if a.err != nil || !a.res.Won {
				t.Fatalf("close %d after its group's transaction failed = %+v, %v; want won alone", i, a.res, a.err)
			}
		}
		for _, no := range []string{"o-3", "o-4", "o-5"} {
			b.closedOnce(t, no)
		}
		if groups, _ := b.s.CloseGroupStats(); groups != 0 {
			t.Fatalf("%d groups committed, want 0", groups)
		}
	})
}

// refuseClosing makes the database itself refuse to close order no, as a
// CHECK would: a trigger on orders.
func refuseClosing(t *testing.T, b bundle, no string) {
	t.Helper()
	stmts := []string{`CREATE TRIGGER test_refuse_close BEFORE UPDATE ON orders
		WHEN NEW.order_no = '` + no + `' AND NEW.status = 'CLOSED'
		BEGIN SELECT RAISE(ABORT, '` + no + ` may not close'); END`}
	if b.s.Dialect == models.Postgres {
		stmts = []string{
			`CREATE FUNCTION test_refuse_close() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN RAISE EXCEPTION '` + no + ` may not close'; END $$`,
			`CREATE TRIGGER test_refuse_close BEFORE UPDATE ON orders FOR EACH ROW
				WHEN (NEW.order_no = '` + no + `' AND NEW.status = 'CLOSED') EXECUTE FUNCTION test_refuse_close()`,
		}
	}
	for _, q := range stmts {
		if err := b.s.W.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
}

// A group runs on after its leader's client hangs up: the leader's close
// is answered with its context's error and not made, the others commit.
func TestCloseGroupOutlivesItsLeader(t *testing.T) {
	eachEngineHeld(t, func(t *testing.T, b bundle, h *groupHold) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.placeN(t, "o-lead", "o-1", "o-2")
		h.want.Store(3)
		ctx, cancel := context.WithCancel(b.ctx)
		lead := make(chan error, 1)
		go func() {
			_, err := b.s.CloseOrder(ctx, "o-lead", models.TriggerUserCancel, "u1")
			lead <- err
		}()
		for b.s.CloseGroupForming() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		var wg sync.WaitGroup
		for _, no := range []string{"o-1", "o-2"} {
			wg.Go(func() {
				if res, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); err != nil || !res.Won {
					t.Errorf("close of %s = %+v, %v; want won", no, res, err)
				}
			})
		}
		wg.Wait()
		if err := <-lead; !errors.Is(err, context.Canceled) {
			t.Fatalf("the leader's close after its client left = %v, want context.Canceled", err)
		}
		b.untouched(t, "o-lead")
		b.closedOnce(t, "o-1")
		b.closedOnce(t, "o-2")
		if groups, closes := b.s.CloseGroupStats(); groups != 1 || closes != 3 {
			t.Fatalf("%d groups answered %d closes, want the leader's group of 3 committed", groups, closes)
		}
	})
}

// CloseGroup 1 gives every close a transaction of its own; a negative one
// is refused.
func TestCloseGroupOption(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{CloseGroup: 1})
	if _, err := s.SetStock(context.Background(), "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	modelstest.PlaceAndClose(t, s, "o-1", 1)
	if groups, closes := s.CloseGroupStats(); groups != 0 || closes != 0 {
		t.Fatalf("with CloseGroup 1: %d groups, %d closes; want none", groups, closes)
	}
	if _, err := models.Open(context.Background(), modelstest.MigratedDSN(t, models.SQLite), models.Options{CloseGroup: -1}); !errors.Is(err, models.ErrInvalid) {
		t.Fatalf("CloseGroup -1: %v, want INVALID_INPUT", err)
	}
}

// When another process holds SQLite's write lock, a group's BEGIN waits
// the busy timeout and fails BUSY. That is the answer of the closes that
// waited as long; a close that joined the group later waits the rest of
// its own time alone, as it would have without the group, and closes once
// the lock is let go.
func TestCloseGroupBusyAtBeginLateMemberWaitsItsOwnTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := modelstest.MigratedDSN(t, models.SQLite)
	// A second of busy timeout: the later close joins 200 ms in, well
	// before the group's BEGIN gives up, however loaded the machine.
	s, err := models.Open(ctx, dsn, models.Options{BusyTimeout: time.Second, Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{"o-1", "o-2"} {
		req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
		if _, _, err := s.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	other, err := sql.Open("sqlite", "file:"+dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	closeAsync := func(no string) chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1")
			ch <- err
		}()
		return ch
	}
	joined := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); s.CloseGroupForming() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the group never had %d closes", n)
			}
		}
	}
	leader := closeAsync("o-1")
	joined(1)
	time.Sleep(200 * time.Millisecond)
	late := closeAsync("o-2")
	joined(2)
	if err := <-leader; !models.IsBusy(err) {
		t.Fatalf("the leader's close behind another process's write lock = %v, want BUSY", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-late; err != nil {
		t.Fatalf("the close that joined 200 ms later = %v, want it closed once the lock was let go, within its own wait", err)
	}
}
