package web_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the raw "sqlite" driver, for a second connection

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// cutMark is how a clipped audit text ends (models.clip).
const cutMark = "…[cut]"

// lastAudit is the newest audit row.
func lastAudit(t *testing.T, b bundle) models.AuditEntry {
	t.Helper()
	var e models.AuditEntry
	try(t, "read audit", b.s.W.Order("id DESC").Take(&e).Error)
	return e
}

// A 60 KB path is answered 414 URI_TOO_LONG, in the API's JSON and on a
// page, before the session is read: a signed-in viewer's request writes no
// audit row, and an anonymous one is not sent to the login form.
func TestLongURIRefusedBeforeAuthentication(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		viewer := b.as(b.mustSignIn("vera", auth.RoleViewer))
		long := strings.Repeat("a", 60<<10)
		before := snapshot(t, b)

		// The viewer may not close orders: without the bound, this is a
		// denial audited with the whole path.
		wantError(t, viewer.call(http.MethodPost, "/api/v1/orders/"+long+"/close", `{"reason":"USER_CANCEL"}`),
			http.StatusRequestURITooLong, "URI_TOO_LONG")
		wantError(t, viewer.call(http.MethodGet, "/api/v1/skus/sku?q="+long, ""), http.StatusRequestURITooLong, "URI_TOO_LONG")
		rec := viewer.call(http.MethodPost, "/admin/users/"+long+"/disable", "")
		if rec.Code != http.StatusRequestURITooLong || !strings.Contains(rec.Body.String(), "URI_TOO_LONG") {
			t.Fatalf("page POST = %d %.200s, want 414 URI_TOO_LONG", rec.Code, rec.Body)
		}
		rec = b.as(nil).call(http.MethodGet, "/orders/"+long, "")
		if rec.Code != http.StatusRequestURITooLong {
			t.Fatalf("anonymous GET = %d (Location %q), want 414", rec.Code, rec.Header().Get("Location"))
		}
		before.sameExcept(t, snapshot(t, b), nil)
	})
}

// A path of 8,000 bytes, under the 414 bound, is still refused and audited
// when the role is too low: with its target clipped and marked, not a 500
// from PostgreSQL's index on audit_log.target (which takes about 2,700
// bytes after compression, so the path is random). The audit row's
// User-Agent is clipped the same way.
func TestLongPathUnderBoundIsAuditedClipped(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		viewer := b.as(b.mustSignIn("vera", auth.RoleViewer))
		long := "b" + randHex(3999)
		before := snapshot(t, b)
		req := httptest.NewRequest(http.MethodPost, "/api/v1/orders/"+long+"/close", strings.NewReader(`{"reason":"USER_CANCEL"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", strings.Repeat("u", 10<<10))
		wantError(t, viewer.serve(req), http.StatusForbidden, "FORBIDDEN")
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})

		e := lastAudit(t, b)
		if e.Action != "denied" || e.Actor != "token:vera" {
			t.Fatalf("audit row = %+v, want vera's denial", e)
		}
		if len(e.Target) > 512 || !strings.HasPrefix(e.Target, "route:POST /api/v1/orders/"+long[:20]) || !strings.HasSuffix(e.Target, cutMark) {
			t.Errorf("target is %d bytes, %.40q…%q; want at most 512 ending in %q", len(e.Target), e.Target, e.Target[max(0, len(e.Target)-12):], cutMark)
		}
		if len(e.UserAgent) > 256 || !strings.HasSuffix(e.UserAgent, cutMark) {
			t.Errorf("user agent is %d bytes, want at most 256 ending in %q", len(e.UserAgent), cutMark)
		}
	})
}

// When another connection holds SQLite's write lock past the busy timeout,
// a write is answered 503 BUSY with Retry-After, in the API's JSON and on a
// page, and changes nothing; once the lock is let go the same request
// passes.
func TestSQLiteBusyIs503(t *testing.T) {
	t.Parallel()
	clock := modelstest.NewClock()
	path := modelstest.MigratedDSN(t, models.SQLite)
	s, err := models.Open(context.Background(), path, models.Options{Now: clock.Now, BusyTimeout: 50 * time.Millisecond})
	try(t, "open", err)
	t.Cleanup(func() { _ = s.Close() })
	b := newBundle(s, clock)
	seedShop(t, b)

	other, err := sql.Open("sqlite", "file:"+path)
	try(t, "open a second connection", err)
	t.Cleanup(func() { _ = other.Close() })
	conn, err := other.Conn(b.ctx)
	try(t, "connection", err)
	defer conn.Close()
	_, err = conn.ExecContext(b.ctx, "BEGIN IMMEDIATE")
	try(t, "take the write lock", err)

	before := snapshot(t, b)
	const credit = "/api/v1/accounts/u1/credit"
	rec := b.call(http.MethodPost, credit, `{"asset":"BALANCE","amount":5}`)
	wantError(t, rec, http.StatusServiceUnavailable, "BUSY")
	if ra := rec.Header().Get("Retry-After"); ra == "" {
		t.Error("the API's 503 has no Retry-After")
	}
	req := httptest.NewRequest(http.MethodPost, "/admin/tokens", strings.NewReader(url.Values{"name": {"ci"}, "role": {"viewer"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = b.serve(req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `data-testid="error-busy"`) ||
		!strings.Contains(rec.Body.String(), "BUSY") || rec.Header().Get("Retry-After") == "" {
		t.Errorf("page POST = %d, Retry-After %q, body %.300s; want the 503 BUSY page", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}

	_, err = conn.ExecContext(b.ctx, "ROLLBACK")
	try(t, "let go of the write lock", err)
	before.sameExcept(t, snapshot(t, b), nil)
	got := must[accountBody](t, b, http.StatusOK, http.MethodPost, credit, `{"asset":"BALANCE","amount":5}`)
	if got.Assets["BALANCE"].Available != 1005 {
		t.Fatalf("balance after the lock = %+v, want 1005 available", got.Assets["BALANCE"])
	}
}

// accountBody is the API's account answer.
type accountBody struct {
	UID    string `json:"uid"`
	Assets map[string]struct {
		Available int64 `json:"available"`
		Frozen    int64 `json:"frozen"`
		Spent     int64 `json:"spent"`
	} `json:"assets"`
}

// A credit that would take a balance past models.MaxBalance is refused
// with 409 BALANCE_OVERFLOW and changes nothing; the CHECK on accounts
// holds the bound against a hand edit on both engines.
func TestCreditOverflowRefused(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		// u1 has 1000 available: 1000 short of the bound in all.
		try(t, "hand edit", b.s.W.Exec("UPDATE accounts SET spent = ? WHERE uid = 'u1' AND asset = 'BALANCE'",
			int64(models.MaxBalance)-2000).Error)
		before := snapshot(t, b)
		msg := wantError(t, b.call(http.MethodPost, "/api/v1/accounts/u1/credit", `{"asset":"BALANCE","amount":1001}`),
			http.StatusConflict, "BALANCE_OVERFLOW")
		if !strings.Contains(msg, "u1") {
			t.Errorf("message %q does not name the account", msg)
		}
		before.sameExcept(t, snapshot(t, b), nil)
		got := must[accountBody](t, b, http.StatusOK, http.MethodPost, "/api/v1/accounts/u1/credit", `{"asset":"BALANCE","amount":1000}`)
		if a := got.Assets["BALANCE"]; a.Available+a.Frozen+a.Spent != models.MaxBalance {
			t.Fatalf("balance = %+v, want MaxBalance in all", a)
		}
	})
}
