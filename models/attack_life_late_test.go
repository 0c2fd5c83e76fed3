package models_test

import (
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// A late payment (after a partial line cancel, a timeout close and the
// worker's releases) followed by a whole refund: the refund's epoch must
// not collide with the late payment's (1), the stock must end where it
// began, and reconciliation must find nothing (no phantom LINE_HELD or
// LINE_AFTER_SALE). Breaks if a later operation reused epoch 1, or if the
// late payment's re-lock left a line's counters apart from its rows.
func TestAttackLifeLatePaymentThenWholeRefund(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-late", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-late", "sku-1", 1, -1, "c-1", "", "user:u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-late", models.TriggerTimeout, "system"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w1")
		pay, err := b.s.PayOrder(b.ctx, "o-late", "txn-late")
		if err != nil || pay.Status != models.OrderPaid {
			t.Fatalf("late payment: %+v, %v", pay, err)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 0, 1} {
			t.Fatalf("sku-1 after the late payment = %v, want the one line unit not cancelled sold", got)
		}
		res, err := b.s.Refund(b.ctx, "o-late", "rf-late", nil, "late money back", "cs")
		if err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("whole refund of the late-paid order: %+v, %v", res, err)
		}
		if res.Epoch <= 1 {
			t.Fatalf("refund took epoch %d, the late payment's is 1", res.Epoch)
		}
		for sku, want := range map[string][3]int64{"sku-1": {10, 0, 0}, "sku-2": {5, 0, 0}} {
			if got := b.stockOf(t, sku); got != want {
				t.Errorf("%s at the end = %v, want %v", sku, got, want)
			}
		}
		diffs, err := b.s.Reconcile(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range diffs {
			t.Errorf("reconciliation after late payment and whole refund: %+v", d)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}
