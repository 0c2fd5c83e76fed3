package jobs_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// emitEvent writes one event as a fact's transaction would, and
// sequences it (PostgreSQL) so senders see it.
func emitEvent(t *testing.T, s *models.Store, typ models.EventType, no string) {
	t.Helper()
	err := s.W.Exec("INSERT INTO events (type, order_no, occurred_at, data) VALUES (?, ?, ?, ?)",
		typ, no, s.Now(), `{"order_no":"`+no+`"}`).Error
	if err == nil {
		_, err = s.SequenceEvents(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
}

// received is one request a test subscriber got.
type received struct {
	id, sig string
	body    []byte
}

// subscriber answers with the statuses given, in turn (then 200), and
// keeps what it got.
type subscriber struct {
	mu       sync.Mutex
	got      []received
	statuses []int
}

func (sb *subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sb.mu.Lock()
	sb.got = append(sb.got, received{id: r.Header.Get("Unhold-Event-Id"), sig: r.Header.Get("Unhold-Signature"), body: body})
	status := http.StatusOK
	if len(sb.statuses) > 0 {
		status, sb.statuses = sb.statuses[0], sb.statuses[1:]
	}
	sb.mu.Unlock()
	if r.Header.Get("Content-Type") != "application/json" {
		status = http.StatusUnsupportedMediaType
	}
	w.WriteHeader(status)
	io.WriteString(w, "answer "+strconv.Itoa(status))
}

// verify checks a signature the way docs/webhooks.md tells subscribers
// to, written here again rather than calling jobs.Signature.
func verify(secret, header string, body []byte) bool {
	var ts, v1 string
	for _, p := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			v1 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	return ts != "" && hmac.Equal([]byte(v1), []byte(want))
}

// TestWebhookRetrySameEvent: a subscriber that answers 500 then 200 gets
// the same event twice, with the same Unhold-Event-Id, the event's JSON as
// the polling API shows it, and a signature that verifies both times.
func TestWebhookRetrySameEvent(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now})
		ctx := context.Background()
		sub := &subscriber{statuses: []int{http.StatusInternalServerError}}
		srv := httptest.NewServer(sub)
		defer srv.Close()
		const secret = "a-secret-of-24-bytes-123"
		hook, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: srv.URL + "/hook", Secret: secret}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		emitEvent(t, s, models.EventOrderClosed, "o-1")
		w := jobs.NewWebhookSender(s, "w1", time.Second, 2, modelstest.QuietLog())
		if n := w.Drain(ctx); n != 1 {
			t.Fatalf("first drain sent %d", n)
		}
		if n := w.Drain(ctx); n != 0 {
			t.Fatalf("sent %d again before the retry's wait", n)
		}
		clock.Advance(models.WebhookRetryBase)
		if n := w.Drain(ctx); n != 1 {
			t.Fatalf("after the retry's wait sent %d", n)
		}
		if len(sub.got) != 2 {
			t.Fatalf("subscriber got %d requests", len(sub.got))
		}
		evs, err := s.EventsAfter(ctx, 0, 10, nil)
		if err != nil || len(evs) != 1 {
			t.Fatal(evs, err)
		}
		want, _ := json.Marshal(evs[0])
		for i, r := range sub.got {
			if r.id != strconv.FormatInt(evs[0].ID, 10) || string(r.body) != string(want) {
				t.Errorf("request %d: id %q body %s; want id %d body %s", i, r.id, r.body, evs[0].ID, want)
			}
			if !verify(secret, r.sig, r.body) {
				t.Errorf("request %d: signature %q does not verify", i, r.sig)
			}
			if verify(secret+"x", r.sig, r.body) {
				t.Errorf("request %d: signature verifies with another secret", i)
			}
		}
		page, err := s.WebhookDeliveries(ctx, hook.ID, models.DeliveryFilter{})
		if err != nil || page.Deliveries[0].Status != models.DeliveryDelivered || page.Deliveries[0].Tries != 2 ||
			page.Deliveries[0].LastAnswer != "answer 200" {
			t.Fatalf("delivery: %+v %v", page, err)
		}
	})
}

// TestWebhookDialRefusesLinkLocal: a subscription whose address is
// link-local when the send dials (as after DNS rebinding, written here
// straight to the table) is not reached: the dialer refuses it.
func TestWebhookDialRefusesLinkLocal(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	ctx := context.Background()
	hook, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: "http://127.0.0.1:9/hook"}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec("UPDATE webhook_subscriptions SET url = 'http://169.254.169.254/latest' WHERE id = ?", hook.ID).Error; err != nil {
		t.Fatal(err)
	}
	emitEvent(t, s, models.EventOrderClosed, "o-1")
	if n := jobs.NewWebhookSender(s, "w1", time.Second, 2, modelstest.QuietLog()).Drain(ctx); n != 1 {
		t.Fatalf("sent %d", n)
	}
	page, err := s.WebhookDeliveries(ctx, hook.ID, models.DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if d := page.Deliveries[0]; d.Status != models.DeliveryRetry || !strings.Contains(d.LastError, "link-local") {
		t.Fatalf("a send to 169.254.169.254: %s %q", d.Status, d.LastError)
	}
}

// TestWebhookSlowSubscriberDoesNotStall: while two subscribers take their
// time over every request (between them, every slot if each took half),
// another's events are delivered.
func TestWebhookSlowSubscriberDoesNotStall(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	slow2 := httptest.NewServer(slow.Config.Handler)
	defer slow2.Close()
	defer close(release)
	fast := &subscriber{}
	fastSrv := httptest.NewServer(fast)
	defer fastSrv.Close()
	for _, u := range []string{slow.URL, slow2.URL, fastSrv.URL} {
		if _, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: u}, "admin"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		emitEvent(t, s, models.EventOrderClosed, "o-"+strconv.Itoa(i))
	}
	w := jobs.NewWebhookSender(s, "w1", 30*time.Second, 4, modelstest.QuietLog())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		fast.mu.Lock()
		n := len(fast.got)
		fast.mu.Unlock()
		if n == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fast subscriber got %d of 6 while the slow ones held their sends", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
}

// TestWebhookRetryAfterHuge: a Retry-After of more seconds than a
// time.Duration holds waits the longest retry, not the moment it wraps to
// (18446744074 s is 0.29 s past 2^64 ns).
func TestWebhookRetryAfterHuge(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "18446744074")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	hook, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: srv.URL}, "admin")
	if err != nil {
		t.Fatal(err)
	}
	emitEvent(t, s, models.EventOrderClosed, "o-1")
	if n := jobs.NewWebhookSender(s, "w1", time.Second, 2, modelstest.QuietLog()).Drain(ctx); n != 1 {
		t.Fatalf("sent %d", n)
	}
	page, err := s.WebhookDeliveries(ctx, hook.ID, models.DeliveryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if d := page.Deliveries[0]; d.Status != models.DeliveryRetry || d.NextAt.Sub(d.UpdatedAt) != models.WebhookRetryMax {
		t.Fatalf("after 503 with Retry-After 18446744074: %s, next in %s; want RETRY in %s", d.Status, d.NextAt.Sub(d.UpdatedAt), models.WebhookRetryMax)
	}
}
