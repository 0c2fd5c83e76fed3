package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

type expiringAssetJSON struct {
	Available int64      `json:"available"`
	Frozen    int64      `json:"frozen"`
	Spent     int64      `json:"spent"`
	ExpireAt  *time.Time `json:"expire_at"`
}

type expiringAccountJSON struct {
	UID    string                       `json:"uid"`
	Assets map[string]expiringAssetJSON `json:"assets"`
}

// A credit of points takes expire_at (RFC 3339): the account's expiry
// becomes the later of the two, and GET shows it on the points alone.
// Refused 400, changing nothing: expire_at on a balance, in the past, or
// not RFC 3339. Points past their expiry are refused 409 POINTS_EXPIRED at
// placement. Breaks if the field is ignored, a credit shortens the expiry,
// or a refused credit still credits.
func TestCreditPointsExpireAt(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		const path = "/api/v1/accounts/u1/credit"
		now := b.clock.Now()
		stamp := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
		day := 24 * time.Hour
		got := must[expiringAccountJSON](t, b, http.StatusOK, "POST", path, `{"asset":"POINTS","amount":10,"expire_at":"`+stamp(10*day)+`"}`)
		if p := got.Assets["POINTS"]; p.Available != 10 || p.ExpireAt == nil || !p.ExpireAt.Equal(now.Add(10*day)) {
			t.Fatalf("credit with expire_at = %+v", got)
		}
		must[expiringAccountJSON](t, b, http.StatusOK, "POST", path, `{"asset":"POINTS","amount":5,"expire_at":"`+stamp(2*day)+`"}`)
		must[expiringAccountJSON](t, b, http.StatusOK, "POST", path, `{"asset":"BALANCE","amount":100}`)
		got = must[expiringAccountJSON](t, b, http.StatusOK, "GET", "/api/v1/accounts/u1", "")
		if p := got.Assets["POINTS"]; p.Available != 15 || p.ExpireAt == nil || !p.ExpireAt.Equal(now.Add(10*day)) {
			t.Fatalf("an earlier expire_at moved the expiry back: %+v", got)
		}
		if bal := got.Assets["BALANCE"]; bal.ExpireAt != nil || bal.Available != 100 {
			t.Fatalf("balance = %+v", bal)
		}
		raw := b.call("GET", "/api/v1/accounts/u1", "").Body.String()
		if strings.Count(raw, "expire_at") != 1 {
			t.Fatalf("expire_at shows %d times in %s, want once (points)", strings.Count(raw, "expire_at"), raw)
		}
		for _, c := range []struct{ name, body, says string }{
			{"balance", `{"asset":"BALANCE","amount":5,"expire_at":"` + stamp(day) + `"}`, "POINTS only"},
			{"past", `{"asset":"POINTS","amount":5,"expire_at":"` + stamp(-day) + `"}`, "future"},
			{"bad format", `{"asset":"POINTS","amount":5,"expire_at":"2027-01-31"}`, "RFC 3339"},
			{"not a string", `{"asset":"POINTS","amount":5,"expire_at":20270131}`, "expire_at"},
		} {
			msg := wantError(t, b.call("POST", path, c.body), http.StatusBadRequest, "INVALID_INPUT")
			if !strings.Contains(msg, c.says) {
				t.Errorf("%s: message %q does not say %q", c.name, msg, c.says)
			}
		}
		after := must[expiringAccountJSON](t, b, http.StatusOK, "GET", "/api/v1/accounts/u1", "")
		if after.Assets["POINTS"].Available != 15 || after.Assets["BALANCE"].Available != 100 ||
			!after.Assets["POINTS"].ExpireAt.Equal(*got.Assets["POINTS"].ExpireAt) {
			t.Fatalf("refused credits changed the account: %+v", after)
		}
		must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":10}`)
		b.clock.Advance(11 * day)
		msg := wantError(t, b.call("POST", "/api/v1/orders", `{"order_no":"o-x","user_id":"u1","items":[{"sku_id":"sku-1","qty":1}],
			"freeze":[{"asset":"POINTS","amount":1}]}`), http.StatusConflict, "POINTS_EXPIRED")
		if !strings.Contains(msg, stamp(10*day)) {
			t.Fatalf("POINTS_EXPIRED message %q does not say when (%s)", msg, stamp(10*day))
		}
	})
}
