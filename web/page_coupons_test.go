package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// couponShop: u1 has platform coupons p1 (used by o-p, closed and
// released) and p2 (never used), and merchant coupon m1 (used by o-m,
// paid); u2 has merchant coupon m2, held by the PENDING order o-x.
type couponShop struct{ p1, p2, m1, m2 int64 }

func seedCoupons(t *testing.T, b bundle) couponShop {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 100, 0, "test")
	try(t, "stock", err)
	exp := b.clock.Now().Add(30 * 24 * time.Hour)
	coupon := func(u string, o models.CouponOwner) int64 {
		cp, err := b.s.CreateCoupon(b.ctx, u, o, exp, "test")
		try(t, "coupon", err)
		return cp.ID
	}
	cs := couponShop{p1: coupon("u1", models.CouponPlatform), p2: coupon("u1", models.CouponPlatform),
		m1: coupon("u1", models.CouponMerchant), m2: coupon("u2", models.CouponMerchant)}
	place := func(no, u string, c int64) {
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: u, Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{c}})
		try(t, "place "+no, err)
	}
	place("o-p", "u1", cs.p1)
	place("o-m", "u1", cs.m1)
	place("o-x", "u2", cs.m2)
	_, err = b.s.CloseOrder(b.ctx, "o-p", models.TriggerUserCancel, "user:u1")
	try(t, "close", err)
	drain(t, b)
	_, err = b.s.PayOrder(b.ctx, "o-m", "txn-m")
	try(t, "pay", err)
	return cs
}

// ledTotals checks the coupon totals cells: want maps "OWNER-TYPE" to a count.
func ledTotals(t *testing.T, body string, want map[string]int64) {
	t.Helper()
	for _, o := range []string{"PLATFORM", "MERCHANT"} {
		var sum int64
		for _, typ := range []string{"LOCK", "DEDUCT", "RELEASE", "ADJUST"} {
			requireText(t, body, "coupon-total-"+o+"-"+typ, fmt.Sprint(want[o+"-"+typ]))
			sum += want[o+"-"+typ]
		}
		requireText(t, body, "coupon-total-"+o, fmt.Sprint(sum))
	}
}

// The coupon ledger counts platform and merchant coupons apart and marks
// each row's cost bearer; a user's view answers where their coupons went.
func TestCouponLedgerOwners(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cs := seedCoupons(t, b)

		all := getPageBoth(t, b, "/coupons", "", http.StatusOK)
		if n := len(ledFlowRows(all)); n != 9 {
			t.Fatalf("%d ledger rows, want 9", n)
		}
		// No filter bounds the rows: no totals, a way to get them.
		requireElement(t, all, "coupon-totals-hint", true)
		today, _ := testidHref(all, "coupon-totals-today")
		if today != "/coupons?from=2026-11-29&to=2026-11-29" {
			t.Fatalf("today link %q", today)
		}
		day := getPageBoth(t, b, today, "", http.StatusOK)
		ledTotals(t, day, map[string]int64{"PLATFORM-ADJUST": 2, "PLATFORM-LOCK": 1, "PLATFORM-RELEASE": 1,
			"MERCHANT-ADJUST": 2, "MERCHANT-LOCK": 2, "MERCHANT-DEDUCT": 1})
		next := getPageBoth(t, b, "/coupons?from=2026-11-30&to=2026-11-30", "", http.StatusOK)
		ledTotals(t, next, nil)
		requireElement(t, next, "coupon-empty", true)

		u1 := getPageBoth(t, b, "/coupons?user=u1", "", http.StatusOK)
		ledTotals(t, u1, map[string]int64{"PLATFORM-ADJUST": 2, "PLATFORM-LOCK": 1, "PLATFORM-RELEASE": 1,
			"MERCHANT-ADJUST": 1, "MERCHANT-LOCK": 1, "MERCHANT-DEDUCT": 1})
		// Where did p1 go: back to UNUSED after o-p closed; m1 was used by o-m.
		p1 := ledText1(t, u1, fmt.Sprint("coupon-now-", cs.p1))
		m1 := ledText1(t, u1, fmt.Sprint("coupon-now-", cs.m1))
		if !strings.Contains(p1, "平台券") || !strings.Contains(p1, "未使用") || !strings.Contains(m1, "商家券") || !strings.Contains(m1, "o-m") {
			t.Fatalf("u1's coupons now: %q, %q", p1, m1)
		}
		if strings.Contains(u1, fmt.Sprint("coupon-now-", cs.m2)) {
			t.Fatal("u2's coupon listed for u1")
		}

		merchant := getPageBoth(t, b, "/coupons?owner=MERCHANT", "", http.StatusOK)
		owners := ledOwners(merchant)
		if len(owners) != 5 || strings.Count(strings.Join(owners, ","), "商家券") != 5 {
			t.Fatalf("merchant rows show owners %v", owners)
		}
		// The coupon's status now: only m2 is LOCKED.
		locked := getPageBoth(t, b, "/coupons?status=LOCKED", "", http.StatusOK)
		if rows := ledOwners(locked); len(rows) != 2 || !strings.Contains(locked, `href="/orders/o-x"`) {
			t.Fatalf("LOCKED rows %v", rows)
		}
		used := getPageBoth(t, b, "/coupons?user=u1&status=USED", "", http.StatusOK)
		ledTotals(t, used, map[string]int64{"MERCHANT-ADJUST": 1, "MERCHANT-LOCK": 1, "MERCHANT-DEDUCT": 1})
		order := getPageBoth(t, b, "/coupons?order=+o-m+", "", http.StatusOK)
		ledTotals(t, order, map[string]int64{"MERCHANT-LOCK": 1, "MERCHANT-DEDUCT": 1})
		one := getPageBoth(t, b, fmt.Sprint("/coupons?coupon=", cs.p1), "", http.StatusOK)
		ledTotals(t, one, map[string]int64{"PLATFORM-ADJUST": 1, "PLATFORM-LOCK": 1, "PLATFORM-RELEASE": 1})
		if nobody := getPageBoth(t, b, "/coupons?user=nobody", "", http.StatusOK); !strings.Contains(nobody, `data-testid="coupon-user-none"`) {
			t.Fatal("a user without coupons is not said so")
		}
		// An unused coupon past its expiry says it can no longer be used.
		requireElement(t, u1, fmt.Sprint("coupon-expired-", cs.p2), false)
		b.clock.Advance(31 * 24 * time.Hour)
		later := getPageBoth(t, b, "/coupons?user=u1", "", http.StatusOK)
		requireElement(t, later, fmt.Sprint("coupon-expired-", cs.p2), true)
		requireElement(t, later, fmt.Sprint("coupon-expired-", cs.m1), false)
	})
}

// The coupon ledger pages newest first by (time, id), each row once.
func TestCouponLedgerPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		exp := b.clock.Now().Add(30 * 24 * time.Hour)
		for i := range 70 {
			_, err := b.s.CreateCoupon(b.ctx, "u3", models.CouponPlatform, exp, "test")
			try(t, "coupon", err)
			if i%3 == 0 { // several rows share a time
				b.clock.Advance(time.Second)
			}
		}
		seen := map[string]bool{}
		path, pages := "/coupons?user=u3", 0
		for path != "" {
			body := getPageBoth(t, b, path, "", http.StatusOK)
			for _, r := range ledFlowRows(body) {
				if seen[r] {
					t.Fatalf("row %s twice", r)
				}
				seen[r] = true
			}
			pages++
			path, _ = testidHref(body, "page-next")
		}
		if len(seen) != 70 || pages != 2 {
			t.Fatalf("%d rows on %d pages, want 70 on 2", len(seen), pages)
		}
	})
}

// ledText1 is ledText for an element that must exist, through its row.
func ledText1(t *testing.T, body, id string) string {
	t.Helper()
	el := ledElement(body, `data-testid="`+id+`"`)
	if el == "" {
		t.Fatalf("no %s", id)
	}
	return tagRE.ReplaceAllString(el, " ")
}

// ledOwners is the cost bearer shown on each coupon ledger row.
func ledOwners(body string) []string {
	var out []string
	for _, part := range strings.Split(body, `data-testid="coupon-flow-owner"`)[1:] {
		text, _ := testidText(`<td data-testid="x"`+part, "x")
		out = append(out, text)
	}
	return out
}

// ledFlowRows are the coupon ledger rows' testids.
func ledFlowRows(body string) []string {
	var out []string
	for _, r := range ledRows(body, "coupon-flow-") {
		if !strings.Contains(r, "owner") {
			out = append(out, r)
		}
	}
	return out
}
