package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

type counterJSON struct {
	Available int64 `json:"available"`
	Locked    int64 `json:"locked"`
	Spent     int64 `json:"spent"`
}

// withGiftWrap is setup with a declared counter type, gift_wrap.
func withGiftWrap(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now, Declared: []models.DeclaredType{
		{Type: "gift_wrap", Label: models.Label{Zh: "礼品包装", En: "Gift wrap"}},
	}})
	return newBundle(s, clock)
}

// A declared counter is set and read through the generic route, held by an
// order through the generic holds list, released by the worker, named by
// its label on the dashboard, and reconciled like any built-in counter; the
// built-in counters answer the same read.
func TestDeclaredCounterThroughTheAPI(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withGiftWrap, func(t *testing.T, b bundle) {
		if got := must[counterJSON](t, b, http.StatusOK, "PUT", "/api/v1/resources/gift_wrap/box-1", `{"available":10}`); got != (counterJSON{Available: 10}) {
			t.Fatalf("PUT = %+v", got)
		}
		if rec := b.call("POST", "/api/v1/orders", `{"order_no":"o-1","user_id":"u1","holds":[{"type":"gift_wrap","key":"box-1","qty":3}]}`); rec.Code != http.StatusCreated {
			t.Fatalf("place = %d %s", rec.Code, rec.Body)
		}
		if got := must[counterJSON](t, b, http.StatusOK, "GET", "/api/v1/resources/gift_wrap/box-1", ""); got != (counterJSON{Available: 7, Locked: 3}) {
			t.Fatalf("after place = %+v", got)
		}
		page := b.call("GET", "/orders/o-1", "")
		if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "礼品包装") {
			t.Fatalf("the chain does not name gift_wrap by its label: %d", page.Code)
		}
		must[map[string]any](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/close", `{"reason":"USER_CANCEL"}`)
		tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claimed %d (%v), want the one gift_wrap task", len(tasks), err)
		}
		if res, err := b.s.ReleaseBatch(b.ctx, tasks, "w1"); err != nil || res[0].Outcome != models.OutcomeDone {
			t.Fatalf("release = %+v, %v", res, err)
		}
		if got := must[counterJSON](t, b, http.StatusOK, "GET", "/api/v1/resources/gift_wrap/box-1", ""); got != (counterJSON{Available: 10}) {
			t.Fatalf("after release = %+v", got)
		}
		modelstest.CheckInvariants(t, b.s)

		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":4}`)
		if got := must[counterJSON](t, b, http.StatusOK, "GET", "/api/v1/resources/inventory/sku-1", ""); got != (counterJSON{Available: 4}) {
			t.Fatalf("GET inventory through the generic route = %+v", got)
		}
		for _, tc := range []struct {
			method, path, body string
			status             int
			code, says         string
		}{
			{"PUT", "/api/v1/resources/inventory/sku-1", `{"available":5}`, 400, "INVALID_INPUT", "built-in"},
			{"GET", "/api/v1/resources/coupon/1", "", 400, "INVALID_INPUT", "one at a time"},
			{"GET", "/api/v1/resources/gold/k", "", 400, "INVALID_INPUT", `unknown resource type "gold"`},
			{"GET", "/api/v1/resources/gift_wrap/nope", "", 404, "NOT_FOUND", "nope"},
			{"PUT", "/api/v1/resources/gift_wrap/box-1", `{"available":-1}`, 400, "INVALID_INPUT", "available"},
			{"PUT", "/api/v1/resources/gift_wrap/box-1", `{}`, 400, "INVALID_INPUT", "available is required"},
		} {
			if msg := wantError(t, b.call(tc.method, tc.path, tc.body), tc.status, tc.code); !strings.Contains(msg, tc.says) {
				t.Errorf("%s %s: %q, want it to say %q", tc.method, tc.path, msg, tc.says)
			}
		}
		if got := must[counterJSON](t, b, http.StatusOK, "GET", "/api/v1/resources/gift_wrap/box-1", ""); got != (counterJSON{Available: 10}) {
			t.Fatalf("a refused request changed the counter: %+v", got)
		}
	})
}
