package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// A user's balance shows frozen against available while an order holds it,
// and the ledger shows the freeze and its release with before → after.
func TestBalancesFreezeAndRelease(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 5, 0, "ops:1")
		try(t, "stock", err)
		_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "ops:1")
		try(t, "credit", err)
		_, err = b.s.Credit(b.ctx, "u1", models.AssetPoints, 500, "ops:1")
		try(t, "credit", err)
		_, err = b.s.Credit(b.ctx, "u2", models.AssetBalance, 50, "ops:1")
		try(t, "credit", err)
		b.clock.Advance(time.Minute)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 300}, {Asset: models.AssetPoints, Amount: 20}}})
		try(t, "place", err)

		held := getPageBoth(t, b, "/balances?user=u1", "", http.StatusOK)
		requireText(t, held, "bal-BALANCE-available", "7.00 元")
		requireText(t, held, "bal-BALANCE-frozen", "3.00 元")
		requireText(t, held, "bal-POINTS-frozen", "20 积分")
		requireText(t, held, "bal-BALANCE-spent", "0.00 元")

		b.clock.Advance(time.Minute)
		_, err = b.s.CloseOrder(b.ctx, "o-1", models.TriggerTimeout, "timeout")
		try(t, "close", err)
		drain(t, b)
		body := getPageBoth(t, b, "/balances?user=u1&asset=BALANCE", "", http.StatusOK)
		requireText(t, body, "bal-BALANCE-available", "10.00 元")
		requireText(t, body, "bal-BALANCE-frozen", "0.00 元")
		rows := ledRows(body, "flow-")
		if len(rows) != 3 {
			t.Fatalf("balance ledger has %d rows, want 3 (credit, freeze, release)", len(rows))
		}
		release, freeze := ledElement(body, rows[0]), ledElement(body, rows[1])
		for _, want := range []string{"释放", "超时关单", `href="/orders/o-1"`, "7.00 元 → <strong>10.00 元</strong>", "3.00 元 → <strong>0.00 元</strong>"} {
			if !strings.Contains(release, want) {
				t.Fatalf("release row lacks %q:\n%s", want, release)
			}
		}
		for _, want := range []string{"锁定", "下单", "10.00 元 → <strong>7.00 元</strong>", "0.00 元 → <strong>3.00 元</strong>"} {
			if !strings.Contains(freeze, want) {
				t.Fatalf("freeze row lacks %q:\n%s", want, freeze)
			}
		}
		// Both assets: points rows too, newest first.
		both := getPageBoth(t, b, "/balances?user=u1", "", http.StatusOK)
		if n := len(ledRows(both, "flow-")); n != 6 {
			t.Fatalf("both assets have %d rows, want 6", n)
		}
		if strings.Contains(both, "u2") {
			t.Fatal("u2's rows on u1's page")
		}
		requireElement(t, getPageBoth(t, b, "/balances?user=nobody", "", http.StatusOK), "bal-no-account", true)

		// Without a user: what the page is for, and the accounts that moved last.
		home := getPageBoth(t, b, "/balances", "", http.StatusOK)
		requireElement(t, home, "bal-explain", true)
		recent := ledRows(home, "bal-recent-")
		if len(recent) != 3 || !strings.Contains(recent[0], "bal-recent-u1-") || !strings.Contains(recent[2], "bal-recent-u2-BALANCE") {
			t.Fatalf("recent accounts %v, want u1's two, then u2's", recent)
		}
	})
}

// The account ledger pages newest first.
func TestBalancesPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for range 55 {
			_, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 10, "ops:1")
			try(t, "credit", err)
			_, err = b.s.Credit(b.ctx, "u1", models.AssetPoints, 1, "ops:1")
			try(t, "credit", err)
		}
		seen := map[string]bool{}
		path, pages := "/balances?user=u1", 0
		for path != "" {
			body := getPageBoth(t, b, path, "", http.StatusOK)
			for _, r := range ledRows(body, "flow-") {
				if seen[r] {
					t.Fatalf("row %s twice", r)
				}
				seen[r] = true
			}
			pages++
			path, _ = testidHref(body, "page-next")
		}
		if len(seen) != 110 || pages != 3 {
			t.Fatalf("%d rows on %d pages, want 110 on 3", len(seen), pages)
		}
		points := getPageBoth(t, b, "/balances?user=u1&asset=POINTS", "", http.StatusOK)
		next, _ := testidHref(points, "page-next")
		if len(ledRows(points, "flow-")) != 50 || next != "/balances?after=12&asset=POINTS&user=u1" {
			t.Fatalf("points page 1: next %q", next)
		}
	})
}

// The points card says until when the points are valid, and that they have
// expired once that passed; a release under the default policy (extend by
// 3 days) moves the expiry, and its ledger row shows before → after while
// the balance rows show none. Breaks if the page hides the expiry or the
// row's move.
func TestBalancesPointsExpiry(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		start := b.clock.Now()
		day := 24 * time.Hour
		_, err := b.s.SetStock(b.ctx, "sku-1", 5, 0, "ops:1")
		try(t, "stock", err)
		_, err = b.s.CreditUntil(b.ctx, "u1", models.AssetPoints, 500, start.Add(day), "ops:1")
		try(t, "credit", err)
		_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "ops:1")
		try(t, "credit", err)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 300}, {Asset: models.AssetPoints, Amount: 20}}})
		try(t, "place", err)
		_, err = b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1")
		try(t, "close", err)
		stamp := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

		valid := getPageBoth(t, b, "/balances?user=u1", "UTC", http.StatusOK)
		if cell, _ := testidText(valid, "bal-POINTS-expire"); !strings.Contains(cell, stamp(start.Add(day))) {
			t.Fatalf("points expiry cell %q, want %s", cell, stamp(start.Add(day)))
		}
		requireElement(t, valid, "bal-POINTS-expired", false)

		b.clock.Advance(2 * day)
		expired := getPageBoth(t, b, "/balances?user=u1", "UTC", http.StatusOK)
		requireElement(t, expired, "bal-POINTS-expired", true)

		drain(t, b)
		extended := start.Add(2 * day).Add(3 * day)
		body := getPageBoth(t, b, "/balances?user=u1", "UTC", http.StatusOK)
		requireElement(t, body, "bal-POINTS-expired", false)
		if cell, _ := testidText(body, "bal-POINTS-expire"); !strings.Contains(cell, stamp(extended)) {
			t.Fatalf("points expiry cell after the release %q, want %s", cell, stamp(extended))
		}
		rows := ledRows(body, "flow-")
		if len(rows) != 6 {
			t.Fatalf("%d ledger rows, want 6", len(rows))
		}
		var releases int
		for _, r := range rows {
			row := ledElement(body, r)
			switch {
			case strings.Contains(row, "积分") && strings.Contains(row, "释放"):
				releases++
				if want := stamp(start.Add(day)) + " → <strong>" + stamp(extended) + "</strong>"; !strings.Contains(row, want) {
					t.Fatalf("points release row lacks %q:\n%s", want, row)
				}
			case strings.Contains(row, "元"):
				if !strings.Contains(row, `data-testid="ledger-expiry"><span class="muted">—</span>`) {
					t.Fatalf("balance row shows an expiry:\n%s", row)
				}
			}
		}
		if releases != 1 {
			t.Fatalf("%d points release rows, want 1", releases)
		}
	})
}
