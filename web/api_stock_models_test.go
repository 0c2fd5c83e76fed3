package web_test

import (
	"net/http"
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// A SKU's stock model and per-user limit, and an activity's limit and
// release delay, set and read through the API; a placement past a limit is
// 429 USER_LIMIT naming the limit and when it frees; bad settings are 400
// and change nothing.
func TestAPIStockModelsAndLimits(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		type view struct {
			SkuID         string            `json:"sku_id"`
			ActivityID    string            `json:"activity_id"`
			Total         int64             `json:"total"`
			Locked        int64             `json:"locked"`
			Sold          int64             `json:"sold"`
			Used          int64             `json:"used"`
			DeductAt      string            `json:"deduct_at"`
			Available     int64             `json:"available"`
			ReleaseDelayS int64             `json:"release_delay_s"`
			UserLimit     *models.UserLimit `json:"user_limit"`
		}
		got := must[view](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-p",
			`{"available":5,"deduct_at":"payment","user_limit":{"per_user_orders":1,"window_s":600}}`)
		if got.DeductAt != "payment" || got.UserLimit == nil || *got.UserLimit != (models.UserLimit{PerUserOrders: 1, WindowS: 600}) {
			t.Fatalf("PUT sku = %+v", got)
		}
		if again := must[view](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-p", ""); again.DeductAt != "payment" || again.UserLimit == nil {
			t.Fatalf("GET sku = %+v", again)
		}
		act := must[view](t, b, http.StatusOK, "PUT", "/api/v1/activities/act-p",
			`{"total":10,"release_delay_s":30,"user_limit":{"per_user_orders":2,"window_s":60}}`)
		if act.ReleaseDelayS != 30 || act.UserLimit == nil || act.UserLimit.PerUserOrders != 2 {
			t.Fatalf("PUT activity = %+v", act)
		}
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-p","qty":2}]}`)
		if sku := must[view](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-p", ""); sku.Available != 5 {
			t.Fatalf("a line deducted at payment held stock: %+v", sku)
		}
		rec := b.call("POST", "/api/v1/orders", `{"order_no":"o-2","user_id":"u1","items":[{"sku_id":"sku-p","qty":1}]}`)
		msg := wantError(t, rec, http.StatusTooManyRequests, "USER_LIMIT")
		if !strings.Contains(msg, "the limit is 1") || !strings.Contains(msg, "allowed from") {
			t.Fatalf("429 says %q, want the limit and when it frees", msg)
		}
		must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/pay", `{"channel_txn_id":"t-1"}`)
		if sku := must[view](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-p", ""); sku.Available != 3 {
			t.Fatalf("after payment = %+v, want 3 available", sku)
		}
		page := b.call("GET", "/inventory/sku-p", "")
		if page.Code != http.StatusOK || !strings.Contains(page.Body.String(), "未支付不占库存") {
			t.Fatalf("the SKU page does not show its stock model: %d", page.Code)
		}
		for _, body := range []string{
			`{"available":5,"deduct_at":"later"}`,
			`{"available":5,"user_limit":{"per_user_orders":1}}`,
			`{"available":5,"user_limit":{"per_user_orders":0,"window_s":5}}`,
			`{"available":5,"user_limit":{"per_user_orders":1,"window_s":999999999}}`,
		} {
			wantError(t, b.call("PUT", "/api/v1/skus/sku-p", body), http.StatusBadRequest, "INVALID_INPUT")
		}
		wantError(t, b.call("PUT", "/api/v1/activities/act-p", `{"total":10,"release_delay_s":-1}`), http.StatusBadRequest, "INVALID_INPUT")
		if sku := must[view](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-p", ""); sku.DeductAt != "payment" || sku.UserLimit == nil {
			t.Fatalf("a refused PUT changed the SKU: %+v", sku)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}
