package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// FuzzDecodePlaceOrder checks that the place-order decoder never panics,
// refuses only with a 400 (every error wraps models.ErrInvalid), and that
// what it accepts is in range and survives a round trip: encoding the
// request again and decoding that gives the same request.
func FuzzDecodePlaceOrder(f *testing.F) {
	seeds := []string{
		`{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":2},{"sku_id":"sku-2","qty":1}],
			"coupon_ids":[7],"freeze":[{"asset":"BALANCE","amount":300},{"asset":"POINTS","amount":100}],
			"activity_id":"act-1","slot_id":"seat-1","pay_timeout_s":600}`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1}]}`,
		`{"user_id":"u1","items":[],"coupon_ids":[]}`,
		`null`,
		`{}`,
		``,
		`   `,
		`[]`,
		`"text"`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":0}]}`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":-1}]}`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":"1"}]}`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1.5}]}`,
		`{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1e40}]}`,
		`{"user_id":"u1","items":[null]}`,
		`{"user_id":"u1","freeze":[{"asset":"GOLD","amount":1}]}`,
		`{"user_id":"u1","freeze":[{"asset":"balance","amount":1}]}`,
		`{"user_id":"u1","pay_timeout_s":0}`,
		`{"user_id":"u1","pay_timeout_s":604801}`,
		`{"user_id":"u1","pay_timeout_s":9223372036854775807}`,
		`{"user_id":"u1","pay_timeout_s":-9223372036854775808}`,
		`{"user_id":"u1","pay_timeout_s":null}`,
		`{"user_id":"u1","bogus":true}`,
		`{"user_id":"u1"} trailing`,
		`{"user_id":"u1"}{}`,
		`{"user_id":"\ud800","order_no":"\u00e9"}`,
		`{"user_id":"u1","USER_ID":"u2"}`,
		`{"user_id":"u1"`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := decodePlaceOrder(bytes.NewReader(body))
		if err != nil {
			if !errors.Is(err, models.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid: it would answer 500", err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("error without a message")
			}
			return
		}
		if req.PayTimeout < 0 || req.PayTimeout > models.MaxPayTimeout || req.PayTimeout%time.Second != 0 {
			t.Fatalf("pay timeout %s out of range", req.PayTimeout)
		}
		for _, fr := range req.Freeze {
			if _, err := models.ParseAsset(string(fr.Asset)); err != nil {
				t.Fatalf("accepted asset %q", fr.Asset)
			}
		}
		again, err := json.Marshal(encodePlaceOrder(req))
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodePlaceOrder(bytes.NewReader(again))
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", again, err)
		}
		if !reflect.DeepEqual(back, req) {
			t.Fatalf("round trip changed the request:\n%+v\n%+v", req, back)
		}
	})
}

// encodePlaceOrder is decodePlaceOrder's inverse.
func encodePlaceOrder(r models.PlaceRequest) placeOrderBody {
	b := placeOrderBody{OrderNo: r.OrderNo, UserID: r.UserID, CouponIDs: r.CouponIDs, ActivityID: r.ActivityID, SlotID: r.SlotID}
	for _, it := range r.Items {
		b.Items = append(b.Items, itemBody{SkuID: it.SkuID, Qty: it.Qty})
	}
	for _, f := range r.Freeze {
		b.Freeze = append(b.Freeze, freezeBody{Asset: string(f.Asset), Amount: f.Amount})
	}
	if r.PayTimeout != 0 {
		s := int64(r.PayTimeout / time.Second)
		b.PayTimeoutS = &s
	}
	return b
}
