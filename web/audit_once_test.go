package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// Every privileged action, from a page or the API, writes exactly one
// audit row, in the name and role of who did it, with the request's id and
// address; order traffic (place, pay, close) writes none: its record is the
// order's events and the ledgers, which name the token that sent it.
func TestEveryPrivilegedActionAuditsOnce(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		manualTask(t, b)
		reconPlant(t, b)
		_, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		try(t, "reconcile", err)
		diffs, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Statuses: []string{models.DiffOpen}, Limit: 10})
		try(t, "diffs", err)
		if len(diffs) < 2 {
			t.Fatalf("want two open tickets to work, have %d", len(diffs))
		}
		d1, d2 := strconv.FormatInt(diffs[0].ID, 10), strconv.FormatInt(diffs[1].ID, 10)
		ops, err := b.signIn("ops-wang", auth.RoleOperator)
		try(t, "operator", err)
		op := b.as(ops)
		form := func(path string, v url.Values) func() int {
			return func() int { return postForm(op, path, v, false).Code }
		}
		api := func(method, path, body string) func() int {
			return func() int { return op.call(method, path, body).Code }
		}
		for _, c := range []struct {
			action string
			do     func() int
			status int
			n      int64
		}{
			{"rerun", form("/orders/m-1/resources/inventory/rerun", url.Values{"reason": {"counted"}}), http.StatusSeeOther, 1},
			// Nothing ticked: the form is sent back with a word, and no
			// action was taken, so nothing is audited.
			{"bulk_rerun", form("/tasks/rerun", url.Values{"type": {"inventory"}, "status": {"RETRY"}, "reason": {"all of them"}}), http.StatusSeeOther, 0},
			{"diff_ack", form("/recon/diffs/"+d1+"/ack", url.Values{"note": {"looking"}}), http.StatusSeeOther, 1},
			{"diff_resolve", form("/recon/diffs/"+d2+"/resolve", url.Values{"note": {"fixed by hand"}}), http.StatusSeeOther, 1},
			{"set_stock", api("PUT", "/api/v1/skus/sku-9", `{"available":5}`), http.StatusOK, 1},
			{"coupon_create", api("POST", "/api/v1/coupons", `{"user_id":"u9","owner":"PLATFORM","expire_at":"2099-01-01T00:00:00Z"}`), http.StatusCreated, 1},
			{"credit", api("POST", "/api/v1/accounts/u9/credit", `{"asset":"BALANCE","amount":10}`), http.StatusOK, 1},
			{"activity_set", api("PUT", "/api/v1/activities/act-9", `{"total":3}`), http.StatusOK, 1},
			{"slot_put", api("PUT", "/api/v1/slots/seat-9", ""), http.StatusCreated, 1},
			{"rerun", api("POST", "/api/v1/orders/m-1/resources/inventory/rerun", `{"reason":"again"}`), http.StatusConflict, 1},
			{"recon_run_now", api("POST", "/api/v1/reconcile", ""), http.StatusOK, 1},
			{"", api("POST", "/api/v1/orders", `{"order_no":"o-9","user_id":"u9","items":[{"sku_id":"sku-9","qty":1}]}`), http.StatusCreated, 0},
			{"", api("POST", "/api/v1/orders/o-9/close", `{"reason":"USER_CANCEL"}`), http.StatusOK, 0},
		} {
			var before, after int64
			try(t, "count", b.s.R.Model(&models.AuditEntry{}).Count(&before).Error)
			status := c.do()
			try(t, "count", b.s.R.Model(&models.AuditEntry{}).Count(&after).Error)
			if status != c.status {
				t.Fatalf("%s: status %d, want %d", c.action, status, c.status)
			}
			if after-before != c.n {
				t.Fatalf("%s wrote %d audit rows, want %d", c.action, after-before, c.n)
			}
			if c.n == 0 {
				continue
			}
			var e models.AuditEntry
			try(t, "last", b.s.R.Order("id DESC").Take(&e).Error)
			if e.Action != c.action {
				t.Fatalf("last audit row is %q, want %q", e.Action, c.action)
			}
			if e.RequestID == "" || e.IP != "192.0.2.1" || e.Role != "operator" {
				t.Errorf("%s: audit row lacks the request: %+v", c.action, e)
			}
			if e.Actor != "ops-wang" && e.Actor != "token:ops-wang" {
				t.Errorf("%s: actor %q, want ops-wang", c.action, e.Actor)
			}
		}
	})
}
