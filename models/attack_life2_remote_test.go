package models_test

import (
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// An order with a gift card (a remote type) given back whole through a
// return, in two orders of events: (a) the worker deducted the card before
// the inbound; (b) the inbound came while the card's DEDUCT task was still
// due, and the worker ran it after. The card stays with its service (it
// takes no refund): the inbound's answer must name it in both cases, and
// reconciliation must find nothing once the worker is done. Breaks if the
// note forgot a card whose deduction was still on its way (the order reads
// RETURNED while the service goes on to take the card), or if a RETURNED
// order's kept remote hold were counted as a difference.
func TestAttackLife2WholeReturnWithRemote(t *testing.T) {
	for _, d := range modelstest.Engines {
		for _, workerFirst := range []bool{true, false} {
			name := string(d) + "/deduct-before-inbound"
			if !workerFirst {
				name = string(d) + "/deduct-after-inbound"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
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
				for _, st := range []func() (models.LifeResult, error){
					func() (models.LifeResult, error) { return b.s.Ship(b.ctx, "o-gc", "s-gc", lines("sku-1", 1), "wms") },
					func() (models.LifeResult, error) {
						return b.s.Return(b.ctx, "o-gc", "r-gc", lines("sku-1", 1), "", "cs")
					},
				} {
					if _, err := st(); err != nil {
						t.Fatal(err)
					}
				}
				if c, err := b.s.OrderChain(b.ctx, "o-gc"); err == nil {
					t.Logf("before the inbound: holds %+v", c.Holds)
				}
				res, err := b.s.Inbound(b.ctx, "r-gc", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
				if err != nil || res.Status != models.OrderReturned {
					t.Fatalf("inbound: %+v, %v; want RETURNED", res, err)
				}
				if !strings.Contains(res.Note, "GC-1") {
					t.Errorf("the inbound that gave the order back whole says %q: it does not name the gift card its service keeps", res.Note)
				}
				b.drain(t, "w")
				t.Logf("GC-1 at the service: %+v", b.svc.Stock("GC-1"))
				diffs, err := b.s.Reconcile(b.ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, df := range diffs {
					t.Errorf("reconciliation: %+v", df)
				}
				modelstest.CheckInvariants(t, b.s)
			})
		}
	}
}
