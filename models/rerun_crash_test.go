package models_test

import (
	"testing"

	"unhold/models"
)

// A try whose worker died before an operator's rerun belongs to the budget
// before the rerun: when the lease has already expired at the rerun, the
// lost try is counted first (its attempt row carries no rerun note, since
// the rerun came after the try began), and the rerun then makes the task
// due now with a fresh failure budget. Counted only afterwards, the old
// crash eats the first of the rerun's eight tries, is shown as a try made
// after the rerun, and defers the task the operator made due.
func TestRerunAfterExpiredLeaseCountsCrashFirst(t *testing.T) {
	rerunAfterExpiredLease(t, func(t *testing.T, b bundle) (int64, error) {
		return b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "stock service back")
	})
}

// The bulk rerun of ticked tasks likewise counts a lost try before it
// resets the budget.
func TestBulkRerunAfterExpiredLeaseCountsCrashFirst(t *testing.T) {
	rerunAfterExpiredLease(t, func(t *testing.T, b bundle) (int64, error) {
		f := models.TaskFilter{Statuses: []models.TaskStatus{models.TaskRetry, models.TaskManual}, Type: models.ResInventory}
		r, err := b.s.RerunTasks(b.ctx, f, []int64{b.task(t, "o-1").ID}, "ops:alice", "stock service back")
		return int64(len(r.Made)), err
	})
}

func rerunAfterExpiredLease(t *testing.T, rerun func(t *testing.T, b bundle) (int64, error)) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = 'RETRY', failures = 3, error_class = 'TIMEOUT'").Error
		})
		if got, _ := b.s.ClaimTasks(b.ctx, "w-dead", 10, testLease); len(got) != 1 {
			t.Fatalf("claimed %d, want 1", len(got))
		}
		// The worker is killed; its lease runs out before anything counts it.
		b.clock.Advance(testLease)
		if n, err := rerun(t, b); err != nil || n != 1 {
			t.Fatalf("rerun = %d, %v", n, err)
		}
		got, err := b.s.ClaimTasks(b.ctx, "w2", 10, testLease)
		if err != nil || len(got) != 1 {
			t.Errorf("claim right after the rerun = %d, %v; want the task the rerun made due", len(got), err)
		}
		tk := b.task(t, "o-1")
		if tk.Failures != 0 || tk.Trigger != models.TriggerRerun {
			t.Errorf("task after the rerun = failures %d, trigger %s, status %s; want 0 failures since the rerun, trigger RERUN",
				tk.Failures, tk.Trigger, tk.Status)
		}
		if len(tk.AttemptLog) != 1 || tk.AttemptLog[0].ErrorClass != models.ClassCrashed || tk.AttemptLog[0].Note != "" {
			t.Fatalf("attempts = %+v, want the lost try as one CRASHED attempt made before the rerun (no rerun note)", tk.AttemptLog)
		}
	})
}
