package models_test

import (
	"testing"

	"unhold/models"
)

// chainRecon places o-1 holding 2 of sku-1, runs plant, reconciles the
// shop (opening tickets) and answers what the order's chain says.
func chainRecon(t *testing.T, b bundle, plant string) models.ChainRecon {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error {
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}})
		return err
	})
	must(t, func() error { return b.s.W.Exec(plant).Error })
	must(t, func() error { _, err := b.s.RunReconciliation(b.ctx, "test", "test"); return err })
	ch, diffs, err := b.s.OrderChainReconciled(b.ctx, "o-1")
	if err != nil {
		t.Fatal(err)
	}
	tickets, err := b.s.OpenTickets(b.ctx, []models.ResourceKey{{Type: models.ResInventory, Key: "sku-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tickets) == 0 {
		t.Fatal("the reconciliation opened no ticket for sku-1")
	}
	return models.ReconcileChain(ch, diffs, tickets)
}

// A SKU-wide diff (its locked count edited by hand) with its open ticket
// is a note on the chain, not this order's failure: its own rows agree.
func TestChainKeyDiffIsNotTheOrders(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		r := chainRecon(t, b, "UPDATE inventory SET locked = locked + 3 WHERE sku_id = 'sku-1'")
		if !r.Reconciles || len(r.Own) != 0 {
			t.Fatalf("reconciles %v, own %+v: the order's own rows agree", r.Reconciles, r.Own)
		}
		var ticket bool
		for _, n := range r.Keys {
			ticket = ticket || (n.Key == "sku-1" && n.Ticket != 0)
		}
		if !ticket {
			t.Errorf("key notes %+v, want sku-1's open ticket", r.Keys)
		}
	})
}

// An order whose hold was edited by hand disagrees with its own ledger
// rows: the chain says it does not reconcile, on its LINE_HELD, and what
// the key's reconciliation finds is the order's too, not a note.
func TestChainOwnDiff(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		r := chainRecon(t, b, "UPDATE order_holds SET released = 1 WHERE order_no = 'o-1'")
		want := models.Diff{Resource: models.ResInventory, Key: "sku-1", Check: models.CheckLineHeld, Expected: 2, Actual: 1}
		if r.Reconciles || len(r.Own) == 0 || r.Own[0].Diff != want || r.Own[0].Ticket == 0 {
			t.Fatalf("reconciles %v, own %+v, want %+v with the key's ticket first", r.Reconciles, r.Own, want)
		}
		if len(r.Keys) != 0 {
			t.Errorf("key notes %+v: the key's trouble may be the order's own", r.Keys)
		}
	})
}
