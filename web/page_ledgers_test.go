package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Helpers of the ledger page tests (inventory, coupons, balances, report).

// ledRows counts the rows of the ledger table whose data-testid starts with prefix.
func ledRows(body, prefix string) []string {
	return regexp.MustCompile(`data-testid="(`+regexp.QuoteMeta(prefix)+`[^"]*)"`).FindAllString(body, -1)
}

// Bad query parameters answer the 400 page, not a 500, on every ledger page.
func TestLedgerPagesBadParams(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 3, 0, "test")
		try(t, "stock", err)
		for _, path := range []string{
			"/inventory?after=a%20b", "/inventory?prefix=a%25", "/inventory?prefix=" + strings.Repeat("x", 65),
			"/inventory/sku-1?after=abc", "/inventory/sku-1?after=-4",
			"/coupons?status=GONE", "/coupons?owner=ME", "/coupons?after=zzz", "/coupons?coupon=abc",
			"/coupons?from=2026-13-01", "/coupons?from=2026-11-30&to=2026-11-01", "/coupons?user=a%20b", "/coupons?order=a%2Fb",
			"/balances?asset=GOLD", "/balances?user=a%20b", "/balances?user=u1&after=x",
			"/reports/daily?date=yesterday", "/reports/daily?date=2026-02-30", "/reports/daily.csv?date=29.11.2026",
		} {
			body := getPageBoth(t, b, path, "", http.StatusBadRequest)
			requireElement(t, body, "error-message", true)
		}
		body := getPageBoth(t, b, "/inventory/no-such-sku", "", http.StatusNotFound)
		requireElement(t, body, "error-code", true)
		getPageBoth(t, b, "/inventory/"+url.PathEscape("bad key"), "", http.StatusNotFound)
	})
}
