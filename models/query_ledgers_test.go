package models_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"unhold/models"
)

// The SKU list's checks flag exactly the SKUs that full reconciliation
// finds, however the shop got there: PENDING orders, closes released or
// not, payments, and hand edits of the inventory table.
func TestSKUChecksAgreeWithReconcile(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 6 {
			must(t, func() error { _, err := b.s.SetStock(b.ctx, fmt.Sprintf("sku-%d", i), 20, 0, "test"); return err })
		}
		for i := range 12 {
			no := fmt.Sprintf("o-%d", i)
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: fmt.Sprintf("sku-%d", i%6), Qty: 1 + int64(i%3)}}}
			must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
			switch i % 4 {
			case 1:
				must(t, func() error { _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); return err })
			case 2, 3:
				must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "test"); return err })
			}
			if i == 6 {
				b.drain(t, "w") // later closes keep unfinished tasks
			}
		}
		for _, q := range []string{
			"UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-1'",
			"UPDATE inventory SET locked = locked - 1, available = available + 1 WHERE sku_id = 'sku-0'",
			"UPDATE inventory SET sold = sold + 2 WHERE sku_id = 'sku-4'",
		} {
			must(t, func() error { return b.s.W.Exec(q).Error })
		}
		diffs, err := b.s.Reconcile(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		// The list shows the live checks; the ledger sums are the runs' job.
		for _, d := range diffs {
			if d.Resource == models.ResInventory && (d.Check == models.CheckHeld || d.Check == models.CheckConservation) {
				want = append(want, fmt.Sprintf("%s %s %d/%d", d.Key, d.Check, d.Actual, d.Expected))
			}
		}
		page, err := b.s.ListSKUs(b.ctx, models.SKUQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range page.SKUs {
			if !k.LockedOK() {
				got = append(got, fmt.Sprintf("%s %s %d/%d", k.SkuID, models.CheckHeld, k.Locked, k.ExpectedLocked()))
			}
			if !k.TotalOK() {
				got = append(got, fmt.Sprintf("%s %s %d/%d", k.SkuID, models.CheckConservation, k.Total(), k.Adjusted))
			}
		}
		sort.Strings(want)
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(want) || len(want) != 4 {
			t.Fatalf("list flags %v\nreconcile finds %v", got, want)
		}
		one, err := b.s.SKUStatusOf(b.ctx, "sku-4")
		if err != nil || one.TotalOK() || !one.LockedOK() {
			t.Fatalf("sku-4: %+v, %v", one, err)
		}
		if _, err := b.s.SKUStatusOf(b.ctx, "nope"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("unknown sku: %v", err)
		}
	})
}

// A coupon page filtered by owner or status reads a bounded window of
// rows; a window without enough matches is a partial page whose cursor
// continues below the last row read, and walking on finds every match once.
func TestCouponFlowsWindow(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		exp := b.clock.Now().Add(24 * time.Hour)
		var merchant []int64
		for i := range 11 {
			owner := models.CouponPlatform
			if i == 0 || i == 7 {
				owner = models.CouponMerchant
			}
			cp, err := b.s.CreateCoupon(b.ctx, "u1", owner, exp, "test")
			if err != nil {
				t.Fatal(err)
			}
			if owner == models.CouponMerchant {
				merchant = append([]int64{cp.ID}, merchant...)
			}
		}
		walk := func(q models.CouponQuery) (ids []int64, partial []bool) {
			for {
				page, err := b.s.ListCouponFlows(b.ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range page.Flows {
					ids = append(ids, f.CouponID)
				}
				partial = append(partial, page.Partial)
				if page.Next.ID == 0 {
					return ids, partial
				}
				q.After = page.Next
			}
		}
		ids, partial := walk(models.CouponQuery{Owner: models.CouponMerchant, Limit: 2, Window: 5})
		if fmt.Sprint(ids) != fmt.Sprint(merchant) || fmt.Sprint(partial) != "[true true false]" {
			t.Fatalf("merchant walk %v (partial %v), want %v", ids, partial, merchant)
		}
		all, partial := walk(models.CouponQuery{Limit: 2})
		if len(all) != 11 || len(partial) != 6 || all[0] < all[10] {
			t.Fatalf("unfiltered walk %v on %d pages", all, len(partial))
		}
		// With a user the status filter is read through the index, whole.
		unused, _ := walk(models.CouponQuery{UserID: "u1", Status: models.CouponUnused, Limit: 20, Window: 5})
		if len(unused) != 11 {
			t.Fatalf("u1's UNUSED coupons %v", unused)
		}
	})
}

// The day's totals count exactly the rows the day's CSV streams, and the
// day's bounds are [from, to).
func TestLedgerTotalsMatchRows(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); return err })
		b.clock.Advance(time.Hour)
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerAdmin, "test"); return err })
		b.drain(t, "w")
		from := b.clock.Now().Add(-time.Hour) // the placement is at from exactly
		to := b.clock.Now()                   // the releases are at to: excluded
		totals, err := b.s.LedgerTotals(b.ctx, from, to)
		if err != nil {
			t.Fatal(err)
		}
		counted := map[string]int64{}
		for _, tt := range totals {
			counted[string(tt.Resource)+string(tt.Owner)+"/"+string(tt.Type)] += tt.Rows
		}
		streamed := map[string]int64{}
		err = b.s.EachLedgerRow(b.ctx, from, to, func(f *models.Flow) error {
			if f.CreatedAt.Before(from) || !f.CreatedAt.Before(to) {
				t.Errorf("row %d at %s outside the range", f.ID, f.CreatedAt)
			}
			streamed[string(f.ResourceType)+f.Owner+"/"+string(f.Type)]++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(counted) != fmt.Sprint(streamed) {
			t.Fatalf("totals %v, rows %v", counted, streamed)
		}
		want := "map[balance/ADJUST:1 balance/LOCK:1 couponPLATFORM/ADJUST:1 couponPLATFORM/LOCK:1 inventory/ADJUST:2 inventory/LOCK:2 " +
			"points/ADJUST:1 points/LOCK:1 quota/ADJUST:1 quota/LOCK:1 slot/ADJUST:1 slot/LOCK:1]"
		if fmt.Sprint(counted) != want {
			t.Fatalf("totals %v\nwant %s", counted, want)
		}
	})
}
