package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// giftCards is the remote type of the API's tests, kept by a fake service.
const giftCards models.ResourceType = "giftcard"

// withGiftCards is setup with a remote gift-card type whose service is svc.
func withGiftCards(svc *remotetest.Service) func(*testing.T, models.Dialect) bundle {
	return func(t *testing.T, d models.Dialect) bundle {
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		client, err := remote.New(remote.Config{Type: string(giftCards), URL: srv.URL, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now,
			Remote: []models.RemoteType{{Type: giftCards, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
		return newBundle(s, clock)
	}
}

// An order holding a remote type is placed through the API's generic
// holds list. A refused lock answers 409 REMOTE_REJECTED with the service's
// message, a lock not answered 503 REMOTE_UNAVAILABLE with Retry-After,
// a lock answered 200 by something that does not echo its idempotency key
// 502 REMOTE_PROTOCOL with what answered; each way the order exists, closed PLACE_ABORTED, and its release is
// due at once. A remote type is not a counter: its GET says so.
func TestPlaceWithRemoteHold(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		answer *remotetest.Answer
		status int
		code   string
	}{
		{"locked", nil, http.StatusCreated, ""},
		{"refused", &remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"SHORT","message":"card GC-1 has 0 left"}`},
			http.StatusConflict, "REMOTE_REJECTED"},
		{"busy", &remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY"}`},
			http.StatusServiceUnavailable, "REMOTE_UNAVAILABLE"},
		{"unproven", &remotetest.Answer{Status: http.StatusOK, Body: "<html><p>It works!</p></html>"},
			http.StatusBadGateway, "REMOTE_PROTOCOL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A service per engine: the engines run at once, and one's
			// queued answer must not meet the other's lock.
			modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
				svc := remotetest.New(remotetest.Options{})
				b := withGiftCards(svc)(t, d)
				svc.SetAvailable("GC-1", 100)
				if tc.answer != nil {
					svc.Next(1, *tc.answer)
				}
				rec := b.call("POST", "/api/v1/orders",
					`{"order_no":"o-1","user_id":"u1","holds":[{"type":"giftcard","key":"GC-1","qty":30}]}`)
				if rec.Code != tc.status {
					t.Fatalf("place = %d %s, want %d", rec.Code, rec.Body, tc.status)
				}
				ch, err := b.s.OrderChain(b.ctx, "o-1")
				if err != nil {
					t.Fatal(err)
				}
				o := ch.Order
				if tc.code == "" {
					if o.Status != models.OrderPending || svc.Stock("GC-1").Held != 30 {
						t.Fatalf("order %s, service holds %d; want PENDING and 30", o.Status, svc.Stock("GC-1").Held)
					}
					msg := wantError(t, b.call("GET", "/api/v1/resources/giftcard/GC-1", ""), http.StatusBadRequest, "INVALID_INPUT")
					if !strings.Contains(msg, "kept by its service") {
						t.Fatalf("GET of a remote key: %q, want it to say the service keeps it", msg)
					}
					return
				}
				msg := wantError(t, rec, tc.status, tc.code)
				if tc.code == "REMOTE_REJECTED" && !strings.Contains(msg, "card GC-1 has 0 left") {
					t.Fatalf("message %q does not carry the service's", msg)
				}
				if tc.code == "REMOTE_PROTOCOL" && !strings.Contains(msg, "It works!") {
					t.Fatalf("message %q does not carry what answered", msg)
				}
				if tc.status == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
					t.Fatal("503 without Retry-After")
				}
				if o.Status != models.OrderClosed || o.CloseReason != string(models.TriggerPlaceAborted) {
					t.Fatalf("order %s closed %q, want CLOSED PLACE_ABORTED", o.Status, o.CloseReason)
				}
				var due int64
				if err := b.s.R.Raw(`SELECT COUNT(*) FROM release_tasks WHERE order_no = 'o-1' AND op = 'RELEASE' AND next_at <= ?`,
					b.clock.Now()).Scan(&due).Error; err != nil || due != 1 {
					t.Fatalf("%d release tasks due, %v; want 1", due, err)
				}
			})
		})
	}
}
