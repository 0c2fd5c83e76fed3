package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// moneyTask closes order no, which froze amount of u9's balance, and puts
// its balance task MANUAL by hand, as a failed release would; the order's
// stock task is left PENDING. It returns the balance task's id.
func moneyTask(t *testing.T, b bundle, no string, amount int64) int64 {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-money", 100, 0, "test")
	try(t, "stock", err)
	_, err = b.s.Credit(b.ctx, "u9", models.AssetBalance, amount, "test")
	try(t, "credit", err)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u9", Items: []models.Item{{SkuID: "sku-money", Qty: 1}},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: amount}}})
	try(t, "place", err)
	_, err = b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system")
	try(t, "close", err)
	try(t, "manual", b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'NOT_FOUND', failures = 1,
		last_error = 'gone' WHERE order_no = ? AND resource_type = 'balance'`, no).Error)
	var id int64
	try(t, "task", b.s.R.Raw(`SELECT id FROM release_tasks WHERE order_no = ? AND resource_type = 'balance'`, no).Scan(&id).Error)
	return id
}

// The browser's path, through the pages: an operator requests a rerun of
// a MANUAL balance task on its page (the rerun form is a request form
// there, and a direct rerun is refused), cannot decide it, another
// operator approves it, and the worker releases it once.
func TestApprovalPagesRequestApproveDone(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		task := fmt.Sprintf("/tasks/%d", id)
		olga := b.as(b.mustSignIn("olga", auth.RoleOperator))
		oscar := b.as(b.mustSignIn("oscar", auth.RoleOperator))

		body := getPage(t, olga, task, true, http.StatusOK)
		requireElement(t, body, "task-needs-approval", true)
		requireElement(t, body, "task-request-rerun-form", true)
		requireElement(t, body, "task-request-abandon-form", false) // admins only
		requireElement(t, body, "task-rerun-form", false)
		requireElement(t, body, "task-rerun", false)

		before := snapshot(t, b)
		_, body = followPost(t, olga, postForm(olga, task+"/rerun", url.Values{"reason": {"x"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "NEEDS_APPROVAL") {
			t.Errorf("direct rerun: flash %q", flash)
		}
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})

		loc, body := followPost(t, olga, postForm(olga, task+"/requests", url.Values{"action": {"rerun"}, "reason": {"customer ticket 7"}}, true), true)
		if !strings.HasPrefix(loc, "/approvals/") {
			t.Fatalf("request went to %s", loc)
		}
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "awaits another person") {
			t.Errorf("request: flash %q", flash)
		}
		checkText(t, body, "approval-status", "PENDING")
		checkText(t, body, "approval-requested-by", "olga")
		requireElement(t, body, "approval-cannot", true)
		requireElement(t, body, "approval-approve-form", false)

		body = getPage(t, olga, task, true, http.StatusOK)
		requireElement(t, body, "task-awaiting-approval", true)
		if href := mustHref(t, body, "task-approval-link"); href != loc {
			t.Errorf("the task links %s, want %s", href, loc)
		}
		requireElement(t, body, "task-request-rerun-form", false)

		// Her own approval is refused and changes nothing.
		before = snapshot(t, b)
		_, body = followPost(t, olga, postForm(olga, loc+"/approve", url.Values{"reason": {"mine"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "OWN_REQUEST") {
			t.Errorf("own approval: flash %q", flash)
		}
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})

		body = getPage(t, oscar, loc, true, http.StatusOK)
		requireElement(t, body, "approval-approve-form", true)
		requireElement(t, body, "approval-reject-form", true)
		wakes := b.wakes.Load()
		_, body = followPost(t, oscar, postForm(oscar, loc+"/approve", url.Values{"reason": {"ledger checked"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "approved") {
			t.Errorf("approval: flash %q", flash)
		}
		checkText(t, body, "approval-status", "APPROVED")
		checkText(t, body, "approval-decided-by", "oscar")
		if b.wakes.Load() != wakes+1 {
			t.Error("the approval did not wake the worker")
		}
		drain(t, b)
		body = getPage(t, olga, task, true, http.StatusOK)
		checkText(t, body, "task-status", "DONE")
		requireElement(t, body, "task-awaiting-approval", false)
		var releases int64
		try(t, "flows", b.s.R.Raw(`SELECT COUNT(*) FROM account_flows WHERE order_no = 'm-1' AND type = 'RELEASE'`).Scan(&releases).Error)
		if releases != 1 {
			t.Errorf("%d RELEASE rows, want 1", releases)
		}
		body = getPage(t, b, "/approvals", true, http.StatusOK)
		checkText(t, body, "approval-row-status", "APPROVED")
		body = getPage(t, b, "/approvals?status=PENDING", true, http.StatusOK)
		requireElement(t, body, "approvals-empty", true)
	})
}

// Every other direct path refuses a task that needs approval: the order's
// rerun form and the bulk rerun (which names it and changes nothing), the
// abandon form, and the API's rerun, abandon and order rerun (409
// NEEDS_APPROVAL).
func TestApprovalDirectPathsRefusedWeb(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		body := getPage(t, b, "/orders/m-1/resources/balance/rerun", true, http.StatusOK)
		requireElement(t, body, "rerun-needs-approval", true)
		requireElement(t, body, "rerun-form", false)
		body = getPage(t, b, "/tasks/rerun?type=balance&status=MANUAL", true, http.StatusOK)
		if text, _ := testidText(body, "bulk-needs-approval"); !strings.HasPrefix(text, "1 of these tasks move money") {
			t.Errorf("bulk preview says %q", text)
		}
		before := snapshot(t, b)
		_, body = followPost(t, b, postForm(b, "/orders/m-1/resources/balance/rerun", url.Values{"reason": {"x"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "NEEDS_APPROVAL") || !strings.Contains(flash, fmt.Sprintf("/tasks/%d", id)) {
			t.Errorf("order rerun: flash %q", flash)
		}
		form := url.Values{"type": {"balance"}, "status": {"MANUAL"}, "id": {fmt.Sprint(id)}, "reason": {"x"}}
		_, body = followPost(t, b, postForm(b, "/tasks/rerun", form, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "request approval") {
			t.Errorf("bulk rerun: flash %q", flash)
		}
		_, body = followPost(t, b, postForm(b, fmt.Sprintf("/tasks/%d/abandon", id), url.Values{"reason": {"x"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "NEEDS_APPROVAL") {
			t.Errorf("abandon: flash %q", flash)
		}
		wantError(t, b.call(http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/rerun", id), `{"reason":"x"}`), http.StatusConflict, "NEEDS_APPROVAL")
		wantError(t, b.call(http.MethodPost, fmt.Sprintf("/api/v1/tasks/%d/abandon", id), `{"reason":"x"}`), http.StatusConflict, "NEEDS_APPROVAL")
		wantError(t, b.call(http.MethodPost, "/api/v1/orders/m-1/resources/balance/rerun", `{"reason":"x"}`), http.StatusConflict, "NEEDS_APPROVAL")
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 6})
	})
}

// The API: a request, a refused own approval (403), an approval by another
// token, the list and the request; a second decision is 409.
func TestApprovalAPI(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		olga := b.as(b.mustSignIn("olga", auth.RoleOperator))
		oscar := b.as(b.mustSignIn("oscar", auth.RoleOperator))
		path := fmt.Sprintf("/api/v1/tasks/%d/requests", id)
		wantError(t, olga.call(http.MethodPost, path, `{"action":"delete","reason":"x"}`), http.StatusBadRequest, "INVALID_INPUT")
		wantError(t, olga.call(http.MethodPost, path, `{"action":"abandon","reason":"x"}`), http.StatusForbidden, "APPROVER_ROLE")
		r := must[models.ApprovalRequest](t, olga, http.StatusCreated, http.MethodPost, path, `{"action":"rerun","reason":"ticket 7"}`)
		if r.Status != models.ApprovalPending || r.RequestedBy != "token:olga" || r.Amount != 300 {
			t.Fatalf("request = %+v", r)
		}
		wantError(t, olga.call(http.MethodPost, path, `{"action":"rerun","reason":"again"}`), http.StatusConflict, "REQUEST_OPEN")
		one := fmt.Sprintf("/api/v1/approvals/%d", r.ID)
		wantError(t, olga.call(http.MethodPost, one+"/approve", `{"reason":"mine"}`), http.StatusForbidden, "OWN_REQUEST")
		list := must[struct {
			Requests []models.ApprovalRequest `json:"requests"`
		}](t, b, http.StatusOK, http.MethodGet, "/api/v1/approvals?status=PENDING", "")
		if len(list.Requests) != 1 || list.Requests[0].ID != r.ID {
			t.Fatalf("pending = %+v", list.Requests)
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/approvals?status=MAYBE", ""), http.StatusBadRequest, "INVALID_INPUT")
		got := must[models.ApprovalRequest](t, oscar, http.StatusOK, http.MethodPost, one+"/approve", `{"reason":"checked"}`)
		if got.Status != models.ApprovalApproved || got.DecidedBy != "token:oscar" {
			t.Fatalf("approved = %+v", got)
		}
		wantError(t, b.call(http.MethodPost, one+"/reject", `{"reason":"late"}`), http.StatusConflict, "REQUEST_CLOSED")
		if got := must[models.ApprovalRequest](t, b, http.StatusOK, http.MethodGet, one, ""); got.Status != models.ApprovalApproved {
			t.Fatalf("read = %+v", got)
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/approvals/999", ""), http.StatusNotFound, "NOT_FOUND")
	})
}

// A viewer (customer service) sees requests, on their pages, the task's
// and the API, but can neither request nor decide: every such route is
// 403 and changes nothing.
func TestApprovalViewerReadsOnly(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		r, err := b.s.RequestApproval(b.ctx, id, models.ApprovalRerun, models.Decider{Name: "olga"}, "ticket 7")
		try(t, "request", err)
		vera := b.as(b.mustSignIn("vera", auth.RoleViewer))
		one := fmt.Sprintf("/approvals/%d", r.ID)
		body := getPage(t, vera, "/approvals", true, http.StatusOK)
		requireElement(t, body, "approval-row", true)
		body = getPage(t, vera, one, true, http.StatusOK)
		checkText(t, body, "approval-status", "PENDING")
		requireElement(t, body, "need-operator", true)
		requireElement(t, body, "approval-approve-form", false)
		body = getPage(t, vera, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		requireElement(t, body, "task-awaiting-approval", true)
		requireElement(t, body, "task-request-rerun-form", false)
		body = getPage(t, vera, "/", true, http.StatusOK)
		checkText(t, body, "ov-approvals", "1")
		must[models.ApprovalRequest](t, vera, http.StatusOK, http.MethodGet, "/api/v1"+one, "")

		before := snapshot(t, b)
		for _, path := range []string{one + "/approve", one + "/reject", fmt.Sprintf("/tasks/%d/requests", id)} {
			if rec := postForm(vera, path, url.Values{"reason": {"x"}, "action": {"rerun"}}, true); rec.Code != http.StatusForbidden {
				t.Errorf("a viewer's POST %s = %d, want 403", path, rec.Code)
			}
			wantError(t, vera.call(http.MethodPost, "/api/v1"+path, `{"reason":"x","action":"rerun"}`), http.StatusForbidden, "FORBIDDEN")
		}
		after := snapshot(t, b)
		before.sameExcept(t, after, map[string]int64{"audit_log": after.counts["audit_log"] - before.counts["audit_log"]})
	})
}

// An abandon's request is decided by another admin: an operator sees why
// not, an admin approves, and the task ends ABANDONED.
func TestApprovalAbandonByAdmins(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		id := moneyTask(t, b, "m-1", 300)
		task := fmt.Sprintf("/tasks/%d", id)
		body := getPage(t, b, task, true, http.StatusOK)
		requireElement(t, body, "task-request-abandon-form", true)
		loc, _ := followPost(t, b, postForm(b, task+"/requests", url.Values{"action": {"abandon"}, "reason": {"settled by hand"}}, true), true)
		olga := b.as(b.mustSignIn("olga", auth.RoleOperator))
		body = getPage(t, olga, loc, true, http.StatusOK)
		requireElement(t, body, "approval-cannot", true)
		_, body = followPost(t, olga, postForm(olga, loc+"/approve", url.Values{"reason": {"ok"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "APPROVER_ROLE") {
			t.Errorf("an operator's approval: flash %q", flash)
		}
		boss := b.as(b.mustSignIn("boss", auth.RoleAdmin))
		_, body = followPost(t, boss, postForm(boss, loc+"/approve", url.Values{"reason": {"ok"}}, true), true)
		checkText(t, body, "approval-status", "APPROVED")
		body = getPage(t, b, task, true, http.StatusOK)
		checkText(t, body, "task-status", "ABANDONED")
	})
}
