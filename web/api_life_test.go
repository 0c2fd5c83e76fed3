package web_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"unhold/models"
)

// errCodeOf is the code of an API error answer.
func errCodeOf(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error.Code
}

// The order's life through the API: a line cancel before payment, then a
// shipment, a refund, a return and its inbound after it. Each answers the
// same when sent again (repeat: true); an id sent with another body, an
// unknown order, line or return, and bad bodies are refused with their
// codes, and a viewer may not call them.
func TestAPIOrderLife(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := seedShopAPI(t, b)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":3},{"sku_id":"sku-2","qty":1}],"coupon_ids":[`+strconv.FormatInt(cp, 10)+`]}`)
		for i := range 2 {
			res := must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/lines/sku-1/cancel", `{"qty":1,"version":0,"reason":"too many"}`)
			if res.Status != models.OrderPending || res.Repeat != (i == 1) || res.Lines[0].Released != 1 {
				t.Fatalf("line cancel #%d = %+v", i+1, res)
			}
		}
		must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-1/pay", `{"channel_txn_id":"t-1"}`)
		steps := []struct{ path, body string }{
			{"/api/v1/orders/o-1/ship", `{"shipment_id":"sh-1","lines":[{"sku_id":"sku-1","qty":1}]}`},
			{"/api/v1/orders/o-1/refunds", `{"refund_id":"rf-1","lines":[{"sku_id":"sku-1","qty":1}],"reason":"late"}`},
			{"/api/v1/orders/o-1/returns", `{"return_id":"ret-1","lines":[{"sku_id":"sku-1","qty":1}]}`},
			{"/api/v1/returns/ret-1/inbound", `{"lines":[{"sku_id":"sku-1","qty":1,"restock":true}]}`},
		}
		want := []models.OrderStatus{models.OrderPartShipped, models.OrderPartShipped, models.OrderReturning, models.OrderPartShipped}
		for i, st := range steps {
			first := must[models.LifeResult](t, b, http.StatusOK, "POST", st.path, st.body)
			again := must[models.LifeResult](t, b, http.StatusOK, "POST", st.path, st.body)
			if first.Status != want[i] || first.Repeat || !again.Repeat || again.Status != first.Status {
				t.Fatalf("POST %s: %+v then %+v, want %s", st.path, first, again, want[i])
			}
		}
		sku := must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", "")
		// Of 3: one cancelled, one refunded, one shipped, returned and
		// restocked: all back.
		if sku.Available != 10 || sku.Sold != 0 || sku.Locked != 0 {
			t.Fatalf("sku-1 = %+v, want all 10 available", sku)
		}
		for _, c := range []struct {
			name, method, path, body string
			status                   int
			code                     string
		}{
			{"id reused", "POST", "/api/v1/orders/o-1/refunds", `{"refund_id":"rf-1","lines":[{"sku_id":"sku-2","qty":1}]}`, 409, "ID_REUSED"},
			{"unknown order", "POST", "/api/v1/orders/nope/ship", `{"shipment_id":"sh-9","lines":[{"sku_id":"sku-1","qty":1}]}`, 404, "NOT_FOUND"},
			{"unknown line", "POST", "/api/v1/orders/o-1/ship", `{"shipment_id":"sh-9","lines":[{"sku_id":"sku-9","qty":1}]}`, 404, "LINE_NOT_FOUND"},
			{"unknown return", "POST", "/api/v1/returns/ret-9/inbound", `{"lines":[{"sku_id":"sku-1","qty":1,"restock":true}]}`, 404, "NOT_FOUND"},
			{"return more than shipped", "POST", "/api/v1/orders/o-1/returns", `{"return_id":"ret-2","lines":[{"sku_id":"sku-1","qty":2}]}`, 409, "QTY_EXCEEDED"},
			{"cancel after payment", "POST", "/api/v1/orders/o-1/lines/sku-2/cancel", `{"qty":1,"cancel_id":"c-1"}`, 409, "ORDER_STATUS"},
			{"cancel without version or id", "POST", "/api/v1/orders/o-1/lines/sku-2/cancel", `{"qty":1}`, 400, "INVALID_INPUT"},
			{"cancel with version and id", "POST", "/api/v1/orders/o-1/lines/sku-2/cancel", `{"qty":1,"version":0,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
			{"bad cancel id", "POST", "/api/v1/orders/o-1/lines/sku-2/cancel", `{"qty":1,"cancel_id":"a b"}`, 400, "INVALID_INPUT"},
			{"close a shipped order", "POST", "/api/v1/orders/o-1/close", `{"reason":"USER_CANCEL"}`, 409, "ORDER_NOT_CLOSABLE"},
			{"qty missing", "POST", "/api/v1/orders/o-1/ship", `{"shipment_id":"sh-9","lines":[{"sku_id":"sku-2"}]}`, 400, "INVALID_INPUT"},
			{"unknown field", "POST", "/api/v1/orders/o-1/ship", `{"shipment_id":"sh-9","lines":[],"x":1}`, 400, "INVALID_INPUT"},
			{"negative version", "POST", "/api/v1/orders/o-1/lines/sku-2/cancel", `{"qty":1,"version":-2}`, 400, "INVALID_INPUT"},
			{"bad sku in path", "POST", "/api/v1/orders/o-1/lines/a%20b/cancel", `{"qty":1,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
		} {
			rec := b.call(c.method, c.path, c.body)
			if rec.Code != c.status || errCodeOf(t, rec.Body.Bytes()) != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, rec.Code, rec.Body, c.status, c.code)
			}
		}
		viewer := b.as(b.mustSignIn("vera", "viewer"))
		if rec := viewer.call("POST", "/api/v1/orders/o-1/ship", `{"shipment_id":"sh-v","lines":[{"sku_id":"sku-2","qty":1}]}`); rec.Code != http.StatusForbidden {
			t.Errorf("a viewer's shipment = %d, want 403", rec.Code)
		}
		chain := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-1", "")
		if len(chain.Ops) != 5 {
			t.Fatalf("chain has %d operations, want 5: %+v", len(chain.Ops), chain.Ops)
		}
	})
}

// The chain shows the order's life after placement in both languages:
// each line's quantities and each operation with its lines, the status it
// left and who did it; an unpaid order without operations has no section.
func TestChainShowsOrderLife(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShopAPI(t, b)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-2","user_id":"u1","items":[{"sku_id":"sku-1","qty":3}]}`)
		if body := getPageBoth(t, b, "/orders/o-2", "", http.StatusOK); testidElement(body, "order-life") != "" {
			t.Fatal("an unpaid order without operations shows a life section")
		}
		must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-2/pay", `{"channel_txn_id":"t-2"}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-2/ship", `{"shipment_id":"sh-2","lines":[{"sku_id":"sku-1","qty":2}]}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-2/returns", `{"return_id":"ret-2","lines":[{"sku_id":"sku-1","qty":1}],"reason":"too small"}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/returns/ret-2/inbound", `{"lines":[{"sku_id":"sku-1","qty":1,"restock":false}]}`)
		body := getPageBoth(t, b, "/orders/o-2", "", http.StatusOK)
		line := markupText(testidElement(body, "life-line-sku-1"))
		if line != "sku-1 3 0 0 3 2 0 1 0 1 3" {
			t.Fatalf("line sku-1 = %q, want ordered 3, paid 3, shipped 2, returned 1, written off 1, version 3", line)
		}
		if op := markupText(testidElement(body, "life-op-INBOUND")); !strings.Contains(op, "ret-2") || !strings.Contains(op, "报损") ||
			!strings.Contains(op, "部分发货") {
			t.Fatalf("inbound row = %q, want the return, its write-off and the status after", op)
		}
		if op := markupText(testidElement(body, "life-op-RETURN")); !strings.Contains(op, "too small") {
			t.Fatalf("return row = %q, want its reason", op)
		}

		// A line deducted at payment shows what it orders, and that its
		// payment takes it; a cancel before payment lowers it.
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-p", `{"available":5,"deduct_at":"payment"}`)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-3","user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-p","qty":2}]}`)
		res := must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-3/lines/sku-p/cancel", `{"qty":1,"cancel_id":"c-1"}`)
		if res.Status != models.OrderPending || res.Lines[1].Ordered != 1 || res.Lines[1].DeductAt != models.DeductAtPayment {
			t.Fatalf("cancel of a line deducted at payment = %+v", res)
		}
		zh := markupText(testidElement(getPage(t, b, "/orders/o-3", false, http.StatusOK), "life-line-sku-p"))
		en := markupText(testidElement(getPage(t, b, "/orders/o-3", true, http.StatusOK), "life-line-sku-p"))
		if zh != "sku-p 1 （支付时扣） 0 0 0 0 0 0 0 0 1" || en != "sku-p 1 (taken at payment) 0 0 0 0 0 0 0 0 1" {
			t.Fatalf("line sku-p = %q / %q, want ordered 1 taken at payment, version 1", zh, en)
		}
	})
}
