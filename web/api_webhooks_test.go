package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// TestAPIWebhookRefusals: each bad subscription is answered 400
// INVALID_INPUT saying what is wrong, and nothing is written.
func TestAPIWebhookRefusals(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, tc := range []struct{ body, want string }{
			{`{"url":"ftp://127.0.0.1/hook"}`, "http:// or https://"},
			{`{"url":"http://u:p@127.0.0.1/hook"}`, "user or password"},
			{`{"url":"http://169.254.169.254/latest/meta-data"}`, "link-local"},
			{`{"url":"http://[fe80::1]/hook"}`, "link-local"},
			{`{"url":"http://127.0.0.1/hook","secret":"fifteen-bytes!!"}`, "at least 16 bytes"},
			{`{"url":"http://127.0.0.1/hook","types":["order.closed","nope"]}`, "unknown event type"},
			{`{"url":"http://127.0.0.1/hook","token":"x"}`, "unknown field"},
		} {
			rec := b.call(http.MethodPost, "/api/v1/webhooks", tc.body)
			if msg := wantError(t, rec, http.StatusBadRequest, "INVALID_INPUT"); !strings.Contains(msg, tc.want) {
				t.Errorf("%s: %q, want it to say %q", tc.body, msg, tc.want)
			}
		}
		rec := b.call(http.MethodGet, "/api/v1/webhooks", "")
		if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != `{"webhooks":[]}` {
			t.Fatalf("after the refusals: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestAPIWebhookLifecycle: a subscription is made (its secret shown
// once), read without its secret, its deliveries paged and redelivered,
// paused, resumed and deleted; admins only.
func TestAPIWebhookLifecycle(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := b.call(http.MethodPost, "/api/v1/webhooks", `{"url":"http://127.0.0.1:9/hook","types":["order.closed"]}`)
		if rec.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
		var made struct {
			ID     int64    `json:"id"`
			Secret string   `json:"secret"`
			Types  []string `json:"types"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &made); err != nil || len(made.Secret) != 64 || len(made.Types) != 1 {
			t.Fatalf("create answered %s (%v)", rec.Body, err)
		}
		base := fmt.Sprintf("/api/v1/webhooks/%d", made.ID)
		for _, path := range []string{base, "/api/v1/webhooks"} {
			rec := b.call(http.MethodGet, path, "")
			if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), made.Secret) || strings.Contains(rec.Body.String(), `"secret"`) {
				t.Fatalf("GET %s shows the secret or fails: %d %s", path, rec.Code, rec.Body)
			}
		}
		try(t, "events", b.s.W.Exec(`INSERT INTO events (type, order_no, occurred_at, data) VALUES ('order.closed', 'o-1', ?, '{}'), ('task.manual', 'o-1', ?, '{}')`,
			b.clock.Now(), b.clock.Now()).Error)
		if _, err := b.s.FanOutWebhooks(b.ctx); err != nil {
			t.Fatal(err)
		}
		rec = b.call(http.MethodGet, base+"/deliveries?status=PENDING&limit=10", "")
		var page models.DeliveryPage
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Deliveries) != 1 || page.Deliveries[0].EventType != models.EventOrderClosed {
			t.Fatalf("deliveries: %d %s", rec.Code, rec.Body)
		}
		did := page.Deliveries[0].ID
		wantError(t, b.call(http.MethodGet, base+"/deliveries?status=LOST", ""), http.StatusBadRequest, "INVALID_INPUT")
		wantError(t, b.call(http.MethodGet, base+"/deliveries?after=3", ""), http.StatusBadRequest, "INVALID_INPUT")
		wantError(t, b.call(http.MethodPost, fmt.Sprintf("%s/deliveries/%d/redeliver", base, did), ""), http.StatusConflict, "NOTHING_TO_REDELIVER")
		wantError(t, b.call(http.MethodPost, fmt.Sprintf("%s/deliveries/%d/redeliver", base, did+100), ""), http.StatusNotFound, "NOT_FOUND")

		rec = b.call(http.MethodPost, base+"/pause", "")
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"paused_at"`) || !strings.Contains(rec.Body.String(), `"backlog":1`) {
			t.Fatalf("pause: %d %s", rec.Code, rec.Body)
		}
		rec = b.call(http.MethodPost, base+"/resume", "{}")
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"paused_at"`) {
			t.Fatalf("resume: %d %s", rec.Code, rec.Body)
		}
		wantError(t, b.call(http.MethodPost, base+"/pause", `{"why":"x"}`), http.StatusBadRequest, "INVALID_INPUT")

		op := b.mustSignIn("oscar", auth.RoleOperator)
		for _, r := range []struct{ method, path string }{{http.MethodGet, "/api/v1/webhooks"}, {http.MethodDelete, base}} {
			wantError(t, b.as(op).call(r.method, r.path, ""), http.StatusForbidden, "FORBIDDEN")
		}
		if rec := b.call(http.MethodDelete, base, ""); rec.Code != http.StatusNoContent {
			t.Fatalf("delete: %d %s", rec.Code, rec.Body)
		}
		wantError(t, b.call(http.MethodGet, base, ""), http.StatusNotFound, "NOT_FOUND")
		wantError(t, b.call(http.MethodGet, "/api/v1/webhooks/x", ""), http.StatusBadRequest, "INVALID_INPUT")
	})
}
