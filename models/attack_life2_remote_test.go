package models_test

import (
	"fmt"
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// An order with a gift card (a remote type) given back whole, by a whole
// refund or by the inbound of its last return, in two orders of events:
// the worker deducted the card before, or the card's DEDUCT task was
// still due and the worker ran it after. The card stays with its service
// (its protocol has no refund): docs/order-life.md says the answer's note
// names it, in every case. Reconciliation must find nothing once the
// worker is done.
//
// Fails (deduct after): giveBack names a remote hold only when its
// deducted - refunded > 0; while the DEDUCT task is due the hold's
// deducted is still 0, so the note is empty, the order reads REFUNDED or
// RETURNED, and the worker then takes the card at the service.
// Fails (every case, the checker): modelstest.CheckInvariants wants a
// REFUNDED or RETURNED order's every hold refunded, a kept remote hold
// included.
func TestAttackLife2WholeWithRemote(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		for _, whole := range []string{"refund", "return"} {
			for _, workerFirst := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/worker-first=%v", d, whole, workerFirst), func(t *testing.T) {
					t.Parallel()
					wholeWithRemote(t, d, whole, workerFirst)
				})
			}
		}
	}
}

func wholeWithRemote(t *testing.T, d models.Dialect, whole string, workerFirst bool) {
	b := mixedStore(t, d, nil)
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	b.svc.SetAvailable("GC-1", 5)
	if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-gc", UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, Holds: []models.HoldRequest{{Type: giftCard, Key: "GC-1", Qty: 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.PayOrder(b.ctx, "o-gc", "txn-gc"); err != nil {
		t.Fatal(err)
	}
	if workerFirst {
		b.drain(t, "w")
	}
	var res models.LifeResult
	var err error
	if whole == "refund" {
		res, err = b.s.Refund(b.ctx, "o-gc", "rf-gc", nil, "", "cs")
		if err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("whole refund: %+v, %v; want REFUNDED", res, err)
		}
	} else {
		if _, err := b.s.Ship(b.ctx, "o-gc", "s-gc", lines("sku-1", 1), "wms"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Return(b.ctx, "o-gc", "r-gc", lines("sku-1", 1), "", "cs"); err != nil {
			t.Fatal(err)
		}
		res, err = b.s.Inbound(b.ctx, "r-gc", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
		if err != nil || res.Status != models.OrderReturned {
			t.Fatalf("inbound: %+v, %v; want RETURNED", res, err)
		}
	}
	if !strings.Contains(res.Note, "GC-1") {
		t.Errorf("the %s that gave the order back whole says %q: it does not name the gift card its service keeps", whole, res.Note)
	}
	b.drain(t, "w")
	if st := b.svc.Stock("GC-1"); st.Spent != 2 {
		t.Errorf("GC-1 at the service: %+v, want the 2 taken", st)
	}
	diffs, err := b.s.Reconcile(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range diffs {
		t.Errorf("reconciliation: %+v", df)
	}
	modelstest.CheckInvariants(t, b.s)
}
