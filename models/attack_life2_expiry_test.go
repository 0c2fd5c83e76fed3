package models_test

import (
	"testing"
	"time"

	"unhold/models"
)

// The coupon of an order given back whole after the coupon expired: a
// whole refund and a whole return treat it alike (the coupon expiry
// policy, as a release would), and reconciliation finds nothing. Breaks if
// a return gave back a coupon past its expiry as UNUSED while a refund
// expires it, or if either broke the coupon's ledger.
func TestAttackLife2WholeBackAfterCouponExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-rf", cp)
		cp2 := b.newCoupon(t)
		req := fullOrder("o-rt", cp2)
		req.SlotID = "seat-2"
		must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, "seat-2", "test"); return err })
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.PayOrder(b.ctx, "o-rt", "txn-rt"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Ship(b.ctx, "o-rt", "s-rt", lines("sku-1", 2, "sku-2", 1), "wms"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Return(b.ctx, "o-rt", "r-rt", lines("sku-1", 2, "sku-2", 1), "", "cs"); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(72 * time.Hour)
		if res, err := b.s.Refund(b.ctx, "o-rf", "rf-rf", nil, "", "cs"); err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("whole refund: %+v, %v", res, err)
		}
		if res, err := b.s.Inbound(b.ctx, "r-rt", []models.LineQty{inbound("sku-1", 2, true), inbound("sku-2", 1, true)}, "wms"); err != nil ||
			res.Status != models.OrderReturned {
			t.Fatalf("whole return: %+v, %v", res, err)
		}
		c1, err := b.s.GetCoupon(b.ctx, cp)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := b.s.GetCoupon(b.ctx, cp2)
		if err != nil {
			t.Fatal(err)
		}
		if c1.Status != c2.Status || c1.Status == models.CouponUsed {
			t.Fatalf("coupon after a whole refund past expiry %s, after a whole return %s: want the same, not USED", c1.Status, c2.Status)
		}
		if bal, pts := b.account(t); bal != [2]int64{1000, 0} || pts != [2]int64{500, 0} {
			t.Fatalf("balance %v, points %v, want all back", bal, pts)
		}
		b.reconcileQuiet(t, "after whole refund and return past the coupon's expiry")
	})
}
