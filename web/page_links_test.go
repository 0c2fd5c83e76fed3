package web_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
)

// linkHref finds every link of a page's main part.
var linkHref = regexp.MustCompile(`<a [^>]*href="([^"]*)"`)

// mainLinks are the distinct links inside a page's <main>, without their
// fragments: the page's own links, not the layout's.
func mainLinks(body string) []string {
	i, j := strings.Index(body, "<main>"), strings.Index(body, "</main>")
	if i < 0 || j < i {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range linkHref.FindAllStringSubmatch(body[i:j], -1) {
		href := html.UnescapeString(m[1])
		if k := strings.IndexByte(href, '#'); k >= 0 {
			href = href[:k]
		}
		if href == "" || seen[href] {
			continue
		}
		seen[href] = true
		out = append(out, href)
	}
	return out
}

// followAll fetches every link of page's main part as a viewer: each must
// answer 200 with every text translated.
func followAll(t *testing.T, b bundle, page string) []string {
	t.Helper()
	body := getPage(t, b, page, false, http.StatusOK)
	links := mainLinks(body)
	for _, href := range links {
		getPage(t, b, href, false, http.StatusOK)
	}
	return links
}

// Every id on the chain, the orders list, the user page, the balances and
// coupon ledgers and the SKU page links to a page that answers 200, and
// the chain's "does not reconcile" links to the key's open ticket once a
// reconciliation has opened it.
func TestLinksFollowed(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := ordManualOrder(t, b)
		viewer := b.as(b.mustSignIn("cs", auth.RoleViewer))

		before := getPage(t, viewer, "/orders/m-1", false, http.StatusOK)
		requireElement(t, before, "q-noticket-HELD", true)
		requireElement(t, before, "q-ticket-HELD", false)
		_, err := b.s.RunReconciliation(b.ctx, "test", "test")
		try(t, "reconcile", err)
		var ticket int64
		try(t, "ticket", b.s.R.Raw(`SELECT id FROM recon_diffs WHERE resource_type = 'inventory' AND biz_key = 'sku-1'
			AND check_name = 'HELD' AND status <> 'RESOLVED'`).Scan(&ticket).Error)
		if ticket == 0 {
			t.Fatal("the reconciliation opened no HELD ticket for sku-1")
		}

		chain := getPage(t, viewer, "/orders/m-1", false, http.StatusOK)
		wantHref := map[string]string{
			"chain-user":                              "/users/u1",
			"q-ticket-HELD":                           fmt.Sprintf("/recon/diffs/%d", ticket),
			"resource-key-inventory-sku-1":            "/inventory/sku-1",
			fmt.Sprintf("resource-key-coupon-%d", cp): fmt.Sprintf("/coupons?coupon=%d", cp),
			"resource-key-balance-u1":                 "/balances?asset=BALANCE&user=u1",
			"q-task-inventory-sku-1":                  "/tasks/",
		}
		for id, want := range wantHref {
			if got := html.UnescapeString(mustHref(t, chain, id)); !strings.HasPrefix(got, want) {
				t.Errorf("%s links to %q, want %q", id, got, want)
			}
		}
		flow := html.UnescapeString(mustHref(t, testidElement(chain, "resource-balance-u1"), "q-flow"))
		if !regexp.MustCompile(`^/balances\?asset=BALANCE&user=u1&after=(\d+)#flow-\d+$`).MatchString(flow) {
			t.Errorf("the balance's release row links to %q, want its line on the account's ledger", flow)
		}
		// The linked ledger page starts at the row, which carries the anchor.
		id := flow[strings.LastIndex(flow, "#flow-")+len("#flow-"):]
		if page := getPage(t, viewer, flow[:strings.IndexByte(flow, '#')], false, http.StatusOK); !strings.Contains(page, `id="flow-`+id+`"`) {
			t.Errorf("%s has no line flow-%s", flow, id)
		}
		if refs := strings.Count(testidElement(chain, "timeline"), `data-testid="ref-flow"`); refs < 5 {
			t.Errorf("%d of the timeline's ledger rows link to their line, want every one of the 5", refs)
		}

		pages := []string{"/orders/m-1", "/orders", "/users/u1", "/balances", "/balances?user=u1",
			"/coupons", fmt.Sprintf("/coupons?user=u1&coupon=%d", cp), "/inventory", "/inventory/sku-1"}
		followed := 0
		for _, p := range pages {
			followed += len(followAll(t, viewer, p))
		}
		if followed < 40 {
			t.Errorf("followed %d links, want the pages' every id (at least 40)", followed)
		}
	})
}

// The orders list shows each order's release state, filters by each one
// with its total, and refuses a state it does not know.
func TestOrdersListReleaseFilter(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ordManualOrder(t, b) // m-1: MANUAL
		_, err := b.s.SetStock(b.ctx, "sku-2", 100, 0, "test")
		try(t, "stock", err)
		place := func(no string) {
			b.clock.Advance(time.Second)
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u2", Items: []models.Item{{SkuID: "sku-2", Qty: 1}}})
			try(t, "place "+no, err)
		}
		for _, no := range []string{"h-1", "p-1", "r-1", "c-1"} {
			place(no)
		}
		_, err = b.s.PayOrder(b.ctx, "p-1", "txn")
		try(t, "pay", err)
		_, err = b.s.CloseOrder(b.ctx, "r-1", models.TriggerTimeout, "timeout")
		try(t, "close", err)
		ordDrain(t, b)
		_, err = b.s.CloseOrder(b.ctx, "c-1", models.TriggerTimeout, "timeout")
		try(t, "close", err)
		want := map[string]string{"m-1": "MANUAL", "h-1": "HOLDING", "p-1": "NONE", "r-1": "RELEASED", "c-1": "RELEASING"}

		all := getPageBoth(t, b, "/orders", "", http.StatusOK)
		requireText(t, all, "orders-total", "共 5 单")
		for no, st := range want {
			row := regexp.MustCompile(`data-order="` + no + `"[\s\S]*?data-release="([A-Z]+)"`).FindStringSubmatch(all)
			if row == nil || row[1] != st {
				t.Errorf("%s shows release %v, want %s", no, row, st)
			}
		}
		if got := markupText(testidElement(all, "order-release")); got == "" {
			t.Error("the release state has no text")
		}
		for _, st := range []string{"MANUAL", "RETRY", "RELEASING", "HOLDING", "RELEASED", "NONE"} {
			body := getPageBoth(t, b, "/orders?release="+st, "", http.StatusOK)
			var nos []string
			for no, w := range want {
				if w == st {
					nos = append(nos, no)
				}
			}
			if got := strings.Count(body, `data-testid="order-row"`); got != len(nos) {
				t.Errorf("release=%s lists %d orders, want %v", st, got, nos)
			}
			for _, no := range nos {
				if !strings.Contains(body, `data-order="`+no+`"`) {
					t.Errorf("release=%s misses %s", st, no)
				}
			}
			requireText(t, body, "orders-total", fmt.Sprintf("共 %d 单", len(nos)))
			if !strings.Contains(body, `<option value="`+st+`" selected`) {
				t.Errorf("release=%s: the filter does not keep its value", st)
			}
		}
		bad := getPage(t, b, "/orders?release=DONE", true, http.StatusBadRequest)
		if !strings.Contains(bad, "release state") {
			t.Errorf("release=DONE does not say what a release state is:\n%s", bad)
		}
		// The next page keeps the filter.
		for i := range 55 {
			place(fmt.Sprintf("n-%02d", i))
		}
		page1 := getPage(t, b, "/orders?release=HOLDING", false, http.StatusOK)
		requireText(t, page1, "orders-total", "共 56 单")
		next := html.UnescapeString(mustHref(t, page1, "next-page"))
		if !strings.Contains(next, "release=HOLDING") {
			t.Fatalf("next page %q drops the filter", next)
		}
		if got := strings.Count(getPage(t, b, next, false, http.StatusOK), `data-release="HOLDING"`); got != 6 {
			t.Errorf("the second page lists %d HOLDING orders, want 6", got)
		}
	})
}

// A user's page: their accounts in their units, their coupons and their
// orders, each linked; an id nothing carries is a 404 that says so, and an
// id that cannot be one is refused, never a 500.
func TestUserPage(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := ordManualOrder(t, b)
		_, err := b.s.Credit(b.ctx, "u1", models.AssetPoints, 1234, "test")
		try(t, "points", err)
		viewer := b.as(b.mustSignIn("cs", auth.RoleViewer))
		body := getPageBoth(t, viewer, "/users/u1", "", http.StatusOK)
		requireText(t, testidElement(body, "user-account-BALANCE"), "user-available", "10.00 元")
		requireText(t, testidElement(body, "user-account-POINTS"), "user-available", "1,234 积分")
		en := getPage(t, viewer, "/users/u1", true, http.StatusOK)
		requireText(t, testidElement(en, "user-account-BALANCE"), "user-available", "10.00 yuan")
		requireText(t, testidElement(en, "user-account-POINTS"), "user-available", "1,234 points")
		if got := html.UnescapeString(mustHref(t, testidElement(body, "user-account-BALANCE"), "user-account-link")); got != "/balances?asset=BALANCE&user=u1" {
			t.Errorf("the balance links to %q", got)
		}
		if got := mustHref(t, testidElement(body, fmt.Sprintf("user-coupon-%d", cp)), "user-coupon-link"); !strings.HasSuffix(got, fmt.Sprintf("coupon=%d", cp)) {
			t.Errorf("the coupon links to %q", got)
		}
		if !strings.Contains(body, `data-order="m-1"`) || !strings.Contains(body, `data-release="MANUAL"`) {
			t.Errorf("the user's page lacks order m-1 and its release state")
		}
		requireText(t, body, "orders-total", "共 1 单")

		// Paged: 50 orders a page, the next one keyset.
		_, err = b.s.SetStock(b.ctx, "sku-9", 100, 0, "test")
		try(t, "stock", err)
		for i := range 52 {
			b.clock.Advance(time.Second)
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: fmt.Sprintf("u-%02d", i), UserID: "u1",
				Items: []models.Item{{SkuID: "sku-9", Qty: 1}}})
			try(t, "place", err)
		}
		page1 := getPage(t, viewer, "/users/u1", false, http.StatusOK)
		requireText(t, page1, "orders-total", "共 53 单")
		page2 := getPage(t, viewer, html.UnescapeString(mustHref(t, page1, "next-page")), false, http.StatusOK)
		if n1, n2 := strings.Count(page1, `data-testid="order-row"`), strings.Count(page2, `data-testid="order-row"`); n1 != 50 || n2 != 3 {
			t.Errorf("pages of %d and %d orders, want 50 and 3", n1, n2)
		}

		// A user known only by an account has a page too.
		_, err = b.s.Credit(b.ctx, "only-points", models.AssetPoints, 5, "test")
		try(t, "credit", err)
		requireElement(t, getPage(t, viewer, "/users/only-points", false, http.StatusOK), "user-no-orders", true)

		nobody := getPageBoth(t, viewer, "/users/nobody", "", http.StatusNotFound)
		requireText(t, nobody, "user-not-found", "没有找到用户 nobody：没有订单、账户或优惠券带有这个 ID。请检查用户 ID 是否完整。")
		for _, path := range []string{"/users/%3Cscript%3E", "/users/a%20b", "/users/" + strings.Repeat("x", 65),
			"/users/..%2F..%2Fetc", "/users/%00", "/users/u1?after=not-a-cursor", "/users/%E4%BD%A0"} {
			rec := servePage(viewer, path, "", "")
			if rec.Code != http.StatusBadRequest && rec.Code != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 400 or 404", path, rec.Code)
			}
			if strings.Contains(rec.Body.String(), "<script>") {
				t.Errorf("GET %s echoes the markup", path)
			}
		}
	})
}

// The SKU list says how many SKUs its prefix selects.
func TestInventoryTotal(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, sku := range []string{"sku-1", "sku-2", "x-1"} {
			_, err := b.s.SetStock(b.ctx, sku, 1, 0, "test")
			try(t, "stock", err)
		}
		requireText(t, getPageBoth(t, b, "/inventory", "", http.StatusOK), "inv-total", "共 3 个 SKU")
		requireText(t, getPageBoth(t, b, "/inventory?prefix=sku", "", http.StatusOK), "inv-total", "共 2 个 SKU")
		requireText(t, getPage(t, b, "/inventory?prefix=sku", true, http.StatusOK), "inv-total", "SKUs: 2")
	})
}
