package models_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
)

// A transient failure retries on 1s, 5s, 30s, 5m, 30m, 30m...; the 8th
// failure sends the task to MANUAL; a rerun makes it due again and the
// ledger's key still decides.
func TestTransientFailuresRetryThenManual(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var failing atomic.Bool
			failing.Store(true)
			opt := models.Options{Faults: func(point string, _ *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && failing.Load() {
					return &models.TransientError{Class: models.ClassTimeout, Err: errors.New("stock service timed out")}
				}
				return nil
			}}
			b := setup(t, d, opt)
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 4}}}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system"); err != nil {
				t.Fatal(err)
			}
			want := []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute}
			for i := 0; i < models.MaxFailures; i++ {
				tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
				if err != nil || len(tasks) != 1 {
					t.Fatalf("failure %d: claimed %d, %v", i+1, len(tasks), err)
				}
				r, err := b.s.ReleaseTask(b.ctx, tasks[0], "w1")
				if err != nil {
					t.Fatal(err)
				}
				c, _ := b.s.OrderChain(b.ctx, "o-1")
				tk := c.Tasks[0]
				if i < models.MaxFailures-1 {
					if r.Outcome != models.OutcomeRetry || tk.Status != models.TaskRetry || tk.ErrorClass != models.ClassTimeout {
						t.Fatalf("failure %d: %+v, task %s %s", i+1, r, tk.Status, tk.ErrorClass)
					}
					if got := tk.NextAt.Sub(b.clock.Now()); got != want[i] {
						t.Fatalf("failure %d: next try in %s, want %s", i+1, got, want[i])
					}
					if early, _ := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute); len(early) != 0 {
						t.Fatalf("failure %d: task claimed before its next_at", i+1)
					}
					b.clock.Advance(want[i])
				} else if r.Outcome != models.OutcomeManual || tk.Status != models.TaskManual || len(tk.AttemptLog) != models.MaxFailures {
					t.Fatalf("failure %d: %+v, task %s with %d attempts; want MANUAL after 8", i+1, r, tk.Status, len(tk.AttemptLog))
				} else if tk.ErrorClass != models.ClassRetryExhausted || tk.LastErrorClass != models.ClassTimeout ||
					tk.LastError != "TIMEOUT: stock service timed out" || r.Class != models.ClassTimeout {
					t.Fatalf("out of retries: task class %s, last %s %q, result %+v; want RETRY_EXHAUSTED, last TIMEOUT",
						tk.ErrorClass, tk.LastErrorClass, tk.LastError, r)
				}
			}
			sku, _ := b.s.GetSKU(b.ctx, "sku-1")
			if sku.Locked != 4 || sku.Available != 6 {
				t.Fatalf("failed releases changed stock: %+v", sku)
			}
			b.clock.Advance(time.Hour)
			if due, _ := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute); len(due) != 0 {
				t.Fatal("a MANUAL task was claimed")
			}
			failing.Store(false)
			n, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "stock service back")
			if err != nil || n != 1 {
				t.Fatalf("rerun = %d, %v", n, err)
			}
			if got := b.drain(t, "w2"); got[models.OutcomeDone] != 1 {
				t.Fatalf("after rerun: %v, want 1 DONE", got)
			}
			c, _ := b.s.OrderChain(b.ctx, "o-1")
			var rel []models.Flow
			for _, f := range c.Flows {
				if f.Type == models.FlowRelease {
					rel = append(rel, f)
				}
			}
			// The row says which try released it, and whose rerun.
			if len(rel) != 1 || rel[0].Trigger != models.TriggerRerun ||
				rel[0].Actor != "worker:w2 · attempt 9 · rerun by ops:alice: stock service back" {
				t.Fatalf("release rows = %+v, want one by RERUN from w2, its 9th try, after alice's rerun", rel)
			}
			if len(c.Audit) != 1 || c.Audit[0].Actor != "ops:alice" || c.Audit[0].Reason != "stock service back" {
				t.Fatalf("audit = %+v", c.Audit)
			}
			b.assertReconciles(t)
		})
	}
}

// A release that finds less locked than it gives back means the data is
// already wrong: MANUAL at once, LOCKED_SHORT, nothing changed.
func TestLockedShortGoesManualAtOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 4}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		// A hand edit takes the lock away behind the ledger's back.
		must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 1 WHERE sku_id = 'sku-1'").Error })
		got := b.drain(t, "w1")
		if got[models.OutcomeManual] != 1 {
			t.Fatalf("outcomes = %v, want 1 MANUAL", got)
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		if c.Tasks[0].ErrorClass != models.ClassLockedShort || c.Tasks[0].Failures != 1 {
			t.Fatalf("task = %+v, want LOCKED_SHORT after one failure", c.Tasks[0].ReleaseTask)
		}
		for _, f := range c.Flows {
			if f.Type == models.FlowRelease {
				t.Fatalf("a RELEASE row survived the rollback: %+v", f)
			}
		}
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		if sku.Locked != 1 || sku.Available != 6 {
			t.Fatalf("sku = %+v, want untouched 6/1", sku)
		}
		diffs, _ := b.s.Reconcile(b.ctx)
		if len(diffs) == 0 {
			t.Fatal("reconcile did not see the hand edit")
		}
	})
}

// Invariant 1: a release never gives back more than the order holds, even
// when the resource itself has enough locked (by other orders) to allow it.
func TestReleaseNeverExceedsHold(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		for _, no := range []string{"o-1", "o-2"} {
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 3}}}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		must(t, func() error { return b.s.W.Exec("UPDATE release_tasks SET qty = 5 WHERE order_no = 'o-1'").Error })
		got := b.drain(t, "w1")
		if got[models.OutcomeManual] != 1 {
			t.Fatalf("outcomes = %v, want MANUAL", got)
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		if c.Tasks[0].ErrorClass != models.ClassStateMismatch {
			t.Fatalf("class = %s, want STATE_MISMATCH", c.Tasks[0].ErrorClass)
		}
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		if sku.Locked != 6 || sku.Available != 4 {
			t.Fatalf("sku = %+v, want untouched 4/6", sku)
		}
	})
}

// A worker whose lease expired and was taken over cannot complete the task.
func TestExpiredLeaseCannotComplete(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		slow, _ := b.s.ClaimTasks(b.ctx, "slow", 10, 30*time.Second)
		if again, _ := b.s.ClaimTasks(b.ctx, "fast", 10, 30*time.Second); len(again) != 0 {
			t.Fatal("a leased task was claimed twice")
		}
		b.clock.Advance(31 * time.Second)
		fast, _ := b.s.ClaimTasks(b.ctx, "fast", 10, 30*time.Second)
		if len(slow) != 1 || len(fast) != 1 {
			t.Fatalf("claims = %d, %d", len(slow), len(fast))
		}
		if r, _ := b.s.ReleaseTask(b.ctx, slow[0], "slow"); r.Outcome != models.OutcomeLeaseLost {
			t.Fatalf("stale worker = %+v, want LEASE_LOST", r)
		}
		if r, _ := b.s.ReleaseTask(b.ctx, fast[0], "fast"); r.Outcome != models.OutcomeDone {
			t.Fatalf("new owner = %+v, want DONE", r)
		}
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		if sku.Available != 10 || sku.Locked != 0 {
			t.Fatalf("sku = %+v", sku)
		}
	})
}

// Flash-sale SKUs release after their delay; other holds at once.
func TestReleaseDelay(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "flash", 10, 180, "test"); return err })
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "plain", 10, 0, "test"); return err })
		req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "flash", Qty: 1}, {SkuID: "plain", Qty: 1}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
			t.Fatalf("immediately: %v, want only the plain SKU", got)
		}
		b.clock.Advance(179 * time.Second)
		if got := b.drain(t, "w1"); len(got) != 0 {
			t.Fatalf("at 179s: %v, want nothing due", got)
		}
		b.clock.Advance(time.Second)
		if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
			t.Fatalf("at 180s: %v, want the flash SKU", got)
		}
	})
}

func TestRerunRefusals(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResCoupon, "ops", "x"); !errors.Is(err, models.ErrNothingToRerun) {
			t.Fatalf("rerun of a PENDING order = %v", err)
		}
		if _, err := b.s.Rerun(b.ctx, "nope", models.ResCoupon, "ops", "x"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("rerun of an unknown order = %v", err)
		}
		if _, err := b.s.Rerun(b.ctx, "o-1", "stock", "ops", "x"); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("rerun of an unknown type = %v", err)
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		if len(c.Audit) != 1 || c.Audit[0].Outcome != "refused" {
			t.Fatalf("audit = %+v, want one refused entry", c.Audit)
		}
	})
}

// Several workers claiming at once never get the same task: on PostgreSQL
// through FOR UPDATE SKIP LOCKED, on SQLite through the single writer.
func TestConcurrentClaimsNeverOverlap(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		// 60: claims without SKIP LOCKED took a task twice in 6 runs of 6
		// (with 30, in 4 of 5).
		const orders = 60
		for i := range orders {
			no := fmt.Sprintf("o-%d", i)
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system"); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		claimed := map[int64]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("w%d", w)
				for {
					tasks, err := b.s.ClaimTasks(b.ctx, name, 7, time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					if len(tasks) == 0 {
						return
					}
					for _, tk := range tasks {
						mu.Lock()
						if prev, ok := claimed[tk.ID]; ok {
							t.Errorf("task %d claimed by %s and %s", tk.ID, prev, name)
						}
						claimed[tk.ID] = name
						mu.Unlock()
						if r, err := b.s.ReleaseTask(b.ctx, tk, name); err != nil || r.Outcome != models.OutcomeDone {
							t.Errorf("release %d = %+v, %v", tk.ID, r, err)
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(claimed) != orders {
			t.Fatalf("%d tasks claimed, want %d", len(claimed), orders)
		}
		b.assertReconciles(t)
	})
}
