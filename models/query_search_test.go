package models_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// searchShop is a shop whose keys share prefixes across kinds and cases:
// orders, their users, accounts, SKUs, an activity, a slot, a coupon and a
// declared counter key.
func searchShop(t *testing.T, b bundle) (couponID int64) {
	t.Helper()
	for _, sku := range []string{"Ab-sku-1", "ab-SKU-2", "zz-sku"} {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 10, 0, "test"); return err })
	}
	must(t, func() error { _, err := b.s.Credit(b.ctx, "AB-user", models.AssetBalance, 100, "test"); return err })
	must(t, func() error { _, err := b.s.Credit(b.ctx, "AB-user", models.AssetPoints, 100, "test"); return err })
	must(t, func() error { _, err := b.s.SetActivity(b.ctx, "ab-act", 5, "test"); return err })
	must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, "AB-seat", "test"); return err })
	must(t, func() error { _, err := b.s.SetDeclared(b.ctx, "gift_wrap", "aB-box", 3, "test"); return err })
	cp, err := b.s.CreateCoupon(b.ctx, "AB-user", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
	if err != nil {
		t.Fatal(err)
	}
	for i, no := range []string{"AB-100", "ab-101", "Xy-1"} {
		req := models.PlaceRequest{OrderNo: no, UserID: "AB-user", Items: []models.Item{{SkuID: "zz-sku", Qty: 1}}}
		if i == 2 {
			req.UserID = "xy-user"
		}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	return cp.ID
}

func searchSetup(t *testing.T, d models.Dialect) bundle {
	return setup(t, d, models.Options{Declared: []models.DeclaredType{
		{Type: "gift_wrap", Label: models.Label{Zh: "礼品包装", En: "Gift wrap"}}}})
}

// hitKeys lists a result's hits as kind:key, group by group.
func hitKeys(r models.SearchResult) []string {
	var out []string
	for _, g := range r.Groups {
		kind := string(g.Kind)
		if g.Type != "" {
			kind = string(g.Type)
		}
		for _, h := range g.Hits {
			out = append(out, kind+":"+h.Key)
		}
	}
	return out
}

func TestSearchFindsEveryKindByPrefixIgnoringCase(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := searchSetup(t, d)
			searchShop(t, b)
			r, err := b.s.Search(b.ctx, "aB", 0)
			if err != nil {
				t.Fatal(err)
			}
			want := "order:AB-100 order:ab-101 user:AB-user sku:Ab-sku-1 sku:ab-SKU-2 " +
				"activity:ab-act slot:AB-seat gift_wrap:aB-box"
			if got := strings.Join(hitKeys(r), " "); got != want {
				t.Errorf("hits %s, want %s", got, want)
			}
			for _, g := range r.Groups {
				for _, h := range g.Hits {
					if h.Exact || g.More {
						t.Errorf("%s %s: exact %v, more %v; want neither", g.Kind, h.Key, h.Exact, g.More)
					}
				}
			}
			if r.Groups[0].Hits[0].Status != "PENDING" || r.Groups[0].Hits[0].UserID != "AB-user" {
				t.Errorf("order hit %+v, want PENDING of AB-user", r.Groups[0].Hits[0])
			}

			r, err = b.s.Search(b.ctx, "ab-user", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(hitKeys(r), " "); got != "user:AB-user" {
				t.Errorf("hits of ab-user %s", got)
			}
			for _, g := range r.Groups {
				if !g.Hits[0].Exact {
					t.Errorf("%s hit of ab-user not exact", g.Kind)
				}
			}
			// A LIKE wildcard is a character like any other.
			if r, err := b.s.Search(b.ctx, "a_", 0); err != nil || len(r.Groups) != 0 {
				t.Errorf("search a_: %v, %v; want nothing", hitKeys(r), err)
			}
		})
	}
}

// A user is one hit whether orders or accounts name them, with their last
// order; an order hit carries the balance and points it froze.
func TestSearchListsAUserOnceWithTheirLastOrder(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku", 10, 0, "test"); return err })
			for _, a := range []models.Asset{models.AssetBalance, models.AssetPoints} {
				must(t, func() error { _, err := b.s.Credit(b.ctx, "user-084", a, 5000, "test"); return err })
			}
			must(t, func() error { _, err := b.s.Credit(b.ctx, "user-085", models.AssetPoints, 5, "test"); return err })
			for _, o := range []struct {
				no, user string
				freeze   []models.Freeze
			}{
				{"O-1", "user-084", nil},
				{"O-2", "user-084", []models.Freeze{{Asset: models.AssetBalance, Amount: 1234}, {Asset: models.AssetPoints, Amount: 20}}},
				{"O-3", "user-083", nil},
			} {
				b.clock.Advance(time.Minute)
				req := models.PlaceRequest{OrderNo: o.no, UserID: o.user, Items: []models.Item{{SkuID: "sku", Qty: 1}}, Freeze: o.freeze}
				if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			r, err := b.s.Search(b.ctx, "user-08", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(hitKeys(r), " "); got != "user:user-083 user:user-084 user:user-085" {
				t.Fatalf("hits %s, want each user once", got)
			}
			users := r.Groups[0].Hits
			if u := users[1]; !u.Account || u.LastOrder == nil || u.LastOrder.No != "O-2" || u.LastOrder.Status != models.OrderPending ||
				u.LastOrder.Frozen != (models.Frozen{Balance: 1234, Points: 20}) {
				t.Errorf("user-084: %+v, last order %+v; want an account and O-2 freezing 1234 and 20", u, u.LastOrder)
			}
			if u := users[0]; u.Account || u.LastOrder == nil || u.LastOrder.No != "O-3" {
				t.Errorf("user-083: %+v; want no account, last order O-3", u)
			}
			if u := users[2]; !u.Account || u.LastOrder != nil {
				t.Errorf("user-085: %+v; want an account and no order", u)
			}
			r, err = b.s.Search(b.ctx, "O-", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(hitKeys(r), " "); got != "order:O-1 order:O-2 order:O-3" {
				t.Fatalf("hits %s", got)
			}
			o1, o2 := r.Groups[0].Hits[0], r.Groups[0].Hits[1]
			if o2.Status != string(models.OrderPending) || o2.Frozen != (models.Frozen{Balance: 1234, Points: 20}) || o1.Frozen != (models.Frozen{}) {
				t.Errorf("O-1 %+v, O-2 %+v; want O-2 PENDING freezing 1234 and 20, O-1 nothing", o1, o2)
			}
		})
	}
}

func TestSearchNumbersFindCouponsAndTasks(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := searchSetup(t, d)
			cp := searchShop(t, b)
			if _, err := b.s.CloseOrder(b.ctx, "Xy-1", models.TriggerUserCancel, "user:xy-user"); err != nil {
				t.Fatal(err)
			}
			var task int64
			if err := b.s.R.Raw(`SELECT id FROM release_tasks WHERE order_no = 'Xy-1'`).Scan(&task).Error; err != nil || task == 0 {
				t.Fatalf("task of Xy-1: %d, %v", task, err)
			}
			r, err := b.s.Search(b.ctx, fmt.Sprint(task), 0)
			if err != nil {
				t.Fatal(err)
			}
			var tg *models.SearchGroup
			for i := range r.Groups {
				if r.Groups[i].Kind == models.SearchTask {
					tg = &r.Groups[i]
				}
			}
			if tg == nil || len(tg.Hits) != 1 || !tg.Hits[0].Exact || tg.Hits[0].OrderNo != "Xy-1" ||
				tg.Hits[0].Type != models.ResInventory || tg.Hits[0].BizKey != "zz-sku" || tg.Hits[0].Status != "PENDING" {
				t.Fatalf("search %d: %+v, want the task of Xy-1", task, r)
			}
			r, err = b.s.Search(b.ctx, fmt.Sprint(cp), 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.Groups[0].Kind != models.SearchCoupon || r.Groups[0].Hits[0].UserID != "AB-user" ||
				r.Groups[0].Hits[0].Status != "UNUSED" || r.Groups[0].Hits[0].Owner != "PLATFORM" {
				t.Fatalf("search %d: %+v, want the coupon of AB-user", cp, r)
			}
		})
	}
}

func TestSearchCutsEachKindAtItsLimit(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := searchSetup(t, d)
			for i := range 4 {
				must(t, func() error { _, err := b.s.SetStock(b.ctx, fmt.Sprintf("K-%d", i), 1, 0, "test"); return err })
			}
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "k-act", 1, "test"); return err })
			r, err := b.s.Search(b.ctx, "k", 3)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(hitKeys(r), " "); got != "sku:K-0 sku:K-1 sku:K-2 activity:k-act" {
				t.Errorf("hits %s", got)
			}
			if !r.Groups[0].More || r.Groups[1].More {
				t.Errorf("more: skus %v, activities %v; want true, false", r.Groups[0].More, r.Groups[1].More)
			}
			if r.Total() != 4 {
				t.Errorf("total %d, want 4", r.Total())
			}
		})
	}
}

func TestSearchRefusesWhatIsNotAKey(t *testing.T) {
	t.Parallel()
	b := searchSetup(t, models.SQLite)
	for _, q := range []string{"", "a b", "a%", "订单", strings.Repeat("a", 65)} {
		if _, err := b.s.Search(b.ctx, q, 0); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("search %q: %v, want ErrInvalid", q, err)
		}
	}
}

// Every prefix read of a search is a range of its own index, on both
// engines: a search never reads a whole table, however many orders, users
// or keys there are.
func TestSearchPlansUseTheirIndexes(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"order": "orders_no_lower", "user": "orders_user_lower", "account": "accounts_uid_lower",
		"sku": "inventory_sku_lower", "activity": "activity_quotas_lower", "slot": "slot_holds_lower",
		"gift_wrap": "declared_counters_lower", "coupon": "", "task": "",
	}
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := searchSetup(t, d)
			plans, err := b.s.SearchPlans("7")
			if err != nil {
				t.Fatal(err)
			}
			if len(plans) != len(want) {
				t.Errorf("%d plans, want %d: %q", len(plans), len(want), plans)
			}
			for kind, index := range want {
				plan := strings.Join(plans[kind], "\n")
				if plan == "" {
					t.Errorf("%s: no plan", kind)
					continue
				}
				if index != "" && !strings.Contains(plan, index) {
					t.Errorf("%s plan does not use %s:\n%s", kind, index, plan)
				}
				for _, bad := range []string{"SCAN ", "Seq Scan", "TEMP B-TREE", "Sort"} {
					if strings.Contains(plan, bad) {
						t.Errorf("%s plan has %q:\n%s", kind, bad, plan)
					}
				}
			}
		})
	}
}
