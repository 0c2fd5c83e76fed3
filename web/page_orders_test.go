package web_test

import (
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// ordFlash is the flash message a redirect carries.
func ordFlash(t *testing.T, rec *httptest.ResponseRecorder) string {
	t.Helper()
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == "flash" {
			v, err := url.QueryUnescape(ck.Value)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	return ""
}

// ordDrain lets one worker release every due task. Unlike drain, the worker
// is w1, which the chain page and its golden file name.
func ordDrain(t *testing.T, b bundle) {
	t.Helper()
	for {
		tasks, err := b.s.ClaimTasks(b.ctx, "w1", 50, time.Minute)
		try(t, "claim", err)
		if len(tasks) == 0 {
			return
		}
		for _, tk := range tasks {
			_, err := b.s.ReleaseTask(b.ctx, tk, "w1")
			try(t, "release", err)
		}
	}
}

// ordManualOrder makes order m-1 of user u1, holding two of sku-1, a coupon
// and 100 balance, closed by the user. Before the worker runs, sku-1's
// locked stock is planted to 0, so its release fails LOCKED_SHORT and goes
// MANUAL; the coupon and the balance come back. Every step is one minute
// apart on the test clock.
func ordManualOrder(t *testing.T, b bundle) (couponID int64) {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	try(t, "stock", err)
	cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponMerchant, b.clock.Now().Add(72*time.Hour), "test")
	try(t, "coupon", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 1000, "test")
	try(t, "credit", err)
	b.clock.Advance(time.Minute)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "m-1", UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: 2}}, CouponIDs: []int64{cp.ID},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 100}}})
	try(t, "place", err)
	b.clock.Advance(time.Minute)
	_, err = b.s.CloseOrder(b.ctx, "m-1", models.TriggerUserCancel, "user:u1")
	try(t, "close", err)
	try(t, "plant", b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-1'").Error)
	b.clock.Advance(time.Minute)
	ordDrain(t, b)
	b.clock.Advance(time.Minute)
	return cp.ID
}

// ordTask reads the one task of m-1 of a resource type.
func ordTask(t *testing.T, b bundle, typ models.ResourceType) models.ReleaseTask {
	t.Helper()
	var tk models.ReleaseTask
	try(t, "read task", b.s.W.Where("order_no = ? AND resource_type = ?", "m-1", typ).Take(&tk).Error)
	return tk
}

// The chain of an order whose stock release went MANUAL answers the five
// questions per resource, offers Rerun for stock only, and shows the
// failure in the timeline, in both languages.
func TestOrderChainManualInventory(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := ordManualOrder(t, b)
		body := getPage(t, b, "/orders/m-1", false, http.StatusOK)
		if got := markupText(testidElement(body, "order-status")); got != "已关闭" {
			t.Errorf("status = %q", got)
		}
		if testidElement(body, "rerun-inventory") == "" {
			t.Fatalf("no Rerun button for inventory:\n%s", body)
		}
		for _, typ := range []string{"coupon", "balance", "points", "quota", "slot"} {
			if testidElement(body, "rerun-"+typ) != "" {
				t.Errorf("Rerun button for %s, whose task is not RETRY or MANUAL", typ)
			}
		}
		if href := testidElement(body, "rerun-inventory"); !strings.Contains(href, `href="/orders/m-1/resources/inventory/rerun"`) {
			t.Errorf("Rerun links to %s", href)
		}
		inv := testidElement(body, "resource-inventory-sku-1")
		checks := map[string]string{
			"q-held":       "是 × 2",
			"q-released":   "否 人工处理 锁定量不足 任务 #3",
			"q-times":      "0 次",
			"q-reconciles": "对得上 sku-1 整体对不上（与本订单无关） 总量守恒：账本 10，实有 8 尚无工单：下次对账会开出 占用量：应为 2，实为 0 尚无工单：下次对账会开出",
		}
		for id, want := range checks {
			if got := markupText(testidElement(inv, id)); got != want {
				t.Errorf("stock %s = %q, want %q", id, got, want)
			}
		}
		coupon := testidElement(body, fmt.Sprintf("resource-coupon-%d", cp))
		if got := markupText(testidElement(coupon, "q-released")); got != "是 × 1 释放任务 已完成 任务 #2" {
			t.Errorf("coupon released = %q", got)
		}
		if got := markupText(testidElement(coupon, "q-times")); got != "1 次" {
			t.Errorf("coupon times = %q", got)
		}
		if got := markupText(testidElement(coupon, "q-by")); !strings.Contains(got, "用户取消") || !strings.Contains(got, "worker:w1") {
			t.Errorf("coupon released by = %q, want the trigger and the worker", got)
		}
		if got := markupText(testidElement(coupon, "q-reconciles")); got != "对得上" {
			t.Errorf("coupon reconciles = %q", got)
		}
		if got := markupText(testidElement(testidElement(body, "resource-balance-u1"), "q-reconciles")); got != "对得上" {
			t.Errorf("balance reconciles = %q", got)
		}
		tl := testidElement(body, "timeline")
		for _, want := range []string{`data-testid="event-status"`, `data-testid="event-flow"`, `data-testid="event-attempt"`,
			"库存 sku-1 当前占用少于订单 m-1 要释放的 2", "下单", "关单"} {
			if !strings.Contains(tl, want) {
				t.Errorf("timeline lacks %q", want)
			}
		}
		en := getPage(t, b, "/orders/m-1", true, http.StatusOK)
		if got := markupText(testidElement(en, "rerun-inventory")); got != "Rerun Stock (1 task(s))" {
			t.Errorf("English Rerun button = %q", got)
		}
		if got := markupText(testidElement(testidElement(en, "resource-inventory-sku-1"), "q-reconciles")); got != "yes sku-1 does not reconcile key-wide (not about this order) conservation: ledger 10, actual 8 no ticket yet: the next reconciliation opens one held: expected 2, actual 0 no ticket yet: the next reconciliation opens one" {
			t.Errorf("English reconciles = %q", got)
		}
	})
}

// A SKU-wide diff with its open ticket is a neutral note on an order
// whose own rows agree, linking the ticket; once the order's hold is
// edited by hand, the order itself does not reconcile.
func TestOrderChainKeyTicketNote(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ordManualOrder(t, b)
		_, err := b.s.RunReconciliation(b.ctx, "test", "test")
		try(t, "reconcile", err)
		var ticket int64
		try(t, "ticket", b.s.R.Raw(`SELECT id FROM recon_diffs WHERE biz_key = 'sku-1' AND status <> 'RESOLVED'`).Scan(&ticket).Error)
		for lang, want := range map[bool]string{
			false: fmt.Sprintf("对得上 sku-1 有未解决的对账工单 #%d（与本订单无关）", ticket),
			true:  fmt.Sprintf("yes sku-1 has an open ticket #%d (not about this order)", ticket),
		} {
			inv := testidElement(getPage(t, b, "/orders/m-1", lang, http.StatusOK), "resource-inventory-sku-1")
			if got := markupText(testidElement(inv, "q-reconciles")); !strings.HasPrefix(got, want) {
				t.Errorf("reconciles = %q, want it to start %q", got, want)
			}
			if got := mustHref(t, testidElement(inv, "q-keyticket"), "q-ticket-HELD"); got != fmt.Sprintf("/recon/diffs/%d", ticket) {
				t.Errorf("the note links to %q", got)
			}
		}
		try(t, "edit hold", b.s.W.Exec("UPDATE order_holds SET released = 1 WHERE order_no = 'm-1' AND resource_type = 'inventory'").Error)
		inv := testidElement(getPage(t, b, "/orders/m-1", false, http.StatusOK), "resource-inventory-sku-1")
		if got, want := markupText(testidElement(inv, "q-reconciles")), "对不上 本订单仍占用：本订单账本 2，订单行 1"; !strings.HasPrefix(got, want) {
			t.Errorf("reconciles after the edit = %q, want it to start %q", got, want)
		}
	})
}

// The print view keeps the answers and drops the actions.
func TestOrderChainPrint(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ordManualOrder(t, b)
		body := getPage(t, b, "/orders/m-1", false, http.StatusOK)
		if !strings.Contains(testidElement(body, "print-link"), `href="/orders/m-1?print=1"`) || testidElement(body, "print-hint") != "" {
			t.Fatalf("screen view: print link %q, hint %q", testidElement(body, "print-link"), testidElement(body, "print-hint"))
		}
		for _, en := range []bool{false, true} {
			p := getPage(t, b, "/orders/m-1?print=1", en, http.StatusOK)
			if testidElement(p, "print-hint") == "" || testidElement(p, "reruns") != "" || testidElement(p, "print-link") != "" {
				t.Fatalf("print view (en=%v) shows actions or lacks the hint:\n%s", en, p)
			}
			if testidElement(p, "five-questions") == "" || testidElement(p, "timeline") == "" {
				t.Fatalf("print view lacks the answers")
			}
		}
	})
}

// Unknown orders are a 404 that says which number was not found; a number
// that cannot be one is a 400.
func TestOrderChainNotFound(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/orders/no-such-order", en, http.StatusNotFound)
			if !strings.Contains(markupText(testidElement(body, "order-not-found")), "no-such-order") {
				t.Fatalf("404 page does not name the order:\n%s", body)
			}
			getPage(t, b, "/orders/no-such-order/resources/inventory/rerun", en, http.StatusNotFound)
		}
		body := getPage(t, b, "/orders/bad%20no", false, http.StatusBadRequest)
		if !strings.Contains(body, "INVALID_INPUT") {
			t.Fatalf("bad order number page:\n%s", body)
		}
	})
}

// An order that is PENDING, and one that was paid, answer that nothing was
// or needs to be released and that everything reconciles.
func TestOrderChainPendingAndPaid(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		held := getPage(t, b, "/orders/held-1", false, http.StatusOK)
		for _, id := range []string{"resource-inventory-sku-1", "resource-quota-act-1", "resource-slot-seat-1"} {
			row := testidElement(held, id)
			if row == "" {
				t.Fatalf("held-1 lacks row %s:\n%s", id, held)
			}
			if got := markupText(testidElement(row, "q-released")); got != "否 订单未关闭，尚无需释放" {
				t.Errorf("%s released = %q", id, got)
			}
			if got := markupText(testidElement(row, "q-reconciles")); got != "对得上" {
				t.Errorf("%s reconciles = %q", id, got)
			}
		}
		if testidElement(held, "reruns") != "" {
			t.Errorf("a PENDING order offers a rerun")
		}
		paid := getPage(t, b, "/orders/paid-1", true, http.StatusOK)
		row := testidElement(paid, "resource-inventory-sku-1")
		if got := markupText(testidElement(row, "q-held")); got != "yes × 1 1 deducted by payment" {
			t.Errorf("paid held = %q", got)
		}
		if !strings.Contains(testidElement(paid, "timeline"), "Paid") {
			t.Errorf("paid timeline lacks the payment")
		}
	})
}

// The preview shows each task the rerun would make due, its last error and
// what the ledger already holds, and asks for a reason; with nothing to
// rerun it says so with a 409.
func TestRerunPreview(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := ordManualOrder(t, b)
		before := snapshot(t, b)
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/orders/m-1/resources/inventory/rerun", en, http.StatusOK)
			row := testidElement(body, "rerun-task-sku-1")
			if row == "" {
				t.Fatalf("no task row:\n%s", body)
			}
			lastErr := markupText(testidElement(row, "rerun-last-error"))
			said := map[bool]string{false: "库存 sku-1 当前占用少于订单 m-1 要释放的 2", true: "held amount is smaller than the release"}[en]
			if !strings.Contains(lastErr, said) || !strings.Contains(lastErr, map[bool]string{false: "锁定量不足", true: "LOCKED_SHORT"}[en]) {
				t.Errorf("last error = %q", lastErr)
			}
			if testidElement(row, "rerun-noop") != "" {
				t.Errorf("no RELEASE row exists, yet the preview says the rerun is a no-op")
			}
			form := testidElement(body, "rerun-form")
			for _, want := range []string{`method="post"`, `action="/orders/m-1/resources/inventory/rerun"`, `name="reason"`, "required", `maxlength="500"`, "data-confirm="} {
				if !strings.Contains(form, want) {
					t.Errorf("form lacks %s:\n%s", want, form)
				}
			}
		}
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/orders/m-1/resources/coupon/rerun", en, http.StatusConflict)
			if !strings.Contains(testidElement(body, "rerun-nothing"), "NOTHING_TO_RERUN") || testidElement(body, "rerun-form") != "" {
				t.Fatalf("nothing-to-rerun page:\n%s", body)
			}
			if !strings.Contains(testidElement(body, "rerun-back"), `href="/orders/m-1"`) {
				t.Errorf("no link back to the chain")
			}
		}
		getPage(t, b, "/orders/m-1/resources/stock/rerun", false, http.StatusBadRequest)
		before.sameExcept(t, snapshot(t, b), nil)

		// A task that the ledger already released: the preview names the row.
		tk := ordTask(t, b, models.ResCoupon)
		try(t, "plant", b.s.W.Exec("UPDATE release_tasks SET status = 'MANUAL' WHERE id = ?", tk.ID).Error)
		var flow struct {
			ID    int64
			Actor string
		}
		try(t, "flow", b.s.W.Raw("SELECT id, actor FROM coupon_flows WHERE order_no = 'm-1' AND type = 'RELEASE'").Scan(&flow).Error)
		body := getPage(t, b, "/orders/m-1/resources/coupon/rerun", false, http.StatusOK)
		noop := markupText(testidElement(testidElement(body, fmt.Sprintf("rerun-task-%d", cp)), "rerun-noop"))
		if !strings.Contains(noop, fmt.Sprintf("#%d", flow.ID)) || !strings.Contains(noop, flow.Actor) || !strings.Contains(noop, "不会再次释放") {
			t.Fatalf("no-op notice = %q, want ledger row #%d by %s", noop, flow.ID, flow.Actor)
		}
		// The rerun goes ahead, and the ledger stops the repeat.
		rec := postForm(b, "/orders/m-1/resources/coupon/rerun", url.Values{"reason": {"check the ledger stops it"}}, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("rerun = %d %s", rec.Code, rec.Body)
		}
		ordDrain(t, b)
		chain := getPage(t, b, "/orders/m-1", false, http.StatusOK)
		row := testidElement(chain, fmt.Sprintf("resource-coupon-%d", cp))
		if got := markupText(testidElement(row, "q-duplicates")); got != "另有 1 次重复释放被账本拦下" {
			t.Errorf("duplicates = %q", got)
		}
		if got := markupText(testidElement(row, "q-times")); !strings.HasPrefix(got, "1 次") {
			t.Errorf("times = %q, still one release", got)
		}
	})
}

// A rerun with a reason makes the MANUAL task due with trigger RERUN and
// keeps the reason, wakes the worker, and changes nothing else; a second
// one finds nothing to rerun; a missing or too long reason changes nothing.
func TestRerunSubmit(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ordManualOrder(t, b)
		path := "/orders/m-1/resources/inventory/rerun"
		before := snapshot(t, b)
		for _, reason := range []string{"", "  \t ", strings.Repeat("长", 501)} {
			rec := postForm(b, path, url.Values{"reason": {reason}}, false)
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != path {
				t.Fatalf("reason %q: %d to %q", reason, rec.Code, rec.Header().Get("Location"))
			}
			if f := ordFlash(t, rec); !strings.HasPrefix(f, "0|") || !strings.Contains(f, "未做任何更改") {
				t.Errorf("reason %q: flash %q", reason, f)
			}
		}
		before.sameExcept(t, snapshot(t, b), nil)
		if b.wakes.Load() != 0 {
			t.Fatalf("a refused rerun woke the worker")
		}
		if rec := postForm(b, "/orders/m-1/resources/stock/rerun", url.Values{"reason": {"x"}}, false); rec.Code != http.StatusBadRequest {
			t.Errorf("unknown type = %d", rec.Code)
		}
		if rec := postForm(b, "/orders/nope/resources/inventory/rerun", url.Values{"reason": {"x"}}, false); rec.Code != http.StatusNotFound ||
			!strings.Contains(rec.Body.String(), `data-testid="order-not-found"`) {
			t.Errorf("unknown order = %d", rec.Code)
		}
		if rec := postForm(b, "/orders/nope/resources/inventory/rerun", url.Values{}, false); rec.Code != http.StatusNotFound {
			t.Errorf("unknown order without a reason = %d", rec.Code)
		}
		before.sameExcept(t, snapshot(t, b), nil)

		others := func() string {
			var rows []map[string]any
			try(t, "tasks", b.s.W.Raw("SELECT * FROM release_tasks WHERE resource_type <> 'inventory' ORDER BY id").Scan(&rows).Error)
			return fmt.Sprint(rows)
		}
		before, otherTasks := snapshot(t, b), others()
		b.clock.Advance(time.Minute)
		rec := postForm(b, path, url.Values{"reason": {"  locked stock corrected, ticket 42  "}}, false)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/orders/m-1" {
			t.Fatalf("rerun = %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		if f := ordFlash(t, rec); f != "1|1 个任务已重新排队" {
			t.Errorf("flash = %q", f)
		}
		if b.wakes.Load() != 1 {
			t.Errorf("wakes = %d, want 1", b.wakes.Load())
		}
		tk := ordTask(t, b, models.ResInventory)
		if tk.Status != models.TaskPending || tk.Trigger != models.TriggerRerun || tk.RerunReason != "locked stock corrected, ticket 42" ||
			tk.RerunBy != "root" || !tk.NextAt.Equal(b.clock.Now()) {
			t.Errorf("task after rerun = %+v", tk)
		}
		after := snapshot(t, b)
		before.rows["release_tasks"], after.rows["release_tasks"] = "", ""
		before.sameExcept(t, after, map[string]int64{"audit_log": 1})
		if others() != otherTasks {
			t.Errorf("the rerun changed tasks of other resources")
		}

		// The chain shows the flash once, and no Rerun button any more.
		req := httptest.NewRequest(http.MethodGet, "/orders/m-1", nil)
		for _, ck := range rec.Result().Cookies() {
			req.AddCookie(ck)
		}
		page := b.serve(req).Body.String()
		if got := markupText(testidElement(page, "flash")); got != "1 个任务已重新排队" {
			t.Errorf("flash on the chain = %q", got)
		}
		if testidElement(page, "reruns") != "" {
			t.Errorf("Rerun still offered for a PENDING task")
		}
		if got := markupText(testidElement(page, "audit-reason")); !strings.Contains(got, "locked stock corrected, ticket 42") {
			t.Errorf("audit reason = %q", got)
		}

		// A second click finds nothing to rerun and changes nothing but the audit.
		before = snapshot(t, b)
		rec = postForm(b, path, url.Values{"reason": {"again"}}, false)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/orders/m-1" {
			t.Fatalf("second rerun = %d to %q", rec.Code, rec.Header().Get("Location"))
		}
		if f := ordFlash(t, rec); !strings.HasPrefix(f, "0|") || !strings.Contains(f, "NOTHING_TO_RERUN") {
			t.Errorf("second flash = %q", f)
		}
		before.sameExcept(t, snapshot(t, b), map[string]int64{"audit_log": 1})
		if b.wakes.Load() != 1 {
			t.Errorf("a refused rerun woke the worker")
		}
		if f := ordFlash(t, postForm(b, path, url.Values{"reason": {"again"}}, true)); !strings.Contains(f, "Nothing to rerun") {
			t.Errorf("English flash = %q", f)
		}

		// The worker tries again; the stock is still short, and the attempt keeps the reason.
		ordDrain(t, b)
		chain := getPage(t, b, "/orders/m-1", false, http.StatusOK)
		if got := markupText(testidElement(chain, "attempt-note")); !strings.Contains(got, "locked stock corrected, ticket 42") {
			t.Errorf("attempt note = %q", got)
		}
		if testidElement(chain, "rerun-inventory") == "" {
			t.Errorf("MANUAL again, yet no Rerun button")
		}
	})
}

// ordPlace places n orders of users u1 and u2 in turn, a second apart.
func ordPlace(t *testing.T, b bundle, n int, prefix string) {
	t.Helper()
	for i := range n {
		b.clock.Advance(time.Second)
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: fmt.Sprintf("%s%03d", prefix, i),
			UserID: []string{"u1", "u2"}[i%2], Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
		try(t, "place", err)
	}
}

// ordRows are the order numbers a list page shows.
func ordRows(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`data-testid="order-row" data-order="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// Following "next page" links walks 120 orders in three pages, newest
// first, each once; the links keep the filters.
func TestOrdersListPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test")
		try(t, "stock", err)
		ordPlace(t, b, 120, "p-")
		for _, sort := range []string{"", "old"} {
			path := "/orders"
			if sort != "" {
				path += "?sort=" + sort
			}
			var got []string
			pages := 0
			for path != "" {
				body := getPage(t, b, path, pages%2 == 1, http.StatusOK)
				pages++
				rows := ordRows(body)
				if pages < 3 && len(rows) != 50 {
					t.Fatalf("page %d has %d rows", pages, len(rows))
				}
				got = append(got, rows...)
				next := testidElement(body, "next-page")
				path = ""
				if next != "" {
					path = html.UnescapeString(regexp.MustCompile(`href="([^"]+)"`).FindStringSubmatch(next)[1])
					if sort != "" && !strings.Contains(path, "sort=old") {
						t.Fatalf("next link drops the sort: %s", path)
					}
				}
				if pages > 1 && testidElement(body, "first-page") == "" {
					t.Errorf("page %d has no link to the first", pages)
				}
				if pages > 5 {
					t.Fatal("too many pages")
				}
			}
			if pages != 3 || len(got) != 120 {
				t.Fatalf("sort %q: %d pages, %d rows", sort, pages, len(got))
			}
			for i, no := range got {
				want := fmt.Sprintf("p-%03d", 119-i)
				if sort == "old" {
					want = fmt.Sprintf("p-%03d", i)
				}
				if no != want {
					t.Fatalf("sort %q: row %d is %s, want %s (a gap or a duplicate)", sort, i, no, want)
				}
			}
		}
		// A user's orders, across pages, keep the user in the link.
		body := getPage(t, b, "/orders?user=u2&status=PENDING", false, http.StatusOK)
		if rows := ordRows(body); len(rows) != 50 || rows[0] != "p-119" {
			t.Fatalf("u2 rows = %v", rows)
		}
		next := html.UnescapeString(testidElement(body, "next-page"))
		if !strings.Contains(next, "user=u2") || !strings.Contains(next, "status=PENDING") {
			t.Fatalf("next link drops the filters: %s", next)
		}
	})
}

// Every filter narrows the list; a pasted number is trimmed; dates are days
// in the shop's time zone (here UTC), whatever the viewer's; a bad filter is
// a 400 that says why.
func TestOrdersListFilters(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test")
		try(t, "stock", err)
		// The clock starts at 10:00 UTC on 2026-11-29: o-000 and o-001 then,
		// o-002 at 15:30 UTC (23:30 in Shanghai), o-003 at 16:30 UTC (00:30
		// on the 30th in Shanghai).
		ordPlace(t, b, 2, "o-")
		b.clock.Advance(5*time.Hour + 30*time.Minute - 2*time.Second)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-002", UserID: "u3", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
		try(t, "place", err)
		b.clock.Advance(time.Hour)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-003", UserID: "u3", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
		try(t, "place", err)
		_, err = b.s.CloseOrder(b.ctx, "o-001", models.TriggerAdmin, "test")
		try(t, "close", err)
		_, err = b.s.PayOrder(b.ctx, "o-000", "txn-0")
		try(t, "pay", err)

		cases := []struct {
			query string
			tz    string
			want  []string
		}{
			{"", "", []string{"o-003", "o-002", "o-001", "o-000"}},
			{"no=" + url.QueryEscape("\u3000 o-002\t \n"), "", []string{"o-002"}},
			{"no=o-00", "", nil},
			{"user=u3", "", []string{"o-003", "o-002"}},
			{"user=u3&sort=old", "", []string{"o-002", "o-003"}},
			{"status=CLOSED", "", []string{"o-001"}},
			{"status=PAID&user=u1", "", []string{"o-000"}},
			{"status=PAID&user=u2", "", nil},
			{"from=2026-11-29&to=2026-11-29", "", []string{"o-003", "o-002", "o-001", "o-000"}},
			{"from=2026-11-29&to=2026-11-29", "Asia/Shanghai", []string{"o-003", "o-002", "o-001", "o-000"}},
			{"from=2026-11-30", "Asia/Shanghai", nil},
			{"to=2026-11-28", "", nil},
		}
		for _, c := range cases {
			rec := servePage(b, "/orders?"+c.query, "", c.tz)
			if rec.Code != http.StatusOK {
				t.Fatalf("%s = %d", c.query, rec.Code)
			}
			got := ordRows(rec.Body.String())
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s (tz %s): %v, want %v", c.query, c.tz, got, c.want)
			}
			if len(c.want) == 0 && testidElement(rec.Body.String(), "orders-empty") == "" {
				t.Errorf("%s: no empty state", c.query)
			}
		}
		empty := getPage(t, b, "/orders?no=nope", true, http.StatusOK)
		if got := markupText(testidElement(empty, "orders-empty")); !strings.Contains(got, "nope") {
			t.Errorf("empty state = %q, want it to name the number", got)
		}
		// The form shows the search it ran.
		form := testidElement(getPage(t, b, "/orders?user=u3&status=CLOSED&sort=old", false, http.StatusOK), "orders-filters")
		for _, want := range []string{`name="user" value="u3"`, `value="CLOSED" selected`, `value="old" selected`} {
			if !strings.Contains(form, want) {
				t.Errorf("form lacks %s", want)
			}
		}
		for _, bad := range []string{"status=paid", "after=zzz", "after=1.-5", "from=29/11/2026", "to=2026-13-01",
			"from=2026-11-30&to=2026-11-29", "sort=up", "no=" + url.QueryEscape("订单 1"), "user=" + url.QueryEscape("a b")} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, "/orders?"+bad, en, http.StatusBadRequest)
				if !strings.Contains(testidElement(body, "error-message"), map[bool]string{false: "请求有误", true: "not valid"}[en]) {
					t.Errorf("%s: error page does not say why:\n%s", bad, body)
				}
			}
		}
	})
}

// The chain page of the MANUAL order, on the fixed test clock, matches the
// golden file; refresh it with go test ./web/ -run Golden -update.
func TestOrderChainGolden(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		ordManualOrder(t, b)
		checkGolden(t, "order_chain.golden.html", getPage(t, b, "/orders/m-1", false, http.StatusOK))
	})
}
