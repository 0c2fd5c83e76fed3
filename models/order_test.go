package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// snapshot is every resource row and ledger count, to prove a refused
// request changed nothing.
func (b bundle) snapshot(t *testing.T) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, q := range []string{
		"SELECT COUNT(*) FROM orders", "SELECT COUNT(*) FROM order_holds", "SELECT COUNT(*) FROM release_tasks",
		"SELECT COUNT(*) FROM inventory_flows", "SELECT COUNT(*) FROM coupon_flows", "SELECT COUNT(*) FROM account_flows",
		"SELECT COUNT(*) FROM quota_flows", "SELECT COUNT(*) FROM slot_flows",
	} {
		var n int64
		must(t, func() error { return b.s.R.Raw(q).Scan(&n).Error })
		out[q] = n
	}
	var skus []models.SKU
	var coupons []models.Coupon
	var accounts []models.AccountAsset
	var acts []models.Activity
	var slots []models.Slot
	must(t, func() error { return b.s.R.Order("sku_id").Find(&skus).Error })
	must(t, func() error { return b.s.R.Order("id").Find(&coupons).Error })
	must(t, func() error { return b.s.R.Order("uid, asset").Find(&accounts).Error })
	must(t, func() error { return b.s.R.Order("activity_id").Find(&acts).Error })
	must(t, func() error { return b.s.R.Order("slot_id").Find(&slots).Error })
	out["skus"], out["coupons"], out["accounts"], out["acts"], out["slots"] = skus, coupons, accounts, acts, slots
	return out
}

// Placing holds everything in one transaction: any shortfall rolls all of it
// back and answers its code.
func TestPlaceShortfallRollsBackEverything(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		other, err := b.s.CreateCoupon(b.ctx, "u2", models.CouponMerchant, b.clock.Now().Add(time.Hour), "test")
		if err != nil {
			t.Fatal(err)
		}
		soon, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(time.Minute), "test")
		if err != nil {
			t.Fatal(err)
		}
		// Take the slot and one quota place with another order first.
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "first", UserID: "u3",
			Items: []models.Item{{SkuID: "sku-2", Qty: 1}}, SlotID: "seat-1"}); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(2 * time.Minute) // the "soon" coupon is now expired
		base := func() models.PlaceRequest {
			r := fullOrder("o-x", cp)
			r.SlotID = ""
			return r
		}
		cases := []struct {
			name string
			edit func(*models.PlaceRequest)
			want error
		}{
			{"stock", func(r *models.PlaceRequest) { r.Items[0].Qty = 11 }, models.ErrInsufficientStock},
			{"unknown sku", func(r *models.PlaceRequest) { r.Items[1].SkuID = "nope" }, models.ErrResourceNotFound},
			{"coupon of another user", func(r *models.PlaceRequest) { r.CouponIDs = []int64{cp, other.ID} }, models.ErrCouponUnavailable},
			{"expired coupon", func(r *models.PlaceRequest) { r.CouponIDs = []int64{soon.ID} }, models.ErrCouponUnavailable},
			{"unknown coupon", func(r *models.PlaceRequest) { r.CouponIDs = []int64{99999} }, models.ErrCouponUnavailable},
			{"balance", func(r *models.PlaceRequest) { r.Freeze[0].Amount = 1001 }, models.ErrInsufficientFunds},
			{"points", func(r *models.PlaceRequest) { r.Freeze[1].Amount = 501 }, models.ErrInsufficientPts},
			{"no account", func(r *models.PlaceRequest) { r.UserID = "u9"; r.CouponIDs = nil }, models.ErrInsufficientFunds},
			{"slot taken", func(r *models.PlaceRequest) { r.SlotID = "seat-1" }, models.ErrSlotTaken},
			{"unknown activity", func(r *models.PlaceRequest) { r.ActivityID = "nope" }, models.ErrResourceNotFound},
			{"zero qty", func(r *models.PlaceRequest) { r.Items[0].Qty = 0 }, models.ErrInvalid},
			{"negative amount", func(r *models.PlaceRequest) { r.Freeze[0].Amount = -5 }, models.ErrInvalid},
			{"duplicate sku", func(r *models.PlaceRequest) { r.Items[1].SkuID = "sku-1" }, models.ErrInvalid},
			{"existing order_no", func(r *models.PlaceRequest) { r.OrderNo = "first" }, models.ErrOrderExists},
			{"bad order_no", func(r *models.PlaceRequest) { r.OrderNo = "a b'; --" }, models.ErrInvalid},
		}
		before := b.snapshot(t)
		for _, c := range cases {
			r := base()
			c.edit(&r)
			if _, _, err := b.s.PlaceOrder(b.ctx, r); !errors.Is(err, c.want) {
				t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			}
			if after := b.snapshot(t); !reflect.DeepEqual(before, after) {
				t.Fatalf("%s changed the database:\nbefore %v\nafter  %v", c.name, before, after)
			}
		}
		// Quota: 3 places, one order takes one each.
		for i, no := range []string{"q1", "q2", "q3", "q4"} {
			r := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, ActivityID: "act-1"}
			_, _, err := b.s.PlaceOrder(b.ctx, r)
			if i < 3 && err != nil || i == 3 && !errors.Is(err, models.ErrQuotaExhausted) {
				t.Fatalf("quota order %d: %v", i+1, err)
			}
		}
	})
}

func TestPayAndCloseRules(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			r, err := b.s.PayOrder(b.ctx, "o-1", "txn-1")
			if err != nil || r.Status != models.OrderPaid || r.Late {
				t.Fatalf("pay %d = %+v, %v", i, r, err)
			}
		}
		before := b.snapshot(t)
		if _, err := b.s.PayOrder(b.ctx, "o-1", "txn-2"); !errors.Is(err, models.ErrOrderNotPayable) {
			t.Fatalf("a second transaction's payment = %v, want ErrOrderNotPayable", err)
		}
		if after := b.snapshot(t); !reflect.DeepEqual(before, after) {
			t.Fatal("a refused double charge changed the database")
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); !errors.Is(err, models.ErrOrderNotClosable) {
			t.Fatalf("close of PAID = %v, want ErrOrderNotClosable", err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", "LOST", "u1"); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("close with a bad reason = %v", err)
		}
		if _, err := b.s.PayOrder(b.ctx, "nope", "txn"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("pay unknown = %v", err)
		}
		sku, _ := b.s.GetSKU(b.ctx, "sku-1")
		acc, _ := b.s.GetAccount(b.ctx, "u1")
		act, _ := b.s.GetActivity(b.ctx, "act-1")
		sl, _ := b.s.GetSlot(b.ctx, "seat-1")
		c, _ := b.s.GetCoupon(b.ctx, cp)
		if sku.Sold != 2 || sku.Locked != 0 || acc[models.AssetBalance].Spent != 300 || acc[models.AssetPoints].Spent != 100 ||
			act.Used != 1 || sl.Status != models.SlotSold || c.Status != models.CouponUsed {
			t.Fatalf("after pay: sku %+v acc %+v act %+v slot %s coupon %s", sku, acc, act, sl.Status, c.Status)
		}
		b.assertReconciles(t)
	})
}

// Invariant 3: the status change and the outbox are one transaction. A
// failing task insert leaves the order PENDING.
func TestCloseIsAtomicWithItsTasks(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		// Make the 4th task insert fail inside the database.
		if b.s.Dialect == models.Postgres {
			must(t, func() error {
				return b.s.W.Exec(`CREATE FUNCTION fail_task() RETURNS trigger AS $$ BEGIN
					IF NEW.resource_type = 'points' THEN RAISE EXCEPTION 'injected'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`).Error
			})
			must(t, func() error {
				return b.s.W.Exec("CREATE TRIGGER fail_task BEFORE INSERT ON release_tasks FOR EACH ROW EXECUTE FUNCTION fail_task()").Error
			})
		} else {
			must(t, func() error {
				return b.s.W.Exec(`CREATE TRIGGER fail_task BEFORE INSERT ON release_tasks WHEN NEW.resource_type = 'points'
					BEGIN SELECT RAISE(ABORT, 'injected'); END`).Error
			})
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err == nil {
			t.Fatal("close succeeded with a failing task insert")
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		if c.Order.Status != models.OrderPending || len(c.Tasks) != 0 {
			t.Fatalf("after a failed close: %s with %d tasks, want PENDING with none", c.Order.Status, len(c.Tasks))
		}
	})
}

// Stacked coupons come back one by one; the cost bearer is on every ledger
// row; the expiry policy decides what an old coupon comes back as.
func TestCouponReturn(t *testing.T) {
	t.Parallel()
	for _, policy := range []models.CouponPolicy{{Expiry: models.CouponExtend, ExtendDays: 3}, {Expiry: models.CouponKeep}} {
		for _, d := range modelstest.Engines {
			t.Run(string(policy.Expiry)+"/"+string(d), func(t *testing.T) {
				t.Parallel()
				b := setup(t, d, models.Options{Coupons: policy})
				must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
				now := b.clock.Now()
				long, _ := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, now.Add(30*24*time.Hour), "test")
				short, _ := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, now.Add(time.Hour), "test")
				req := models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
					CouponIDs: []int64{long.ID, short.ID}}
				if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
					t.Fatal(err)
				}
				b.clock.Advance(2 * time.Hour) // the short coupon expires while held
				if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "system"); err != nil {
					t.Fatal(err)
				}
				if got := b.drain(t, "w1"); got[models.OutcomeDone] != 3 {
					t.Fatalf("drain = %v, want 3 DONE (1 SKU, 2 coupons)", got)
				}
				l, _ := b.s.GetCoupon(b.ctx, long.ID)
				s, _ := b.s.GetCoupon(b.ctx, short.ID)
				if l.Status != models.CouponUnused || !l.ExpireAt.Equal(long.ExpireAt) {
					t.Fatalf("long coupon = %s %s, want UNUSED with its expiry", l.Status, l.ExpireAt)
				}
				switch policy.Expiry {
				case models.CouponExtend:
					if s.Status != models.CouponUnused || !s.ExpireAt.Equal(b.clock.Now().Add(72*time.Hour)) {
						t.Fatalf("short coupon = %s %s, want UNUSED until now+3d", s.Status, s.ExpireAt)
					}
				case models.CouponKeep:
					if s.Status != models.CouponExpired || !s.ExpireAt.Equal(short.ExpireAt) {
						t.Fatalf("short coupon = %s %s, want EXPIRED", s.Status, s.ExpireAt)
					}
				}
				c, _ := b.s.OrderChain(b.ctx, "o-1")
				owners := map[string]int{}
				for _, f := range c.Flows {
					if f.ResourceType == models.ResCoupon {
						owners[f.Owner+"/"+string(f.Type)]++
					}
				}
				want := map[string]int{"PLATFORM/LOCK": 1, "PLATFORM/RELEASE": 1, "MERCHANT/LOCK": 1, "MERCHANT/RELEASE": 1}
				if !reflect.DeepEqual(owners, want) {
					t.Fatalf("coupon flows by owner = %v, want %v", owners, want)
				}
				b.assertReconciles(t)
			})
		}
	}
}

func TestCloseExpired(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		for _, r := range []models.PlaceRequest{
			{OrderNo: "short", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, PayTimeout: time.Minute},
			{OrderNo: "long", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, PayTimeout: time.Hour},
			{OrderNo: "paid", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, PayTimeout: time.Minute},
		} {
			if _, _, err := b.s.PlaceOrder(b.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.s.PayOrder(b.ctx, "paid", "txn"); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(2 * time.Minute)
		closed, err := b.s.CloseExpired(b.ctx, 100)
		if err != nil || !reflect.DeepEqual(closed, []string{"short"}) {
			t.Fatalf("closed = %v, %v; want [short]", closed, err)
		}
		c, _ := b.s.OrderChain(b.ctx, "short")
		if c.Order.CloseReason != string(models.TriggerTimeout) || len(c.Tasks) != 1 || c.Tasks[0].Trigger != models.TriggerTimeout {
			t.Fatalf("short = %+v", c.Order)
		}
	})
}

// An order's holds may be named as one generic list of any registered type,
// alone or beside the shorthands: the order holds the same as with the
// shorthands alone. A list the registry or the bounds refuse is
// INVALID_INPUT and places nothing.
func TestPlaceGenericHolds(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		id := strconv.FormatInt(cp, 10)
		generic := models.PlaceRequest{OrderNo: "o-g", UserID: "u1", Holds: []models.HoldRequest{
			{Type: models.ResSlot, Key: "seat-1"},
			{Type: models.ResInventory, Key: "sku-2", Qty: 1},
			{Type: models.ResPoints, Key: "u1", Qty: 100},
			{Type: models.ResCoupon, Key: id, Qty: 1},
			{Type: models.ResQuota, Key: "act-1", Qty: 1},
			{Type: models.ResBalance, Key: "u1", Qty: 300},
		}, Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}
		_, got, err := b.s.PlaceOrder(b.ctx, generic)
		if err != nil {
			t.Fatal(err)
		}
		want := map[models.Hold]bool{}
		for _, h := range []models.Hold{
			{ResourceType: models.ResInventory, BizKey: "sku-1", Qty: 2}, {ResourceType: models.ResInventory, BizKey: "sku-2", Qty: 1},
			{ResourceType: models.ResCoupon, BizKey: id, Qty: 1}, {ResourceType: models.ResBalance, BizKey: "u1", Qty: 300},
			{ResourceType: models.ResPoints, BizKey: "u1", Qty: 100}, {ResourceType: models.ResQuota, BizKey: "act-1", Qty: 1},
			{ResourceType: models.ResSlot, BizKey: "seat-1", Qty: 1},
		} {
			want[h] = true
		}
		for _, h := range got {
			if !want[models.Hold{ResourceType: h.ResourceType, BizKey: h.BizKey, Qty: h.Qty}] {
				t.Errorf("placed %+v, not asked for", h)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("placed %d holds, want %d", len(got), len(want))
		}
		modelstest.CheckInvariants(t, b.s)
		for _, tc := range []struct {
			name  string
			holds []models.HoldRequest
			items []models.Item
			want  string
		}{
			{"nothing", nil, nil, "must hold something"},
			{"unknown type", []models.HoldRequest{{Type: "gift_wrap", Key: "k", Qty: 1}}, nil, `unknown resource type "gift_wrap"`},
			{"bad key", []models.HoldRequest{{Type: models.ResInventory, Key: "a b", Qty: 1}}, nil, "holds[0]: key"},
			{"no qty", []models.HoldRequest{{Type: models.ResInventory, Key: "sku-1"}}, nil, "from 1 to 1000000"},
			{"too much", []models.HoldRequest{{Type: models.ResInventory, Key: "sku-1", Qty: models.MaxQty + 1}}, nil, "from 1 to 1000000"},
			{"two coupons of one", []models.HoldRequest{{Type: models.ResCoupon, Key: id, Qty: 2}}, nil, "from 1 to 1"},
			{"named twice", []models.HoldRequest{{Type: models.ResInventory, Key: "sku-1", Qty: 1}}, []models.Item{{SkuID: "sku-1", Qty: 1}}, "appears twice"},
			{"too many", manyHolds(models.MaxHolds + 1), nil, "at most 200"},
			{"another user's balance", []models.HoldRequest{{Type: models.ResBalance, Key: "u1", Qty: 1}}, nil, "holds only its own"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-bad", UserID: "u2", Holds: tc.holds, Items: tc.items})
				if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("place = %v, want INVALID_INPUT saying %q", err, tc.want)
				}
				if _, err := b.s.OrderChain(b.ctx, "o-bad"); !errors.Is(err, models.ErrNotFound) {
					t.Fatalf("a refused order exists: %v", err)
				}
			})
		}
	})
}

func manyHolds(n int) []models.HoldRequest {
	hs := make([]models.HoldRequest, n)
	for i := range hs {
		hs[i] = models.HoldRequest{Type: models.ResInventory, Key: fmt.Sprintf("sku-%d", i), Qty: 1}
	}
	return hs
}
