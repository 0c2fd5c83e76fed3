package models_test

import (
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// A late payment after every line of the order was cancelled (which
// closed it, LINE_CANCEL) must not leave the order PAID while it holds no
// goods: a line cancel gives the stock back at once, with no release task,
// so a late payment that took back only what tasks name would buy nothing
// of the lines. Such an order goes REFUND_PENDING: the customer had asked
// for every line to go. (Found by an attack: it answered PAID.)
func TestAttackLifeLatePaymentAfterLineCancel(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-lcp", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lcp", "sku-1", 2, -1, "c-1", "", "user:u1"); err != nil {
			t.Fatal(err)
		}
		res, err := b.s.CancelLine(b.ctx, "o-lcp", "sku-2", 1, -1, "c-2", "", "user:u1")
		if err != nil || res.Status != models.OrderClosed {
			t.Fatalf("cancel of the last line: %+v, %v", res, err)
		}
		b.drain(t, "w1")
		pay, err := b.s.PayOrder(b.ctx, "o-lcp", "txn-late")
		if err != nil {
			t.Fatal(err)
		}
		sku1, sku2 := b.stockOf(t, "sku-1"), b.stockOf(t, "sku-2")
		switch pay.Status {
		case models.OrderPaid:
			// A PAID order must have its goods sold to it.
			if sku1[2] != 2 || sku2[2] != 1 {
				t.Errorf("late payment answered PAID but sku-1 = %v, sku-2 = %v (available, locked, sold): "+
					"the paid order holds none of its goods", sku1, sku2)
			}
		case models.OrderRefundPending:
			if sku1[2] != 0 || sku2[2] != 0 {
				t.Errorf("REFUND_PENDING but goods sold: sku-1 = %v, sku-2 = %v", sku1, sku2)
			}
		default:
			t.Fatalf("late payment answered %s", pay.Status)
		}
		// And the order cannot be shipped: ship answers QTY_EXCEEDED when
		// the defect is present.
		if pay.Status == models.OrderPaid {
			if _, err := b.s.Ship(b.ctx, "o-lcp", "ship-1", lines("sku-1", 1), "wms"); err != nil {
				t.Errorf("ship of a PAID order's line: %v", err)
			}
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A whole refund locks resource rows in the one order every transaction
// uses ((type, key) by bytes: balance < coupon < inventory < points <
// quota < slot): its lines and the order's other holds are moved in one
// pass in that order, so a placement of the same user (balance:u1 before
// inventory:sku-1) and the refund cannot wait on each other in a cycle.
// (Found by an attack: lines first, then the rest, deadlocked, 40P01.)
func TestAttackLifeWholeRefundLockOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, models.Postgres, models.Options{})
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "test"); return err })
	a := models.PlaceRequest{OrderNo: "A", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 100}}}
	if _, _, err := b.s.PlaceOrder(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.PayOrder(b.ctx, "A", "txn-A"); err != nil {
		t.Fatal(err)
	}
	// The refund's inventory row insert sleeps while it holds sku-1.
	slowInsert(t, b.s, "inventory_flows", "A")
	var wg sync.WaitGroup
	var refundErr, placeErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, refundErr = b.s.Refund(b.ctx, "A", "rf-A", nil, "whole", "cs")
	}()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond) // A holds sku-1 and sleeps
		req := models.PlaceRequest{OrderNo: "B", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 100}}}
		_, _, placeErr = b.s.PlaceOrder(b.ctx, req)
	}()
	wg.Wait()
	if refundErr != nil || placeErr != nil {
		t.Fatalf("whole refund of A: %v; placement of B: %v (a deadlock: the refund locks inventory before balance)", refundErr, placeErr)
	}
	b.assertReconciles(t)
}
