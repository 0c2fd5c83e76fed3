package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"unhold/models"
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
		viewer := b.as(b.mustSignIn("vera", models.RoleViewer))
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
// from PostgreSQL's index on audit_log.target. The audit row's User-Agent
// is clipped the same way.
func TestLongPathUnderBoundIsAuditedClipped(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		viewer := b.as(b.mustSignIn("vera", models.RoleViewer))
		long := strings.Repeat("b", 8000)
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
		if len(e.Target) > 512 || !strings.HasPrefix(e.Target, "route:POST /api/v1/orders/bbb") || !strings.HasSuffix(e.Target, cutMark) {
			t.Errorf("target is %d bytes, %.40q…%q; want at most 512 ending in %q", len(e.Target), e.Target, e.Target[max(0, len(e.Target)-12):], cutMark)
		}
		if len(e.UserAgent) > 256 || !strings.HasSuffix(e.UserAgent, cutMark) {
			t.Errorf("user agent is %d bytes, want at most 256 ending in %q", len(e.UserAgent), cutMark)
		}
	})
}
