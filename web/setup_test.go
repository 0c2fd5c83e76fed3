package web_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// bundle is what a handler test works with: the router, the store and the
// accounts behind it, the store's clock, how often Wake was called and what
// was logged, and who its requests are sent as.
type bundle struct {
	e     *echo.Echo
	s     *models.Store
	a     *auth.Store
	clock *modelstest.Clock
	wakes *atomic.Int64
	logs  *modelstest.LogBuffer
	ctx   context.Context
	who   *identity // nil sends requests exactly as they are
}

// identity is a signed-in dashboard user with an API token of the same role.
type identity struct {
	name    string
	role    auth.Role
	session string // the session cookie's value
	token   string // the API token
}

// testCSRF is a signed-out visitor's pre-session id (the _csrf cookie) for
// requests that send one; csrfFor makes the token that goes with it.
const testCSRF = "test-csrf-token-0123456789abcdefghijklmnopq"

// testCSRFSecret is the bundle database's csrf site secret (base64url).
const testCSRFSecret = "dGVzdC1jc3JmLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGU"

// testHost is the Host httptest gives every request, the one host the
// bundle's server answers to (Deps.Hosts).
const testHost = "example.com"

// csrfFor is the CSRF token a page's form carries for a session (its
// cookie's token) or, with visitor true, for a signed-out visitor's
// pre-session id: the HMAC under the database's csrf secret.
func (b bundle) csrfFor(t testing.TB, id string, visitor bool) string {
	t.Helper()
	// A plain read when the secret is there (newBundle seeds it): a test
	// holding SQLite's write lock must still be able to make a token.
	var stored []string
	if err := b.s.R.Raw(`SELECT value FROM site_secrets WHERE name = 'csrf'`).Scan(&stored).Error; err != nil {
		t.Fatalf("csrf secret: %v", err)
	}
	var key []byte
	var err error
	if len(stored) == 1 {
		key, err = base64.RawURLEncoding.DecodeString(stored[0])
	} else {
		key, err = b.a.SiteSecret(b.ctx, "csrf")
	}
	if err != nil {
		t.Fatalf("csrf secret: %v", err)
	}
	bound := "session:" + id
	if visitor {
		bound = "visitor:" + id
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(bound))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// testSessions is the bundle's session policy: long enough that tests which
// move the clock by days stay signed in. Session tests use their own.
var testSessions = auth.SessionPolicy{Idle: 24 * 365 * time.Hour, Absolute: 24 * 365 * time.Hour}

// eachEngine runs fn as a parallel subtest on SQLite and on PostgreSQL.
func eachEngine(t *testing.T, fn func(t *testing.T, b bundle)) {
	t.Helper()
	eachEngineWith(t, setup, fn)
}

// eachEngineWith is eachEngine with the bundle that open makes.
func eachEngineWith(t *testing.T, open func(*testing.T, models.Dialect) bundle, fn func(t *testing.T, b bundle)) {
	t.Helper()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, open(t, d))
		})
	}
}

func setup(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	return newBundle(s, clock)
}

func newBundle(s *models.Store, clock *modelstest.Clock) bundle {
	return newBundleWith(s, clock, auth.Options{})
}

// newBundleWith is newBundle whose accounts take opt.
func newBundleWith(s *models.Store, clock *modelstest.Clock, opt auth.Options) bundle {
	return newBundleDeps(s, clock, opt, nil)
}

// newBundleDeps is newBundleWith whose server's Deps more changes last.
func newBundleDeps(s *models.Store, clock *modelstest.Clock, opt auth.Options, more func(*web.Deps)) bundle {
	b := anonBundleDeps(s, clock, opt, more)
	// A fixed CSRF secret, and fixed session tokens (signIn), make the
	// tokens in pages the same on every run, as golden files need.
	if err := s.W.Exec(`INSERT INTO site_secrets (name, value) VALUES ('csrf', ?)`, testCSRFSecret).Error; err != nil {
		panic(err)
	}
	b.who = b.mustSignIn("root", auth.RoleAdmin)
	return b
}

// anonBundle is newBundleWith sending requests as they are, for a
// database that cannot hold a user yet. The accounts log where the server
// does unless opt says otherwise.
func anonBundle(s *models.Store, clock *modelstest.Clock, opt auth.Options) bundle {
	return anonBundleDeps(s, clock, opt, nil)
}

// anonBundleDeps is anonBundle whose server's Deps more changes last.
func anonBundleDeps(s *models.Store, clock *modelstest.Clock, opt auth.Options, more func(*web.Deps)) bundle {
	b := bundle{s: s, clock: clock, wakes: &atomic.Int64{}, logs: &modelstest.LogBuffer{}, ctx: context.Background()}
	log := slog.New(slog.NewTextHandler(b.logs, nil))
	if opt.Logger == nil {
		opt.Logger = log
	}
	b.a = auth.New(s, opt)
	d := web.Deps{
		Store:    s,
		Auth:     b.a,
		Log:      log,
		Wake:     func() { b.wakes.Add(1) },
		Sessions: testSessions,
		Hosts:    []string{testHost},
	}
	if more != nil {
		more(&d)
	}
	b.e = web.New(d)
	return b
}

// as is the bundle sending its requests as who (nil: as they are).
func (b bundle) as(who *identity) bundle {
	b.who = who
	return b
}

// mustSignIn is signIn that panics: it runs in set-up without a *testing.T.
func (b bundle) mustSignIn(name string, role auth.Role) *identity {
	who, err := b.signIn(name, role)
	if err != nil {
		panic(err)
	}
	return who
}

// signIn makes a user with a live session and an API token, writing the
// rows directly: an argon2id hash per test would make the suite crawl, and
// the login itself has its own tests. Each token has a creator of its own,
// so two identities' tokens are two people to an approval.
func (b bundle) signIn(name string, role auth.Role) (*identity, error) {
	now := b.clock.Now()
	u := auth.User{Name: name, Role: role, PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		PasswordChangedAt: now, CreatedAt: now, UpdatedAt: now}
	if err := b.s.W.Create(&u).Error; err != nil {
		return nil, fmt.Errorf("user %s: %w", name, err)
	}
	who := &identity{name: name, role: role, session: "session-" + sha256Hex(name)[:32], token: "uh_" + randBase64(32)}
	sess := auth.Session{TokenHash: sha256Hex(who.session), UserID: u.ID, Role: role, CreatedAt: now, LastSeenAt: now,
		ExpiresAt: now.Add(testSessions.Absolute)}
	if err := b.s.W.Create(&sess).Error; err != nil {
		return nil, fmt.Errorf("session of %s: %w", name, err)
	}
	tok := auth.APIToken{Name: name, Role: role, TokenHash: sha256Hex(who.token), Prefix: who.token[3:11], CreatedBy: "test:" + name, CreatedAt: now}
	if err := b.s.W.Create(&tok).Error; err != nil {
		return nil, fmt.Errorf("token of %s: %w", name, err)
	}
	return who, nil
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func randBase64(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// panicT is a testing.TB for set-up that has none: it panics on a failure.
type panicT struct{ testing.TB }

func (panicT) Helper() {}

func (panicT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// try fails the test on a set-up error.
func try(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// call sends one request through the router; a non-empty body goes as JSON.
func (b bundle) call(method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	}
	return b.serve(req)
}

// serve sends req through the router (for testHost when it names no host),
// signed as the bundle's identity: its
// API token for /api/, else its session cookie, plus the CSRF header a
// page's form would carry on a state-changing request (the session's
// token). What req carries already is left alone.
func (b bundle) serve(req *http.Request) *httptest.ResponseRecorder {
	if req.Host == "" {
		req.Host = testHost // as every HTTP/1.1 client sends one
	}
	if b.who != nil {
		if strings.HasPrefix(req.URL.Path, "/api/") {
			if req.Header.Get("Authorization") == "" {
				req.Header.Set("Authorization", "Bearer "+b.who.token)
			}
		} else {
			session := b.who.session
			if ck, err := req.Cookie("unhold_session"); err == nil {
				session = ck.Value
			} else {
				req.AddCookie(&http.Cookie{Name: "unhold_session", Value: session})
			}
			_, hasCSRF := req.Header["X-Csrf-Token"]
			if _, err := req.Cookie("_csrf"); err != nil && !hasCSRF && req.Method != http.MethodGet && req.Method != http.MethodHead {
				req.Header.Set("X-CSRF-Token", b.csrfFor(panicT{}, session, false))
			}
		}
	}
	rec := httptest.NewRecorder()
	b.e.ServeHTTP(rec, req)
	return rec
}

// must calls the router and fails the test unless the status is want; it
// decodes the answer into T, refusing fields T does not have.
func must[T any](t *testing.T, b bundle, want int, method, path, body string) T {
	t.Helper()
	rec := b.call(method, path, body)
	if rec.Code != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, rec.Code, rec.Body, want)
	}
	return decodeStrict[T](t, rec)
}

func decodeStrict[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	if ct := rec.Header().Get(echo.HeaderContentType); !strings.HasPrefix(ct, echo.MIMEApplicationJSON) {
		t.Fatalf("Content-Type = %q, want JSON; body %s", ct, rec.Body)
	}
	var v T
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, rec.Body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("data after the JSON value in %s", rec.Body)
	}
	return v
}

// apiError is the shape of every API error.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// wantError checks an error answer's status and code and that it says something.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) string {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d %s, want %d %s", rec.Code, rec.Body, status, code)
	}
	e := decodeStrict[apiError](t, rec)
	if e.Error.Code != code {
		t.Fatalf("code = %q (%s), want %q", e.Error.Code, e.Error.Message, code)
	}
	if strings.TrimSpace(e.Error.Message) == "" {
		t.Fatalf("error %s has no message", code)
	}
	return e.Error.Message
}

// shop is what seedShop made.
type shop struct {
	couponU1, couponU2 int64
}

// seedShop sets up, through the store, a small shop for user u1: sku-1 (10)
// and sku-2 (1), a coupon each for u1 and u2, u1 with 1000 balance and 500
// points, activity act-1 with one place, slot seat-1. Order held-1 holds one
// sku-1, act-1's only place and seat-1; order paid-1 bought one sku-1.
func seedShop(t *testing.T, b bundle) shop {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	try(t, "seed sku-1", err)
	_, err = b.s.SetStock(b.ctx, "sku-2", 1, 0, "test")
	try(t, "seed sku-2", err)
	expire := b.clock.Now().Add(48 * time.Hour)
	c1, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, expire, "test")
	try(t, "seed coupon u1", err)
	c2, err := b.s.CreateCoupon(b.ctx, "u2", models.CouponMerchant, expire, "test")
	try(t, "seed coupon u2", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "test")
	try(t, "seed balance", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetPoints, 500, "test")
	try(t, "seed points", err)
	_, err = b.s.SetActivity(b.ctx, "act-1", 1, "test")
	try(t, "seed act-1", err)
	_, _, err = b.s.PutSlot(b.ctx, "seat-1", "test")
	try(t, "seed seat-1", err)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "held-1", UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, ActivityID: "act-1", SlotID: "seat-1"})
	try(t, "seed held-1", err)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "paid-1", UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
	try(t, "seed paid-1", err)
	_, err = b.s.PayOrder(b.ctx, "paid-1", "txn-paid-1")
	try(t, "seed pay paid-1", err)
	return shop{couponU1: c1.ID, couponU2: c2.ID}
}

// Tables a refused request must leave as they were.
var (
	countedTables = []string{"orders", "order_holds", "release_tasks", "task_attempts", "inventory_flows",
		"coupon_flows", "account_flows", "quota_flows", "slot_flows", "audit_log", "approval_requests"}
	// dumpedTables are compared row by row, ordered by their key.
	dumpedTables = map[string]string{
		"inventory": "sku_id", "accounts": "uid, asset", "activity_quotas": "activity_id",
		"user_coupons": "id", "slot_holds": "slot_id", "orders": "id", "order_holds": "id", "release_tasks": "id",
	}
)

// dbSnapshot is the row count of every counted table and the full rows of
// every dumped one.
type dbSnapshot struct {
	counts map[string]int64
	rows   map[string]string
}

func snapshot(t *testing.T, b bundle) dbSnapshot {
	t.Helper()
	db := b.s.W.WithContext(b.ctx)
	snap := dbSnapshot{counts: map[string]int64{}, rows: map[string]string{}}
	for _, tb := range countedTables {
		var n int64
		if err := db.Table(tb).Count(&n).Error; err != nil {
			t.Fatalf("count %s: %v", tb, err)
		}
		snap.counts[tb] = n
	}
	for tb, key := range dumpedTables {
		var rows []map[string]any
		if err := db.Raw("SELECT * FROM " + tb + " ORDER BY " + key).Scan(&rows).Error; err != nil {
			t.Fatalf("dump %s: %v", tb, err)
		}
		var sb strings.Builder
		for _, r := range rows {
			fmt.Fprintln(&sb, r) // fmt prints map keys sorted
		}
		snap.rows[tb] = sb.String()
	}
	return snap
}

// sameExcept fails the test unless after equals before, with the given
// counted tables grown by exactly the given number of rows.
func (before dbSnapshot) sameExcept(t *testing.T, after dbSnapshot, grown map[string]int64) {
	t.Helper()
	for _, tb := range countedTables {
		if got, want := after.counts[tb], before.counts[tb]+grown[tb]; got != want {
			t.Errorf("%s has %d rows, want %d", tb, got, want)
		}
	}
	for tb := range dumpedTables {
		if after.rows[tb] != before.rows[tb] {
			t.Errorf("%s changed:\nbefore:\n%s\nafter:\n%s", tb, before.rows[tb], after.rows[tb])
		}
	}
}
