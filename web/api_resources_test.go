package web_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

type skuJSON struct {
	SkuID         string `json:"sku_id"`
	Available     int64  `json:"available"`
	Locked        int64  `json:"locked"`
	Sold          int64  `json:"sold"`
	ReleaseDelayS int64  `json:"release_delay_s"`
	DeductAt      string `json:"deduct_at"`
	UserLimit     *struct {
		PerUserOrders int64 `json:"per_user_orders"`
		WindowS       int64 `json:"window_s"`
	} `json:"user_limit"`
}

func TestSKUs(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		got := must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":10,"release_delay_s":30}`)
		if want := (skuJSON{SkuID: "sku-1", Available: 10, ReleaseDelayS: 30, DeductAt: "order"}); got != want {
			t.Fatalf("PUT = %+v, want %+v", got, want)
		}
		// PUT replaces: no release_delay_s means 0.
		got = must[skuJSON](t, b, http.StatusOK, "PUT", "/api/v1/skus/sku-1", `{"available":7}`)
		if want := (skuJSON{SkuID: "sku-1", Available: 7, DeductAt: "order"}); got != want {
			t.Fatalf("second PUT = %+v, want %+v", got, want)
		}
		got = must[skuJSON](t, b, http.StatusOK, "GET", "/api/v1/skus/sku-1", "")
		if want := (skuJSON{SkuID: "sku-1", Available: 7, DeductAt: "order"}); got != want {
			t.Fatalf("GET = %+v, want %+v", got, want)
		}
		sku, err := b.s.GetSKU(b.ctx, "sku-1")
		if err != nil || sku.Available != 7 {
			t.Fatalf("store has %+v, %v; want 7 available", sku, err)
		}
	})
}

type couponJSON struct {
	ID       int64     `json:"id"`
	UserID   string    `json:"user_id"`
	Owner    string    `json:"owner"`
	Status   string    `json:"status"`
	OrderNo  *string   `json:"order_no"`
	ExpireAt time.Time `json:"expire_at"`
}

func TestCoupons(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := b.call("POST", "/api/v1/coupons", `{"user_id":"u1","owner":"MERCHANT","expire_at":"2026-12-31T23:59:59+08:00"}`)
		if rec.Code != http.StatusCreated {
			t.Fatalf("POST = %d %s, want 201", rec.Code, rec.Body)
		}
		created := decodeStrict[couponJSON](t, rec)
		wantExpire := time.Date(2026, 12, 31, 15, 59, 59, 0, time.UTC)
		if created.ID <= 0 || created.UserID != "u1" || created.Owner != "MERCHANT" || created.Status != "UNUSED" ||
			created.OrderNo != nil || !created.ExpireAt.Equal(wantExpire) {
			t.Fatalf("POST = %+v", created)
		}
		path := "/api/v1/coupons/" + strconv.FormatInt(created.ID, 10)
		if loc := rec.Header().Get("Location"); loc != path {
			t.Fatalf("Location = %q, want %q", loc, path)
		}
		got := must[couponJSON](t, b, http.StatusOK, "GET", path, "")
		if got.ID != created.ID || got.Status != "UNUSED" || !got.ExpireAt.Equal(wantExpire) || got.OrderNo != nil {
			t.Fatalf("GET = %+v, want %+v", got, created)
		}
	})
}

type assetJSON struct {
	Available int64 `json:"available"`
	Frozen    int64 `json:"frozen"`
	Spent     int64 `json:"spent"`
}

type accountJSON struct {
	UID    string               `json:"uid"`
	Assets map[string]assetJSON `json:"assets"`
}

func TestAccounts(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		got := must[accountJSON](t, b, http.StatusOK, "POST", "/api/v1/accounts/u1/credit", `{"asset":"BALANCE","amount":1000}`)
		// Both assets always show; the one never credited shows zeros.
		if got.UID != "u1" || len(got.Assets) != 2 || got.Assets["BALANCE"] != (assetJSON{Available: 1000}) ||
			got.Assets["POINTS"] != (assetJSON{}) {
			t.Fatalf("credit = %+v", got)
		}
		must[accountJSON](t, b, http.StatusOK, "POST", "/api/v1/accounts/u1/credit", `{"asset":"POINTS","amount":40}`)
		must[accountJSON](t, b, http.StatusOK, "POST", "/api/v1/accounts/u1/credit", `{"asset":"POINTS","amount":2}`)
		got = must[accountJSON](t, b, http.StatusOK, "GET", "/api/v1/accounts/u1", "")
		if got.Assets["BALANCE"] != (assetJSON{Available: 1000}) || got.Assets["POINTS"] != (assetJSON{Available: 42}) {
			t.Fatalf("GET = %+v", got)
		}
	})
}

type activityJSON struct {
	ActivityID    string `json:"activity_id"`
	Total         int64  `json:"total"`
	Available     int64  `json:"available"`
	Locked        int64  `json:"locked"`
	Used          int64  `json:"used"`
	ReleaseDelayS int64  `json:"release_delay_s"`
	UserLimit     *struct {
		PerUserOrders int64 `json:"per_user_orders"`
		WindowS       int64 `json:"window_s"`
	} `json:"user_limit"`
}

func TestActivities(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		got := must[activityJSON](t, b, http.StatusOK, "PUT", "/api/v1/activities/act-1", `{"total":100}`)
		if want := (activityJSON{ActivityID: "act-1", Total: 100, Available: 100}); got != want {
			t.Fatalf("PUT = %+v, want %+v", got, want)
		}
		must[activityJSON](t, b, http.StatusOK, "PUT", "/api/v1/activities/act-1", `{"total":60}`)
		got = must[activityJSON](t, b, http.StatusOK, "GET", "/api/v1/activities/act-1", "")
		if want := (activityJSON{ActivityID: "act-1", Total: 60, Available: 60}); got != want {
			t.Fatalf("GET = %+v, want %+v", got, want)
		}
	})
}

type slotJSON struct {
	SlotID  string  `json:"slot_id"`
	Status  string  `json:"status"`
	OrderNo *string `json:"order_no"`
}

func TestSlots(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		// No body: created.
		got := must[slotJSON](t, b, http.StatusCreated, "PUT", "/api/v1/slots/seat-1", "")
		if got.SlotID != "seat-1" || got.Status != "FREE" || got.OrderNo != nil {
			t.Fatalf("PUT = %+v", got)
		}
		// {} is accepted too; the slot exists now.
		got = must[slotJSON](t, b, http.StatusOK, "PUT", "/api/v1/slots/seat-1", `{}`)
		if got.SlotID != "seat-1" || got.Status != "FREE" {
			t.Fatalf("second PUT = %+v", got)
		}
		must[slotJSON](t, b, http.StatusCreated, "PUT", "/api/v1/slots/seat-2", `{}`)
		got = must[slotJSON](t, b, http.StatusOK, "GET", "/api/v1/slots/seat-1", "")
		if got.SlotID != "seat-1" || got.Status != "FREE" || got.OrderNo != nil {
			t.Fatalf("GET = %+v", got)
		}
	})
}
