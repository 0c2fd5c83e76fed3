package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/web"
)

// A flood of refused requests is bounded: of one actor's refusals in one
// minute the first few are audited one by one and the rest summed up in
// one row once the minute is over; another actor is counted apart.
func TestRefusalFloodSummed(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		vic := b.as(b.mustSignIn("vic", auth.RoleViewer))
		val := b.as(b.mustSignIn("val", auth.RoleViewer))
		const more = 3
		refuse := func(who bundle, n int) {
			for range n {
				if rec := who.serve(httptest.NewRequest(http.MethodGet, "/admin/users", nil)); rec.Code != http.StatusForbidden {
					t.Fatalf("GET /admin/users as a viewer = %d", rec.Code)
				}
			}
		}
		refuse(vic, web.RefusalsAudited+more)
		refuse(val, 2)
		// An admin's refused actions are bounded the same way.
		for range web.RefusalsAudited + 1 {
			req := httptest.NewRequest(http.MethodPost, "/admin/users", strings.NewReader("name=zed&role=boss"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if rec := b.serve(req); rec.Code != http.StatusSeeOther {
				t.Fatalf("a refused user_create = %d", rec.Code)
			}
		}
		rows := func(actor, action string) []models.AuditEntry {
			var out []models.AuditEntry
			try(t, "audit", b.s.R.Where("actor = ? AND action = ?", actor, action).Order("id").Find(&out).Error)
			return out
		}
		if n := len(rows("root", "user_create")); n != web.RefusalsAudited {
			t.Fatalf("root's refused actions wrote %d rows, want %d", n, web.RefusalsAudited)
		}
		if n := len(rows("vic", "denied")); n != web.RefusalsAudited {
			t.Fatalf("vic's refusals wrote %d rows, want %d", n, web.RefusalsAudited)
		}
		if n := len(rows("val", "denied")); n != 2 {
			t.Fatalf("val's refusals wrote %d rows, want 2", n)
		}
		if n := len(rows("vic", models.RefusedSummaryAction)); n != 0 {
			t.Fatalf("a summary before the minute is over: %d", n)
		}
		minute := b.clock.Now().UTC().Format("15:04")
		// The next request of a later minute, any request, writes it.
		b.clock.Advance(time.Minute)
		if rec := b.serve(httptest.NewRequest(http.MethodGet, "/healthz", nil)); rec.Code != http.StatusOK {
			t.Fatalf("healthz = %d", rec.Code)
		}
		sum := rows("vic", models.RefusedSummaryAction)
		want := fmt.Sprintf("%d more refused in this minute (%s UTC)", more, minute)
		if len(sum) != 1 || sum[0].Detail != want || sum[0].Outcome != "refused" || sum[0].Target != "refusals:vic" {
			t.Fatalf("vic's summary = %+v, want one saying %q", sum, want)
		}
		if sum := rows("root", models.RefusedSummaryAction); len(sum) != 1 || !strings.HasPrefix(sum[0].Detail, "1 more refused") {
			t.Errorf("root's summary = %+v", sum)
		}
		if n := len(rows("val", models.RefusedSummaryAction)); n != 0 {
			t.Errorf("val, within the limit, has %d summaries", n)
		}
		// A new minute audits vic's refusals one by one again.
		refuse(vic, 1)
		if n := len(rows("vic", "denied")); n != web.RefusalsAudited+1 {
			t.Errorf("vic's refusal in the next minute: %d rows, want %d", n, web.RefusalsAudited+1)
		}
	})
}
