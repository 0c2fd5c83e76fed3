package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/docs/webhookverify"
	"unhold/models"
)

// delivery is one POST a subscriber received.
type delivery struct {
	id, signature string
	body          []byte
}

// From the outside, end to end: an admin subscribes a URL through the API,
// an order is placed and closed through the API, and unhold serve's worker
// releases it and POSTs order.closed, then hold.released, to the
// subscriber — each signed so that the verifier docs/webhooks.md gives
// accepts it, with Unhold-Event-Id the id the polling API shows. Breaks if
// a fact wrote no event, the worker sent none, the order per order number
// were lost or the documented verifier disagreed with the signer.
func TestWebhookDeliveredEndToEnd(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []delivery
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Get("Unhold-Event-Id"), r.Header.Get("Unhold-Signature"), body})
		mu.Unlock()
	}))
	t.Cleanup(sub.Close)

	db := filepath.Join(t.TempDir(), "hooks.db")
	var tok strings.Builder
	if err := run(context.Background(), []string{"token", "add", "--role", "admin", "it", "-db", db},
		func(string) string { return "" }, nil, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	base := startProcess(t, "serve", "-addr", "127.0.0.1:0", "-db", db, "-log-format", "json").addr(t)
	send := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(tok.String()))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}

	code, b := send(http.MethodPost, "/api/v1/webhooks", `{"url":"`+sub.URL+`/hooks","types":["order.closed","hold.released"]}`)
	var created struct {
		Secret string `json:"secret"`
	}
	if code != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.Secret == "" {
		t.Fatalf("subscribe = %d %s", code, b)
	}
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPut, "/api/v1/skus/sku-1", `{"available":5}`},
		{http.MethodPost, "/api/v1/orders", `{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":2}]}`},
		{http.MethodPost, "/api/v1/orders/o-1/close", `{"reason":"USER_CANCEL"}`},
	} {
		if code, b := send(c.method, c.path, c.body); code >= 300 {
			t.Fatalf("%s %s = %d %s", c.method, c.path, code, b)
		}
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber got %d deliveries in 20 s, want 2", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, b = send(http.MethodGet, "/api/v1/events?after=0", "")
	var polled struct {
		Items []models.Event `json:"items"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &polled) != nil {
		t.Fatalf("poll = %d %s", code, b)
	}
	ids := map[string]models.EventType{}
	for _, e := range polled.Items {
		ids[strconv.FormatInt(e.ID, 10)] = e.Type
	}

	mu.Lock()
	defer mu.Unlock()
	want := []models.EventType{models.EventOrderClosed, models.EventHoldReleased}
	for i, d := range got[:2] {
		if err := webhookverify.Verify(created.Secret, d.signature, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("delivery %d: the documented verifier refuses it: %v", i, err)
		}
		var e models.Event
		if err := json.Unmarshal(d.body, &e); err != nil {
			t.Fatalf("delivery %d is not an event: %v: %s", i, err, d.body)
		}
		if e.Type != want[i] || e.OrderNo != "o-1" || strconv.FormatInt(e.ID, 10) != d.id || ids[d.id] != e.Type {
			t.Errorf("delivery %d = %s id %d (header %s, polled as %q), want %s of o-1 as polled", i, e.Type, e.ID, d.id, ids[d.id], want[i])
		}
		if e.Type == models.EventHoldReleased {
			var data struct {
				Key string `json:"key"`
				Qty int64  `json:"qty"`
			}
			if json.Unmarshal(e.Data, &data) != nil || data.Key != "sku-1" || data.Qty != 2 {
				t.Errorf("hold.released data = %s, want sku-1 qty 2", e.Data)
			}
		}
	}
	if len(got) != 2 {
		t.Errorf("the subscriber got %d deliveries, want 2 (one close, one release)", len(got))
	}
}
