package models

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
)

// A webhook subscription: a URL that is sent the events of the types it
// asked for (docs/webhooks.md). Its secret signs what is sent; it is shown
// once, when the subscription is made, and never read back.
type WebhookSubscription struct {
	ID        int64       `json:"id"`
	URL       string      `json:"url"`
	Types     []EventType `json:"types"` // none: every type
	CreatedBy string      `json:"created_by"`
	CreatedAt time.Time   `json:"created_at"`
	// PausedAt is set while no delivery is sent: paused by hand, or by
	// the worker after deliveries failed for WebhookPauseAfter.
	PausedAt     *time.Time `json:"paused_at,omitempty"`
	PausedReason string     `json:"paused_reason,omitempty"`
	// FailingSince is the first failure since the last delivery.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// Backlog is how many deliveries wait to be sent (PENDING or RETRY),
	// Oldest when the oldest of them was made, Failed how many FAILED.
	Backlog int64      `json:"backlog"`
	Oldest  *time.Time `json:"oldest,omitempty"`
	Failed  int64      `json:"failed"`
}

// Paused tells whether the subscription's deliveries are held.
func (w WebhookSubscription) Paused() bool { return w.PausedAt != nil }

// NewWebhook is a subscription to make. Types none: every type. Secret
// empty: one is generated.
type NewWebhook struct {
	URL    string
	Types  []EventType
	Secret string
}

// Webhook input bounds.
const (
	MinWebhookSecret = 16   // bytes
	maxWebhookSecret = 256  // bytes
	maxWebhookURL    = 2048 // bytes
)

// WebhookPauseAfter is how long a subscription's deliveries may fail
// without one getting through before the worker pauses it.
const WebhookPauseAfter = 24 * time.Hour

// ErrNothingToRedeliver: the delivery is waiting to be sent already, or is
// being sent; nothing is written.
var ErrNothingToRedeliver = &Error{"NOTHING_TO_REDELIVER", "the delivery is already waiting to be sent or being sent"}

// WebhookTarget is the audit target of one subscription.
func WebhookTarget(id int64) string { return "webhook:" + strconv.FormatInt(id, 10) }

// LinkLocal tells whether addr is link-local (169.254.0.0/16, the cloud
// metadata address among them, or fe80::/10), also written as an
// IPv4-mapped IPv6 address. Webhooks are never sent there.
func LinkLocal(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast()
}

// checkWebhookURL refuses a URL that is not http(s), carries credentials,
// has no host, or whose host is or resolves to a link-local address. A
// loopback host is allowed (tests, a sidecar).
func (s *Store) checkWebhookURL(ctx context.Context, raw string) (string, error) {
	if len(raw) > maxWebhookURL {
		return "", invalid("url must be at most %d bytes", maxWebhookURL)
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", invalid("url %q does not parse: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", invalid("url must be http:// or https://, not %q", u.Scheme)
	}
	if u.User != nil {
		return "", invalid("url must not hold a user or password: give the subscriber its secret instead")
	}
	host := u.Hostname()
	if host == "" {
		return "", invalid("url must name a host")
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if LinkLocal(addr) {
			return "", invalid("url's host %s is a link-local address (such as the cloud metadata service): refused", host)
		}
		return u.String(), nil
	}
	addrs, err := s.lookupHost(ctx, host)
	if err != nil || len(addrs) == 0 {
		return "", invalid("url's host %q does not resolve: %v", host, err)
	}
	for _, a := range addrs {
		if addr, err := netip.ParseAddr(a); err == nil && LinkLocal(addr) {
			return "", invalid("url's host %q resolves to the link-local address %s: refused", host, a)
		}
	}
	return u.String(), nil
}

// newWebhookSecret is 32 random bytes, hex.
func newWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CreateWebhook makes a subscription and returns it with its secret (the
// one given, or a generated one), which is never shown again. The
// subscription hears of events from now on: its cursor starts at the
// newest event. Bad input is ErrInvalid, and nothing is written.
func (s *Store) CreateWebhook(ctx context.Context, w NewWebhook, actor string) (WebhookSubscription, string, error) {
	u, err := s.checkWebhookURL(ctx, w.URL)
	if err != nil {
		return WebhookSubscription{}, "", err
	}
	secret := w.Secret
	switch {
	case secret == "":
		secret = newWebhookSecret()
	case len(secret) < MinWebhookSecret:
		return WebhookSubscription{}, "", invalid("secret must be at least %d bytes (it is %d); leave it out to have one made", MinWebhookSecret, len(secret))
	case len(secret) > maxWebhookSecret:
		return WebhookSubscription{}, "", invalid("secret must be at most %d bytes", maxWebhookSecret)
	case !utf8.ValidString(secret):
		return WebhookSubscription{}, "", invalid("secret must be UTF-8 text")
	case strings.ContainsFunc(secret, unicode.IsControl):
		return WebhookSubscription{}, "", invalid("secret must not hold a control character (a NUL, a newline, a tab)")
	}
	types, err := ParseEventTypes(joinEventTypes(w.Types))
	if err != nil {
		return WebhookSubscription{}, "", err
	}
	var id int64
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Only sequenced events have a position on PostgreSQL; one that
		// commits later gets a seq after this cursor and is heard.
		err := tx.Raw(`INSERT INTO webhook_subscriptions (url, secret, types, created_by, created_at, event_cursor)
			VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(`+s.eventPos()+`), 0) FROM events)) RETURNING id`,
			u, secret, joinTypes(types), actor, now).Scan(&id).Error
		if err != nil {
			return err
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "webhook_create", Target: WebhookTarget(id), Outcome: "ok",
			Detail: fmt.Sprintf("url %s, types %s", u, typesText(types))}, now)
	})
	if err != nil {
		return WebhookSubscription{}, "", fmt.Errorf("create webhook: %w", err)
	}
	sub, err := s.Webhook(ctx, id)
	return sub, secret, err
}

func joinTypes(ts []EventType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ",")
}

func typesText(ts []EventType) string {
	if len(ts) == 0 {
		return "all"
	}
	return joinTypes(ts)
}

// webhookRow is a subscription as stored, with its deliveries' counts.
type webhookRow struct {
	ID           int64
	URL          string
	Types        string
	CreatedBy    string
	CreatedAt    time.Time
	PausedAt     *time.Time
	PausedReason string
	FailingSince *time.Time
	Backlog      int64
	Failed       int64
}

func (s *Store) webhookSQL(where string) string {
	return `SELECT w.id, w.url, w.types, w.created_by, w.created_at, w.paused_at, w.paused_reason, w.failing_since,
		(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.subscription_id = w.id AND d.status IN ('PENDING','RETRY')) AS backlog,
		(SELECT COUNT(*) FROM webhook_deliveries d WHERE d.subscription_id = w.id AND d.status = 'FAILED') AS failed
		FROM webhook_subscriptions w ` + where + ` ORDER BY w.id`
}

func (r webhookRow) subscription() (WebhookSubscription, error) {
	types, err := ParseEventTypes(r.Types)
	if err != nil {
		return WebhookSubscription{}, fmt.Errorf("webhook %d's stored types: %w", r.ID, err)
	}
	w := WebhookSubscription{ID: r.ID, URL: r.URL, Types: types, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(),
		PausedAt: utcPtr(r.PausedAt), PausedReason: r.PausedReason, FailingSince: utcPtr(r.FailingSince),
		Backlog: r.Backlog, Failed: r.Failed}
	if w.Types == nil {
		w.Types = []EventType{}
	}
	return w, nil
}

// webhookList reads the subscriptions where cond holds, and the oldest
// waiting delivery of each that has any.
func (s *Store) webhookList(ctx context.Context, cond string, args ...any) ([]WebhookSubscription, error) {
	db := s.R.WithContext(ctx)
	var rows []webhookRow
	if err := db.Raw(s.webhookSQL(cond), args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]WebhookSubscription, 0, len(rows))
	for _, r := range rows {
		w, err := r.subscription()
		if err != nil {
			return nil, err
		}
		if w.Backlog > 0 {
			var first []struct{ CreatedAt time.Time }
			err := db.Raw(`SELECT created_at FROM webhook_deliveries WHERE subscription_id = ? AND status IN ('PENDING','RETRY')
				ORDER BY created_at LIMIT 1`, w.ID).Scan(&first).Error
			if err != nil {
				return nil, err
			}
			if len(first) == 1 {
				t := first[0].CreatedAt.UTC()
				w.Oldest = &t
			}
		}
		out = append(out, w)
	}
	return out, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Webhooks lists every subscription, oldest first, with its backlog, its
// oldest waiting delivery, its FAILED count and whether it is paused.
func (s *Store) Webhooks(ctx context.Context) ([]WebhookSubscription, error) {
	out, err := s.webhookList(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// Webhook reads one subscription (never its secret); ErrNotFound.
func (s *Store) Webhook(ctx context.Context, id int64) (WebhookSubscription, error) {
	out, err := s.webhookList(ctx, "WHERE w.id = ?", id)
	if err != nil {
		return WebhookSubscription{}, fmt.Errorf("webhook %d: %w", id, err)
	}
	if len(out) == 0 {
		return WebhookSubscription{}, fmt.Errorf("webhook %d: %w", id, ErrNotFound)
	}
	return out[0], nil
}

// DeleteWebhook deletes a subscription and its deliveries; ErrNotFound.
// A send under way finishes, and its outcome is dropped.
func (s *Store) DeleteWebhook(ctx context.Context, id int64, actor string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		var url string
		if err := tx.Raw("SELECT url FROM webhook_subscriptions WHERE id = ?", id).Scan(&url).Error; err != nil {
			return err
		}
		if url == "" {
			return ErrNotFound
		}
		if err := tx.Exec("DELETE FROM webhook_deliveries WHERE subscription_id = ?", id).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM webhook_subscriptions WHERE id = ?", id).Error; err != nil {
			return err
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "webhook_delete", Target: WebhookTarget(id), Outcome: "ok",
			Detail: "url " + url}, s.Now())
	})
	if err != nil {
		return fmt.Errorf("delete webhook %d: %w", id, err)
	}
	return nil
}

// PauseWebhook holds a subscription's deliveries (they still pile up, to
// be sent on resume); ErrNotFound. Pausing a paused one changes nothing
// and is not an error.
func (s *Store) PauseWebhook(ctx context.Context, id int64, actor string) (WebhookSubscription, error) {
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		if err := webhookExists(tx, id); err != nil {
			return err
		}
		res := tx.Exec("UPDATE webhook_subscriptions SET paused_at = ?, paused_reason = ? WHERE id = ? AND paused_at IS NULL",
			now, "paused by "+actor, id)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "webhook_pause", Target: WebhookTarget(id), Outcome: "ok"}, now)
	})
	if err != nil {
		return WebhookSubscription{}, fmt.Errorf("pause webhook %d: %w", id, err)
	}
	return s.Webhook(ctx, id)
}

// ResumeWebhook sends a paused subscription's deliveries again, the ones
// waiting for a retry at once, and forgets its failures (failing_since);
// ErrNotFound. Resuming one that is not paused changes nothing.
func (s *Store) ResumeWebhook(ctx context.Context, id int64, actor string) (WebhookSubscription, error) {
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		if err := webhookExists(tx, id); err != nil {
			return err
		}
		res := tx.Exec("UPDATE webhook_subscriptions SET paused_at = NULL, paused_reason = '', failing_since = NULL WHERE id = ? AND paused_at IS NOT NULL", id)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		err := tx.Exec("UPDATE webhook_deliveries SET next_at = ?, updated_at = ? WHERE subscription_id = ? AND status = 'RETRY' AND next_at > ?",
			now, now, id, now).Error
		if err != nil {
			return err
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "webhook_resume", Target: WebhookTarget(id), Outcome: "ok"}, now)
	})
	if err != nil {
		return WebhookSubscription{}, fmt.Errorf("resume webhook %d: %w", id, err)
	}
	return s.Webhook(ctx, id)
}

func webhookExists(tx *gorm.DB, id int64) error {
	var n int64
	if err := tx.Raw("SELECT COUNT(*) FROM webhook_subscriptions WHERE id = ?", id).Scan(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeliveryStatus is where one delivery stands.
type DeliveryStatus string

// Delivery statuses: waiting (PENDING, RETRY after a failure that may
// pass), DELIVERED (answered 2xx), FAILED (answered a 4xx other than 408
// and 429: not retried, redeliverable by hand).
const (
	DeliveryPending   DeliveryStatus = "PENDING"
	DeliveryRetry     DeliveryStatus = "RETRY"
	DeliveryDelivered DeliveryStatus = "DELIVERED"
	DeliveryFailed    DeliveryStatus = "FAILED"
)

// DeliveryStatuses are the statuses, in the order pages show them.
var DeliveryStatuses = []DeliveryStatus{DeliveryPending, DeliveryRetry, DeliveryDelivered, DeliveryFailed}

// ParseDeliveryStatus reads a status ("" is none); ErrInvalid.
func ParseDeliveryStatus(s string) (DeliveryStatus, error) {
	if s == "" {
		return "", nil
	}
	for _, st := range DeliveryStatuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", invalid("unknown delivery status %q (known: PENDING, RETRY, DELIVERED, FAILED)", s)
}

// WebhookDelivery is one event to send to one subscription.
type WebhookDelivery struct {
	ID             int64          `json:"id"`
	SubscriptionID int64          `json:"subscription_id"`
	EventID        int64          `json:"event_id"`
	EventType      EventType      `json:"event_type"`
	OrderNo        string         `json:"order_no,omitempty"`
	Status         DeliveryStatus `json:"status"`
	Tries          int            `json:"tries"`
	NextAt         time.Time      `json:"next_at"`
	LeaseOwner     string         `json:"lease_owner,omitempty"`
	LeaseToken     string         `json:"-"`
	LeaseUntil     *time.Time     `json:"lease_until,omitempty"`
	// LastStatus is the last answer's HTTP status (0: none came),
	// LastError what went wrong, LastAnswer the answer's first bytes.
	LastStatus  int        `json:"last_status,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	LastAnswer  string     `json:"last_answer,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	DeliveredAt *time.Time `json:"delivered_at,omitempty"`
}

// TableName is the deliveries table.
func (WebhookDelivery) TableName() string { return "webhook_deliveries" }

func (d *WebhookDelivery) utc() {
	d.NextAt, d.CreatedAt, d.UpdatedAt = d.NextAt.UTC(), d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	d.LeaseUntil, d.DeliveredAt = utcPtr(d.LeaseUntil), utcPtr(d.DeliveredAt)
}

// DeliveryFilter picks a page of one subscription's deliveries, newest
// first: of one status (none: all), with ids below Before (0: from the
// newest), Limit of them (1 to 500; 0 is 50).
type DeliveryFilter struct {
	Status DeliveryStatus
	Before int64
	Limit  int
}

// DeliveryPage is a page of deliveries; Next is the Before of the next
// page, 0 when this is the last.
type DeliveryPage struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
	Next       int64             `json:"next,omitempty"`
}

// WebhookDeliveries is a page of one subscription's deliveries;
// ErrNotFound when there is no such subscription.
func (s *Store) WebhookDeliveries(ctx context.Context, subID int64, f DeliveryFilter) (DeliveryPage, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 1 || f.Limit > 500 {
		return DeliveryPage{}, invalid("limit must be from 1 to 500")
	}
	if f.Before < 0 {
		return DeliveryPage{}, invalid("before must not be negative")
	}
	if err := webhookExists(s.R.WithContext(ctx), subID); err != nil {
		return DeliveryPage{}, fmt.Errorf("deliveries of webhook %d: %w", subID, err)
	}
	q := s.R.WithContext(ctx).Where("subscription_id = ?", subID)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Before > 0 {
		q = q.Where("id < ?", f.Before)
	}
	var ds []WebhookDelivery
	if err := q.Order("id DESC").Limit(f.Limit + 1).Find(&ds).Error; err != nil {
		return DeliveryPage{}, fmt.Errorf("deliveries of webhook %d: %w", subID, err)
	}
	page := DeliveryPage{Deliveries: ds}
	if len(ds) > f.Limit {
		page.Deliveries = ds[:f.Limit]
		page.Next = ds[f.Limit-1].ID
	}
	for i := range page.Deliveries {
		page.Deliveries[i].utc()
	}
	return page, nil
}

// RedeliverWebhook makes one FAILED, DELIVERED or RETRY delivery of a
// subscription due now, a compare-and-set on its status; its later events
// of the same order wait for it again. ErrNothingToRedeliver when it is
// PENDING or being sent; ErrNotFound when the subscription has no such
// delivery.
func (s *Store) RedeliverWebhook(ctx context.Context, subID, deliveryID int64, actor string) (WebhookDelivery, error) {
	var out WebhookDelivery
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		res := tx.Raw(`UPDATE webhook_deliveries SET status = 'PENDING', next_at = ?, updated_at = ?, lease_owner = '', lease_token = '', lease_until = NULL
			WHERE id = ? AND subscription_id = ? AND (status IN ('FAILED','DELIVERED') OR (status = 'RETRY' AND (lease_until IS NULL OR lease_until <= ?)))
			RETURNING *`, now, now, deliveryID, subID, now).Scan(&out)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			var n int64
			if err := tx.Raw("SELECT COUNT(*) FROM webhook_deliveries WHERE id = ? AND subscription_id = ?", deliveryID, subID).Scan(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return ErrNotFound
			}
			return ErrNothingToRedeliver
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "webhook_redeliver", Target: WebhookTarget(subID), Outcome: "ok",
			Detail: fmt.Sprintf("delivery %d, event %d", deliveryID, out.EventID)}, now)
	})
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("redeliver %d of webhook %d: %w", deliveryID, subID, err)
	}
	out.utc()
	return out, nil
}

// errWebhookRaced: another worker moved the subscription's cursor first.
var errWebhookRaced = errors.New("cursor moved by another worker")

// fanEvent is what a fan-out reads of an event.
type fanEvent struct {
	ID      int64
	Type    EventType
	OrderNo string
}

// maxFanOut bounds the events one subscription's fan-out reads per call.
const maxFanOut = 500

// FanOutWebhooks turns the events after each subscription's cursor that
// it asked for into its deliveries, up to maxFanOut events a subscription,
// the cursor moved in the same transaction, and returns how many
// deliveries it made. Two workers at once make each delivery once: the
// (subscription, event) key and a conditional move of the cursor (the
// loser's transaction is rolled back).
func (s *Store) FanOutWebhooks(ctx context.Context) (int, error) {
	if _, err := s.SequenceEvents(ctx); err != nil {
		return 0, err
	}
	var subs []struct {
		ID          int64
		Types       string
		EventCursor int64
	}
	if err := s.R.WithContext(ctx).Raw("SELECT id, types, event_cursor FROM webhook_subscriptions ORDER BY id").Scan(&subs).Error; err != nil {
		return 0, fmt.Errorf("fan out webhooks: %w", err)
	}
	made := 0
	pos := s.eventPos()
	for _, sub := range subs {
		var evs []fanEvent
		err := s.R.WithContext(ctx).Raw("SELECT "+pos+" AS id, type, order_no FROM events WHERE "+pos+" > ? ORDER BY "+pos+" LIMIT ?",
			sub.EventCursor, maxFanOut).Scan(&evs).Error
		if err != nil {
			return made, fmt.Errorf("fan out webhook %d: %w", sub.ID, err)
		}
		if len(evs) == 0 {
			continue
		}
		types, err := ParseEventTypes(sub.Types)
		if err != nil {
			return made, fmt.Errorf("fan out webhook %d: %w", sub.ID, err)
		}
		n := 0
		err = s.write(ctx, func(tx *gorm.DB) error {
			now := s.Now()
			var q strings.Builder
			var args []any
			n = 0
			for _, e := range evs {
				if len(types) > 0 && !slices.Contains(types, e.Type) {
					continue
				}
				if n > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?, ?, 'PENDING', ?, ?, ?)")
				args = append(args, sub.ID, e.ID, e.Type, e.OrderNo, now, now, now)
				n++
				if n == maxEventRows {
					if err := insertDeliveries(tx, q.String(), args); err != nil {
						return err
					}
					q.Reset()
					args, n = nil, 0
				}
			}
			if n > 0 {
				if err := insertDeliveries(tx, q.String(), args); err != nil {
					return err
				}
			}
			res := tx.Exec("UPDATE webhook_subscriptions SET event_cursor = ? WHERE id = ? AND event_cursor = ?",
				evs[len(evs)-1].ID, sub.ID, sub.EventCursor)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected == 0 {
				return errWebhookRaced
			}
			return nil
		})
		if errors.Is(err, errWebhookRaced) {
			continue
		}
		if err != nil {
			return made, fmt.Errorf("fan out webhook %d: %w", sub.ID, err)
		}
		made += countMatching(evs, types)
	}
	return made, nil
}

func countMatching(evs []fanEvent, types []EventType) int {
	n := 0
	for _, e := range evs {
		if len(types) == 0 || slices.Contains(types, e.Type) {
			n++
		}
	}
	return n
}

func insertDeliveries(tx *gorm.DB, values string, args []any) error {
	return tx.Exec(`INSERT INTO webhook_deliveries (subscription_id, event_id, event_type, order_no, status, next_at, created_at, updated_at)
		VALUES `+values+` ON CONFLICT (subscription_id, event_id) DO NOTHING`, args...).Error
}

// WebhookSend is a claimed delivery with what sending it takes.
type WebhookSend struct {
	Delivery WebhookDelivery
	URL      string
	Secret   string
	// Event is the event as the polling API shows it; its ID is 0 when
	// the event is no longer stored.
	Event Event
}

// ClaimDeliveries leases up to n deliveries due now to owner until now +
// lease, skipping those of the subscriptions in skip (the sender's busy
// ones) and of paused ones. A delivery with an order number is claimable
// only while no earlier delivery of the same subscription and order waits
// (PENDING or RETRY, leased or not): an order's events go out one at a
// time, in order. A FAILED one does not hold the later ones back. A lease
// that ran out without an outcome (its worker died) is claimed again; the
// new token fences the old worker's late outcome out.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, n int, lease time.Duration, skip []int64) ([]WebhookSend, error) {
	token := newToken()
	var ds []WebhookDelivery
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		skipSQL := ""
		args := []any{owner, token, now.Add(lease), now, now, now}
		if len(skip) > 0 {
			skipSQL = " AND d.subscription_id NOT IN ?"
			args = append(args, skip)
		}
		args = append(args, n)
		lock := ""
		if s.Dialect == Postgres {
			lock = " FOR UPDATE OF d SKIP LOCKED"
		}
		return tx.Raw(`UPDATE webhook_deliveries
			SET lease_owner = ?, lease_token = ?, lease_until = ?, tries = tries + 1, updated_at = ?
			WHERE id IN (SELECT d.id FROM webhook_deliveries d JOIN webhook_subscriptions w ON w.id = d.subscription_id
				WHERE d.status IN ('PENDING','RETRY') AND d.next_at <= ? AND (d.lease_until IS NULL OR d.lease_until <= ?)
				AND w.paused_at IS NULL`+skipSQL+`
				AND (d.order_no = '' OR NOT EXISTS (SELECT 1 FROM webhook_deliveries e
					WHERE e.subscription_id = d.subscription_id AND e.order_no = d.order_no
					AND e.status IN ('PENDING','RETRY') AND e.event_id < d.event_id))
				ORDER BY d.next_at, d.id LIMIT ?`+lock+`)
			RETURNING *`, args...).Scan(&ds).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim deliveries: %w", err)
	}
	if len(ds) == 0 {
		return nil, nil
	}
	// RETURNING gives rows in no set order: put them back in claim order.
	slices.SortFunc(ds, func(a, b WebhookDelivery) int {
		if c := a.NextAt.Compare(b.NextAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return s.deliverySends(ctx, ds)
}

// deliverySends adds to claimed deliveries their subscription's URL and
// secret and their event.
func (s *Store) deliverySends(ctx context.Context, ds []WebhookDelivery) ([]WebhookSend, error) {
	subIDs, evIDs := make([]int64, 0, len(ds)), make([]int64, 0, len(ds))
	for _, d := range ds {
		subIDs, evIDs = append(subIDs, d.SubscriptionID), append(evIDs, d.EventID)
	}
	var subs []struct {
		ID          int64
		URL, Secret string
	}
	if err := s.R.WithContext(ctx).Raw("SELECT id, url, secret FROM webhook_subscriptions WHERE id IN ?", subIDs).Scan(&subs).Error; err != nil {
		return nil, fmt.Errorf("claimed deliveries' subscriptions: %w", err)
	}
	pos := s.eventPos()
	var evs []struct {
		ID         int64
		Type       EventType
		OrderNo    string
		OccurredAt time.Time
		Data       string
	}
	err := s.R.WithContext(ctx).Raw("SELECT "+pos+" AS id, type, order_no, occurred_at, data FROM events WHERE "+pos+" IN ?", evIDs).Scan(&evs).Error
	if err != nil {
		return nil, fmt.Errorf("claimed deliveries' events: %w", err)
	}
	out := make([]WebhookSend, len(ds))
	for i, d := range ds {
		d.utc()
		out[i].Delivery = d
		for _, sub := range subs {
			if sub.ID == d.SubscriptionID {
				out[i].URL, out[i].Secret = sub.URL, sub.Secret
			}
		}
		for _, e := range evs {
			if e.ID == d.EventID {
				out[i].Event = Event{ID: e.ID, Type: e.Type, OccurredAt: e.OccurredAt.UTC(), OrderNo: e.OrderNo, Data: []byte(e.Data)}
			}
		}
	}
	return out, nil
}

// ReturnDeliveries hands claimed deliveries back untried (the sender had
// no room for them): the lease and the try are undone, while the token is
// still theirs.
func (s *Store) ReturnDeliveries(ctx context.Context, sends []WebhookSend) error {
	if len(sends) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *gorm.DB) error {
		for _, w := range sends {
			err := tx.Exec(`UPDATE webhook_deliveries SET lease_owner = '', lease_token = '', lease_until = NULL, tries = tries - 1
				WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`, w.Delivery.ID, w.Delivery.LeaseToken).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("return deliveries: %w", err)
	}
	return nil
}

// DeliveryResult is what one send came to: the answer's HTTP status (0:
// none came) and first bytes, or the error that stopped it, and a 429's or
// 503's Retry-After.
type DeliveryResult struct {
	Status     int
	Answer     string
	Err        string
	RetryAfter time.Duration
}

// Delivery outcomes.
const (
	DeliveryOutcomeDelivered = "delivered"
	DeliveryOutcomeRetry     = "retry"
	DeliveryOutcomeFailed    = "failed"
	// DeliveryOutcomeLost: the lease was no longer the sender's (it ran
	// out and another worker claimed the delivery, or the delivery was
	// redelivered or deleted): nothing was written.
	DeliveryOutcomeLost = "lost"
)

// outcome classifies a result: 2xx delivered; no answer (a timeout, a
// refused connection), 408, 429 and 5xx retried; any other status failed.
func (r DeliveryResult) outcome() string {
	switch {
	case r.Status >= 200 && r.Status < 300:
		return DeliveryOutcomeDelivered
	case r.Status == 0, r.Status == 408, r.Status == 429, r.Status >= 500:
		return DeliveryOutcomeRetry
	default:
		return DeliveryOutcomeFailed
	}
}

// Retry schedule of a delivery: WebhookRetryBase doubled each try, at
// most WebhookRetryMax, the wait drawn between half of it and all of it
// (jitter, so that a subscriber back up is not hit by every retry at
// once). A Retry-After is honoured up to WebhookRetryMax.
const (
	WebhookRetryBase = 5 * time.Second
	WebhookRetryMax  = time.Hour
)

// webhookBackoff is the longest wait after try n (1: the first).
func webhookBackoff(n int) time.Duration {
	d := WebhookRetryBase
	for i := 1; i < n && d < WebhookRetryMax; i++ {
		d *= 2
	}
	return min(d, WebhookRetryMax)
}

// retryWait is the wait after try n with result r; jitter in [0, 1).
func retryWait(n int, r DeliveryResult, jitter float64) time.Duration {
	if r.RetryAfter > 0 {
		return min(r.RetryAfter, WebhookRetryMax)
	}
	d := webhookBackoff(n)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// maxAnswer bounds the stored excerpt of an answer and an error, bytes.
const maxAnswer = 512

// RecordDelivery writes a send's outcome, only while the lease token is
// still the delivery's (DeliveryOutcomeLost otherwise, nothing written).
// A delivered one clears its subscription's failing_since; a failed or
// retried one sets it if unset, and pauses the subscription when it is
// WebhookPauseAfter old. jitter in [0, 1) places the retry in its window.
func (s *Store) RecordDelivery(ctx context.Context, w WebhookSend, r DeliveryResult, jitter float64) (string, error) {
	outcome := r.outcome()
	d := w.Delivery
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		answer, errText := clip(r.Answer, maxAnswer), clip(r.Err, maxAnswer)
		var res *gorm.DB
		switch outcome {
		case DeliveryOutcomeDelivered:
			res = tx.Exec(`UPDATE webhook_deliveries SET status = 'DELIVERED', delivered_at = ?, updated_at = ?,
				lease_owner = '', lease_token = '', lease_until = NULL, last_status = ?, last_error = '', last_answer = ?
				WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`, now, now, r.Status, answer, d.ID, d.LeaseToken)
		case DeliveryOutcomeRetry:
			res = tx.Exec(`UPDATE webhook_deliveries SET status = 'RETRY', next_at = ?, updated_at = ?,
				lease_owner = '', lease_token = '', lease_until = NULL, last_status = ?, last_error = ?, last_answer = ?
				WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`,
				now.Add(retryWait(d.Tries, r, jitter)), now, r.Status, errText, answer, d.ID, d.LeaseToken)
		default:
			res = tx.Exec(`UPDATE webhook_deliveries SET status = 'FAILED', updated_at = ?,
				lease_owner = '', lease_token = '', lease_until = NULL, last_status = ?, last_error = ?, last_answer = ?
				WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`, now, r.Status, errText, answer, d.ID, d.LeaseToken)
		}
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			outcome = DeliveryOutcomeLost
			return nil
		}
		if outcome == DeliveryOutcomeDelivered {
			return tx.Exec("UPDATE webhook_subscriptions SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL", d.SubscriptionID).Error
		}
		if err := tx.Exec("UPDATE webhook_subscriptions SET failing_since = ? WHERE id = ? AND failing_since IS NULL", now, d.SubscriptionID).Error; err != nil {
			return err
		}
		reason := fmt.Sprintf("paused by the worker: deliveries failed for %s without one getting through (last: %s)",
			WebhookPauseAfter, lastProblem(r))
		res = tx.Exec("UPDATE webhook_subscriptions SET paused_at = ?, paused_reason = ? WHERE id = ? AND paused_at IS NULL AND failing_since <= ?",
			now, clip(reason, maxAnswer), d.SubscriptionID, now.Add(-WebhookPauseAfter))
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return auditIn(tx, &AuditEntry{Actor: "worker:" + d.LeaseOwner, Action: "webhook_pause", Target: WebhookTarget(d.SubscriptionID),
			Outcome: "ok", Reason: clip(reason, maxAnswer)}, now)
	})
	if err != nil {
		return "", fmt.Errorf("record delivery %d: %w", d.ID, err)
	}
	return outcome, nil
}

func lastProblem(r DeliveryResult) string {
	if r.Status != 0 {
		return "HTTP " + strconv.Itoa(r.Status)
	}
	return r.Err
}

// WebhookDeliveredKeep is how long a delivered row is kept.
const WebhookDeliveredKeep = 7 * 24 * time.Hour

// DeleteOldDeliveries deletes up to limit deliveries delivered before
// before and returns how many it deleted; the cleanup job passes now −
// WebhookDeliveredKeep. FAILED and waiting ones are kept: they are
// someone's to look at, and go with their subscription.
func (s *Store) DeleteOldDeliveries(ctx context.Context, before time.Time, limit int) (int64, error) {
	res := s.W.WithContext(ctx).Exec(`DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries
		WHERE status = 'DELIVERED' AND delivered_at < ? ORDER BY delivered_at LIMIT ?)`, before, limit)
	if res.Error != nil {
		return 0, fmt.Errorf("delete old deliveries: %w", res.Error)
	}
	return res.RowsAffected, nil
}
