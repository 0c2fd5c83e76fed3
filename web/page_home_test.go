package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"unhold/models"
)

// testidText finds the text of the element with a data-testid, flattening
// nested tags, so a page test reads numbers, not markup.
func testidText(t *testing.T, html, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)data-testid="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</(p|table)>`).FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no data-testid=%q in the page", id)
	}
	return strings.Join(strings.Fields(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], " ")), " ")
}

func TestHomePage(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		if _, err := b.s.SetStock(b.ctx, "sku-1", 5, 0, "test"); err != nil {
			t.Fatal(err)
		}
		for _, no := range []string{"o-1", "o-2"} {
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-2", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		// A hand edit for reconciliation to find.
		if err := b.s.W.Exec("UPDATE inventory SET locked = locked + 1, available = available - 1").Error; err != nil {
			t.Fatal(err)
		}
		rec := b.call(http.MethodGet, "/", "")
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("GET / = %d %s", rec.Code, rec.Header().Get("Content-Type"))
		}
		page := rec.Body.String()
		if got := testidText(t, page, "orders"); got != "PENDING 1 PAID 0 CLOSED 1 REFUND_PENDING 0" {
			t.Errorf("orders = %q", got)
		}
		if got := testidText(t, page, "tasks"); got != "PENDING 1 RETRY 0 MANUAL 0 DONE 0 SUPERSEDED 0" {
			t.Errorf("tasks = %q", got)
		}
		if got := testidText(t, page, "diffs"); got != "1" {
			t.Errorf("diffs = %q, want 1", got)
		}
		css := b.call(http.MethodGet, "/static/app.css", "")
		if css.Code != http.StatusOK || !strings.Contains(css.Body.String(), "font") {
			t.Fatalf("GET /static/app.css = %d", css.Code)
		}
	})
}
