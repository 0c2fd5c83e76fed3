package models_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// Two Stores on one PostgreSQL database (two instances of the service)
// drive the lives of several paid orders of different users at once:
// ships, partial and whole refunds, returns and inbounds, each sent by
// whichever instance, while pending orders on the same SKUs are paid,
// line-cancelled and closed. Every call may be refused with a domain
// error (models.Error: the unit went elsewhere first), but none may fail
// otherwise (a deadlock, a CHECK violation, a duplicate ledger key), and
// afterwards the invariant checker and reconciliation must be clean.
// A reconciliation runs in a loop meanwhile and must see nothing amiss.
// Users differ per order so the whole-refund lock-order defect
// (TestAttackLifeWholeRefundLockOrder) does not mask anything else.
func TestAttackLifeTwoInstancesChaos(t *testing.T) {
	t.Parallel()
	dsn := modelstest.MigratedDSN(t, models.Postgres)
	clock := modelstest.NewClock()
	open := func() *models.Store {
		s, err := models.Open(context.Background(), dsn, models.Options{Now: clock.Now, BusyTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s1 := open()
	s2 := open()
	stores := []*models.Store{s1, s2}
	ctx := context.Background()
	for _, sku := range []string{"sku-a", "sku-b", "sku-c"} {
		if _, err := s1.SetStock(ctx, sku, 1000, 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	const orders = 8
	items := []models.Item{{SkuID: "sku-a", Qty: 3}, {SkuID: "sku-b", Qty: 2}, {SkuID: "sku-c", Qty: 1}}
	for i := range orders {
		u := fmt.Sprintf("u%d", i)
		if _, err := s1.Credit(ctx, u, models.AssetBalance, 1000, "test"); err != nil {
			t.Fatal(err)
		}
		no := fmt.Sprintf("P%d", i)
		req := models.PlaceRequest{OrderNo: no, UserID: u, Items: items, Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 50}}}
		if _, _, err := s1.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := s1.PayOrder(ctx, no, "txn-"+no); err != nil {
			t.Fatal(err)
		}
		pend := fmt.Sprintf("Q%d", i)
		if _, _, err := s1.PlaceOrder(ctx, models.PlaceRequest{OrderNo: pend, UserID: "w" + u, Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	skus := []string{"sku-a", "sku-b", "sku-c"}
	var mu sync.Mutex
	var bad []error
	ok := 0
	var wg sync.WaitGroup
	// Reconciliation reads one snapshot: run while everything moves, it
	// must never see a line apart from its ledger rows, nor anything else.
	stop := make(chan struct{})
	var reconWG sync.WaitGroup
	reconWG.Add(1)
	var seen []models.Diff
	runs := 0
	go func() {
		defer reconWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := stores[runs%2].Reconcile(ctx)
			mu.Lock()
			runs++
			if err != nil {
				bad = append(bad, fmt.Errorf("reconcile under load: %w", err))
			}
			seen = append(seen, d...)
			mu.Unlock()
		}
	}()
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for n := range 40 {
				s := stores[rng.IntN(2)]
				i := rng.IntN(orders)
				no := fmt.Sprintf("P%d", i)
				sku := skus[rng.IntN(3)]
				id := fmt.Sprintf("g%d-%d", g, n)
				var err error
				switch rng.IntN(8) {
				case 0, 1:
					_, err = s.Ship(ctx, no, "sh-"+id, lines(sku, 1), "wms")
				case 2:
					_, err = s.Refund(ctx, no, "rf-"+id, lines(sku, 1), "", "cs")
				case 3:
					_, err = s.Refund(ctx, no, "rf-"+id, nil, "", "cs")
				case 4:
					_, err = s.Return(ctx, no, "rt-"+id, lines(sku, 1), "", "cs")
					if err == nil {
						_, err = stores[rng.IntN(2)].Inbound(ctx, "rt-"+id, []models.LineQty{inbound(sku, 1, rng.IntN(2) == 0)}, "wms")
					}
				case 5:
					_, err = s.CancelLine(ctx, fmt.Sprintf("Q%d", i), sku, 1, -1, "lc-"+id, "", "u")
				case 6:
					_, err = s.PayOrder(ctx, fmt.Sprintf("Q%d", i), "txn-q")
				case 7:
					_, err = s.CloseOrder(ctx, fmt.Sprintf("Q%d", i), models.TriggerUserCancel, "u")
				}
				var me *models.Error
				if err == nil {
					mu.Lock()
					ok++
					mu.Unlock()
				}
				if err != nil && !errors.As(err, &me) {
					mu.Lock()
					bad = append(bad, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	reconWG.Wait()
	for _, d := range seen {
		t.Errorf("reconciliation under load saw %+v", d)
	}
	t.Logf("%d reconciliations under load", runs)
	if ok < 60 {
		t.Errorf("only %d of 240 calls went through: the round raced too little to mean anything", ok)
	}
	for _, err := range bad {
		t.Errorf("not a domain refusal: %v", err)
	}
	b := bundle{s: s2, clock: clock, ctx: ctx}
	b.drain(t, "w2")
	modelstest.CheckInvariants(t, s1)
	diffs, err := s1.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("reconciliation: %+v", d)
	}
}
