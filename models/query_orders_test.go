package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// placeMany places n one-item orders o-000..o-(n-1) for users u1 and u2 in
// turn, three per clock tick, so orders share a created_at, only the id
// breaks the tie, and a page of 50 ends inside a tick.
func placeMany(t *testing.T, b bundle, n int) {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", int64(n), 0, "test"); return err })
	for i := range n {
		if i%3 == 0 {
			b.clock.Advance(time.Second)
		}
		req := models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: []string{"u1", "u2"}[i%2],
			Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
}

// walk reads every page of q and returns the order numbers in page order.
func walk(t *testing.T, b bundle, q models.OrderQuery) (nos []string, pages int) {
	t.Helper()
	for {
		p, err := b.s.ListOrders(b.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range p.Orders {
			nos = append(nos, o.OrderNo)
		}
		if p.Next.ID == 0 {
			return nos, pages
		}
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		next, err := models.ParseCursor(p.Next.String())
		if err != nil {
			t.Fatal(err)
		}
		q.After = next
	}
}

// Keyset pages cover every order once, in creation order either way, also
// when orders share a creation time.
func TestListOrdersKeyset(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		placeMany(t, b, 120)
		var want []string
		for i := 119; i >= 0; i-- {
			want = append(want, fmt.Sprintf("o-%03d", i))
		}
		got, pages := walk(t, b, models.OrderQuery{})
		if pages != 3 || !reflect.DeepEqual(got, want) {
			t.Fatalf("newest first: %d pages %v", pages, got)
		}
		got, pages = walk(t, b, models.OrderQuery{Oldest: true, Limit: 50})
		sort.Strings(want)
		if pages != 3 || !reflect.DeepEqual(got, want) {
			t.Fatalf("oldest first: %d pages %v", pages, got)
		}
	})
}

func TestListOrdersFilters(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		first := b.clock.Now().Add(time.Second) // when o-000, o-001 and o-002 are placed
		placeMany(t, b, 10)
		if _, err := b.s.CloseOrder(b.ctx, "o-003", models.TriggerAdmin, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.PayOrder(b.ctx, "o-004", "txn-4"); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name string
			q    models.OrderQuery
			want []string
		}{
			{"order no", models.OrderQuery{OrderNo: "o-007"}, []string{"o-007"}},
			{"unknown order no", models.OrderQuery{OrderNo: "nope"}, nil},
			{"user", models.OrderQuery{UserID: "u2", Oldest: true}, []string{"o-001", "o-003", "o-005", "o-007", "o-009"}},
			{"status", models.OrderQuery{Status: models.OrderClosed}, []string{"o-003"}},
			{"user and status", models.OrderQuery{UserID: "u1", Status: models.OrderPaid}, []string{"o-004"}},
			{"user and other status", models.OrderQuery{UserID: "u2", Status: models.OrderPaid}, nil},
			{"user in pages of two", models.OrderQuery{UserID: "u2", Limit: 2}, []string{"o-009", "o-007", "o-005", "o-003", "o-001"}},
			{"from", models.OrderQuery{From: first.Add(3 * time.Second), Oldest: true}, []string{"o-009"}},
			{"to", models.OrderQuery{To: first.Add(time.Second)}, []string{"o-002", "o-001", "o-000"}},
			{"range", models.OrderQuery{From: first.Add(time.Second), To: first.Add(2 * time.Second), Oldest: true, Limit: 2}, []string{"o-003", "o-004", "o-005"}},
		}
		for _, c := range cases {
			got, _ := walk(t, b, c.q)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			}
		}
	})
}

func TestFindOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		placeMany(t, b, 1)
		if o, err := b.s.FindOrder(b.ctx, "o-000"); err != nil || o.UserID != "u1" {
			t.Fatalf("FindOrder = %+v, %v", o, err)
		}
		if _, err := b.s.FindOrder(b.ctx, "nope"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("FindOrder(nope) = %v, want ErrNotFound", err)
		}
	})
}

// ReconcileKeys answers, key by key, exactly what the whole-shop Reconcile
// answers: with PENDING orders, unfinished tasks, released ones, and a
// planted diff in every kind of resource.
func TestReconcileKeysAgreesWithReconcile(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		cp2, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(48*time.Hour), "test")
		if err != nil {
			t.Fatal(err)
		}
		must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, "seat-2", "test"); return err })
		// o-1 holds everything and is released; o-2 stays PENDING; o-3 is
		// closed with its tasks still due.
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "test"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w1")
		two := models.PlaceRequest{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 3}},
			CouponIDs: []int64{cp2.ID}, Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 7}}, SlotID: "seat-2"}
		if _, _, err := b.s.PlaceOrder(b.ctx, two); err != nil {
			t.Fatal(err)
		}
		three := models.PlaceRequest{OrderNo: "o-3", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 2}},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 50}}, ActivityID: "act-1", SlotID: "seat-1", CouponIDs: []int64{cp}}
		if _, _, err := b.s.PlaceOrder(b.ctx, three); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-3", models.TriggerTimeout, "test"); err != nil {
			t.Fatal(err)
		}
		keys := []models.ResourceKey{{models.ResInventory, "sku-1"}, {models.ResInventory, "sku-2"},
			{models.ResCoupon, fmt.Sprint(cp)}, {models.ResCoupon, fmt.Sprint(cp2.ID)}, {models.ResBalance, "u1"},
			{models.ResPoints, "u1"}, {models.ResQuota, "act-1"}, {models.ResSlot, "seat-1"}, {models.ResSlot, "seat-2"},
			{models.ResInventory, "no-such-sku"}, {models.ResCoupon, "not-a-number"}}
		compare := func(stage string, wantSome bool) {
			t.Helper()
			all, err := b.s.Reconcile(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			asked := map[models.ResourceKey]bool{}
			for _, k := range keys {
				asked[k] = true
			}
			var want []models.Diff
			live := map[string]bool{models.CheckHeld: true, models.CheckConservation: true}
			for _, d := range all {
				if asked[models.ResourceKey{Type: d.Resource, Key: d.Key}] && live[d.Check] {
					want = append(want, d)
				}
			}
			sortDiffs(want)
			got, err := b.s.ReconcileKeys(b.ctx, append(keys, keys[0])) // a repeated key counts once
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: ReconcileKeys = %+v\nReconcile says %+v", stage, got, want)
			}
			if wantSome != (len(got) > 0) {
				t.Fatalf("%s: diffs %+v, want some: %v", stage, got, wantSome)
			}
			one, err := b.s.ReconcileKeys(b.ctx, keys[:1])
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range one {
				if d.Resource != models.ResInventory || d.Key != "sku-1" {
					t.Fatalf("%s: asked for sku-1 only, got %+v", stage, d)
				}
			}
		}
		compare("consistent", false)
		plant := []string{
			"UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-1'",
			"UPDATE inventory SET available = available + 5 WHERE sku_id = 'sku-2'",
			"UPDATE accounts SET frozen = 0 WHERE uid = 'u1' AND asset = 'BALANCE'",
			"UPDATE accounts SET frozen = frozen + 2 WHERE uid = 'u1' AND asset = 'POINTS'",
			"UPDATE activity_quotas SET locked = 0 WHERE activity_id = 'act-1'",
			fmt.Sprintf("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = %d", cp2.ID),
			"UPDATE slot_holds SET status = 'FREE', order_no = NULL WHERE slot_id = 'seat-1'",
		}
		for _, q := range plant {
			must(t, func() error { return b.s.W.Exec(q).Error })
		}
		compare("planted", true)
		if got, err := b.s.ReconcileKeys(b.ctx, nil); err != nil || got != nil {
			t.Fatalf("no keys = %v, %v", got, err)
		}
	})
}

func sortDiffs(ds []models.Diff) {
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Check < b.Check
	})
}

// On SQLite, the PENDING side of a key check reads the open holds of the
// keys and then each hold's order, both from covering indexes: never the
// orders first (every PENDING order, whatever the keys; once per key when
// the keys took part in the lookup: a flash sale's 100,000 orders and a
// page of 50 SKUs made 5 million probes), never a table.
func TestPendingHeldPlanReadsOpenHoldsThenOrders(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite, models.Options{})
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("sku-%02d", i)
	}
	plan, err := b.s.PendingHeldPlan([]models.ResourceType{models.ResInventory}, keys)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"SEARCH h USING COVERING INDEX order_holds_open (resource_type=? AND biz_key=?)",
		"SEARCH o USING COVERING INDEX orders_no_status (order_no=? AND status=?)",
	}
	var got []string
	for _, step := range plan {
		if strings.HasPrefix(step, "SEARCH") || strings.HasPrefix(step, "SCAN") {
			got = append(got, step)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan %q, want %q", plan, want)
	}
}
