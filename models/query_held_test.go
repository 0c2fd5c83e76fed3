package models_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// heldShop places, a second apart from 10:00 UTC on 2026-11-29: h-1 (sku-1
// and coupon c1), h-2 (sku-2), h-3 (sku-1, left PENDING) and h-4 (sku-1
// and coupon c2, paid). h-1 is closed at 23:59:59 that day, h-2 a second
// later, at 00:00:00 on the 30th.
func heldShop(t *testing.T, b bundle) (c1, c2 int64) {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 10, 0, "test"); return err })
	var cps [2]int64
	for i := range cps {
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(72*time.Hour), "test")
		must(t, func() error { return err })
		cps[i] = cp.ID
	}
	place := func(no, sku string, coupons ...int64) {
		t.Helper()
		b.clock.Advance(time.Second)
		req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}, CouponIDs: coupons}
		must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
	}
	place("h-1", "sku-1", cps[0])
	place("h-2", "sku-2")
	place("h-3", "sku-1")
	place("h-4", "sku-1", cps[1])
	must(t, func() error { _, err := b.s.PayOrder(b.ctx, "h-4", "txn-4"); return err })
	b.clock.Advance(time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC).Sub(b.clock.Now()))
	must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "h-1", models.TriggerAdmin, "test"); return err })
	b.clock.Advance(time.Second)
	must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "h-2", models.TriggerAdmin, "test"); return err })
	return cps[0], cps[1]
}

// The orders list keeps the orders that held a type, or a key of it, and
// those closed in a range: [ClosedFrom, ClosedTo), so an order closed at
// 23:59:59 is in its day and one closed at 00:00:00 the next is not. Its
// count agrees. A key without its type, an unknown type and a range that
// ends before it starts are refused.
func TestListOrdersHeldFilters(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		c1, _ := heldShop(t, b)
		day := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
		next := day.AddDate(0, 0, 1)
		cases := []struct {
			name string
			q    models.OrderQuery
			want []string
		}{
			{"type", models.OrderQuery{HeldType: models.ResCoupon}, []string{"h-4", "h-1"}},
			{"type and key", models.OrderQuery{HeldType: models.ResCoupon, HeldKey: strconv.FormatInt(c1, 10)}, []string{"h-1"}},
			{"a key of a type", models.OrderQuery{HeldType: models.ResInventory, HeldKey: "sku-1"}, []string{"h-4", "h-3", "h-1"}},
			{"a type every order holds", models.OrderQuery{HeldType: models.ResInventory}, []string{"h-4", "h-3", "h-2", "h-1"}},
			{"a type nobody held", models.OrderQuery{HeldType: models.ResSlot}, nil},
			{"a key nobody held", models.OrderQuery{HeldType: models.ResCoupon, HeldKey: "999999"}, nil},
			{"closed on the day", models.OrderQuery{ClosedFrom: day, ClosedTo: next}, []string{"h-1"}},
			{"closed on the next day", models.OrderQuery{ClosedFrom: next, ClosedTo: next.AddDate(0, 0, 1)}, []string{"h-2"}},
			{"closed from the day", models.OrderQuery{ClosedFrom: day}, []string{"h-2", "h-1"}},
			{"closed to the day", models.OrderQuery{ClosedTo: next}, []string{"h-1"}},
			{"closed before the day", models.OrderQuery{ClosedTo: day}, nil},
			{"type and closed", models.OrderQuery{HeldType: models.ResInventory, ClosedFrom: next}, []string{"h-2"}},
			{"type and key, paged", models.OrderQuery{HeldType: models.ResInventory, HeldKey: "sku-1", Limit: 2, Oldest: true}, []string{"h-1", "h-3", "h-4"}},
		}
		for _, c := range cases {
			got, _ := walk(t, b, c.q)
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
			q := c.q
			q.Count, q.Limit = models.OrderCountCap, 0
			page, err := b.s.ListOrders(b.ctx, q)
			must(t, func() error { return err })
			if page.Total != int64(len(c.want)) {
				t.Errorf("%s: total %d, want %d", c.name, page.Total, len(c.want))
			}
		}
		for _, bad := range []struct {
			q    models.OrderQuery
			says string
		}{
			{models.OrderQuery{HeldKey: "sku-1"}, "needs the resource type"},
			{models.OrderQuery{HeldType: "giftcard"}, "unknown resource type"},
			{models.OrderQuery{HeldType: models.ResInventory, HeldKey: strings.Repeat("k", models.MaxTaskKeyLen+1)}, "at most"},
			{models.OrderQuery{ClosedFrom: next, ClosedTo: day}, "must be before"},
		} {
			_, err := b.s.ListOrders(b.ctx, bad.q)
			if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), bad.says) {
				t.Errorf("%+v: %v, want ErrInvalid saying %q", bad.q, err, bad.says)
			}
		}
	})
}

// Each listed order says what it held and where each hold stands, by the
// release state's rules read for the hold alone: a coupon still held
// (PENDING order), releasing (closed, not yet tried), released (came
// back), MANUAL (its release refused: the coupon was freed by hand) and
// consumed by payment, while the same order's stock is released.
func TestListOrdersHeldCoupon(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		nos := []string{"c-held", "c-back", "c-manual", "c-paid", "c-releasing"}
		coupon := map[string]int64{}
		for _, no := range nos {
			cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(72*time.Hour), "test")
			must(t, func() error { return err })
			coupon[no] = cp.ID
			b.clock.Advance(time.Second)
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{cp.ID}}
			must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
		}
		must(t, func() error { _, err := b.s.PayOrder(b.ctx, "c-paid", "txn-1"); return err })
		for _, no := range []string{"c-back", "c-manual"} {
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "user:u1"); return err })
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", coupon["c-manual"]).Error
		})
		b.drain(t, "w1")
		must(t, func() error {
			_, err := b.s.CloseOrder(b.ctx, "c-releasing", models.TriggerTimeout, "system")
			return err
		})

		page, err := b.s.ListOrders(b.ctx, models.OrderQuery{})
		must(t, func() error { return err })
		want := map[string]struct {
			coupon, sku models.ReleaseState
			task        models.TaskStatus
			paid        bool
		}{
			"c-held":      {models.ReleaseHolding, models.ReleaseHolding, "", false},
			"c-releasing": {models.ReleaseReleasing, models.ReleaseReleasing, models.TaskPending, false},
			"c-back":      {models.ReleaseReleased, models.ReleaseReleased, models.TaskDone, false},
			"c-manual":    {models.ReleaseManual, models.ReleaseReleased, models.TaskManual, false},
			"c-paid":      {models.ReleaseNone, models.ReleaseNone, "", true},
		}
		for no, w := range want {
			hs := page.Holds[no]
			if len(hs) != 2 || hs[0].Type != models.ResInventory || hs[1].Type != models.ResCoupon {
				t.Fatalf("%s held %+v, want its stock then its coupon", no, hs)
			}
			sku, cp := hs[0], hs[1]
			if cp.Key != fmt.Sprint(coupon[no]) || cp.State != w.coupon || cp.Task != w.task || cp.Paid() != w.paid {
				t.Errorf("%s: coupon %+v (paid %v), want key %d %s, task %q, paid %v", no, cp, cp.Paid(), coupon[no], w.coupon, w.task, w.paid)
			}
			if sku.Key != "sku-1" || sku.State != w.sku {
				t.Errorf("%s: stock %+v, want sku-1 %s", no, sku, w.sku)
			}
		}
	})
}

// An order's release state is the worst of its holds' (ReleaseStates
// lists the worst first): the two are one definition, read per order and
// per hold.
func TestHeldStatesMakeReleaseState(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		want := releaseShop(t, b)
		page, err := b.s.ListOrders(b.ctx, models.OrderQuery{})
		must(t, func() error { return err })
		for no, st := range want {
			worst := models.ReleaseNone
			for _, h := range page.Holds[no] {
				if slices.Index(models.ReleaseStates, h.State) < slices.Index(models.ReleaseStates, worst) {
					worst = h.State
				}
			}
			if worst != st || page.Release[no] != st {
				t.Errorf("%s: holds %+v make %s; the order is %s, want %s", no, page.Holds[no], worst, page.Release[no], st)
			}
		}
	})
}
