package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
)

// hook makes a subscription to every event type at a loopback URL.
func (b bundle) hook(t *testing.T) models.WebhookSubscription {
	t.Helper()
	w, secret, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: "http://127.0.0.1:9/hook"}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if len(secret) != 64 {
		t.Fatalf("generated secret %q, want 64 hex digits", secret)
	}
	return w
}

// emit writes events, one per "type order_no" spec (order_no may be empty).
func (b bundle) emit(t *testing.T, specs ...string) {
	t.Helper()
	for _, sp := range specs {
		typ, no, _ := strings.Cut(sp, " ")
		must(t, func() error { return b.s.EmitEvent(b.ctx, models.EventType(typ), no) })
	}
}

// fanOut makes the deliveries of the events written so far.
func (b bundle) fanOut(t *testing.T) int {
	t.Helper()
	n, err := b.s.FanOutWebhooks(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// claim claims up to 10 deliveries for worker and names them by order_no
// and type, in claim order.
func (b bundle) claim(t *testing.T, worker string) ([]models.WebhookSend, string) {
	t.Helper()
	sends, err := b.s.ClaimDeliveries(b.ctx, worker, 10, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range sends {
		names = append(names, w.Event.OrderNo+"/"+string(w.Event.Type))
	}
	return sends, strings.Join(names, " ")
}

func (b bundle) record(t *testing.T, w models.WebhookSend, r models.DeliveryResult) string {
	t.Helper()
	out, err := b.s.RecordDelivery(b.ctx, w, r, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	ok200  = models.DeliveryResult{Status: 200, Answer: "ok"}
	err500 = models.DeliveryResult{Status: 500, Answer: "boom"}
)

// TestWebhookBadInput: each bad subscription is refused as INVALID_INPUT
// with a message naming what is wrong, and nothing is written.
func TestWebhookBadInput(t *testing.T) {
	lookup := func(_ context.Context, host string) ([]string, error) {
		switch host {
		case "metadata.example":
			return []string{"10.0.0.7", "169.254.169.254"}, nil
		case "v6.example":
			return []string{"fe80::1"}, nil
		case "ok.example":
			return []string{"127.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	eachEngineWith(t, models.Options{LookupHost: lookup}, func(t *testing.T, b bundle) {
		for _, tc := range []struct{ url, secret, want string }{
			{"ftp://127.0.0.1/hook", "", "http:// or https://"},
			{"http://u:p@127.0.0.1/hook", "", "user or password"},
			{"http://169.254.169.254/latest/meta-data", "", "link-local"},
			{"http://[fe80::1]/hook", "", "link-local"},
			{"http://[::ffff:169.254.169.254]/hook", "", "link-local"},
			{"http://metadata.example/hook", "", "resolves to the link-local address 169.254.169.254"},
			{"http://v6.example/hook", "", "resolves to the link-local address fe80::1"},
			{"http://nowhere.example/hook", "", "does not resolve"},
			{"http:///hook", "", "must name a host"},
			{"http://ok.example/hook", "fifteen-bytes!!", "at least 16 bytes (it is 15)"},
			{"http://ok.example/hook", "sixteen-bytes\x00!!", "control character"},
			{"http://ok.example/hook", "秘密秘密秘密\n", "control character"},
			{"http://ok.example/hook", "sixteen-bytes\xff!!", "UTF-8"},
		} {
			_, secret, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: tc.url, Secret: tc.secret}, "admin")
			if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (secret %q): %v, want INVALID_INPUT saying %q", tc.url, tc.secret, err, tc.want)
			}
			if secret != "" {
				t.Errorf("%s: a refused subscription returned a secret", tc.url)
			}
		}
		if _, _, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: "http://ok.example/hook", Types: []models.EventType{"nope"}}, "admin"); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("unknown type: %v", err)
		}
		var subs, audits int64
		must(t, func() error { return b.s.R.Raw("SELECT COUNT(*) FROM webhook_subscriptions").Scan(&subs).Error })
		must(t, func() error {
			return b.s.R.Raw("SELECT COUNT(*) FROM audit_log WHERE action LIKE 'webhook%'").Scan(&audits).Error
		})
		if subs != 0 || audits != 0 {
			t.Fatalf("refusals wrote %d subscriptions and %d audit rows", subs, audits)
		}
		w, secret, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: "http://ok.example/hook", Secret: "sixteen-bytes!!!"}, "admin")
		if err != nil || secret != "sixteen-bytes!!!" || w.URL != "http://ok.example/hook" {
			t.Fatalf("a good subscription: %+v %q %v", w, secret, err)
		}
	})
}

// TestWebhookFanOutOnce: a subscription hears the events after it was
// made, of its types only; two fan-outs at once make each delivery once.
func TestWebhookFanOutOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.emit(t, "order.closed o-0")
		all := b.hook(t)
		closed, _, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: "http://127.0.0.1:9/closed",
			Types: []models.EventType{models.EventOrderClosed}}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		b.emit(t, "order.closed o-1", "hold.released o-1", "order.closed o-2", "task.manual ")
		var wg sync.WaitGroup
		made := make([]int, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { made[i], errs[i] = b.s.FanOutWebhooks(b.ctx) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		if made[0]+made[1] != 6 {
			t.Errorf("two fan-outs made %v deliveries, want 6 in all", made)
		}
		b.fanOut(t)
		for _, tc := range []struct {
			w    models.WebhookSubscription
			want int64
		}{{all, 4}, {closed, 2}} {
			got, err := b.s.Webhook(b.ctx, tc.w.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Backlog != tc.want || got.Oldest == nil {
				t.Errorf("%s: backlog %d (oldest %v), want %d", got.URL, got.Backlog, got.Oldest, tc.want)
			}
		}
	})
}

// TestWebhookOrderPerOrderNo: an order's second event is not sent before
// its first is delivered, across the first's retries; another order's is
// not held back, nor is an event without an order.
func TestWebhookOrderPerOrderNo(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.hook(t)
		b.emit(t, "order.closed o-1", "hold.released o-1", "order.closed o-2", "task.manual ")
		b.fanOut(t)
		sends, got := b.claim(t, "w1")
		if got != "o-1/order.closed o-2/order.closed /task.manual" {
			t.Fatalf("first claim: %q", got)
		}
		if out := b.record(t, sends[0], err500); out != models.DeliveryOutcomeRetry {
			t.Fatalf("500: %s", out)
		}
		for _, w := range sends[1:] {
			b.record(t, w, ok200)
		}
		if _, got := b.claim(t, "w1"); got != "" {
			t.Fatalf("o-1's second event went out while its first waits for a retry: %q", got)
		}
		b.clock.Advance(models.WebhookRetryBase)
		sends, got = b.claim(t, "w1")
		if got != "o-1/order.closed" || sends[0].Delivery.Tries != 2 {
			t.Fatalf("after the retry's wait: %q", got)
		}
		b.record(t, sends[0], ok200)
		if _, got := b.claim(t, "w1"); got != "o-1/hold.released" {
			t.Fatalf("after o-1's first was delivered: %q", got)
		}
	})
}

// TestWebhookFailedDoesNotBlock: a 4xx is FAILED, not retried, and the
// order's next event goes out; a redelivery makes it due again.
func TestWebhookFailedDoesNotBlock(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		w := b.hook(t)
		b.emit(t, "order.closed o-1", "hold.released o-1")
		b.fanOut(t)
		sends, _ := b.claim(t, "w1")
		if out := b.record(t, sends[0], models.DeliveryResult{Status: 410, Answer: strings.Repeat("x", 5000)}); out != models.DeliveryOutcomeFailed {
			t.Fatalf("410: %s", out)
		}
		next, got := b.claim(t, "w1")
		if got != "o-1/hold.released" {
			t.Fatalf("after a FAILED delivery: %q", got)
		}
		if _, err := b.s.RedeliverWebhook(b.ctx, w.ID, next[0].Delivery.ID, "admin"); !errors.Is(err, models.ErrNothingToRedeliver) {
			t.Fatalf("redeliver one being sent: %v", err)
		}
		if _, err := b.s.RedeliverWebhook(b.ctx, w.ID+1, sends[0].Delivery.ID, "admin"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("redeliver through another subscription: %v", err)
		}
		b.record(t, next[0], ok200)
		page, err := b.s.WebhookDeliveries(b.ctx, w.ID, models.DeliveryFilter{Status: models.DeliveryFailed})
		if err != nil || len(page.Deliveries) != 1 {
			t.Fatalf("FAILED deliveries: %+v %v", page, err)
		}
		if d := page.Deliveries[0]; d.LastStatus != 410 || len(d.LastAnswer) > 512 || d.Tries != 1 {
			t.Fatalf("FAILED delivery as stored: status %d, answer of %d bytes, %d tries", d.LastStatus, len(d.LastAnswer), d.Tries)
		}
		d, err := b.s.RedeliverWebhook(b.ctx, w.ID, sends[0].Delivery.ID, "admin")
		if err != nil || d.Status != models.DeliveryPending {
			t.Fatalf("redeliver: %+v %v", d, err)
		}
		again, got := b.claim(t, "w1")
		if got != "o-1/order.closed" || again[0].Event.ID != sends[0].Event.ID {
			t.Fatalf("after a redelivery: %q", got)
		}
	})
}

// TestWebhookLeaseExpires: a worker that took a delivery and died holds
// it until its lease runs out; meanwhile no other worker sends it. Then
// another worker sends the same event again, and the first worker's late
// outcome is fenced out.
func TestWebhookLeaseExpires(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.hook(t)
		b.emit(t, "order.closed o-1")
		b.fanOut(t)
		dead, _ := b.claim(t, "w1")
		if len(dead) != 1 {
			t.Fatalf("claimed %d", len(dead))
		}
		if _, got := b.claim(t, "w2"); got != "" {
			t.Fatalf("a second worker took a leased delivery: %q", got)
		}
		b.clock.Advance(time.Minute)
		again, _ := b.claim(t, "w2")
		if len(again) != 1 || again[0].Event.ID != dead[0].Event.ID || again[0].Delivery.Tries != 2 {
			t.Fatalf("after the lease ran out: %+v", again)
		}
		if out := b.record(t, dead[0], ok200); out != models.DeliveryOutcomeLost {
			t.Fatalf("the dead worker's late outcome: %s, want lost", out)
		}
		if out := b.record(t, again[0], err500); out != models.DeliveryOutcomeRetry {
			t.Fatalf("the live worker's outcome: %s", out)
		}
		page, err := b.s.WebhookDeliveries(b.ctx, again[0].Delivery.SubscriptionID, models.DeliveryFilter{})
		if err != nil || page.Deliveries[0].Status != models.DeliveryRetry || page.Deliveries[0].LastStatus != 500 {
			t.Fatalf("stored: %+v %v", page, err)
		}
	})
}

// TestWebhookTwoWorkersOneSend: two workers claiming at once never take
// the same delivery.
func TestWebhookTwoWorkersOneSend(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.hook(t)
		for i := range 20 {
			b.emit(t, fmt.Sprintf("order.closed o-%d", i))
		}
		b.fanOut(t)
		var mu sync.Mutex
		seen := map[int64]string{}
		var wg sync.WaitGroup
		for _, w := range []string{"w1", "w2"} {
			wg.Go(func() {
				for {
					sends, err := b.s.ClaimDeliveries(b.ctx, w, 3, time.Minute, nil)
					if err != nil {
						t.Error(err)
						return
					}
					if len(sends) == 0 {
						return
					}
					mu.Lock()
					for _, s := range sends {
						if other, ok := seen[s.Delivery.ID]; ok {
							t.Errorf("delivery %d taken by %s and %s", s.Delivery.ID, other, w)
						}
						seen[s.Delivery.ID] = w
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 20 {
			t.Fatalf("claimed %d of 20", len(seen))
		}
	})
}

// TestWebhookAutoPause: deliveries failing for 24 hours pause the
// subscription; a paused one is not sent; resume sends again.
func TestWebhookAutoPause(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		w := b.hook(t)
		b.emit(t, "order.closed o-1")
		b.fanOut(t)
		fail := func() {
			t.Helper()
			sends, _ := b.claim(t, "w1")
			if len(sends) != 1 {
				t.Fatalf("claimed %d", len(sends))
			}
			b.record(t, sends[0], models.DeliveryResult{Err: "connection refused"})
		}
		fail()
		got, _ := b.s.Webhook(b.ctx, w.ID)
		if got.FailingSince == nil || got.Paused() {
			t.Fatalf("after one failure: %+v", got)
		}
		b.clock.Advance(models.WebhookPauseAfter - time.Second)
		fail()
		if got, _ := b.s.Webhook(b.ctx, w.ID); got.Paused() {
			t.Fatalf("paused before 24 h of failures: %+v", got)
		}
		b.clock.Advance(models.WebhookRetryMax)
		fail()
		got, _ = b.s.Webhook(b.ctx, w.ID)
		if !got.Paused() || !strings.Contains(got.PausedReason, "connection refused") {
			t.Fatalf("after 24 h of failures: %+v", got)
		}
		b.clock.Advance(models.WebhookRetryMax)
		if _, names := b.claim(t, "w1"); names != "" {
			t.Fatalf("a paused subscription was sent %q", names)
		}
		got, err := b.s.ResumeWebhook(b.ctx, w.ID, "admin")
		if err != nil || got.Paused() || got.FailingSince != nil {
			t.Fatalf("resume: %+v %v", got, err)
		}
		sends, _ := b.claim(t, "w1")
		if len(sends) != 1 {
			t.Fatalf("after resume claimed %d", len(sends))
		}
		b.record(t, sends[0], ok200)
		if got, _ := b.s.Webhook(b.ctx, w.ID); got.Backlog != 0 {
			t.Fatalf("delivered, backlog %d", got.Backlog)
		}
	})
}

// TestWebhookRetryWait: the waits double, stay within their jitter window
// and the cap, and a Retry-After is honoured up to the cap.
func TestWebhookRetryWait(t *testing.T) {
	for _, tc := range []struct {
		try    int
		r      models.DeliveryResult
		jitter float64
		want   time.Duration
	}{
		{1, models.DeliveryResult{Status: 500}, 0, models.WebhookRetryBase / 2},
		{1, models.DeliveryResult{Status: 500}, 0.999999, models.WebhookRetryBase - 5*time.Microsecond},
		{3, models.DeliveryResult{Status: 500}, 0, 2 * models.WebhookRetryBase},
		{40, models.DeliveryResult{}, 0, models.WebhookRetryMax / 2},
		{1, models.DeliveryResult{Status: 429, RetryAfter: 2 * time.Minute}, 0, 2 * time.Minute},
		{1, models.DeliveryResult{Status: 429, RetryAfter: 48 * time.Hour}, 0, models.WebhookRetryMax},
	} {
		got := models.RetryWait(tc.try, tc.r, tc.jitter)
		if got.Round(time.Millisecond) != tc.want.Round(time.Millisecond) {
			t.Errorf("wait after try %d of %+v (jitter %v) = %v, want %v", tc.try, tc.r, tc.jitter, got, tc.want)
		}
	}
}

// TestWebhookDeleteAndClean: deleting a subscription deletes its
// deliveries; delivered rows older than a week are cleaned, others kept.
func TestWebhookDeleteAndClean(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		w := b.hook(t)
		b.emit(t, "order.closed o-1", "order.closed o-2")
		b.fanOut(t)
		sends, _ := b.claim(t, "w1")
		b.record(t, sends[0], ok200)
		b.record(t, sends[1], models.DeliveryResult{Status: 404})
		b.clock.Advance(models.WebhookDeliveredKeep + time.Second)
		n, err := b.s.DeleteOldDeliveries(b.ctx, b.clock.Now().Add(-models.WebhookDeliveredKeep), 100)
		if err != nil || n != 1 {
			t.Fatalf("cleaned %d, %v; want the delivered one", n, err)
		}
		if err := b.s.DeleteWebhook(b.ctx, w.ID, "admin"); err != nil {
			t.Fatal(err)
		}
		if err := b.s.DeleteWebhook(b.ctx, w.ID, "admin"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		var left int64
		must(t, func() error { return b.s.R.Raw("SELECT COUNT(*) FROM webhook_deliveries").Scan(&left).Error })
		if left != 0 {
			t.Fatalf("%d deliveries outlived their subscription", left)
		}
	})
}

// TestWebhookDeliveriesPages: keyset pages, newest first, cover every
// delivery once.
func TestWebhookDeliveriesPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		w := b.hook(t)
		b.emit(t, "order.closed o-1", "order.closed o-2", "order.closed o-3")
		b.fanOut(t)
		var ids []int64
		f := models.DeliveryFilter{Limit: 2}
		for {
			page, err := b.s.WebhookDeliveries(b.ctx, w.ID, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Deliveries {
				ids = append(ids, d.ID)
			}
			if page.Next == 0 {
				break
			}
			f.Before = page.Next
		}
		if len(ids) != 3 || ids[0] < ids[1] || ids[1] < ids[2] {
			t.Fatalf("pages gave %v", ids)
		}
		if _, err := b.s.WebhookDeliveries(b.ctx, w.ID+1, models.DeliveryFilter{}); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("another subscription: %v", err)
		}
	})
}
