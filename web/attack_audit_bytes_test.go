package web_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/web"
)

// Attack (fails on main 84f401e): a signed-in viewer's refused POST puts
// its Origin or Sec-Fetch-Site header, whatever its length, into the audit
// row's detail ("the request comes from another origin (…)"), so each
// refusal stores the 512-byte target, a 256-byte User-Agent and 4 KB of
// detail the viewer chose. The detail of a refusal must quote a header
// briefly, as the Host refusal does. The figure logged is what one viewer
// makes us write per second on this machine.
func TestAttackViewerAuditBytes(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		viewer := b.as(b.mustSignIn("vic", auth.RoleViewer))
		long := strings.Repeat("é", 6000)
		const n = 40
		start := time.Now()
		for i := range n {
			req := httptest.NewRequest(http.MethodPost, "/admin/users/"+strings.Repeat("x", 7000), strings.NewReader(""))
			req.Header.Set("User-Agent", long)
			if i%2 == 0 {
				req.Header.Set("Origin", "https://"+long)
			} else {
				req.Header.Set("Sec-Fetch-Site", long)
			}
			if rec := viewer.serve(req); rec.Code != http.StatusForbidden {
				t.Fatalf("refused POST = %d %s", rec.Code, rec.Body)
			}
		}
		took := time.Since(start)
		var rows []models.AuditEntry
		try(t, "audit", b.s.R.Where("actor = ?", "vic").Find(&rows).Error)
		// One minute's refusals past the first few are counted, not
		// written (TestRefusalFloodSummed).
		if len(rows) != web.RefusalsAudited {
			t.Fatalf("%d audit rows for %d refusals, want %d", len(rows), n, web.RefusalsAudited)
		}
		total, over, written := 0, 0, len(rows)
		for _, e := range rows {
			size := len(e.Actor) + len(e.Action) + len(e.Target) + len(e.Reason) + len(e.Outcome) + len(e.Detail) +
				len(e.Role) + len(e.RequestID) + len(e.IP) + len(e.UserAgent)
			total += size
			if len(e.Detail) > 300 {
				over++
			}
		}
		if over > 0 {
			t.Errorf("%d of %d refusals hold over 300 bytes of detail, like %.80s…", over, written, rows[0].Detail)
		}
		t.Logf("%d refusals, %d rows: %d bytes of text, %d a row; %.0f rows/s, %.0f KB/s of text (plus the target index)",
			n, written, total, total/written, float64(written)/took.Seconds(), float64(total)/took.Seconds()/1024)
	})
}
