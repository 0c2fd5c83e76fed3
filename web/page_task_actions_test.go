package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// tkTaskOf is the id of order no's task of type typ.
func tkTaskOf(t *testing.T, b bundle, no string, typ models.ResourceType) int64 {
	t.Helper()
	for _, tk := range tkTasks(t, b) {
		if tk.OrderNo == no && tk.ResourceType == typ {
			return tk.ID
		}
	}
	t.Fatalf("no %s task of %s", typ, no)
	return 0
}

// The list filters by key (with its type) and by created window, in the
// page and the API alike; refuses a key without its type and a window
// that ends before it starts; links each task's key to the key's page;
// shows "next run" only for tasks that will run; and says in words why a
// MANUAL task stopped.
func TestTasksKeyWindowAndWhy(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		start := b.clock.Now()
		tkShop(t, b, 4)
		var skuM []string
		for _, tk := range tkTasks(t, b) {
			if tk.BizKey == "sku-m" {
				skuM = append(skuM, fmt.Sprint(tk.ID))
			}
		}
		slices.Reverse(skuM) // newest first
		body := getPage(t, b, "/tasks?type=inventory&key=sku-m", false, http.StatusOK)
		if got := tkRowIDs(body); !slices.Equal(got, skuM) {
			t.Errorf("key=sku-m lists %v, want %v", got, skuM)
		}
		api := must[readPage[models.ReleaseTask]](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks?type=inventory&key=sku-m", "")
		if len(api.Items) != len(skuM) {
			t.Errorf("the API's key=sku-m lists %d, want %d", len(api.Items), len(skuM))
		}
		// p-1 was closed a second after the shop's other orders.
		p1 := tkTaskOf(t, b, "p-1", models.ResInventory)
		from := b.clock.Now().Add(-500 * time.Millisecond).UTC().Format(time.RFC3339Nano)
		q := url.Values{"from": {b.clock.Now().UTC().Format(time.RFC3339)}}
		body = getPage(t, b, "/tasks?"+q.Encode(), true, http.StatusOK)
		if got := tkRowIDs(body); !slices.Equal(got, []string{fmt.Sprint(p1)}) {
			t.Errorf("from=now lists %v, want p-1's task %d", got, p1)
		}
		q = url.Values{"to": {b.clock.Now().UTC().Format(time.RFC3339)}, "from": {start.UTC().Format(time.RFC3339)}}
		api = must[readPage[models.ReleaseTask]](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks?"+q.Encode()+"&limit=500", "")
		if len(api.Items) != len(tkTasks(t, b))-1 || slices.ContainsFunc(api.Items, func(tk models.ReleaseTask) bool { return tk.ID == p1 }) {
			t.Errorf("to=now lists %d tasks, want all but p-1's", len(api.Items))
		}
		for _, bad := range []string{"key=sku-m", "type=inventory&from=yesterday", "from=" + url.QueryEscape(from) + "x",
			"from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z"} {
			getPage(t, b, "/tasks?"+bad, false, http.StatusBadRequest)
			wantBad(t, b, "/api/v1/tasks?"+bad)
		}
		// Rows: the key links to its page; next run only for PENDING/RETRY.
		body = getPage(t, b, "/tasks?status=MANUAL&status=PENDING", true, http.StatusOK)
		for _, id := range tkRowIDs(body) {
			row := taskListRow(body, id)
			if !strings.Contains(row, `href="/orders/`) || !strings.Contains(row, `href="/tasks/`+id+`"`) {
				t.Errorf("row %s lacks its order or task link:\n%s", id, row)
			}
			next, _ := testidText(row, "task-next")
			manual := strings.Contains(row, `class="nowrap bad">MANUAL`)
			if manual != (next == "") {
				t.Errorf("row %s: MANUAL %v, next run %q", id, manual, next)
			}
		}
		m1 := taskListRow(body, fmt.Sprint(tkTaskOf(t, b, "m-1", models.ResInventory)))
		if href := mustHref(t, m1, "task-key-link"); href != "/inventory/sku-m" {
			t.Errorf("sku-m links to %q", href)
		}
		if why, _ := testidText(m1, "task-why"); why != "Stock's held amount was changed outside unhold: 0 now, the ledger says 3 — correct it, then rerun" {
			t.Errorf("m-1's reason = %q", why)
		}
		q1 := taskListRow(body, fmt.Sprint(tkTaskOf(t, b, "q-1", models.ResQuota)))
		if why, _ := testidText(q1, "task-why"); why != "Activity quota's held amount was changed outside unhold: 0 now, the ledger says 1 — correct it, then rerun" {
			t.Errorf("q-1's reason = %q", why)
		}
		// The list gives the reason; the task's page the cause as read now,
		// with its fix.
		m1Why := func(en bool) string {
			body := getPage(t, b, "/tasks?status=MANUAL", en, http.StatusOK)
			why, _ := testidText(taskListRow(body, fmt.Sprint(tkTaskOf(t, b, "m-1", models.ResInventory))), "task-why")
			return why
		}
		m1Cause := func() string {
			return causeOf(getPage(t, b, "/tasks/"+fmt.Sprint(tkTaskOf(t, b, "m-1", models.ResInventory)), true, http.StatusOK))
		}
		if why := m1Why(false); why != "库存的锁定量在 unhold 之外被改过：当前 0，账本记为 3 —— 先校正，再重跑" {
			t.Errorf("m-1's reason in Chinese = %q", why)
		}
		zh := getPage(t, b, "/tasks/"+fmt.Sprint(tkTaskOf(t, b, "m-1", models.ResInventory)), false, http.StatusOK)
		if got := causeOf(zh); got != "short.row" || testidTag(zh, "task-why") != "" {
			t.Errorf("m-1's page: cause %q, and the reason beside it: %v", got, testidTag(zh, "task-why") != "")
		}
		if testidTag(zh, "task-tickets") != "" {
			t.Error("a key no run has looked at links a ticket")
		}
		// The hand edit is the key's diff: once a run opens its ticket,
		// the task links to it.
		if _, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test"); err != nil {
			t.Fatal(err)
		}
		open, err := b.s.OpenTickets(b.ctx, []models.ResourceKey{{Type: models.ResInventory, Key: "sku-m"}})
		if err != nil || len(open) == 0 {
			t.Fatalf("sku-m's tickets: %v, %v", open, err)
		}
		zh = getPage(t, b, "/tasks/"+fmt.Sprint(tkTaskOf(t, b, "m-1", models.ResInventory)), false, http.StatusOK)
		if href := mustHref(t, zh, "task-ticket"); href != fmt.Sprintf("/recon/diffs/%d", open[0].ID) {
			t.Errorf("the task links %q, want sku-m's ticket %d", href, open[0].ID)
		}
		// Another hand edit that makes the stock hold as much as the task
		// gives back does not make the cause gone: the lock is not the
		// ledger's. Once corrected, the reason says the cause is gone,
		// from the numbers it shows.
		try(t, "stock edited", b.s.W.Exec("UPDATE inventory SET locked = 1 WHERE sku_id = 'sku-m'").Error)
		if why, cause := m1Why(true), m1Cause(); why != "Stock's held amount was changed outside unhold: 1 now, the ledger says 3 — correct it, then rerun" || cause != "short.row" {
			t.Errorf("after a second hand edit: reason %q, cause %q", why, cause)
		}
		l, err := b.s.CounterLedgerOf(b.ctx, models.ResInventory, "sku-m")
		try(t, "sku-m", err)
		_, err = b.s.CorrectCounter(b.ctx, models.ResInventory, "sku-m", models.CounterFix{Available: l.Ledger.Available, Reason: "lock moved by hand", ForOrder: "m-1"}, "ops")
		try(t, "correct sku-m", err)
		if why, cause := m1Why(true), m1Cause(); why != "stock is enough again: locked 3, needed 3 — the cause is gone; a rerun will release" || cause != "short.gone" {
			t.Errorf("after the correction: reason %q, cause %q", why, cause)
		}
	})
}

// taskListRow is the task list's row of task id.
func taskListRow(body, id string) string {
	i := strings.Index(body, `data-testid="task-row" data-task-id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</tr>")
	return body[i : i+j]
}

// A task's retries ran out: its reason counts them and quotes the last error.
func TestTaskWhyExhausted(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 0)
		id := tkTaskOf(t, b, "r-1", models.ResInventory)
		try(t, "exhaust", b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'RETRY_EXHAUSTED', failures = 8, attempts = 8,
			last_error_class = 'TIMEOUT', last_error = 'warehouse stock service timed out' WHERE id = ?`, id).Error)
		body := getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		checkText(t, body, "task-why", "8 of 8 tries failed, last (TIMEOUT): warehouse stock service timed out — fix the cause, then rerun")
		if testidTag(body, "task-rerun-form") == "" || testidTag(body, "task-abandon-form") == "" {
			t.Error("an admin sees no rerun or abandon form on a MANUAL task")
		}
		op := b.as(b.mustSignIn("olga", auth.RoleOperator))
		body = getPage(t, op, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		if testidTag(body, "task-rerun-form") == "" || testidTag(body, "task-abandon-form") != "" {
			t.Error("an operator should see the rerun form and not the abandon one")
		}
	})
}

// One task's rerun from its page: reason required, a compare-and-set on its
// status (a double submit is refused and changes nothing), audited on the
// task, shown in its history; the API does the same.
func TestTaskRerunPageAndAPI(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 0)
		id := tkTaskOf(t, b, "m-1", models.ResInventory)
		path := fmt.Sprintf("/tasks/%d", id)
		before := snapshot(t, b)
		loc, body := followPost(t, b, postForm(b, path+"/rerun", url.Values{"reason": {" "}}, true), true)
		if flash, _ := testidText(body, "flash"); loc != path || !strings.Contains(flash, "Give a reason") {
			t.Errorf("no reason: flash %q at %s", flash, loc)
		}
		before.sameExcept(t, snapshot(t, b), nil)
		viewer := b.as(b.mustSignIn("vera", auth.RoleViewer))
		if rec := postForm(viewer, path+"/rerun", url.Values{"reason": {"x"}}, true); rec.Code != http.StatusForbidden {
			t.Errorf("a viewer's rerun = %d, want 403", rec.Code)
		}
		loc, body = followPost(t, b, postForm(b, path+"/rerun", url.Values{"reason": {"sku-m recounted"}}, true), true)
		if flash, _ := testidText(body, "flash"); loc != path || flash != fmt.Sprintf("Task #%d made due; a worker will try it.", id) {
			t.Errorf("rerun: flash %q at %s", flash, loc)
		}
		if b.wakes.Load() != 1 {
			t.Errorf("wakes = %d, want 1", b.wakes.Load())
		}
		if ev := testidElement(body, "task-history"); !strings.Contains(ev, "Rerun") || !strings.Contains(ev, "sku-m recounted") {
			t.Errorf("history:\n%s", ev)
		}
		// A double submit: the task is PENDING now.
		before = snapshot(t, b)
		loc, body = followPost(t, b, postForm(b, path+"/rerun", url.Values{"reason": {"sku-m recounted"}}, false), false)
		if flash, _ := testidText(body, "flash"); loc != path || !strings.Contains(flash, "NOTHING_TO_RERUN") || !strings.Contains(flash, "待处理") {
			t.Errorf("double submit: flash %q at %s", flash, loc)
		}
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})
		if b.wakes.Load() != 1 {
			t.Error("a refused rerun woke the worker")
		}
		// The API.
		other := tkTaskOf(t, b, "m-2", models.ResInventory)
		api := fmt.Sprintf("/api/v1/tasks/%d/rerun", other)
		wantError(t, b.call(http.MethodPost, api, `{"reason":""}`), http.StatusBadRequest, "INVALID_INPUT")
		if got := must[map[string]int64](t, b, http.StatusAccepted, http.MethodPost, api, `{"reason":"recounted"}`); got["tasks"] != 1 {
			t.Errorf("API rerun = %v", got)
		}
		wantError(t, b.call(http.MethodPost, api, `{"reason":"again"}`), http.StatusConflict, "NOTHING_TO_RERUN")
		wantError(t, b.call(http.MethodPost, "/api/v1/tasks/99999/rerun", `{"reason":"x"}`), http.StatusNotFound, "NOT_FOUND")
		var audit []models.AuditEntry
		try(t, "audit", b.s.R.Where("target = ?", fmt.Sprintf("task:%d", other)).Order("id").Find(&audit).Error)
		if len(audit) != 2 || audit[0].Outcome != "ok" || audit[0].Actor != "token:root" || audit[1].Outcome != "refused" {
			t.Errorf("API audit = %+v", audit)
		}
	})
}

// A rerun from the page waits for its try and says how it ended: failed
// again while the stock is still short, released once it is fixed. Breaks
// if the page said "will run now" whatever the try did.
func TestTaskRerunSaysHowItEnded(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now})
		b := newBundleDeps(s, clock, auth.Options{}, func(dp *web.Deps) {
			dp.RerunWait = 10 * time.Second
			// The local worker, woken by the rerun, releases what is due.
			dp.Wake = func() {
				go func() {
					tasks, _ := s.ClaimTasks(context.Background(), "w", 10, time.Minute)
					for _, tk := range tasks {
						_, _ = s.ReleaseTask(context.Background(), tk, "w")
					}
				}()
			}
		})
		tkShop(t, b, 0)
		for i, c := range []struct {
			order, fix, flash string
		}{
			{"m-1", "", "was rerun, but the try failed again; it is MANUAL now (LOCKED_SHORT)"},
			{"m-2", "UPDATE inventory SET locked = 4 WHERE sku_id = 'sku-m'", "was rerun: released."},
		} {
			if c.fix != "" {
				try(t, "fix the stock", b.s.W.Exec(c.fix).Error)
			}
			id := tkTaskOf(t, b, c.order, models.ResInventory)
			path := fmt.Sprintf("/tasks/%d", id)
			_, body := followPost(t, b, postForm(b, path+"/rerun", url.Values{"reason": {fmt.Sprintf("try %d", i)}}, true), true)
			if flash, _ := testidText(body, "flash"); !strings.Contains(flash, fmt.Sprintf("Task #%d %s", id, c.flash)) {
				t.Errorf("%s's rerun: flash %q, want %q", c.order, flash, c.flash)
			}
		}
	})
}

// An admin abandons a task from its page or the API; an operator cannot;
// nothing is released; the next reconciliation's ticket names the task,
// who abandoned it and why.
func TestTaskAbandonPageAndAPI(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 0)
		id := tkTaskOf(t, b, "m-1", models.ResInventory)
		path := fmt.Sprintf("/tasks/%d", id)
		op := b.as(b.mustSignIn("olga", auth.RoleOperator))
		if rec := postForm(op, path+"/abandon", url.Values{"reason": {"x"}}, true); rec.Code != http.StatusForbidden {
			t.Errorf("an operator's abandon = %d, want 403", rec.Code)
		}
		if rec := op.call(http.MethodPost, path+"/abandon", ""); rec.Code != http.StatusForbidden {
			t.Errorf("an operator's abandon = %d, want 403", rec.Code)
		}
		before := snapshot(t, b)
		loc, body := followPost(t, b, postForm(b, path+"/abandon", url.Values{"reason": {" "}}, true), true)
		if flash, _ := testidText(body, "flash"); loc != path || !strings.Contains(flash, "Give a reason") {
			t.Errorf("no reason: flash %q at %s", flash, loc)
		}
		before.sameExcept(t, snapshot(t, b), nil)
		skuBefore, err := b.s.GetSKU(b.ctx, "sku-m")
		try(t, "sku-m", err)
		var flowsBefore, flowsAfter int64
		try(t, "flows", b.s.R.Table("inventory_flows").Count(&flowsBefore).Error)
		loc, body = followPost(t, b, postForm(b, path+"/abandon", url.Values{"reason": {"sku-m was deleted"}}, true), true)
		if flash, _ := testidText(body, "flash"); loc != path || !strings.Contains(flash, fmt.Sprintf("Task #%d abandoned", id)) {
			t.Errorf("abandon: flash %q at %s", flash, loc)
		}
		checkText(t, body, "task-status", "ABANDONED")
		if testidTag(body, "task-rerun-form") != "" || testidTag(body, "task-abandon-form") != "" {
			t.Error("an abandoned task still offers its forms")
		}
		// Nothing released: no ledger row, no stock moved.
		skuAfter, err := b.s.GetSKU(b.ctx, "sku-m")
		try(t, "sku-m", err)
		try(t, "flows", b.s.R.Table("inventory_flows").Count(&flowsAfter).Error)
		if skuAfter.Locked != skuBefore.Locked || skuAfter.Available != skuBefore.Available || flowsAfter != flowsBefore {
			t.Errorf("an abandon moved stock: %+v → %+v, flows %d → %d", skuBefore, skuAfter, flowsBefore, flowsAfter)
		}
		loc, body = followPost(t, b, postForm(b, path+"/abandon", url.Values{"reason": {"again"}}, false), false)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "TASK_NOT_ABANDONABLE") {
			t.Errorf("abandon again: flash %q at %s", flash, loc)
		}
		// The API.
		other := tkTaskOf(t, b, "m-2", models.ResInventory)
		api := fmt.Sprintf("/api/v1/tasks/%d/abandon", other)
		got := must[models.ChainTask](t, b, http.StatusOK, http.MethodPost, api, `{"reason":"sku-m was deleted"}`)
		if got.Status != models.TaskAbandoned {
			t.Errorf("API abandon = %+v", got.ReleaseTask)
		}
		wantError(t, b.call(http.MethodPost, api, `{"reason":"again"}`), http.StatusConflict, "TASK_NOT_ABANDONABLE")

		// Reconciliation: sku-m's ticket names both abandoned tasks.
		try(t, "restore sku-m's locked", b.s.W.Exec("UPDATE inventory SET locked = 3 WHERE sku_id = 'sku-m'").Error)
		ans := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		var ticket *models.DiffTicket
		for i, d := range ans.Tickets {
			if d.BizKey == "sku-m" {
				ticket = &ans.Tickets[i]
			}
		}
		if ticket == nil || ticket.Actual-ticket.Expected != 2 || !strings.Contains(ticket.Orders, "m-1") {
			t.Fatalf("sku-m's ticket = %+v in %+v", ticket, ans.Tickets)
		}
		page := getPage(t, b, fmt.Sprintf("/recon/diffs/%d", ticket.ID), true, http.StatusOK)
		ab := testidElement(page, "diff-abandoned")
		for _, want := range []string{fmt.Sprintf(`href="/tasks/%d"`, id), fmt.Sprintf(`href="/tasks/%d"`, other), "abandoned by root: sku-m was deleted",
			"abandoned by token:root: sku-m was deleted", `href="/orders/m-1"`} {
			if !strings.Contains(ab, want) {
				t.Errorf("the ticket's abandoned tasks lack %s:\n%s", want, ab)
			}
		}
	})
}
