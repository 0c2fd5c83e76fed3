package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/buildinfo"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// Every refused request answers its status and code with a message, and
// leaves the database exactly as it was; the one exception is a refused
// rerun, which is audited by design.
func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	type request struct {
		method, path, body string
		contentType        string // "" sends application/json when there is a body
		unknownLength      bool   // send without Content-Length, as a chunked body
	}
	oversized := `{"user_id":"u1","order_no":"` + strings.Repeat("x", 70_000) + `","items":[{"sku_id":"sku-1","qty":1}]}`
	placeBody := func(extra string) string {
		return `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1}]` + extra + `}`
	}
	cases := []struct {
		name    string
		req     request
		status  int
		code    string
		says    string // the message must contain this
		audited int64  // audit_log rows the refusal writes
	}{
		{name: "unknown field", status: 400, code: "INVALID_INPUT", says: `"bogus"`,
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"bogus":1`)}},
		{name: "unknown nested field", status: 400, code: "INVALID_INPUT", says: `"price"`,
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1,"price":5}]}`}},
		{name: "wrong type", status: 400, code: "INVALID_INPUT", says: "items.qty",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":"1"}]}`}},
		{name: "fractional qty", status: 400, code: "INVALID_INPUT", says: "items.qty",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1.5}]}`}},
		{name: "wrong type in set-up", status: 400, code: "INVALID_INPUT", says: "available",
			req: request{method: "PUT", path: "/api/v1/skus/sku-1", body: `{"available":"many"}`}},
		{name: "zero qty", status: 400, code: "INVALID_INPUT", says: "qty",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":0}]}`}},
		{name: "negative qty", status: 400, code: "INVALID_INPUT", says: "qty",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":-3}]}`}},
		{name: "negative credit amount", status: 400, code: "INVALID_INPUT", says: "amount",
			req: request{method: "POST", path: "/api/v1/accounts/u1/credit", body: `{"asset":"BALANCE","amount":-5}`}},
		{name: "expire_at on a balance credit", status: 400, code: "INVALID_INPUT", says: "POINTS only",
			req: request{method: "POST", path: "/api/v1/accounts/u1/credit", body: `{"asset":"BALANCE","amount":5,"expire_at":"2030-01-01T00:00:00Z"}`}},
		{name: "expire_at in the past", status: 400, code: "INVALID_INPUT", says: "future",
			req: request{method: "POST", path: "/api/v1/accounts/u1/credit", body: `{"asset":"POINTS","amount":5,"expire_at":"2020-01-01T00:00:00Z"}`}},
		{name: "expire_at not RFC 3339", status: 400, code: "INVALID_INPUT", says: "RFC 3339",
			req: request{method: "POST", path: "/api/v1/accounts/u1/credit", body: `{"asset":"POINTS","amount":5,"expire_at":"next year"}`}},
		{name: "negative freeze amount", status: 400, code: "INVALID_INPUT", says: "amount",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"freeze":[{"asset":"BALANCE","amount":-1}]`)}},
		{name: "unknown hold type", status: 400, code: "INVALID_INPUT", says: `unknown resource type "gift_wrap"`,
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"holds":[{"type":"gift_wrap","key":"k","qty":1}]`)}},
		{name: "hold without qty", status: 400, code: "INVALID_INPUT", says: "holds[0]: qty",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","holds":[{"type":"inventory","key":"sku-1"}]}`}},
		{name: "hold named twice", status: 400, code: "INVALID_INPUT", says: "appears twice",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"holds":[{"type":"inventory","key":"sku-1","qty":1}]`)}},
		{name: "unknown hold field", status: 400, code: "INVALID_INPUT", says: `"price"`,
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","holds":[{"type":"inventory","key":"sku-1","qty":1,"price":2}]}`}},
		{name: "nothing held", status: 400, code: "INVALID_INPUT", says: "must hold something",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","holds":[]}`}},
		{name: "negative stock", status: 400, code: "INVALID_INPUT", says: "available",
			req: request{method: "PUT", path: "/api/v1/skus/sku-1", body: `{"available":-1}`}},
		{name: "oversized body", status: 400, code: "BODY_TOO_LARGE", says: "65536",
			req: request{method: "POST", path: "/api/v1/orders", body: oversized}},
		{name: "oversized body without length", status: 400, code: "BODY_TOO_LARGE", says: "65536",
			req: request{method: "POST", path: "/api/v1/orders", body: oversized, unknownLength: true}},
		{name: "trailing garbage", status: 400, code: "INVALID_INPUT", says: "after",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `{"reason":"ADMIN"} x`}},
		{name: "second object", status: 400, code: "INVALID_INPUT", says: "after",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `{"reason":"ADMIN"}{"reason":"ADMIN"}`}},
		{name: "malformed JSON", status: 400, code: "INVALID_INPUT", says: "malformed",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `{"reason":"ADMIN"`}},
		{name: "array instead of object", status: 400, code: "INVALID_INPUT", says: "object",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `["ADMIN"]`}},
		{name: "empty body", status: 400, code: "INVALID_INPUT", says: "body",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close"}},
		{name: "blank body", status: 400, code: "INVALID_INPUT", says: "body",
			req: request{method: "POST", path: "/api/v1/orders", body: " \n\t "}},
		{name: "bad content type", status: 415, code: "UNSUPPORTED_MEDIA_TYPE", says: "application/json",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `{"reason":"ADMIN"}`, contentType: "text/plain"}},
		{name: "form content type", status: 415, code: "UNSUPPORTED_MEDIA_TYPE", says: "application/json",
			req: request{method: "PUT", path: "/api/v1/slots/seat-9", body: `{}`, contentType: "application/x-www-form-urlencoded"}},
		{name: "unknown field in optional body", status: 400, code: "INVALID_INPUT", says: `"capacity"`,
			req: request{method: "PUT", path: "/api/v1/slots/seat-9", body: `{"capacity":2}`}},
		{name: "unknown order", status: 404, code: "NOT_FOUND", says: "nope",
			req: request{method: "GET", path: "/api/v1/orders/nope"}},
		{name: "pay unknown order", status: 404, code: "NOT_FOUND", says: "nope",
			req: request{method: "POST", path: "/api/v1/orders/nope/pay", body: `{"channel_txn_id":"t"}`}},
		{name: "close unknown order", status: 404, code: "NOT_FOUND", says: "nope",
			req: request{method: "POST", path: "/api/v1/orders/nope/close", body: `{"reason":"ADMIN"}`}},
		{name: "rerun unknown order", status: 404, code: "NOT_FOUND", says: "nope",
			req: request{method: "POST", path: "/api/v1/orders/nope/resources/inventory/rerun", body: `{"reason":"r"}`}},
		{name: "bad order number", status: 400, code: "INVALID_INPUT", says: "order_no",
			req: request{method: "GET", path: "/api/v1/orders/no%20such"}},
		{name: "unknown coupon id", status: 404, code: "NOT_FOUND", says: "999",
			req: request{method: "GET", path: "/api/v1/coupons/999"}},
		{name: "non-numeric coupon id", status: 400, code: "INVALID_INPUT", says: "abc",
			req: request{method: "GET", path: "/api/v1/coupons/abc"}},
		{name: "zero coupon id", status: 400, code: "INVALID_INPUT", says: "positive",
			req: request{method: "GET", path: "/api/v1/coupons/0"}},
		{name: "unknown sku", status: 404, code: "NOT_FOUND", says: "sku-404",
			req: request{method: "GET", path: "/api/v1/skus/sku-404"}},
		{name: "bad sku key", status: 400, code: "INVALID_INPUT", says: "sku_id",
			req: request{method: "PUT", path: "/api/v1/skus/a%20b", body: `{"available":1}`}},
		{name: "missing available", status: 400, code: "INVALID_INPUT", says: "available",
			req: request{method: "PUT", path: "/api/v1/skus/sku-1", body: `{"release_delay_s":5}`}},
		{name: "missing total", status: 400, code: "INVALID_INPUT", says: "total",
			req: request{method: "PUT", path: "/api/v1/activities/act-1", body: `{}`}},
		{name: "quota below held", status: 409, code: "STOCK_CONFLICT", says: "act-1",
			req: request{method: "PUT", path: "/api/v1/activities/act-1", body: `{"total":0}`}},
		{name: "unknown account", status: 404, code: "NOT_FOUND", says: "u404",
			req: request{method: "GET", path: "/api/v1/accounts/u404"}},
		{name: "unknown asset", status: 400, code: "INVALID_INPUT", says: "GOLD",
			req: request{method: "POST", path: "/api/v1/accounts/u1/credit", body: `{"asset":"GOLD","amount":5}`}},
		{name: "bad coupon owner", status: 400, code: "INVALID_INPUT", says: "owner",
			req: request{method: "POST", path: "/api/v1/coupons", body: `{"user_id":"u1","owner":"ME","expire_at":"2027-01-01T00:00:00Z"}`}},
		{name: "bad coupon expiry", status: 400, code: "INVALID_INPUT", says: "expire_at",
			req: request{method: "POST", path: "/api/v1/coupons", body: `{"user_id":"u1","owner":"PLATFORM","expire_at":"tomorrow"}`}},
		{name: "past coupon expiry", status: 400, code: "INVALID_INPUT", says: "expire_at",
			req: request{method: "POST", path: "/api/v1/coupons", body: `{"user_id":"u1","owner":"PLATFORM","expire_at":"2020-01-01T00:00:00Z"}`}},
		{name: "bad resource type", status: 400, code: "INVALID_INPUT", says: "bogus",
			req: request{method: "POST", path: "/api/v1/orders/held-1/resources/bogus/rerun"}},
		{name: "rerun reason too long", status: 400, code: "INVALID_INPUT", says: "500",
			req: request{method: "POST", path: "/api/v1/orders/paid-1/resources/inventory/rerun",
				body: `{"reason":"` + strings.Repeat("é", 501) + `"}`}},
		{name: "bad close reason", status: 400, code: "INVALID_INPUT", says: "BORED",
			req: request{method: "POST", path: "/api/v1/orders/held-1/close", body: `{"reason":"BORED"}`}},
		{name: "missing channel txn", status: 400, code: "INVALID_INPUT", says: "channel_txn_id",
			req: request{method: "POST", path: "/api/v1/orders/held-1/pay", body: `{}`}},
		{name: "zero pay timeout", status: 400, code: "INVALID_INPUT", says: "pay_timeout_s",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"pay_timeout_s":0`)}},
		{name: "huge pay timeout", status: 400, code: "INVALID_INPUT", says: "pay_timeout_s",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"pay_timeout_s":9223372036854775807`)}},
		{name: "duplicate order_no", status: 409, code: "ORDER_EXISTS", says: "held-1",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"order_no":"held-1"`)}},
		{name: "unknown sku in order", status: 404, code: "RESOURCE_NOT_FOUND", says: "sku-404",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-404","qty":1}]}`}},
		{name: "insufficient stock", status: 409, code: "INSUFFICIENT_STOCK", says: "sku-2",
			req: request{method: "POST", path: "/api/v1/orders", body: `{"user_id":"u1","items":[{"sku_id":"sku-1","qty":1},{"sku_id":"sku-2","qty":2}]}`}},
		{name: "coupon of another user", status: 409, code: "COUPON_UNAVAILABLE", says: "coupon",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"coupon_ids":[$couponU2]`)}},
		{name: "slot taken", status: 409, code: "SLOT_TAKEN", says: "seat-1",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"coupon_ids":[$couponU1],"slot_id":"seat-1"`)}},
		{name: "quota exhausted", status: 409, code: "QUOTA_EXHAUSTED", says: "act-1",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"activity_id":"act-1"`)}},
		{name: "insufficient balance", status: 409, code: "INSUFFICIENT_BALANCE", says: "balance",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"freeze":[{"asset":"POINTS","amount":10},{"asset":"BALANCE","amount":5000}]`)}},
		{name: "insufficient points", status: 409, code: "INSUFFICIENT_POINTS", says: "points",
			req: request{method: "POST", path: "/api/v1/orders", body: placeBody(`,"freeze":[{"asset":"POINTS","amount":501}]`)}},
		{name: "close a PAID order", status: 409, code: "ORDER_NOT_CLOSABLE", says: "PAID",
			req: request{method: "POST", path: "/api/v1/orders/paid-1/close", body: `{"reason":"ADMIN"}`}},
		{name: "nothing to rerun", status: 409, code: "NOTHING_TO_RERUN", says: "paid-1", audited: 1,
			req: request{method: "POST", path: "/api/v1/orders/paid-1/resources/inventory/rerun", body: `{"reason":"just in case"}`}},
		{name: "unknown API route", status: 404, code: "NOT_FOUND", says: "/api/v1/widgets",
			req: request{method: "GET", path: "/api/v1/widgets"}},
		{name: "wrong method", status: 405, code: "METHOD_NOT_ALLOWED", says: "DELETE",
			req: request{method: "DELETE", path: "/api/v1/skus/sku-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			eachEngine(t, func(t *testing.T, b bundle) {
				sh := seedShop(t, b)
				r := tc.req
				// Coupon ids are known only once the shop exists.
				body := strings.NewReplacer("$couponU1", strconv.FormatInt(sh.couponU1, 10), "$couponU2", strconv.FormatInt(sh.couponU2, 10)).Replace(r.body)
				req := httptest.NewRequest(r.method, r.path, strings.NewReader(body))
				if r.body != "" {
					ct := r.contentType
					if ct == "" {
						ct = echo.MIMEApplicationJSON
					}
					req.Header.Set(echo.HeaderContentType, ct)
				}
				if r.unknownLength {
					req.ContentLength = -1
				}
				before := snapshot(t, b)
				rec := b.serve(req)
				msg := wantError(t, rec, tc.status, tc.code)
				if !strings.Contains(msg, tc.says) {
					t.Errorf("message %q does not say %q", msg, tc.says)
				}
				before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": tc.audited})
				if n := b.wakes.Load(); n != 0 {
					t.Errorf("a refused request woke the worker %d times", n)
				}
				if logs := b.logs.String(); logs != "" {
					t.Errorf("a refusal was logged as a failure: %s", logs)
				}
			})
		})
	}
}

// A failure that is not the client's answers 500 INTERNAL without its
// detail, and is logged with the request's keys.
func TestInternalErrors(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		if err := b.s.Close(); err != nil {
			t.Fatal(err)
		}
		msg := wantError(t, b.call("GET", "/api/v1/orders/o-7", ""), http.StatusInternalServerError, "INTERNAL")
		if msg != "internal error" {
			t.Fatalf("message = %q, want the generic one", msg)
		}
		logs := b.logs.String()
		if !strings.Contains(logs, "order_no=o-7") || !strings.Contains(logs, "database is closed") {
			t.Fatalf("log does not name the order and the cause: %s", logs)
		}
	})
}

func TestPanicAnswers500(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c *echo.Context) error {
				if c.Param("order_no") == "o-9" {
					panic("boom")
				}
				return next(c)
			}
		})
		msg := wantError(t, b.call("GET", "/api/v1/orders/o-9", ""), http.StatusInternalServerError, "INTERNAL")
		if msg != "internal error" {
			t.Fatalf("message = %q", msg)
		}
		if logs := b.logs.String(); !strings.Contains(logs, "boom") || !strings.Contains(logs, "order_no=o-9") {
			t.Fatalf("panic not logged: %s", logs)
		}
	})
}

// A route registered without a gate (outside routes.go) is refused to
// everyone, admins included, and its handler never runs: deny by default.
func TestUndeclaredRouteIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	ran := false
	b.e.GET("/api/v1/undeclared", func(c *echo.Context) error { ran = true; return c.NoContent(http.StatusOK) })
	b.e.POST("/undeclared", func(c *echo.Context) error { ran = true; return c.NoContent(http.StatusOK) })
	wantError(t, b.call("GET", "/api/v1/undeclared", ""), http.StatusForbidden, "FORBIDDEN")
	if rec := b.call("POST", "/undeclared", ""); rec.Code != http.StatusForbidden {
		t.Errorf("POST /undeclared as an admin = %d, want 403", rec.Code)
	}
	if ran {
		t.Error("the undeclared route's handler ran")
	}
}

// health is /healthz's answer.
type health struct {
	Status  string         `json:"status"`
	Version buildinfo.Info `json:"version"`
}

func TestHealth(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		type status struct {
			Status string `json:"status"`
		}
		if got := must[health](t, b, http.StatusOK, "GET", "/healthz", ""); got.Status != "ok" {
			t.Fatalf("healthz = %+v", got)
		}
		if got := must[status](t, b, http.StatusOK, "GET", "/readyz", ""); got.Status != "ready" {
			t.Fatalf("readyz = %+v", got)
		}
	})
}

// /healthz says which binary answers: the build facts and schema version
// the server was given.
func TestHealthzVersion(t *testing.T) {
	t.Parallel()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, models.SQLite, models.Options{Now: clock.Now})
	want := buildinfo.Info{Version: "v1.2.3", Commit: "0123abc", Modified: true, BuildTime: "2026-12-05T10:00:00Z", GoVersion: "go1.26.8", Schema: 37}
	b := anonBundleDeps(s, clock, auth.Options{}, func(d *web.Deps) { d.Version = want })
	if got := must[health](t, b, http.StatusOK, "GET", "/healthz", ""); got.Status != "ok" || got.Version != want {
		t.Fatalf("healthz = %+v, want ok and %+v", got, want)
	}
}

// A database that is not migrated is not ready.
func TestNotReady(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			clock := modelstest.NewClock()
			s, err := models.Open(context.Background(), modelstest.DSN(t, d), models.Options{Now: clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			b := anonBundle(s, clock, auth.Options{})
			wantError(t, b.call("GET", "/readyz", ""), http.StatusServiceUnavailable, "NOT_READY")
			if !strings.Contains(b.logs.String(), "pending") {
				t.Fatalf("cause not logged: %s", b.logs.String())
			}
			// Liveness does not depend on the database.
			if rec := b.call("GET", "/healthz", ""); rec.Code != http.StatusOK {
				t.Fatalf("healthz = %d", rec.Code)
			}
		})
	}
}
