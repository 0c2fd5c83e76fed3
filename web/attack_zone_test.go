package web_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// santiagoShop is a shop whose business zone moves its clocks at midnight:
// on 2026-09-06 Santiago goes from 00:00 -04 straight to 01:00 -03, so that
// day has no midnight and starts at 01:00.
func santiagoShop(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	loc, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatal(err)
	}
	clock := modelstest.NewClock()
	return jbBundle(modelstest.Open(t, d, models.Options{Now: clock.Now}), clock, nil, loc)
}

// A day whose midnight the clocks skip starts at 01:00, not at the day
// before's 23:00 (where time.Date puts a midnight that does not exist): an
// order at 23:30 on the 5th is the 5th's, on the orders list as on every
// date filter; and the daily report of the 5th leads on to the 6th, whose
// report says it is the 6th, and the 7th's back to the 6th (they led to
// the 5th, and the 6th said it was the 5th).
func TestAttackShopDayWithoutMidnight(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, santiagoShop, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
		try(t, "stock", err)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-late", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
		try(t, "place", err)
		// 2026-09-05 23:30 -04 in Santiago.
		late := time.Date(2026, 9, 6, 3, 30, 0, 0, time.UTC)
		try(t, "created_at", b.s.W.Exec("UPDATE orders SET created_at = ? WHERE order_no = 'o-late'", late).Error)
		for day, want := range map[string][]string{"2026-09-05": {"o-late"}, "2026-09-06": nil} {
			got := ordRows(getPage(t, b, "/orders?from="+day+"&to="+day, true, http.StatusOK))
			if !slices.Equal(got, want) {
				t.Errorf("orders of %s: %v, want %v", day, got, want)
			}
		}
		fifth := getPage(t, b, "/reports/daily?date=2026-09-05", true, http.StatusOK)
		if next := attrOf(testidTag(fifth, "report-next"), "href"); next != "/reports/daily?date=2026-09-06" {
			t.Errorf("the 5th's report leads on to %q, want the 6th", next)
		}
		sixth := getPage(t, b, "/reports/daily?date=2026-09-06", true, http.StatusOK)
		if got, _ := testidText(sixth, "report-date"); got != "2026-09-06" {
			t.Errorf("the 6th's report says it is %q", got)
		}
		seventh := getPage(t, b, "/reports/daily?date=2026-09-07", true, http.StatusOK)
		if prev := attrOf(testidTag(seventh, "report-prev"), "href"); prev != "/reports/daily?date=2026-09-06" {
			t.Errorf("the 7th's report leads back to %q, want the 6th", prev)
		}
	})
}
