package models_test

import (
	"context"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// bundle is what a domain test works with.
type bundle struct {
	s     *models.Store
	clock *modelstest.Clock
	ctx   context.Context
	// svc is the conformance suite's fake service of its remote type.
	svc *remotetest.Service
}

// eachEngine runs fn as a parallel subtest on SQLite and on PostgreSQL;
// t itself runs in parallel too, so the pair overlaps other tests instead
// of holding the run until its slower engine is done.
func eachEngine(t *testing.T, fn func(t *testing.T, b bundle)) {
	t.Helper()
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, d, models.Options{}))
		})
	}
}

func setup(t *testing.T, d models.Dialect, opt models.Options) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	if opt.Now == nil {
		opt.Now = clock.Now
	}
	return bundle{s: modelstest.Open(t, d, opt), clock: clock, ctx: context.Background()}
}

// shop sets up a small shop: two SKUs, a coupon, an account with balance and
// points, an activity and a slot, for user u1.
func (b bundle) shop(t *testing.T) (couponID int64) {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 5, 0, "test"); return err })
	cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
	if err != nil {
		t.Fatal(err)
	}
	must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "test"); return err })
	must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetPoints, 500, "test"); return err })
	must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 3, "test"); return err })
	must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, "seat-1", "test"); return err })
	return cp.ID
}

// fullOrder asks for one of everything the shop has.
func fullOrder(no string, couponID int64) models.PlaceRequest {
	return models.PlaceRequest{
		OrderNo: no, UserID: "u1",
		Items:      []models.Item{{SkuID: "sku-1", Qty: 2}, {SkuID: "sku-2", Qty: 1}},
		CouponIDs:  []int64{couponID},
		Freeze:     []models.Freeze{{Asset: models.AssetBalance, Amount: 300}, {Asset: models.AssetPoints, Amount: 100}},
		ActivityID: "act-1", SlotID: "seat-1",
	}
}

func must(t testing.TB, fn func() error) {
	t.Helper()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
}

// drain claims and releases due tasks until none are due.
func (b bundle) drain(t *testing.T, worker string) map[string]int {
	t.Helper()
	out, err := b.drainErr(worker)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// drainErr is drain for goroutines other than the test's, which must not
// call t.Fatal.
func (b bundle) drainErr(worker string) (map[string]int, error) {
	out := map[string]int{}
	for {
		tasks, err := b.s.ClaimTasks(b.ctx, worker, 100, time.Minute)
		if err != nil {
			return out, err
		}
		if len(tasks) == 0 {
			return out, nil
		}
		for _, tk := range tasks {
			r, err := b.s.ReleaseTask(b.ctx, tk, worker)
			if err != nil {
				return out, err
			}
			out[r.Outcome]++
		}
	}
}

func TestPlacePayCloseRelease(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		o, holds, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp))
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != models.OrderPending || len(holds) != 7 {
			t.Fatalf("placed %s with %d holds, want PENDING with 7", o.Status, len(holds))
		}
		res, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Won || res.Tasks != 7 {
			t.Fatalf("close = %+v, want won with 7 tasks", res)
		}
		got := b.drain(t, "w1")
		if got[models.OutcomeDone] != 7 {
			t.Fatalf("drain = %v, want 7 DONE", got)
		}
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		if sku.Available != 10 || sku.Locked != 0 {
			t.Fatalf("sku-1 = %+v, want 10 available 0 locked", sku)
		}
		diffs, err := b.s.Reconcile(b.ctx)
		if err != nil || len(diffs) != 0 {
			t.Fatalf("reconcile = %v, %v; want no diffs", diffs, err)
		}
	})
}
