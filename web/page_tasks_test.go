package web_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// tkBundle is a bundle whose store fails, as a timeout, every release of
// an order whose number starts with "r-", so tests can make RETRY tasks.
func tkBundle(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, tk *models.ReleaseTask) error {
		if point == models.FaultAfterLedger && strings.HasPrefix(tk.OrderNo, "r-") {
			return &models.TransientError{Class: models.ClassTimeout, Err: errors.New("stock service timed out")}
		}
		return nil
	}})
	return newBundle(s, clock)
}

// tkOrder places order no holding qty of sku (and a place of activity when
// set) and closes it.
func tkOrder(t *testing.T, b bundle, no, sku, activity string) {
	t.Helper()
	_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
		Items: []models.Item{{SkuID: sku, Qty: 1}}, ActivityID: activity})
	try(t, "place "+no, err)
	_, err = b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1")
	try(t, "close "+no, err)
}

// tkRowIDs are the task ids a list page shows, in order.
func tkRowIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`data-testid="task-row" data-task-id="(\d+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// tkTasks reads every task, ordered by id.
func tkTasks(t *testing.T, b bundle) []models.ReleaseTask {
	t.Helper()
	var all []models.ReleaseTask
	try(t, "read tasks", b.s.R.Order("id").Find(&all).Error)
	return all
}

// tkShop sets up stock and quota, and closes orders: n plain ones on sku-a
// (half of them also holding act-1), drained to DONE; and, left as they
// are, m-1..m-3 MANUAL (LOCKED_SHORT on sku-m), r-1..r-2 RETRY (TIMEOUT on
// sku-a), q-1 with a MANUAL quota task (act-q taken from under it), and
// p-1 PENDING.
func tkShop(t *testing.T, b bundle, n int) {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-a", 1000, 0, "test")
	try(t, "sku-a", err)
	_, err = b.s.SetStock(b.ctx, "sku-m", 10, 0, "test")
	try(t, "sku-m", err)
	_, err = b.s.SetActivity(b.ctx, "act-1", 1000, "test")
	try(t, "act-1", err)
	_, err = b.s.SetActivity(b.ctx, "act-q", 10, "test")
	try(t, "act-q", err)
	for i := range n {
		act := ""
		if i%2 == 0 {
			act = "act-1"
		}
		tkOrder(t, b, fmt.Sprintf("d-%03d", i), "sku-a", act)
		if i%4 == 3 {
			b.clock.Advance(time.Second)
		}
	}
	for i := 1; i <= 3; i++ {
		tkOrder(t, b, fmt.Sprintf("m-%d", i), "sku-m", "")
	}
	tkOrder(t, b, "r-1", "sku-a", "")
	tkOrder(t, b, "r-2", "sku-a", "")
	tkOrder(t, b, "q-1", "sku-a", "act-q")
	try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-m'").Error)
	try(t, "hand edit", b.s.W.Exec("UPDATE activity_quotas SET locked = 0 WHERE activity_id = 'act-q'").Error)
	drain(t, b)
	b.clock.Advance(time.Second)
	tkOrder(t, b, "p-1", "sku-a", "")
}

// The list pages through every task newest first with no gap and no
// repeat, and each filter shows exactly its tasks.
func TestTasksListFiltersAndPages(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 70)
		all := tkTasks(t, b)
		if len(all) < 110 {
			t.Fatalf("only %d tasks planted", len(all))
		}
		// Follow the next links from the first page, in both languages.
		for _, en := range []bool{false, true} {
			want := slices.Clone(all)
			sort.Slice(want, func(i, j int) bool {
				if !want[i].CreatedAt.Equal(want[j].CreatedAt) {
					return want[i].CreatedAt.After(want[j].CreatedAt)
				}
				return want[i].ID > want[j].ID
			})
			var wantIDs, got []string
			for _, tk := range want {
				wantIDs = append(wantIDs, fmt.Sprint(tk.ID))
			}
			path, pages := "/tasks", 0
			for path != "" {
				body := getPage(t, b, path, en, http.StatusOK)
				rows := tkRowIDs(body)
				if len(rows) > 50 {
					t.Fatalf("page of %d rows", len(rows))
				}
				// Every page says how many tasks the filter selects.
				wantTotal := map[bool]string{false: fmt.Sprintf("共 %d 个任务", len(all)), true: fmt.Sprintf("Tasks: %d", len(all))}[en]
				if got := markupText(testidElement(body, "tasks-total")); got != wantTotal {
					t.Fatalf("total = %q, want %q", got, wantTotal)
				}
				got = append(got, rows...)
				pages++
				if pages > 1 && testidTag(body, "tasks-first") == "" {
					t.Errorf("page %d has no link to the first page", pages)
				}
				path = ""
				if testidTag(body, "tasks-next") != "" {
					path = mustHref(t, body, "tasks-next")
				}
			}
			if pages != (len(all)+49)/50 || !slices.Equal(got, wantIDs) {
				t.Fatalf("%d pages:\n got %v\nwant %v", pages, got, wantIDs)
			}
		}
		// Oldest first starts with the first task.
		body := getPage(t, b, "/tasks?sort=old", false, http.StatusOK)
		if rows := tkRowIDs(body); len(rows) == 0 || rows[0] != fmt.Sprint(all[0].ID) {
			t.Fatalf("oldest first starts with %v, want %d", rows[:1], all[0].ID)
		}

		ids := func(keep func(models.ReleaseTask) bool) []string {
			var out []string
			for _, tk := range all {
				if keep(tk) {
					out = append(out, fmt.Sprint(tk.ID))
				}
			}
			sort.Strings(out)
			return out
		}
		filters := []struct {
			query string
			keep  func(models.ReleaseTask) bool
			rerun bool
		}{
			{"status=MANUAL", func(tk models.ReleaseTask) bool { return tk.Status == models.TaskManual }, false},
			{"status=MANUAL&type=inventory", func(tk models.ReleaseTask) bool {
				return tk.Status == models.TaskManual && tk.ResourceType == models.ResInventory
			}, true},
			{"status=RETRY&status=MANUAL&type=quota", func(tk models.ReleaseTask) bool {
				return tk.ResourceType == models.ResQuota && (tk.Status == models.TaskManual || tk.Status == models.TaskRetry)
			}, true},
			{"type=quota", func(tk models.ReleaseTask) bool { return tk.ResourceType == models.ResQuota }, false},
			{"status=DONE&type=quota", func(tk models.ReleaseTask) bool {
				return tk.ResourceType == models.ResQuota && tk.Status == models.TaskDone
			}, false},
			{"class=TIMEOUT", func(tk models.ReleaseTask) bool { return tk.ErrorClass == models.ClassTimeout }, false},
			{"class=LOCKED_SHORT&type=inventory&status=MANUAL", func(tk models.ReleaseTask) bool {
				return tk.ErrorClass == models.ClassLockedShort && tk.ResourceType == models.ResInventory
			}, true},
			{"order=+m-2+", func(tk models.ReleaseTask) bool { return tk.OrderNo == "m-2" }, false},
			{"due=1", func(tk models.ReleaseTask) bool {
				return (tk.Status == models.TaskPending || tk.Status == models.TaskRetry) && !tk.NextAt.After(b.clock.Now())
			}, false},
			{"older=1&status=PENDING", func(models.ReleaseTask) bool { return false }, false},
		}
		for _, f := range filters {
			body := getPage(t, b, "/tasks?"+f.query, false, http.StatusOK)
			got := tkRowIDs(body)
			sort.Strings(got)
			want := ids(f.keep)
			if !slices.Equal(got, want) {
				t.Errorf("%s: rows %v, want %v", f.query, got, want)
			}
			if _, empty := testidText(body, "tasks-empty"); empty != (len(want) == 0) {
				t.Errorf("%s: empty state shown = %v with %d rows", f.query, empty, len(want))
			}
			if has := testidTag(body, "tasks-rerun-link") != ""; has != f.rerun {
				t.Errorf("%s: rerun link shown = %v, want %v", f.query, has, f.rerun)
			}
		}
		// The rerun link keeps the filter.
		body = getPage(t, b, "/tasks?status=MANUAL&type=inventory&class=LOCKED_SHORT", true, http.StatusOK)
		if got := mustHref(t, body, "tasks-rerun-link"); got != "/tasks/rerun?class=LOCKED_SHORT&status=MANUAL&type=inventory" {
			t.Errorf("rerun link = %q", got)
		}
		// A row links to its task and its order, and shows the error.
		body = getPage(t, b, "/tasks?order=r-1", false, http.StatusOK)
		row := regexp.MustCompile(`<tr data-testid="task-row"[\s\S]*?</tr>`).FindString(body)
		for _, want := range []string{`href="/orders/r-1"`, `href="/tasks/`, `stock service timed out`, `<td class="nowrap">超时</td>`, `重试中`} {
			if !strings.Contains(row, want) {
				t.Errorf("r-1's row lacks %s", want)
			}
		}
		// Eleven minutes on, the older filter keeps the PENDING task.
		b.clock.Advance(11 * time.Minute)
		body = getPage(t, b, "/tasks?older=10&status=PENDING", false, http.StatusOK)
		if got := tkRowIDs(body); len(got) != 1 {
			t.Errorf("older=10&status=PENDING: %v, want p-1's task", got)
		}
	})
}

// Parameters that name nothing real answer the 400 page, not a 500.
func TestTasksBadParams(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, path := range []string{
			"/tasks?status=NOPE", "/tasks?type=gold", "/tasks?class=SOMETIMES", "/tasks?older=abc",
			"/tasks?older=-5", "/tasks?after=zzz", "/tasks?after=1.0", "/tasks?sort=sideways", "/tasks?due=maybe",
			"/tasks?order=bad%20no", "/tasks/abc", "/tasks/0", "/tasks/-1", "/tasks/99999999999999999999",
			"/tasks/rerun?type=gold", "/tasks/rerun?type=inventory&older=x",
		} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, path, en, http.StatusBadRequest)
				if testidTag(body, "error-code") == "" {
					t.Errorf("%s: no error page", path)
				}
			}
		}
		body := getPage(t, b, "/tasks/12345", true, http.StatusNotFound)
		if testidTag(body, "error-code") == "" {
			t.Error("unknown task: no error page")
		}
		getPage(t, b, "/tasks", false, http.StatusOK)
	})
}

// A task page shows the task, every attempt, and links to its order and
// its order's rerun.
func TestTaskDetail(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 2)
		var retry models.ReleaseTask
		try(t, "r-1", b.s.R.Where("order_no = 'r-1'").Take(&retry).Error)
		// A task never tried says so.
		var pending models.ReleaseTask
		try(t, "p-1", b.s.R.Where("order_no = 'p-1'").Take(&pending).Error)
		body := getPage(t, b, fmt.Sprintf("/tasks/%d", pending.ID), false, http.StatusOK)
		if testidTag(body, "attempts-empty") == "" {
			t.Error("no empty state for a task never tried")
		}
		// A second failure, so two attempts.
		b.clock.Advance(2 * time.Second)
		drain(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, fmt.Sprintf("/tasks/%d", retry.ID), en, http.StatusOK)
			if n := strings.Count(body, `data-testid="attempt-row"`); n != 2 {
				t.Errorf("attempt rows = %d, want 2", n)
			}
			if got := mustHref(t, body, "task-order"); got != "/orders/r-1" {
				t.Errorf("order link = %q", got)
			}
			if got := mustHref(t, body, "task-rerun"); got != "/orders/r-1/resources/inventory/rerun" {
				t.Errorf("rerun link = %q", got)
			}
			if !strings.Contains(body, "stock service timed out") {
				t.Error("the error is not shown")
			}
		}
		body = getPage(t, b, fmt.Sprintf("/tasks/%d", retry.ID), false, http.StatusOK)
		checkText(t, body, "task-status", "重试中")
		checkText(t, body, "task-class", "超时")
		// A DONE task has no rerun link; its attempt reads DONE.
		var done models.ReleaseTask
		try(t, "d-000", b.s.R.Where("order_no = 'd-000' AND resource_type = 'inventory'").Take(&done).Error)
		body = getPage(t, b, fmt.Sprintf("/tasks/%d", done.ID), true, http.StatusOK)
		if testidTag(body, "task-rerun") != "" {
			t.Error("a DONE task offers a rerun")
		}
		checkText(t, body, "attempt-outcome", "DONE")
	})
}

// The bulk rerun preview counts the RETRY/MANUAL tasks of one type the
// filter keeps; the POST makes exactly those due in one transaction, with
// one audit row, and wakes the worker; refusals change nothing.
func TestBulkRerunPages(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 4)
		// Without a type, or with a status that cannot be rerun: a 400 page
		// that says what to do.
		for _, path := range []string{"/tasks/rerun", "/tasks/rerun?status=MANUAL", "/tasks/rerun?type=inventory&status=DONE",
			"/tasks/rerun?type=quota&status=MANUAL&due=1"} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, path, en, http.StatusBadRequest)
				if testidTag(body, "bulk-refused") == "" {
					t.Errorf("%s: no explanation", path)
				}
			}
		}
		idOf := map[string]string{} // order → its inventory task's id
		for _, tk := range tkTasks(t, b) {
			if tk.ResourceType == models.ResInventory {
				idOf[tk.OrderNo] = fmt.Sprint(tk.ID)
			}
		}
		// The preview lists every task it would touch, each with a ticked box.
		body := getPage(t, b, "/tasks/rerun?type=inventory&status=MANUAL&status=RETRY", false, http.StatusOK)
		checkText(t, body, "bulk-count", "5")
		body = getPage(t, b, "/tasks/rerun?type=inventory&status=MANUAL", true, http.StatusOK)
		checkText(t, body, "bulk-count", "3")
		if got, want := bulkRowIDs(body), []string{idOf["m-1"], idOf["m-2"], idOf["m-3"]}; !slices.Equal(got, want) {
			t.Errorf("listed %v, want %v", got, want)
		}
		if got := mustHref(t, body, "bulk-list"); got != "/tasks?status=MANUAL&type=inventory" {
			t.Errorf("list link = %q", got)
		}
		for _, field := range []string{`name="type" value="inventory"`, `name="status" value="MANUAL"`, `name="reason" required`,
			`name="id" value="` + idOf["m-1"] + `" checked`, "held amount was changed outside unhold: 0 now, the ledger says 3"} {
			if !strings.Contains(body, field) {
				t.Errorf("the page lacks %s", field)
			}
		}
		body = getPage(t, b, "/tasks/rerun?type=coupon", false, http.StatusOK)
		if testidTag(body, "bulk-nothing") == "" || testidTag(body, "bulk-form") != "" {
			t.Error("a preview of nothing offers a form")
		}

		form := url.Values{"type": {"inventory"}, "status": {"MANUAL"}, "id": {idOf["m-1"], idOf["m-2"], idOf["m-3"]}, "reason": {"   "}}
		// An empty reason, or no box ticked, goes back to the preview, with
		// nothing written.
		before := snapshot(t, b)
		loc, body := followPost(t, b, postForm(b, "/tasks/rerun", form, false), false)
		if loc != "/tasks/rerun?status=MANUAL&type=inventory" || !strings.Contains(body, "请填写重跑原因") {
			t.Errorf("empty reason went to %s:\n%s", loc, body)
		}
		none := url.Values{"type": {"inventory"}, "status": {"MANUAL"}, "reason": {"r"}}
		loc, body = followPost(t, b, postForm(b, "/tasks/rerun", none, true), false)
		if flash, _ := testidText(body, "flash"); loc != "/tasks/rerun?status=MANUAL&type=inventory" || !strings.Contains(flash, "Tick at least one task") {
			t.Errorf("nothing ticked: flash %q at %s", flash, loc)
		}
		before.sameExcept(t, snapshot(t, b), nil)
		// Bad form values: 400, among them a task the filter does not list
		// (q-1's quota task under type=inventory).
		var quotaTask string
		for _, tk := range tkTasks(t, b) {
			if tk.OrderNo == "q-1" && tk.ResourceType == models.ResQuota {
				quotaTask = fmt.Sprint(tk.ID)
			}
		}
		for _, bad := range []url.Values{
			{"type": {"inventory"}, "status": {"MANUAL"}, "id": {"x"}, "reason": {"r"}},
			{"type": {"gold"}, "id": {"1"}, "reason": {"r"}},
			{"status": {"MANUAL"}, "id": {"1"}, "reason": {"r"}},
			{"type": {"inventory"}, "status": {"MANUAL"}, "id": {idOf["m-1"], quotaTask}, "reason": {"r"}},
		} {
			if rec := postForm(b, "/tasks/rerun", bad, true); rec.Code != http.StatusBadRequest || strings.Contains(rec.Body.String(), "⟦") {
				t.Errorf("POST %v = %d\n%s", bad, rec.Code, rec.Body)
			}
		}
		before.sameExcept(t, snapshot(t, b), nil)
		if b.wakes.Load() != 0 {
			t.Error("a refused rerun woke the worker")
		}

		// Meanwhile m-3's task was finished: the rerun makes the other two
		// due, leaves m-3's alone and says so.
		b.clock.Advance(time.Minute)
		try(t, "finish m-3", b.s.W.Exec(`UPDATE release_tasks SET status = 'DONE' WHERE id = ?`, idOf["m-3"]).Error)
		tasksBefore := tkTasks(t, b)
		form.Set("reason", "sku-m recounted")
		loc, body = followPost(t, b, postForm(b, "/tasks/rerun", form, true), true)
		if loc != "/tasks?status=MANUAL&type=inventory" {
			t.Errorf("redirected to %s", loc)
		}
		flash, _ := testidText(body, "flash")
		if !strings.Contains(flash, "2 task(s) made due") || !strings.Contains(flash, "1 ticked task(s) changed meanwhile and were left alone: #"+idOf["m-3"]+" DONE") {
			t.Errorf("flash = %q", flash)
		}
		if b.wakes.Load() != 1 {
			t.Errorf("wakes = %d, want 1", b.wakes.Load())
		}
		now := b.clock.Now()
		for i, tk := range tkTasks(t, b) {
			was := tasksBefore[i]
			if was.ResourceType != models.ResInventory || (was.OrderNo != "m-1" && was.OrderNo != "m-2") {
				if !reflect.DeepEqual(tk, was) {
					t.Errorf("task %d of %s changed:\n%+v\n%+v", tk.ID, tk.OrderNo, was, tk)
				}
				continue
			}
			if tk.Status != models.TaskPending || !tk.NextAt.Equal(now) || tk.Failures != 0 || tk.Trigger != models.TriggerRerun ||
				tk.RerunBy != "root" || tk.RerunReason != "sku-m recounted" {
				t.Errorf("task %d after the rerun: %+v", tk.ID, tk)
			}
		}
		var audit []models.AuditEntry
		try(t, "audit", b.s.R.Where("action = 'bulk_rerun' AND outcome = 'ok'").Find(&audit).Error)
		if len(audit) != 1 || audit[0].Target != "tasks:inventory?status=MANUAL" || audit[0].Reason != "sku-m recounted" ||
			audit[0].Actor != "root" || audit[0].Detail != "2 task(s) made due" {
			t.Errorf("audit = %+v", audit)
		}
		// The audit page links the row to the list it reran, built from the
		// target's parts.
		body = getPage(t, b, "/audit?action=bulk_rerun", true, http.StatusOK)
		if want := `href="/tasks?status=MANUAL&amp;type=inventory"`; !strings.Contains(body, want) {
			t.Errorf("the audit page lacks the link %s", want)
		}

		// The same form again (a double submit): every ticked task changed
		// meanwhile. An error flash naming them, a refused audit row,
		// nothing else.
		before = snapshot(t, b)
		loc, body = followPost(t, b, postForm(b, "/tasks/rerun", form, false), false)
		flash, _ = testidText(body, "flash")
		if !strings.Contains(flash, "NOTHING_TO_RERUN") || !strings.Contains(flash, "#"+idOf["m-1"]+" 待处理") || loc != "/tasks?status=MANUAL&type=inventory" {
			t.Errorf("second rerun: flash %q at %s", flash, loc)
		}
		if tag := testidTag(body, "flash"); !strings.Contains(tag, "error") {
			t.Errorf("the flash is not an error: %s", tag)
		}
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})
		if b.wakes.Load() != 1 {
			t.Error("a refused rerun woke the worker")
		}
	})
}

// bulkRowIDs are the task ids the bulk rerun's page lists, in order.
func bulkRowIDs(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`data-testid="bulk-task" data-task-id="(\d+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}
