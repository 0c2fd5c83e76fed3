package models_test

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"unhold/models"
)

// stoppedTask closes order no and runs its releases: the task of typ must
// stop MANUAL with class; it is returned.
func (b bundle) stoppedTask(t *testing.T, no string, typ models.ResourceType, class models.ErrorClass) models.ChainTask {
	t.Helper()
	if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "test"); err != nil {
		t.Fatal(err)
	}
	b.drain(t, "w1")
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range c.Tasks {
		if task.ResourceType == typ {
			if task.Status != models.TaskManual || task.ErrorClass != class {
				t.Fatalf("%s task is %s %s, want MANUAL %s", typ, task.Status, task.ErrorClass, class)
			}
			return task
		}
	}
	t.Fatalf("order %s has no %s task", no, typ)
	return models.ChainTask{}
}

// rerunDone reruns a task and runs it: it must end DONE.
func (b bundle) rerunDone(t *testing.T, task models.ChainTask) {
	t.Helper()
	must(t, func() error { return b.s.RerunTask(b.ctx, task.ID, "ops", "after the correction") })
	b.drain(t, "w1")
	if got := b.taskStatus(t, task.ID); got != models.TaskDone {
		t.Fatalf("task %d after the rerun is %s, want DONE", task.ID, got)
	}
}

func (b bundle) taskStatus(t *testing.T, id int64) models.TaskStatus {
	t.Helper()
	task, err := b.s.Task(b.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return task.Status
}

// A stock lock moved by hand stops the release (LOCKED_SHORT). The
// correction puts the lock back to the ledger's and the available amount to
// what was counted, with a CORRECTION row and audit entries under the key
// and the order; the rerun then releases, and everything reconciles. A
// second correction finds nothing to do and writes nothing.
func TestCorrectStockMovedByHand(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-1'").Error
		})
		task := b.stoppedTask(t, "o-1", models.ResInventory, models.ClassLockedShort)
		// Another order locks sku-1 since: the key now holds as much as
		// the task gives back, but that is o-2's hold, not o-1's.
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-2", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}); err != nil {
			t.Fatal(err)
		}
		l, err := b.s.CounterLedgerOf(b.ctx, models.ResInventory, "sku-1")
		if err != nil {
			t.Fatal(err)
		}
		want := models.CounterLedger{Row: models.CounterState{Available: 8, Locked: 2}, Ledger: models.CounterState{Available: 6, Locked: 4}, Expected: 4}
		if l != want || l.Short() != models.ShortChanged {
			t.Fatalf("before: %+v (%s), want %+v (%s)", l, l.Short(), want, models.ShortChanged)
		}
		fix, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1", models.CounterFix{Available: 6, Reason: "locked moved by hand", ForOrder: "o-1"}, "ops")
		if err != nil {
			t.Fatal(err)
		}
		if want := (models.Correction{Before: models.CounterState{Available: 8, Locked: 2}, After: models.CounterState{Available: 6, Locked: 4}}); fix != want {
			t.Fatalf("correction %+v, want %+v", fix, want)
		}
		if l, err := b.s.CounterLedgerOf(b.ctx, models.ResInventory, "sku-1"); err != nil || l.Short() != models.ShortGone {
			t.Fatalf("after the correction: %+v (%s), %v; want the cause gone", l, l.Short(), err)
		}
		for _, target := range []string{"sku:sku-1", "order:o-1/inventory"} {
			if n := b.audits(t, "action = 'correct' AND target = ? AND detail LIKE ?", target, "%reason: locked moved by hand"); n != 1 {
				t.Errorf("audit entries of the correction under %s: %d, want 1", target, n)
			}
		}
		b.rerunDone(t, task)
		if got := b.stockOf(t, "sku-1"); got != [3]int64{8, 2, 0} {
			t.Fatalf("sku-1 after the release: %v, want o-2's 2 locked and the rest available", got)
		}
		_, err = b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1", models.CounterFix{Available: 8, Reason: "again", ForOrder: ""}, "ops")
		if !errors.Is(err, models.ErrNothingToCorrect) {
			t.Fatalf("a second correction: %v, want NOTHING_TO_CORRECT", err)
		}
		if n := b.audits(t, "action = 'correct'"); n != 2 {
			t.Fatalf("audit entries after the refused correction: %d, want the first two", n)
		}
		b.assertReconciles(t)
	})
}

// Stock added by hand that the warehouse really has is kept: the correction
// leaves the row and records the difference, so the ledger sums to it again.
func TestCorrectKeepsCountedStock(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET available = available + 3 WHERE sku_id = 'sku-2'").Error
		})
		fix, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-2",
			models.CounterFix{Available: 8, Reason: "three found on the shelf", Seen: &models.CounterState{Available: 8}}, "ops")
		if err != nil {
			t.Fatal(err)
		}
		if fix.Recorded != 3 || fix.After != fix.Before {
			t.Fatalf("correction %+v, want the row kept and +3 recorded", fix)
		}
		b.assertReconciles(t)
	})
}

// A coupon given back by hand stops its release (STATE_MISMATCH). Putting
// it back to its ledger's state (LOCKED by the order) lets the rerun
// release it with a full ledger trail.
func TestCorrectCouponGivenBackByHand(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", cp).Error
		})
		task := b.stoppedTask(t, "o-1", models.ResCoupon, models.ClassStateMismatch)
		l, err := b.s.CouponLedgerOf(b.ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		if l.Agrees() || l.Status != models.CouponLocked || l.OrderNo == nil || *l.OrderNo != "o-1" {
			t.Fatalf("coupon ledger %+v, want LOCKED by o-1 and the row disagreeing", l)
		}
		key := task.BizKey
		if _, err := b.s.CorrectCoupon(b.ctx, key, "given back by hand", "o-1", "ops"); err != nil {
			t.Fatal(err)
		}
		b.rerunDone(t, task)
		got, err := b.s.GetCoupon(b.ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.CouponUnused || got.OrderNo != nil {
			t.Fatalf("coupon after the release: %s held by %v, want UNUSED", got.Status, got.OrderNo)
		}
		if _, err := b.s.CorrectCoupon(b.ctx, key, "again", "", "ops"); !errors.Is(err, models.ErrNothingToCorrect) {
			t.Fatalf("a second correction: %v, want NOTHING_TO_CORRECT", err)
		}
		b.assertReconciles(t)
	})
}

// Bad input is refused with a code and a message, and writes nothing.
func TestCorrectBadInput(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-2", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-2", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			fix  func() error
			want error
		}{
			{"negative", func() error { return counterFix(b, models.ResInventory, "sku-1", -1, "r") }, models.ErrInvalid},
			{"too much", func() error { return counterFix(b, models.ResInventory, "sku-1", models.MaxAmount+1, "r") }, models.ErrInvalid},
			{"no reason", func() error { return counterFix(b, models.ResInventory, "sku-1", 3, "  ") }, models.ErrReasonRequired},
			{"long reason", func() error {
				return counterFix(b, models.ResInventory, "sku-1", 3, strings.Repeat("x", models.MaxReasonLen+1))
			}, models.ErrReasonTooLong},
			{"bad key", func() error { return counterFix(b, models.ResInventory, "sku 1", 3, "r") }, models.ErrInvalid},
			{"missing key", func() error { return counterFix(b, models.ResInventory, "sku-9", 3, "r") }, models.ErrNotFound},
			{"unknown type", func() error { return counterFix(b, "gold", "sku-1", 3, "r") }, models.ErrInvalid},
			{"not a counter", func() error { return counterFix(b, models.ResSlot, "seat-1", 0, "r") }, models.ErrInvalid},
			{"bad order", func() error {
				_, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1", models.CounterFix{Available: 3, Reason: "r", ForOrder: "o 1"}, "ops")
				return err
			}, models.ErrInvalid},
			{"for no such order", func() error {
				_, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1", models.CounterFix{Available: 3, Reason: "r", ForOrder: "o-9"}, "ops")
				return err
			}, models.ErrInvalid},
			{"for an order that did not hold the key", func() error {
				_, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1", models.CounterFix{Available: 3, Reason: "r", ForOrder: "o-2"}, "ops")
				return err
			}, models.ErrInvalid},
			{"coupon for an order that did not hold it", func() error {
				must(t, func() error { return b.s.W.Exec("UPDATE user_coupons SET status = 'EXPIRED' WHERE id = ?", cp).Error })
				defer must(t, func() error { return b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED' WHERE id = ?", cp).Error })
				_, err := b.s.CorrectCoupon(b.ctx, strconv.FormatInt(cp, 10), "r", "o-2", "ops")
				return err
			}, models.ErrInvalid},
			{"coupon id", func() error { _, err := b.s.CorrectCoupon(b.ctx, "x1", "r", "", "ops"); return err }, models.ErrInvalid},
			{"coupon missing", func() error { _, err := b.s.CorrectCoupon(b.ctx, "999999", "r", "", "ops"); return err }, models.ErrNotFound},
			{"changed since it was read", func() error {
				_, err := b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-1",
					models.CounterFix{Available: 3, Reason: "r", Seen: &models.CounterState{Available: 12}}, "ops")
				return err
			}, models.ErrChangedSince},
			{"coupon agrees", func() error {
				_, err := b.s.CorrectCoupon(b.ctx, strconv.FormatInt(cp, 10), "r", "", "ops")
				return err
			}, models.ErrNothingToCorrect},
		}
		before := b.snapshot(t)
		for _, tc := range cases {
			if err := tc.fix(); !errors.Is(err, tc.want) {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
			}
		}
		if after := b.snapshot(t); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused corrections changed the shop:\nbefore %v\nafter  %v", before, after)
		}
		if n := b.audits(t, "action = 'correct'"); n != 0 {
			t.Fatalf("refused corrections wrote %d audit entries", n)
		}
	})
}

func counterFix(b bundle, t models.ResourceType, key string, n int64, reason string) error {
	_, err := b.s.CorrectCounter(b.ctx, t, key, models.CounterFix{Available: n, Reason: reason, ForOrder: ""}, "ops")
	return err
}

// An account may hold up to MaxBalance, far past what one credit adds
// (MaxAmount): its correction takes what was counted up to that bound,
// which it checks with the held and spent amounts, as a credit does.
func TestCorrectBalancePastOneCredit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for range 3 {
			must(t, func() error {
				_, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, models.MaxAmount, "test")
				return err
			})
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE accounts SET available = available - 7 WHERE uid = 'u1' AND asset = 'BALANCE'").Error
		})
		fix, err := b.s.CorrectCounter(b.ctx, models.ResBalance, "u1", models.CounterFix{Available: 3 * models.MaxAmount, Reason: "counted", ForOrder: ""}, "ops")
		if err != nil {
			t.Fatalf("correcting an account of %d: %v", 3*models.MaxAmount, err)
		}
		if fix.After.Available != 3*models.MaxAmount || fix.Recorded != 0 {
			t.Fatalf("correction %+v, want all %d back and nothing recorded", fix, 3*models.MaxAmount)
		}
		_, err = b.s.CorrectCounter(b.ctx, models.ResBalance, "u1", models.CounterFix{Available: models.MaxBalance + 1, Reason: "counted", ForOrder: ""}, "ops")
		if !errors.Is(err, models.ErrInvalid) && !errors.Is(err, models.ErrBalanceOverflow) {
			t.Fatalf("a correction past MaxBalance: %v, want refused", err)
		}
		b.assertReconciles(t)
	})
}

// A coupon given back by hand whose release an admin then abandoned (the
// hold was settled elsewhere): its ledger's last row is still the order's
// LOCK, but the order is closed and nothing will ever release the coupon
// again. Putting it back to LOCKED would take the customer's coupon for
// an order that holds nothing; the correction refuses, and changes
// nothing.
func TestCorrectCouponNotForAnOrderThatLetItGo(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", cp).Error
		})
		task := b.stoppedTask(t, "o-1", models.ResCoupon, models.ClassStateMismatch)
		must(t, func() error { return b.s.AbandonTask(b.ctx, task.ID, "admin", "given back by hand") })
		_, err := b.s.CorrectCoupon(b.ctx, task.BizKey, "the ledger says locked", "", "ops")
		if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), "o-1") {
			t.Fatalf("putting it back for o-1: %v, want refused naming the order", err)
		}
		got, err := b.s.GetCoupon(b.ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.CouponUnused || got.OrderNo != nil {
			t.Fatalf("coupon after the refused correction: %s held by %v, want UNUSED as it was", got.Status, got.OrderNo)
		}
		if n := b.audits(t, "action = 'correct'"); n != 0 {
			t.Fatalf("the refused correction wrote %d audit entries", n)
		}
	})
}
