package models_test

import (
	"testing"

	"unhold/models"
)

// A late payment of an order whose release task an admin abandoned: the
// hold was never released (ABANDONED releases nothing). The defence holds:
// the payment is answered (not refused for good), the order goes
// REFUND_PENDING, nothing is sold, and the refund that follows leaves the
// stock as the abandon left it (2 locked, for the reconciliation ticket
// the abandon opens). Low-severity finding, not asserted: the order's note
// says "task N changed under the late payment", which blames a race; it
// could name the abandon (payLate could check t.Status == TaskAbandoned).
func TestAttackLifeLatePaymentOfAbandonedTask(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		id := b.manualTask(t, "o-ab", 2, models.TaskManual)
		if err := b.s.AbandonTask(b.ctx, id, "admin:a", "settled by hand"); err != nil {
			t.Fatal(err)
		}
		pay, err := b.s.PayOrder(b.ctx, "o-ab", "txn-late")
		if err != nil {
			t.Fatalf("late payment of an order with an abandoned task: %v", err)
		}
		t.Logf("late payment: %+v", pay)
		if pay.Status != models.OrderRefundPending {
			t.Fatalf("late payment answered %s, want REFUND_PENDING (an abandoned task's hold cannot be trusted)", pay.Status)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{8, 2, 0} {
			t.Fatalf("sku-1 = %v, want as the abandon left it: 8 available, 2 locked", got)
		}
		res, err := b.s.Refund(b.ctx, "o-ab", "rf-ab", nil, "money back", "cs")
		if err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("refund of the REFUND_PENDING order: %+v, %v", res, err)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{8, 2, 0} {
			t.Fatalf("sku-1 after the refund = %v", got)
		}
	})
}
