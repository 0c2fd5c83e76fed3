package models_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"unhold/models"
)

// An order's rerun checks for approval the tasks it locked, and makes due
// those tasks only: a task of the same order and type that a worker sends
// to MANUAL between the check and the update (PostgreSQL reads each
// statement afresh) is not made due behind the approval's back. The
// worker's commit is put in that window by a hook on the update, a
// second writer beside the rerun's (-pg-writers 2, or another instance);
// SQLite has one writer, so no commit can land there.
func TestRerunOrderMakesDueOnlyWhatItChecked(t *testing.T) {
	t.Parallel()
	// Two write turns: the worker's commit in the window stands for
	// another instance's.
	b := setup(t, models.Postgres, models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}},
		ApprovalTypes: []models.ResourceType{"gift_wrap"}, ApprovalThreshold: 3, Writers: 2})
	must(t, func() error { _, err := b.s.SetDeclared(b.ctx, "gift_wrap", "red", 10, "test"); return err })
	must(t, func() error { _, err := b.s.SetDeclared(b.ctx, "gift_wrap", "blue", 10, "test"); return err })
	req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
		Holds: []models.HoldRequest{{Type: "gift_wrap", Key: "red", Qty: 1}, {Type: "gift_wrap", Key: "blue", Qty: 5}}}
	if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system"); err != nil {
		t.Fatal(err)
	}
	// red (1, under the threshold) is MANUAL; blue (5, needs approval) is
	// still PENDING when the rerun locks and checks.
	must(t, func() error {
		return b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'NOT_FOUND', failures = 1
			WHERE order_no = 'o-1' AND biz_key = 'red'`).Error
	})
	var once sync.Once
	var hookErr error
	err := b.s.W.Callback().Raw().Before("gorm:raw").Register("attack:worker_in_window", func(tx *gorm.DB) {
		if !strings.Contains(tx.Statement.SQL.String(), "UPDATE release_tasks SET status = 'PENDING'") {
			return
		}
		once.Do(func() {
			hookErr = b.s.W.Session(&gorm.Session{NewDB: true}).Exec(`UPDATE release_tasks SET status = 'MANUAL',
				error_class = 'NOT_FOUND', failures = 1 WHERE order_no = 'o-1' AND biz_key = 'blue'`).Error
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.s.Rerun(b.ctx, "o-1", "gift_wrap", "ops", "red was fixed by hand")
	if hookErr != nil {
		t.Fatal(hookErr)
	}
	if err != nil && !errors.Is(err, models.ErrNeedsApproval) {
		t.Fatal(err)
	}
	var blue models.ReleaseTask
	must(t, func() error { return b.s.R.Where("order_no = 'o-1' AND biz_key = 'blue'").Take(&blue).Error })
	if blue.Status != models.TaskManual || blue.Trigger == models.TriggerRerun {
		t.Fatalf("blue, which needs approval, is %s by %s after a rerun that made %d task(s) due", blue.Status, blue.Trigger, n)
	}
}
