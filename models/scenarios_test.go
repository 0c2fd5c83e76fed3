package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// The seven concurrency scenarios of the source article, as real goroutines
// against a real database.

// counts reads how many ledger rows of each type name an order.
func (b bundle) flowCounts(t *testing.T, orderNo string) map[string]int {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, orderNo)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, f := range c.Flows {
		out[fmt.Sprintf("%s/%s/%d", f.ResourceType, f.Type, f.Epoch)]++
		out[fmt.Sprintf("%s:%s/%s/%d", f.ResourceType, f.BizKey, f.Type, f.Epoch)]++
	}
	return out
}

// assertReconciles checks every invariant of DESIGN.md.
func (b bundle) assertReconciles(t *testing.T) {
	t.Helper()
	modelstest.CheckInvariants(t, b.s)
}

// assertShopRestored checks every resource of the shop is back where it began.
func (b bundle) assertShopRestored(t *testing.T, couponID int64) {
	t.Helper()
	for sku, want := range map[string]int64{"sku-1": 10, "sku-2": 5} {
		s, err := b.s.GetSKU(b.ctx, sku)
		if err != nil {
			t.Fatal(err)
		}
		if s.Available != want || s.Locked != 0 || s.Sold != 0 {
			t.Fatalf("%s = %d/%d/%d, want %d/0/0", sku, s.Available, s.Locked, s.Sold, want)
		}
	}
	acc, err := b.s.GetAccount(b.ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	if a := acc[models.AssetBalance]; a.Available != 1000 || a.Frozen != 0 {
		t.Fatalf("balance = %+v, want 1000 available", a)
	}
	if a := acc[models.AssetPoints]; a.Available != 500 || a.Frozen != 0 {
		t.Fatalf("points = %+v, want 500 available", a)
	}
	cp, err := b.s.GetCoupon(b.ctx, couponID)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Status != models.CouponUnused || cp.OrderNo != nil {
		t.Fatalf("coupon = %s held by %v, want UNUSED", cp.Status, cp.OrderNo)
	}
	act, _ := b.s.GetActivity(b.ctx, "act-1")
	if act.Available != 3 || act.Locked != 0 {
		t.Fatalf("activity = %+v, want 3 available", act)
	}
	sl, _ := b.s.GetSlot(b.ctx, "seat-1")
	if sl.Status != models.SlotFree {
		t.Fatalf("slot = %s, want FREE", sl.Status)
	}
	b.assertReconciles(t)
}

func releaseCounts(t *testing.T, b bundle, orderNo string) {
	t.Helper()
	for k, n := range b.flowCounts(t, orderNo) {
		if strings.Contains(k, ":") && n != 1 {
			t.Fatalf("ledger has %d rows of %s for %s, want 1", n, k, orderNo)
		}
	}
}

// 1. The same order is cancelled twice at once (here: 16 times).
func TestScenarioDoubleCancel(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		const n = 16
		var wg sync.WaitGroup
		results := make([]models.CloseResult, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1")
			}()
		}
		wg.Wait()
		won := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("close %d: %v", i, errs[i])
			}
			if results[i].Status != models.OrderClosed || results[i].Tasks != 7 {
				t.Fatalf("close %d = %+v, want CLOSED with 7 tasks", i, results[i])
			}
			if results[i].Won {
				won++
			}
		}
		if won != 1 {
			t.Fatalf("%d closes won, want exactly 1", won)
		}
		b.drain(t, "w1")
		releaseCounts(t, b, "o-1")
		b.assertShopRestored(t, cp)
	})
}

// 2. The client times out and submits the cancel again.
func TestScenarioRetryAfterTimeout(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		dead, cancel := context.WithCancel(b.ctx)
		cancel()
		if _, err := b.s.CloseOrder(dead, "o-1", models.TriggerUserCancel, "user:u1"); err == nil {
			t.Fatal("close with a dead context succeeded")
		}
		first, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1")
		if err != nil || !first.Won {
			t.Fatalf("first real close = %+v, %v; want won", first, err)
		}
		// The caller never heard the answer and retries while the worker runs.
		var wg sync.WaitGroup
		wg.Add(2)
		var again models.CloseResult
		go func() {
			defer wg.Done()
			again, err = b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system:timeout")
		}()
		var drainErr error
		go func() { defer wg.Done(); _, drainErr = b.drainErr("w1") }()
		wg.Wait()
		if drainErr != nil {
			t.Fatal(drainErr)
		}
		if err != nil || again.Won || again.Tasks != first.Tasks {
			t.Fatalf("retried close = %+v, %v; want the same answer, not won", again, err)
		}
		b.drain(t, "w1")
		releaseCounts(t, b, "o-1")
		b.assertShopRestored(t, cp)
	})
}

// 3. Cancel and the payment callback arrive together: one status update wins
// and only the winner's side effects happen.
func TestScenarioCancelVsPayment(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		const orders = 12
		for i := range orders {
			no := fmt.Sprintf("o-%d", i)
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 3}}}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var closeRes models.CloseResult
			var closeErr, payErr error
			var payRes models.PayResult
			wg.Add(2)
			go func() {
				defer wg.Done()
				closeRes, closeErr = b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "user:u1")
			}()
			go func() { defer wg.Done(); payRes, payErr = b.s.PayOrder(b.ctx, no, "txn-"+no) }()
			wg.Wait()
			if payErr != nil {
				t.Fatalf("%s pay: %v", no, payErr)
			}
			chain, err := b.s.OrderChain(b.ctx, no)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case errors.Is(closeErr, models.ErrOrderNotClosable):
				// Payment won: no release task may exist.
				if payRes.Late || len(chain.Tasks) != 0 || chain.Order.Status != models.OrderPaid {
					t.Fatalf("%s: payment won but late=%v tasks=%d status=%s", no, payRes.Late, len(chain.Tasks), chain.Order.Status)
				}
			case closeErr == nil && closeRes.Won:
				// Close won; the payment then took the late path and superseded the task.
				if !payRes.Late || chain.Order.Status != models.OrderPaid {
					t.Fatalf("%s: close won but payment = %+v, status %s", no, payRes, chain.Order.Status)
				}
				for _, tk := range chain.Tasks {
					if tk.Status != models.TaskSuperseded && tk.Status != models.TaskDone {
						t.Fatalf("%s: task %s after late payment", no, tk.Status)
					}
				}
			default:
				t.Fatalf("%s: close = %+v, %v", no, closeRes, closeErr)
			}
			if chain.Holds[0].Deducted != 3 {
				t.Fatalf("%s: hold = %+v, want 3 deducted", no, chain.Holds[0])
			}
		}
		b.drain(t, "w1")
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		if sku.Sold != 3*orders || sku.Locked != 0 || sku.Available != 1000-3*orders {
			t.Fatalf("sku = %+v, want %d sold", sku, 3*orders)
		}
		b.assertReconciles(t)
	})
}

// 4. The payment arrives after the release: holds are re-acquired, or the
// order goes to REFUND_PENDING when they cannot be; never back to PENDING.
// sku-2 is a flash-sale SKU whose release comes due only now, so duplicate
// callbacks race a worker that is releasing it.
func TestScenarioLatePaymentAfterRelease(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 5, 60, "test"); return err })
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system:timeout"); err != nil {
			t.Fatal(err)
		}
		if got := b.drain(t, "w1"); got[models.OutcomeDone] != 6 {
			t.Fatalf("first drain = %v, want all but the flash-sale SKU", got)
		}
		b.clock.Advance(time.Minute)
		var wg sync.WaitGroup
		res := make([]models.PayResult, 6)
		errs := make([]error, 7)
		for i := range res {
			wg.Add(1)
			go func() { defer wg.Done(); res[i], errs[i] = b.s.PayOrder(b.ctx, "o-1", "txn-late") }()
		}
		var raced map[string]int
		wg.Add(1)
		go func() { defer wg.Done(); raced, errs[6] = b.drainErr("w2") }()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("goroutine %d: %v", i, err)
			}
		}
		for i := range res {
			if res[i].Status != models.OrderPaid || !res[i].Late {
				t.Fatalf("late pay %d = %+v; want PAID late", i, res[i])
			}
		}
		t.Logf("the racing worker saw %v", raced)
		for sku, want := range map[string]models.SKU{"sku-1": {Available: 8, Sold: 2}, "sku-2": {Available: 4, Sold: 1}} {
			got, _ := b.s.GetSKU(b.ctx, sku)
			if got.Available != want.Available || got.Sold != want.Sold || got.Locked != 0 {
				t.Fatalf("%s = %+v, want %d available %d sold", sku, got, want.Available, want.Sold)
			}
		}
		c, _ := b.s.GetCoupon(b.ctx, cp)
		if c.Status != models.CouponUsed {
			t.Fatalf("coupon = %s, want USED", c.Status)
		}
		counts := b.flowCounts(t, "o-1")
		// Whether the worker released sku-2 before the payment took it over
		// decides its rows; everything else is fixed.
		want := map[string]int{
			"inventory:sku-1/RELEASE/0": 1, "inventory:sku-1/LOCK/1": 1, "inventory:sku-1/DEDUCT/1": 1,
			"inventory:sku-2/DEDUCT/1": 1, "inventory/RELEASE/1": 0,
			"coupon/LOCK/1": 1, "coupon/DEDUCT/1": 1, "slot/LOCK/1": 1, "slot/DEDUCT/1": 1,
			"balance/DEDUCT/1": 1, "points/DEDUCT/1": 1, "quota/DEDUCT/1": 1,
		}
		for k, n := range want {
			if counts[k] != n {
				t.Fatalf("ledger rows %s = %d, want %d (all: %v)", k, counts[k], n, counts)
			}
		}
		if counts["inventory:sku-2/RELEASE/0"] != counts["inventory:sku-2/LOCK/1"] {
			t.Fatalf("sku-2 released %d times but re-acquired %d times", counts["inventory:sku-2/RELEASE/0"], counts["inventory:sku-2/LOCK/1"])
		}
		b.assertReconciles(t)
	})
}

func TestScenarioLatePaymentCannotReacquire(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system:timeout"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w1")
		// Someone else buys the whole of sku-2 before the money arrives.
		other := models.PlaceRequest{OrderNo: "o-2", UserID: "u2", Items: []models.Item{{SkuID: "sku-2", Qty: 5}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, other); err != nil {
			t.Fatal(err)
		}
		res, err := b.s.PayOrder(b.ctx, "o-1", "txn-late")
		if err != nil || res.Status != models.OrderRefundPending {
			t.Fatalf("late pay = %+v, %v; want REFUND_PENDING", res, err)
		}
		again, err := b.s.PayOrder(b.ctx, "o-1", "txn-late")
		if err != nil || again.Status != models.OrderRefundPending {
			t.Fatalf("repeat late pay = %+v, %v", again, err)
		}
		counts := b.flowCounts(t, "o-1")
		// sku-1 was re-acquired and released again; sku-2 could not be.
		if counts["inventory/LOCK/1"] != 1 || counts["inventory/RELEASE/1"] != 1 || counts["inventory/DEDUCT/1"] != 0 {
			t.Fatalf("late-payment ledger rows = %v", counts)
		}
		s1, _ := b.s.GetSKU(b.ctx, "sku-1")
		if s1.Available != 10 || s1.Locked != 0 || s1.Sold != 0 {
			t.Fatalf("sku-1 = %+v, want all available again", s1)
		}
		b.assertReconciles(t)
	})
}

// 5. The same release task is delivered twice: at once to two consumers, and
// again later after it finished.
func TestScenarioDuplicateDelivery(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1"); err != nil {
			t.Fatal(err)
		}
		tasks, err := b.s.ClaimTasks(b.ctx, "w1", 100, time.Minute)
		if err != nil || len(tasks) != 7 {
			t.Fatalf("claim = %d, %v", len(tasks), err)
		}
		var mu sync.Mutex
		outcomes := map[string]int{}
		var wg sync.WaitGroup
		for _, tk := range tasks {
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := b.s.ReleaseTask(b.ctx, tk, "w1")
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					outcomes[r.Outcome]++
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		if outcomes[models.OutcomeDone] != 7 || outcomes[models.OutcomeLeaseLost] != 7 {
			t.Fatalf("outcomes = %v, want 7 DONE and 7 LEASE_LOST", outcomes)
		}
		// A redelivery after DONE: the task row is PENDING again (a stale
		// message), so only the ledger's unique key stands in the way.
		if err := b.s.W.Exec("UPDATE release_tasks SET status = 'PENDING', lease_until = NULL WHERE order_no = 'o-1'").Error; err != nil {
			t.Fatal(err)
		}
		got := b.drain(t, "w2")
		if got[models.OutcomeDuplicate] != 7 {
			t.Fatalf("redelivery outcomes = %v, want 7 DUPLICATE", got)
		}
		releaseCounts(t, b, "o-1")
		b.assertShopRestored(t, cp)
	})
}

// 6. The release committed but the worker died before it heard: the same
// task is run again.
func TestScenarioCrashAfterCommit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1"); err != nil {
			t.Fatal(err)
		}
		tasks, err := b.s.ClaimTasks(b.ctx, "w1", 100, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range tasks {
			if r, err := b.s.ReleaseTask(b.ctx, tk, "w1"); err != nil || r.Outcome != models.OutcomeDone {
				t.Fatalf("first run = %+v, %v", r, err)
			}
		}
		b.clock.Advance(2 * time.Minute) // the lease is long gone
		for _, tk := range tasks {
			if r, err := b.s.ReleaseTask(b.ctx, tk, "w1"); err != nil || r.Outcome != models.OutcomeLeaseLost {
				t.Fatalf("second run = %+v, %v; want LEASE_LOST", r, err)
			}
		}
		if again, _ := b.s.ClaimTasks(b.ctx, "w1", 100, time.Minute); len(again) != 0 {
			t.Fatalf("%d DONE tasks claimed again", len(again))
		}
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops", "check"); !errors.Is(err, models.ErrNothingToRerun) {
			t.Fatalf("rerun of DONE tasks = %v, want ErrNothingToRerun", err)
		}
		releaseCounts(t, b, "o-1")
		b.assertShopRestored(t, cp)
	})
}
