package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
)

// One person is one approver whatever they sign with: an admin who asks
// on the dashboard cannot approve through an API token they made, nor the
// other way round, nor through a second token of theirs.
func TestApprovalOwnRequestThroughOwnToken(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		boss := b.as(b.mustSignIn("boss", auth.RoleAdmin))
		_, bot1, err := b.a.CreateAPIToken(b.ctx, "boss-bot", auth.RoleOperator, "boss")
		try(t, "token", err)
		_, bot2, err := b.a.CreateAPIToken(b.ctx, "boss-bot2", auth.RoleOperator, "boss")
		try(t, "token", err)
		bearer := func(secret, path, body string) *http.Request {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
			req.Header.Set("Authorization", "Bearer "+secret)
			return req
		}

		// Asked on the dashboard, approved with the asker's token.
		id := moneyTask(t, b, "m-1", 300)
		loc, _ := followPost(t, boss, postForm(boss, fmt.Sprintf("/tasks/%d", id)+"/requests",
			url.Values{"action": {"rerun"}, "reason": {"ticket 7"}}, true), true)
		if !strings.HasPrefix(loc, "/approvals/") {
			t.Fatalf("request went to %s", loc)
		}
		before := snapshot(t, b)
		wantError(t, b.serve(bearer(bot1, "/api/v1"+loc+"/approve", `{"reason":"mine"}`)), http.StatusForbidden, "OWN_REQUEST")
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})

		// Asked with a token, approved on the dashboard or with another token.
		id2 := moneyTask(t, b, "m-2", 200)
		rec := b.serve(bearer(bot1, fmt.Sprintf("/api/v1/tasks/%d/requests", id2), `{"action":"rerun","reason":"ticket 8"}`))
		if rec.Code != http.StatusCreated {
			t.Fatalf("token request = %d %s", rec.Code, rec.Body)
		}
		r := decodeStrict[models.ApprovalRequest](t, rec)
		one := fmt.Sprintf("/approvals/%d", r.ID)
		_, body := followPost(t, boss, postForm(boss, one+"/approve", url.Values{"reason": {"mine"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "OWN_REQUEST") {
			t.Errorf("the asker's session approved their token's request: flash %q", flash)
		}
		wantError(t, b.serve(bearer(bot2, "/api/v1"+one+"/approve", `{"reason":"mine"}`)), http.StatusForbidden, "OWN_REQUEST")
		if got, err := b.s.ApprovalByID(b.ctx, r.ID); err != nil || got.Status != models.ApprovalPending {
			t.Fatalf("request after self-approvals: %+v, %v", got, err)
		}
	})
}
