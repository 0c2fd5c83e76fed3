package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"unhold/metrics"
	"unhold/models"
)

// Webhook sender defaults.
const (
	DefaultWebhookTimeout = 10 * time.Second
	// DefaultWebhookSends is how many sends run at once in one process;
	// one subscription takes at most half of them, and the last one free
	// only when it has none under way, so slow subscribers cannot stall
	// the others (see roomFor).
	DefaultWebhookSends = 8
	// webhookPoll is how often the sender looks for new events and due
	// deliveries when nothing wakes it.
	webhookPoll = time.Second
	// maxAnswerRead bounds what is read of a subscriber's answer.
	maxAnswerRead = 4096
)

// WebhookSender sends webhook deliveries (models.ClaimDeliveries): it
// makes new events into deliveries, claims due ones with a lease and POSTs
// each, signed, to its subscriber, outside any transaction and away from
// the release workers, so a slow or dead subscriber never holds a release
// back. It runs in the worker role.
type WebhookSender struct {
	s       *models.Store
	id      string
	client  *http.Client
	timeout time.Duration
	slots   int
	perSub  int
	log     *slog.Logger
	metrics *metrics.Metrics
	jitter  func() float64

	mu       sync.Mutex
	inFlight map[int64]int // sends under way by subscription
	free     int
	wake     chan struct{}
	sends    sync.WaitGroup
}

// NewWebhookSender makes a sender named id (its lease owner) whose sends
// time out after timeout (0: DefaultWebhookTimeout), slots at a time (0:
// DefaultWebhookSends).
func NewWebhookSender(s *models.Store, id string, timeout time.Duration, slots int, log *slog.Logger) *WebhookSender {
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	if slots <= 0 {
		slots = DefaultWebhookSends
	}
	return &WebhookSender{s: s, id: id, client: webhookClient(timeout), timeout: timeout, slots: slots,
		perSub: max(1, slots/2), log: log, jitter: rand.Float64, inFlight: map[int64]int{}, free: slots,
		wake: make(chan struct{}, 1)}
}

// WithMetrics makes the sender count its outcomes in m. Call it before Run.
func (w *WebhookSender) WithMetrics(m *metrics.Metrics) *WebhookSender {
	w.metrics = m
	return w
}

// webhookClient is the client of the sends: it follows no redirect (a
// 3xx is an answer, and would lead the send elsewhere), uses no proxy, and
// its dialer refuses link-local addresses, so a subscriber's name that
// resolves there later (DNS rebinding) still cannot reach the metadata
// service.
func webhookClient(timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: refuseLinkLocal}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			MaxIdleConnsPerHost:   2,
			IdleConnTimeout:       90 * time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// errLinkLocal is a dial to a link-local address, refused.
var errLinkLocal = errors.New("refused: the address is link-local")

// refuseLinkLocal is the dialer's Control: it sees the address actually
// dialled, after any name was resolved.
func refuseLinkLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if models.LinkLocal(addr) {
		return fmt.Errorf("dial %s: %w", address, errLinkLocal)
	}
	return nil
}

// Wake asks Run to look for work now; it never blocks.
func (w *WebhookSender) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run fans out and sends, every webhookPoll or when woken, until ctx ends;
// it then waits for the sends under way, which end within the timeout.
func (w *WebhookSender) Run(ctx context.Context) {
	t := time.NewTicker(webhookPoll)
	defer t.Stop()
	defer w.sends.Wait()
	for {
		w.step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// Drain fans out and sends until nothing is due, waiting for each send;
// it returns how many sends it made. Tests and the bench use it.
func (w *WebhookSender) Drain(ctx context.Context) int {
	n := 0
	for ctx.Err() == nil {
		k := w.step(ctx)
		w.sends.Wait()
		if k == 0 {
			break
		}
		n += k
	}
	return n
}

// step makes new deliveries and starts the sends of as many due ones as
// there is room for, and returns how many it started.
func (w *WebhookSender) step(ctx context.Context) int {
	if _, err := w.s.FanOutWebhooks(ctx); err != nil && ctx.Err() == nil {
		w.log.Error("webhook fan-out failed", slog.String("worker", w.id), slog.Any("err", err))
	}
	w.mu.Lock()
	free := w.free
	var busy []int64
	for sub := range w.inFlight {
		if !w.roomFor(sub) {
			busy = append(busy, sub)
		}
	}
	w.mu.Unlock()
	if free == 0 || ctx.Err() != nil {
		return 0
	}
	claimed, err := w.s.ClaimDeliveries(ctx, w.id, free, w.lease(), busy)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error("webhook claim failed", slog.String("worker", w.id), slog.Any("err", err))
		}
		return 0
	}
	var back []models.WebhookSend
	started := 0
	w.mu.Lock()
	for _, send := range claimed {
		sub := send.Delivery.SubscriptionID
		if w.free == 0 || !w.roomFor(sub) {
			back = append(back, send)
			continue
		}
		w.inFlight[sub]++
		w.free--
		started++
		w.sends.Add(1)
		go w.send(ctx, send)
	}
	w.mu.Unlock()
	if err := w.s.ReturnDeliveries(context.WithoutCancel(ctx), back); err != nil {
		w.log.Warn("webhook deliveries not handed back; their lease runs out by itself", slog.Any("err", err))
	}
	return started
}

// roomFor tells whether subscription sub may start one more send; w.mu
// is held. It may while it has fewer than half the slots under way, and
// the last free slot only when it has none: however many subscribers
// hang, one slot stays for those not sending (two dead subscribers
// holding half each would otherwise stall every other one).
func (w *WebhookSender) roomFor(sub int64) bool {
	n := w.inFlight[sub]
	return n < w.perSub && (n == 0 || w.free > 1)
}

// lease is how long a claimed delivery is the sender's: the send's
// timeout and time to record its outcome. A sender that dies holds its
// deliveries that long; then another sends them again.
func (w *WebhookSender) lease() time.Duration { return 2*w.timeout + 10*time.Second }

// send makes one delivery and records its outcome.
func (w *WebhookSender) send(ctx context.Context, send models.WebhookSend) {
	defer func() {
		w.mu.Lock()
		sub := send.Delivery.SubscriptionID
		if w.inFlight[sub]--; w.inFlight[sub] == 0 {
			delete(w.inFlight, sub)
		}
		w.free++
		w.mu.Unlock()
		w.sends.Done()
		w.Wake()
	}()
	res := w.post(ctx, send)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if ctx.Err() != nil && res.Status == 0 {
		// Stopping: the send was cut short, not failed; it is handed
		// back, due again at once for another worker.
		if err := w.s.ReturnDeliveries(rctx, []models.WebhookSend{send}); err != nil {
			w.log.Warn("webhook delivery not handed back; its lease runs out by itself", slog.Any("err", err))
		}
		return
	}
	outcome, err := w.s.RecordDelivery(rctx, send, res, w.jitter())
	if err != nil {
		w.log.Error("webhook outcome not recorded; the delivery is sent again when its lease runs out",
			slog.Int64("delivery", send.Delivery.ID), slog.Any("err", err))
		return
	}
	w.metrics.ObserveWebhook(outcome)
	attrs := []any{slog.Int64("subscription", send.Delivery.SubscriptionID), slog.Int64("delivery", send.Delivery.ID),
		slog.Int64("event", send.Event.ID), slog.String("outcome", outcome), slog.Int("status", res.Status)}
	if outcome == models.DeliveryOutcomeDelivered {
		w.log.Debug("webhook delivered", attrs...)
	} else {
		w.log.Warn("webhook not delivered", append(attrs, slog.String("err", res.Err))...)
	}
}

// post sends the event and reads the answer.
func (w *WebhookSender) post(ctx context.Context, send models.WebhookSend) models.DeliveryResult {
	if send.Event.ID == 0 {
		return models.DeliveryResult{Status: http.StatusGone, Err: "the event is no longer stored"}
	}
	body, err := json.Marshal(send.Event)
	if err != nil {
		return models.DeliveryResult{Status: http.StatusUnprocessableEntity, Err: "marshal event: " + err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, send.URL, bytes.NewReader(body))
	if err != nil {
		return models.DeliveryResult{Status: http.StatusBadRequest, Err: "request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "unhold-webhooks/1")
	req.Header.Set("Unhold-Event-Id", strconv.FormatInt(send.Event.ID, 10))
	req.Header.Set("Unhold-Signature", Signature(send.Secret, w.s.Now(), body))
	resp, err := w.client.Do(req)
	if err != nil {
		return models.DeliveryResult{Err: err.Error()}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerRead))
	return models.DeliveryResult{Status: resp.StatusCode, Answer: string(answer),
		RetryAfter: retryAfter(resp.Header.Get("Retry-After"), w.s.Now())}
}

// Signature is the Unhold-Signature header of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>".
func Signature(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// retryAfter reads a Retry-After header: seconds or an HTTP date (0: none
// or unreadable).
func retryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil && n > 0 {
		// Bounded before it is multiplied: a huge n would wrap, to a
		// wait of a moment or less than none.
		return time.Duration(min(n, int64(models.WebhookRetryMax/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
