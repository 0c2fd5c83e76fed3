package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// A request's reason and a decision's reason that are not storable text
// (NUL, bytes that are not UTF-8) are refused as bad input, 400, on both
// engines, and change nothing: never a database error.
func TestApprovalReasonNotText(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		olga := b.as(b.mustSignIn("olga", auth.RoleOperator))
		oscar := b.as(b.mustSignIn("oscar", auth.RoleOperator))
		path := fmt.Sprintf("/api/v1/tasks/%d/requests", id)
		before := snapshot(t, b)
		wantError(t, olga.call(http.MethodPost, path, `{"action":"rerun","reason":"a\u0000b"}`), http.StatusBadRequest, "INVALID_INPUT")
		rec := postForm(olga, fmt.Sprintf("/tasks/%d/requests", id), url.Values{"action": {"rerun"}, "reason": {"a\xffb"}}, true)
		if rec.Code >= 500 {
			t.Fatalf("a form request with bytes not UTF-8 = %d", rec.Code)
		}
		after := snapshot(t, b)
		before.sameExcept(t, after, map[string]int64{"audit_log": after.counts["audit_log"] - before.counts["audit_log"]})

		r := must[models.ApprovalRequest](t, olga, http.StatusCreated, http.MethodPost, path, `{"action":"rerun","reason":"ticket 7"}`)
		one := fmt.Sprintf("/api/v1/approvals/%d", r.ID)
		before = snapshot(t, b)
		wantError(t, oscar.call(http.MethodPost, one+"/approve", `{"reason":"ok\u0000"}`), http.StatusBadRequest, "INVALID_INPUT")
		wantError(t, oscar.call(http.MethodPost, one+"/reject", `{"reason":"no\u0000"}`), http.StatusBadRequest, "INVALID_INPUT")
		after = snapshot(t, b)
		before.sameExcept(t, after, map[string]int64{"audit_log": after.counts["audit_log"] - before.counts["audit_log"]})
	})
}
