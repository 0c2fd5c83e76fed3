package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// rerunPreviewJSON is the API's dry-run answer.
type rerunPreviewJSON struct {
	DryRun bool `json:"dry_run"`
	Tasks  []struct {
		ID             int64             `json:"id"`
		BizKey         string            `json:"biz_key"`
		Qty            int64             `json:"qty"`
		Status         models.TaskStatus `json:"status"`
		ErrorClass     models.ErrorClass `json:"error_class"`
		LastErrorClass models.ErrorClass `json:"last_error_class"`
		LastError      string            `json:"last_error"`
		Attempts       int               `json:"attempts"`
		Failures       int               `json:"failures"`
		NextAt         time.Time         `json:"next_at"`
		ReleasedBy     *int64            `json:"released_by_flow"`
	} `json:"tasks"`
}

// The API rerun needs a reason, by the page's rule; a dry run answers the
// page's preview and changes and audits nothing.
func TestAPIRerunReasonAndDryRun(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 2)
		const path = "/api/v1/orders/m-1/resources/inventory/rerun"
		before := snapshot(t, b)
		for _, body := range []string{"", `{}`, `{"reason":""}`, `{"reason":" \n "}`,
			`{"reason":"` + strings.Repeat("原", models.MaxReasonLen+1) + `"}`} {
			wantError(t, b.call("POST", path, body), http.StatusBadRequest, "INVALID_INPUT")
		}
		before.sameExcept(t, snapshot(t, b), nil)

		got := must[rerunPreviewJSON](t, b, http.StatusOK, "POST", path+"?dry_run=true", "")
		if !got.DryRun || len(got.Tasks) != 1 {
			t.Fatalf("dry run = %+v, want one task", got)
		}
		tk := got.Tasks[0]
		if tk.BizKey != "sku-m" || tk.Qty != 1 || tk.Status != models.TaskManual || tk.ErrorClass != models.ClassLockedShort ||
			tk.LastErrorClass != models.ClassLockedShort || tk.Failures != 1 || tk.Attempts != 1 || tk.LastError == "" || tk.ReleasedBy != nil {
			t.Fatalf("dry-run task = %+v", tk)
		}
		// The page's preview shows the same task.
		page := getPage(t, b, "/orders/m-1/resources/inventory/rerun", true, http.StatusOK)
		if !strings.Contains(page, fmt.Sprintf("#%d", tk.ID)) || !strings.Contains(page, tk.LastError) {
			t.Errorf("the page's preview lacks task #%d or its error %q", tk.ID, tk.LastError)
		}
		// A reason is not needed to look, and nothing is rerun by looking.
		must[rerunPreviewJSON](t, b, http.StatusOK, "POST", path+"?dry_run=1", `{"reason":"just looking"}`)
		wantError(t, b.call("POST", path+"?dry_run=maybe", ""), http.StatusBadRequest, "INVALID_INPUT")
		// A misspelt dry run is refused, not taken for the real thing.
		wantError(t, b.call("POST", path+"?dryrun=true", `{"reason":"just looking"}`), http.StatusBadRequest, "INVALID_INPUT")
		wantError(t, b.call("POST", "/api/v1/orders/p-1/resources/inventory/rerun?dry_run=true", ""), http.StatusConflict, "NOTHING_TO_RERUN")
		wantError(t, b.call("POST", "/api/v1/orders/nope/resources/inventory/rerun?dry_run=true", ""), http.StatusNotFound, "NOT_FOUND")
		before.sameExcept(t, snapshot(t, b), nil)
		if b.wakes.Load() != 0 {
			t.Error("a refused or dry rerun woke the worker")
		}

		rec := b.call("POST", path, `{"reason":"  sku-m recounted  "}`)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("rerun = %d %s, want 202", rec.Code, rec.Body)
		}
		chain := must[models.Chain](t, b, http.StatusOK, "GET", "/api/v1/orders/m-1", "")
		if len(chain.Audit) != 1 || chain.Audit[0].Reason != "sku-m recounted" || chain.Tasks[0].RerunReason != "sku-m recounted" {
			t.Fatalf("after rerun: audit %+v, task %+v", chain.Audit, chain.Tasks[0])
		}
	})
}

// A task whose retries ran out says so on the task page, in the list's
// 重试耗尽 filter, on the order chain and in the rerun preview: "8 of 8
// tries failed; last: TIMEOUT …", Chinese first.
func TestRetryExhaustedPages(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-a", 10, 0, "test")
		try(t, "sku-a", err)
		tkOrder(t, b, "r-1", "sku-a", "")
		for range models.MaxFailures {
			drain(t, b)
			b.clock.Advance(time.Hour)
		}
		tasks := tkTasks(t, b)
		if len(tasks) != 1 || tasks[0].Status != models.TaskManual || tasks[0].ErrorClass != models.ClassRetryExhausted {
			t.Fatalf("tasks = %+v, want one MANUAL RETRY_EXHAUSTED", tasks)
		}
		id := tasks[0].ID
		// The class is said once (the stored error's "TIMEOUT: " prefix
		// is not repeated after it).
		want := map[bool]string{
			false: "8/8 次尝试均失败；最后一次（超时）：stock service timed out",
			true:  "8 of 8 tries failed; last (TIMEOUT): stock service timed out",
		}
		for _, en := range []bool{false, true} {
			body := getPage(t, b, fmt.Sprintf("/tasks/%d", id), en, http.StatusOK)
			checkText(t, body, "task-exhausted", want[en])
			body = getPage(t, b, "/tasks?class=RETRY_EXHAUSTED", en, http.StatusOK)
			if ids := tkRowIDs(body); len(ids) != 1 || ids[0] != fmt.Sprint(id) {
				t.Errorf("RETRY_EXHAUSTED filter shows %v, want [%d]", ids, id)
			}
			body = getPage(t, b, "/orders/r-1", en, http.StatusOK)
			if text, _ := testidText(body, "q-exhausted"); !strings.Contains(text, want[en]) {
				t.Errorf("chain says %q, want %q", text, want[en])
			}
			body = getPage(t, b, "/orders/r-1/resources/inventory/rerun", en, http.StatusOK)
			checkText(t, body, "rerun-exhausted", want[en])
		}
	})
}
