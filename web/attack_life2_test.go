package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"unhold/models"
)

// Hostile line cancels through the API, on a line deducted at payment
// (orders 2) and one deducted at placement: each is refused with its code
// and changes neither line; then the longest ids the API allows (order
// 40, sku 64, cancel_id 64) make a cancel that is stored and answered the
// same when sent again. Breaks if an id with '#', '/' or '@' got through
// (it could name another line's cancel), if a number that does not fit
// were read as something else, or if the longest id did not fit the
// record.
func TestAttackLife2CancelHostileInput(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShopAPI(t, b)
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-p", `{"available":5,"deduct_at":"payment"}`)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-h","user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-p","qty":2}]}`)
		before := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-h", "")
		long := strings.Repeat("x", 10000)
		for _, sku := range []string{"sku-p", "sku-1"} {
			path := "/api/v1/orders/o-h/lines/" + sku + "/cancel"
			for _, c := range []struct {
				name, body string
				status     int
				code       string
			}{
				{"cancel_id 65", `{"qty":1,"cancel_id":"` + strings.Repeat("c", 65) + `"}`, 400, "INVALID_INPUT"},
				{"cancel_id 10000", `{"qty":1,"cancel_id":"` + long + `"}`, 400, "INVALID_INPUT"},
				{"cancel_id unicode", `{"qty":1,"cancel_id":"取消-1"}`, 400, "INVALID_INPUT"},
				{"cancel_id with #", `{"qty":1,"cancel_id":"a#b"}`, 400, "INVALID_INPUT"},
				{"cancel_id with /", `{"qty":1,"cancel_id":"sku-1/x"}`, 400, "INVALID_INPUT"},
				{"cancel_id with @", `{"qty":1,"cancel_id":"@0"}`, 400, "INVALID_INPUT"},
				{"cancel_id with a space", `{"qty":1,"cancel_id":" c-1"}`, 400, "INVALID_INPUT"},
				{"cancel_id with NUL", `{"qty":1,"cancel_id":"c\u0000"}`, 400, "INVALID_INPUT"},
				{"cancel_id null", `{"qty":1,"cancel_id":null}`, 400, "INVALID_INPUT"},
				{"cancel_id a number", `{"qty":1,"cancel_id":7}`, 400, "INVALID_INPUT"},
				{"version a string", `{"qty":1,"version":"0"}`, 400, "INVALID_INPUT"},
				{"version a fraction", `{"qty":1,"version":0.5}`, 400, "INVALID_INPUT"},
				{"version too big", `{"qty":1,"version":1e30}`, 400, "INVALID_INPUT"},
				{"version past int64", `{"qty":1,"version":9223372036854775808}`, 400, "INVALID_INPUT"},
				{"version int64 max", `{"qty":1,"version":9223372036854775807}`, 409, "VERSION_CONFLICT"},
				{"both", `{"qty":1,"version":0,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty 0", `{"qty":0,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty negative", `{"qty":-1,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty huge", `{"qty":9223372036854775807,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty past int64", `{"qty":9223372036854775808,"cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty a string", `{"qty":"1","cancel_id":"c-1"}`, 400, "INVALID_INPUT"},
				{"qty more than ordered", `{"qty":3,"cancel_id":"c-1"}`, 409, "QTY_EXCEEDED"},
				{"not an object", `[1]`, 400, "INVALID_INPUT"},
				{"two bodies", `{"qty":1,"cancel_id":"c-1"}{"qty":1,"cancel_id":"c-2"}`, 400, "INVALID_INPUT"},
			} {
				rec := b.call("POST", path, c.body)
				if rec.Code != c.status || errCodeOf(t, rec.Body.Bytes()) != c.code {
					t.Errorf("%s %s: %d %.300s, want %d %s", sku, c.name, rec.Code, rec.Body, c.status, c.code)
				}
			}
		}
		for _, p := range []string{"/api/v1/orders/o-h/lines/sku%23p/cancel", "/api/v1/orders/o-h/lines/sku%2Fp/cancel",
			"/api/v1/orders/o%23h/lines/sku-p/cancel"} {
			if rec := b.call("POST", p, `{"qty":1,"cancel_id":"c-1"}`); rec.Code != 400 && rec.Code != 404 {
				t.Errorf("%s: %d %s, want 400 or 404", p, rec.Code, rec.Body)
			}
		}
		after := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/o-h", "")
		if fmt.Sprint(after.Holds) != fmt.Sprint(before.Holds) || len(after.Ops) != 0 {
			t.Fatalf("refused cancels changed the order: %+v then %+v, ops %+v", before.Holds, after.Holds, after.Ops)
		}

		// The longest ids the API allows.
		no, sku, id := strings.Repeat("o", 40), strings.Repeat("s", 64), strings.Repeat("c", 64)
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/"+sku, `{"available":5,"deduct_at":"payment"}`)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"`+no+`","user_id":"u1","items":[{"sku_id":"`+sku+`","qty":2}]}`)
		path := "/api/v1/orders/" + no + "/lines/" + sku + "/cancel"
		for i := range 2 {
			res := must[models.LifeResult](t, b, http.StatusOK, "POST", path, `{"qty":1,"cancel_id":"`+id+`"}`)
			if res.Status != models.OrderPending || res.Repeat != (i == 1) || res.Lines[0].Ordered != 1 {
				t.Fatalf("longest cancel #%d: %+v", i+1, res)
			}
		}
		if rec := b.call("POST", path, `{"qty":1,"cancel_id":"`+id+`","reason":"other"}`); rec.Code != 409 || errCodeOf(t, rec.Body.Bytes()) != "ID_REUSED" {
			t.Fatalf("longest id with another body: %d %s, want 409 ID_REUSED", rec.Code, rec.Body)
		}
		// The same id on the other line of another order is its own cancel.
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-h2","user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-p","qty":2}]}`)
		for _, s := range []string{"sku-1", "sku-p"} {
			res := must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-h2/lines/"+s+"/cancel", `{"qty":1,"cancel_id":"same"}`)
			if res.Repeat {
				t.Fatalf("cancel id on %s answered as a repeat of another line's: %+v", s, res)
			}
		}
	})
}

// The order page of the new shapes, in both languages: an order without
// lines refunded whole, an order given back whole through a return, and a
// paid order whose line deducted at payment was cancelled to 0. Each
// renders (200) with its life section. Breaks if a page failed on a line
// that orders nothing or on an order with no lines.
func TestAttackLife2PagesOfWholeOrders(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := seedShopAPI(t, b)
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-p", `{"available":5,"deduct_at":"payment"}`)
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-seat","user_id":"u1","holds":[{"type":"slot","key":"seat-1","qty":1}],"coupon_ids":[`+fmt.Sprint(cp)+`]}`)
		must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-seat/pay", `{"channel_txn_id":"t-seat"}`)
		if res := must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-seat/refunds", `{"refund_id":"rf-seat"}`); res.Status != models.OrderRefunded {
			t.Fatalf("refund of an order without lines: %+v", res)
		}
		must[placeJSON](t, b, http.StatusCreated, "POST", "/api/v1/orders",
			`{"order_no":"o-ret","user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-p","qty":2}]}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-ret/lines/sku-p/cancel", `{"qty":2,"cancel_id":"c-0"}`)
		must[models.PayResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-ret/pay", `{"channel_txn_id":"t-ret"}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-ret/ship", `{"shipment_id":"sh-r","lines":[{"sku_id":"sku-1","qty":1}]}`)
		must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/orders/o-ret/returns", `{"return_id":"ret-r","lines":[{"sku_id":"sku-1","qty":1}]}`)
		if res := must[models.LifeResult](t, b, http.StatusOK, "POST", "/api/v1/returns/ret-r/inbound", `{"lines":[{"sku_id":"sku-1","qty":1,"restock":true}]}`); res.Status != models.OrderReturned {
			t.Fatalf("inbound of the last return: %+v", res)
		}
		for _, no := range []string{"o-seat", "o-ret"} {
			body := getPageBoth(t, b, "/orders/"+no, "", http.StatusOK)
			if testidElement(body, "order-life") == "" {
				t.Errorf("page of %s has no life section", no)
			}
		}
		zh := markupText(testidElement(getPage(t, b, "/orders/o-ret", false, http.StatusOK), "life-line-sku-p"))
		if !strings.HasPrefix(zh, "sku-p 0 ") {
			t.Errorf("line sku-p of o-ret reads %q, want it to order 0", zh)
		}
	})
}
