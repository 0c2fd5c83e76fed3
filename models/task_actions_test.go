package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"unhold/models"
)

// manualTask closes order no holding qty of sku-1 and puts its task in
// status st by hand, as a failed release would; it returns the task's id.
func (b bundle) manualTask(t *testing.T, no string, qty int64, st models.TaskStatus) int64 {
	t.Helper()
	b.closedOrder(t, no, qty)
	must(t, func() error {
		return b.s.W.Exec(`UPDATE release_tasks SET status = ?, error_class = 'NOT_FOUND', failures = 1, last_error = 'gone'
			WHERE order_no = ?`, st, no).Error
	})
	return b.task(t, no).ID
}

// auditOf reads the audit rows of one target, oldest first.
func (b bundle) auditOf(t *testing.T, target string) []models.AuditEntry {
	t.Helper()
	var out []models.AuditEntry
	must(t, func() error { return b.s.R.Where("target = ?", target).Order("id").Find(&out).Error })
	return out
}

// Rerunning one task makes it, and nothing else, due now, audited on the
// task; a task in another status is NOTHING_TO_RERUN and changes nothing
// but a refused audit row; a missing one is NOT_FOUND.
func TestRerunTask(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		id := b.manualTask(t, "o-1", 2, models.TaskManual)
		other := b.manualTask(t, "o-2", 1, models.TaskManual)
		if err := b.s.RerunTask(b.ctx, id, "ops:a", "  "); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("empty reason: %v, want ErrInvalid", err)
		}
		b.clock.Advance(time.Minute)
		if err := b.s.RerunTask(b.ctx, id, "ops:a", " sku back "); err != nil {
			t.Fatal(err)
		}
		tk := b.task(t, "o-1")
		if tk.Status != models.TaskPending || !tk.NextAt.Equal(b.clock.Now()) || tk.Failures != 0 || tk.Trigger != models.TriggerRerun ||
			tk.RerunBy != "ops:a" || tk.RerunReason != "sku back" {
			t.Fatalf("task after rerun: %+v", tk.ReleaseTask)
		}
		if o := b.task(t, "o-2"); o.Status != models.TaskManual {
			t.Fatalf("the other task is %s, want MANUAL", o.Status)
		}
		audit := b.auditOf(t, fmt.Sprintf("task:%d", id))
		if len(audit) != 1 || audit[0].Action != "rerun" || audit[0].Outcome != "ok" || audit[0].Reason != "sku back" ||
			audit[0].Detail != "1 task(s) made due" {
			t.Fatalf("audit = %+v", audit)
		}
		// Again: it is PENDING now.
		before := b.allTasks(t)
		if err := b.s.RerunTask(b.ctx, id, "ops:a", "again"); !errors.Is(err, models.ErrNothingToRerun) {
			t.Fatalf("second rerun: %v, want ErrNothingToRerun", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused rerun changed tasks")
		}
		audit = b.auditOf(t, fmt.Sprintf("task:%d", id))
		if len(audit) != 2 || audit[1].Outcome != "refused" || audit[1].Detail != fmt.Sprintf("nothing to rerun: #%d PENDING", id) {
			t.Fatalf("audit after refusal = %+v", audit)
		}
		if err := b.s.RerunTask(b.ctx, other+100, "ops:a", "x"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("missing task: %v, want ErrNotFound", err)
		}
		hist, err := b.s.TaskHistory(b.ctx, id)
		if err != nil || len(hist) != 2 {
			t.Fatalf("history = %v, %v", hist, err)
		}
	})
}

// A rerun by ids compares sets: it makes due the ticked tasks still RETRY
// or MANUAL and names the ones that changed; a task the filter does not
// list refuses the whole rerun.
func TestRerunTasksComparesSets(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		a := b.manualTask(t, "o-1", 1, models.TaskManual)
		r := b.manualTask(t, "o-2", 1, models.TaskRetry)
		d := b.manualTask(t, "o-3", 1, models.TaskDone)
		f := models.TaskFilter{Type: models.ResInventory, Statuses: []models.TaskStatus{models.TaskManual, models.TaskRetry}}
		before := b.allTasks(t)
		for _, bad := range [][]int64{nil, {0}, {a, -1}} {
			if _, err := b.s.RerunTasks(b.ctx, f, bad, "ops:a", "r"); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("ids %v: %v, want ErrInvalid", bad, err)
			}
		}
		if _, err := b.s.RerunTasks(b.ctx, models.TaskFilter{Type: models.ResCoupon}, []int64{a}, "ops:a", "r"); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("a task of another type: %v, want ErrInvalid", err)
		}
		if _, err := b.s.RerunTasks(b.ctx, f, []int64{a, d + 50}, "ops:a", "r"); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("a missing task: %v, want ErrNotFound", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused rerun changed tasks")
		}
		got, err := b.s.RerunTasks(b.ctx, f, []int64{d, r, a, a}, "ops:a", "fixed")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Made, []int64{a, r}) || len(got.Changed) != 1 || got.Changed[0].ID != d ||
			got.Changed[0].Status != models.TaskDone {
			t.Fatalf("rerun = %+v", got)
		}
		for _, no := range []string{"o-1", "o-2"} {
			if tk := b.task(t, no); tk.Status != models.TaskPending || tk.RerunReason != "fixed" {
				t.Errorf("%s after rerun: %+v", no, tk.ReleaseTask)
			}
		}
		audit := b.auditOf(t, "tasks:inventory?status=MANUAL&status=RETRY")
		if len(audit) != 1 || audit[0].Action != "bulk_rerun" || audit[0].Detail != "2 task(s) made due" {
			t.Fatalf("audit = %+v", audit)
		}
		// The same ids again: all changed; refused, named.
		if got, err := b.s.RerunTasks(b.ctx, f, []int64{a, r}, "ops:a", "fixed"); !errors.Is(err, models.ErrNothingToRerun) || len(got.Changed) != 2 {
			t.Fatalf("double submit = %+v, %v; want ErrNothingToRerun naming both", got, err)
		}
	})
}

// A per-task rerun racing a worker's claim of the same RETRY task: either
// order is fine, and the task is released exactly once.
func TestRerunTaskRacesWorkerClaim(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		const n = 12
		for i := range n {
			no := fmt.Sprintf("o-%d", i)
			id := b.manualTask(t, no, 2, models.TaskRetry)
			var wg sync.WaitGroup
			var rerunErr, drainErr error
			wg.Add(2)
			go func() {
				defer wg.Done()
				rerunErr = b.s.RerunTask(b.ctx, id, "ops:a", "race")
			}()
			go func() {
				defer wg.Done()
				_, drainErr = b.drainErr("w1")
			}()
			wg.Wait()
			if drainErr != nil {
				t.Fatal(drainErr)
			}
			if rerunErr != nil && !errors.Is(rerunErr, models.ErrNothingToRerun) {
				t.Fatalf("rerun: %v", rerunErr)
			}
			b.drain(t, "w2") // what the rerun made due after the first drain
			if tk := b.task(t, no); tk.Status != models.TaskDone {
				t.Fatalf("%s: task %s, want DONE", no, tk.Status)
			}
			var rows int64
			must(t, func() error {
				return b.s.R.Table("inventory_flows").Where("order_no = ? AND type = 'RELEASE'", no).Count(&rows).Error
			})
			if rows != 1 {
				t.Fatalf("%s: %d RELEASE rows, want 1", no, rows)
			}
		}
		sku, err := b.s.GetSKU(b.ctx, "sku-1")
		if err != nil || sku.Locked != 0 || sku.Available != 1000 {
			t.Fatalf("sku after the races = %+v, %v; want 1000 available, 0 locked", sku, err)
		}
	})
}

// An admin abandons a task that can never succeed: it ends ABANDONED,
// nothing is released, the audit says who and why, no worker takes it,
// and reconciliation opens a ticket for what it left held, naming its order.
func TestAbandonTask(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		id := b.manualTask(t, "o-1", 2, models.TaskManual)
		if d, err := b.s.Reconcile(b.ctx); err != nil || len(d) != 0 {
			t.Fatalf("before: diffs %+v, %v; want none (the MANUAL task is expected to hold)", d, err)
		}
		if err := b.s.AbandonTask(b.ctx, id, "admin:a", " "); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("no reason: %v, want ErrInvalid", err)
		}
		if err := b.s.AbandonTask(b.ctx, id, "admin:a", "sku-1 settled by hand in the warehouse"); err != nil {
			t.Fatal(err)
		}
		tk := b.task(t, "o-1")
		if tk.Status != models.TaskAbandoned || tk.DoneAt != nil {
			t.Fatalf("task = %+v", tk.ReleaseTask)
		}
		sku, err := b.s.GetSKU(b.ctx, "sku-1")
		if err != nil || sku.Locked != 2 {
			t.Fatalf("sku = %+v, %v; want 2 still locked", sku, err)
		}
		audit := b.auditOf(t, fmt.Sprintf("task:%d", id))
		if len(audit) != 1 || audit[0].Action != "abandon_task" || audit[0].Actor != "admin:a" || audit[0].Outcome != "ok" ||
			audit[0].Reason != "sku-1 settled by hand in the warehouse" || audit[0].Detail != "was MANUAL; nothing released" {
			t.Fatalf("audit = %+v", audit)
		}
		if got := b.drain(t, "w1"); len(got) != 0 {
			t.Fatalf("a worker took an abandoned task: %v", got)
		}
		// Again, or a task a worker holds: refused, audited, nothing changed.
		if err := b.s.AbandonTask(b.ctx, id, "admin:a", "again"); !errors.Is(err, models.ErrTaskNotAbandonable) {
			t.Fatalf("abandon again: %v, want ErrTaskNotAbandonable", err)
		}
		leased := b.manualTask(t, "o-2", 1, models.TaskRetry)
		if got, err := b.s.ClaimTasks(b.ctx, "w1", 10, testLease); err != nil || len(got) != 1 {
			t.Fatalf("claim = %v, %v", got, err)
		}
		before := b.allTasks(t)
		if err := b.s.AbandonTask(b.ctx, leased, "admin:a", "x"); !errors.Is(err, models.ErrTaskNotAbandonable) {
			t.Fatalf("abandon a leased task: %v, want ErrTaskNotAbandonable", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused abandon changed tasks")
		}
		if a := b.auditOf(t, fmt.Sprintf("task:%d", leased)); len(a) != 1 || a[0].Outcome != "refused" {
			t.Fatalf("audit of the refused abandon = %+v", a)
		}
		b.drain(t, "w1")
		b.clock.Advance(testLease)
		b.drain(t, "w1")
		// Reconciliation: the key holds 2 more than anything expects.
		run, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil {
			t.Fatal(err)
		}
		tickets, err := b.s.OpenedTickets(b.ctx, run)
		if err != nil || len(tickets) != 1 {
			t.Fatalf("tickets = %+v, %v; want one for sku-1", tickets, err)
		}
		tt := tickets[0]
		if tt.ResourceType != models.ResInventory || tt.BizKey != "sku-1" || tt.Actual-tt.Expected != 2 || tt.Orders != "o-1,o-2" {
			t.Fatalf("ticket = %+v; want sku-1 held 2 above expected, naming o-1 (abandoned) and o-2 (still retrying)", tt)
		}
	})
}
