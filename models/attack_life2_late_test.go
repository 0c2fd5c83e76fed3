package models_test

import (
	"testing"

	"unhold/models"
)

// A late payment of an order (every kind of hold, a line deducted at
// payment cancelled in part before the timeout) that finds the line's
// stock gone: the order goes REFUND_PENDING, nothing of the line is taken,
// what the tasks gave back stays given back (LOCK and RELEASE under the
// late payment's epoch), and reconciliation finds nothing; the refund of
// the money then records REFUNDED and moves nothing. The same order with
// the stock there is PAID with only what was left ordered taken, and a
// whole refund gives back the rest once. Breaks if the line's take
// survived the refused late payment, or if the other holds came back
// twice.
func TestAttackLife2LatePaymentStockGone(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		payModelSKU(t, b, "sku-p", 2)
		run := func(no string, cp int64) {
			t.Helper()
			req := fullOrder(no, cp)
			req.Items = append(req.Items, models.Item{SkuID: "sku-p", Qty: 2})
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.CancelLine(b.ctx, no, "sku-p", 1, -1, "c-"+no, "", "user:u1"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "job"); err != nil {
				t.Fatal(err)
			}
			b.drain(t, "w")
			b.othersBack(t, cp, true)
		}
		run("o-g1", cp)
		payModelSKU(t, b, "sku-p", 0)
		rows := ledgerRows(t, b)
		pr, err := b.s.PayOrder(b.ctx, "o-g1", "txn-g1")
		if err != nil || pr.Status != models.OrderRefundPending {
			t.Fatalf("late payment with sku-p gone: %+v, %v; want REFUND_PENDING", pr, err)
		}
		b.othersBack(t, cp, true)
		if got := b.stockOf(t, "sku-p"); got != [3]int64{0, 0, 0} {
			t.Fatalf("sku-p = %v, want untouched", got)
		}
		c, err := b.s.OrderChain(b.ctx, "o-g1")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range c.Holds {
			if h.BizKey == "sku-p" && (h.Qty != 0 || h.Ordered != 1 || h.Deducted != 0) {
				t.Fatalf("sku-p line after the refused late payment: %+v", h)
			}
		}
		// Seven holds went back through tasks: each taken back and given
		// back again, two rows each; the line wrote nothing.
		if got := ledgerRows(t, b) - rows; got != 14 {
			t.Fatalf("the refused late payment wrote %d rows, want 14", got)
		}
		b.reconcileQuiet(t, "after a late payment that found the stock gone")
		res, err := b.s.Refund(b.ctx, "o-g1", "rf-g1", nil, "", "cs")
		if err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("refund of the REFUND_PENDING order: %+v, %v", res, err)
		}
		b.othersBack(t, cp, true)
		b.reconcileQuiet(t, "after the refund of the money")

		payModelSKU(t, b, "sku-p", 2)
		cp2 := b.newCoupon(t)
		run("o-g2", cp2)
		pr, err = b.s.PayOrder(b.ctx, "o-g2", "txn-g2")
		if err != nil || pr.Status != models.OrderPaid {
			t.Fatalf("late payment: %+v, %v; want PAID", pr, err)
		}
		b.othersBack(t, cp2, false)
		if got := b.stockOf(t, "sku-p"); got != [3]int64{1, 0, 1} {
			t.Fatalf("sku-p = %v, want the one left ordered sold", got)
		}
		if res, err := b.s.Refund(b.ctx, "o-g2", "rf-g2", nil, "", "cs"); err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("whole refund: %+v, %v", res, err)
		}
		b.othersBack(t, cp2, true)
		if got := b.stockOf(t, "sku-p"); got != [3]int64{2, 0, 0} {
			t.Fatalf("sku-p = %v, want all back", got)
		}
		b.reconcileQuiet(t, "after the late-paid order's whole refund")
	})
}
