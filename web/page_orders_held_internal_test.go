package web

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
)

// Close dates are days in the zone the list is given, both ends included:
// closed_from is that day's midnight there, closed_to the next day's, the
// bound ListOrders keeps closed_at below (an order closed at 23:59:59 on
// the last day is in, one closed at 00:00:00 the day after is not).
func TestParseOrdersQueryClosedDays(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"UTC", "Asia/Shanghai", "America/New_York"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodGet, "/orders?closed_from=2026-11-29&closed_to=2026-11-30", nil)
		_, q, err := parseOrdersQuery(echo.New().NewContext(req, httptest.NewRecorder()), loc)
		if err != nil {
			t.Fatal(err)
		}
		from, to := time.Date(2026, 11, 29, 0, 0, 0, 0, loc), time.Date(2026, 12, 1, 0, 0, 0, 0, loc)
		if !q.ClosedFrom.Equal(from) || !q.ClosedTo.Equal(to) {
			t.Errorf("%s: closed [%s, %s), want [%s, %s)", zone, q.ClosedFrom, q.ClosedTo, from, to)
		}
	}
}
