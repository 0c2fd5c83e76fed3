package web_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Helpers of the ledger page tests (inventory, coupons, balances, report).

// ledGet fetches a page as a Chinese viewer and as an English one, in the
// zone tz ("" for the server's), failing unless both answer want with
// every text translated; it returns the Chinese body.
func ledGet(t *testing.T, b bundle, path, tz string, want int) string {
	t.Helper()
	var zh string
	for _, lang := range []string{"zh", "en"} {
		rec := ledServe(b, path, lang, tz)
		if rec.Code != want {
			t.Fatalf("GET %s (%s) = %d, want %d\n%s", path, lang, rec.Code, want, rec.Body)
		}
		body := rec.Body.String()
		if strings.Contains(body, "⟦") {
			t.Fatalf("GET %s (%s) has an untranslated key:\n%s", path, lang, body)
		}
		if lang == "zh" {
			zh = body
		}
	}
	return zh
}

func ledServe(b bundle, path, lang, tz string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.AddCookie(&http.Cookie{Name: "lang", Value: lang})
	if tz != "" {
		req.AddCookie(&http.Cookie{Name: "tz", Value: url.QueryEscape(tz)})
	}
	return b.serve(req)
}

var ledTag = regexp.MustCompile(`<[^>]*>`)

// ledText is the text of the first element whose data-testid is id, up to
// its first nested end tag, tags removed and spaces folded; ok is false
// when there is no such element.
func ledText(body, id string) (text string, ok bool) {
	i := strings.Index(body, `data-testid="`+id+`"`)
	if i < 0 {
		return "", false
	}
	rest := body[i:]
	rest = rest[strings.Index(rest, ">")+1:]
	if end := strings.Index(rest, "</"); end >= 0 {
		rest = rest[:end]
	}
	return strings.Join(strings.Fields(html.UnescapeString(ledTag.ReplaceAllString(rest, " "))), " "), true
}

// ledWant fails unless the element id reads want.
func ledWant(t *testing.T, body, id, want string) {
	t.Helper()
	got, ok := ledText(body, id)
	if !ok {
		t.Fatalf("no element %q in:\n%s", id, body)
	}
	if got != want {
		t.Fatalf("%s = %q, want %q", id, got, want)
	}
}

// ledHas fails unless the page has (or, with has false, lacks) element id.
func ledHas(t *testing.T, body, id string, has bool) {
	t.Helper()
	if _, ok := ledText(body, id); ok != has {
		t.Fatalf("element %q present = %v, want %v in:\n%s", id, ok, has, body)
	}
}

// ledTry fails the test on a set-up error.
func ledTry(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ledRows counts the rows of the ledger table whose data-testid starts with prefix.
func ledRows(body, prefix string) []string {
	return regexp.MustCompile(`data-testid="(`+regexp.QuoteMeta(prefix)+`[^"]*)"`).FindAllString(body, -1)
}

// Bad query parameters answer the 400 page, not a 500, on every ledger page.
func TestLedgerPagesBadParams(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 3, 0, "test")
		ledTry(t, "stock", err)
		for _, path := range []string{
			"/inventory?after=a%20b", "/inventory?prefix=a%25", "/inventory?prefix=" + strings.Repeat("x", 65),
			"/inventory/sku-1?after=abc", "/inventory/sku-1?after=-4",
			"/coupons?status=GONE", "/coupons?owner=ME", "/coupons?after=zzz", "/coupons?coupon=abc",
			"/coupons?from=2026-13-01", "/coupons?from=2026-11-30&to=2026-11-01", "/coupons?user=a%20b", "/coupons?order=a%2Fb",
			"/balances?asset=GOLD", "/balances?user=a%20b", "/balances?user=u1&after=x",
			"/reports/daily?date=yesterday", "/reports/daily?date=2026-02-30", "/reports/daily.csv?date=29.11.2026",
		} {
			body := ledGet(t, b, path, "", http.StatusBadRequest)
			ledHas(t, body, "error-message", true)
		}
		body := ledGet(t, b, "/inventory/no-such-sku", "", http.StatusNotFound)
		ledHas(t, body, "error-code", true)
		ledGet(t, b, "/inventory/"+url.PathEscape("bad key"), "", http.StatusNotFound)
	})
}
