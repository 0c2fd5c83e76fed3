package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// reconPlanted is what reconPlant broke.
type reconPlanted struct {
	coupon int64
}

// reconPlant builds a small shop through the domain and breaks it by hand:
// sku-h's locked raised by 3 over what PENDING order p-1 holds (a hand
// edit: a missed release); sku-n's lock of PENDING order p-2 given back to
// available (a double release); u1's coupon left LOCKED after order c-1
// was closed and released; u1's frozen balance raised by 7.
func reconPlant(t *testing.T, b bundle) reconPlanted {
	t.Helper()
	for _, sku := range []string{"sku-h", "sku-n"} {
		_, err := b.s.SetStock(b.ctx, sku, 10, 0, "test")
		try(t, "stock "+sku, err)
	}
	cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
	try(t, "coupon", err)
	_, err = b.s.Credit(b.ctx, "u1", models.AssetBalance, 100, "test")
	try(t, "credit", err)
	for _, r := range []models.PlaceRequest{
		{OrderNo: "p-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-h", Qty: 2}}},
		{OrderNo: "p-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-n", Qty: 1}}},
		{OrderNo: "c-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-h", Qty: 1}}, CouponIDs: []int64{cp.ID}},
	} {
		_, _, err := b.s.PlaceOrder(b.ctx, r)
		try(t, "place "+r.OrderNo, err)
	}
	_, err = b.s.CloseOrder(b.ctx, "c-1", models.TriggerUserCancel, "u1")
	try(t, "close c-1", err)
	drain(t, b)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE inventory SET locked = locked + 3 WHERE sku_id = 'sku-h'", nil},
		{"UPDATE inventory SET locked = locked - 1, available = available + 1 WHERE sku_id = 'sku-n'", nil},
		{"UPDATE user_coupons SET status = 'LOCKED', order_no = ? WHERE id = ?", []any{"c-1", cp.ID}},
		{"UPDATE accounts SET frozen = frozen + 7 WHERE uid = 'u1' AND asset = 'BALANCE'", nil},
	} {
		try(t, "plant", b.s.W.Exec(q.sql, q.args...).Error)
	}
	return reconPlanted{coupon: cp.ID}
}

// reconRepair undoes what reconPlant broke.
func reconRepair(t *testing.T, b bundle, pl reconPlanted) {
	t.Helper()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{"UPDATE inventory SET locked = locked - 3 WHERE sku_id = 'sku-h'", nil},
		{"UPDATE inventory SET locked = locked + 1, available = available - 1 WHERE sku_id = 'sku-n'", nil},
		{"UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", []any{pl.coupon}},
		{"UPDATE accounts SET frozen = frozen - 7 WHERE uid = 'u1' AND asset = 'BALANCE'", nil},
	} {
		try(t, "repair", b.s.W.Exec(q.sql, q.args...).Error)
	}
}

// reconAnswer is the answer of POST /api/v1/reconcile.
type reconAnswer struct {
	Run       models.ReconRun     `json:"run"`
	Tickets   []models.DiffTicket `json:"tickets"`
	OpenDiffs map[string]int64    `json:"open_diffs"`
}

// reconTicket reads the newest ticket of a resource key and check.
func reconTicket(t *testing.T, b bundle, typ models.ResourceType, key, check string) models.DiffTicket {
	t.Helper()
	var d models.DiffTicket
	try(t, fmt.Sprintf("ticket %s %s %s", typ, key, check), b.s.R.
		Where("resource_type = ? AND biz_key = ? AND check_name = ?", typ, key, check).Order("id DESC").Take(&d).Error)
	return d
}

// reconRow is the list row of ticket id, or "" when the page lacks it.
func reconRow(body string, id int64) string {
	i := strings.Index(body, `data-testid="recon-ticket" data-diff-id="`+strconv.FormatInt(id, 10)+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	return body[start : i+strings.Index(body[i:], "</tr>")]
}

var reconIDsRE = regexp.MustCompile(`data-testid="recon-ticket" data-diff-id="(\d+)"`)

// reconRowIDs are the ticket ids a list page shows, in order.
func reconRowIDs(body string) []int64 {
	var ids []int64
	for _, m := range reconIDsRE.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

var reconOrderRE = regexp.MustCompile(`data-testid="ticket-order" href="([^"]*)"`)

// reconOrderLinks are the order links of a row.
func reconOrderLinks(row string) []string {
	var out []string
	for _, m := range reconOrderRE.FindAllStringSubmatch(row, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// reconFlash follows a POST and checks the flash it left: ok or error, and
// its text.
func reconFlash(t *testing.T, b bundle, rec *httptest.ResponseRecorder, en bool, wantTo string, ok bool, text string) string {
	t.Helper()
	to, body := followPost(t, b, rec, en)
	if to != wantTo {
		t.Fatalf("redirected to %q, want %q", to, wantTo)
	}
	tag := testidTag(body, "flash")
	if tag == "" || strings.Contains(tag, `"flash ok"`) != ok {
		t.Fatalf("flash tag %q, want ok=%v", tag, ok)
	}
	checkText(t, body, "flash", text)
	return body
}

// auditCount counts the audit rows of one action.
func auditCount(t *testing.T, b bundle, action string) int64 {
	t.Helper()
	var n int64
	try(t, "count audit", b.s.R.Model(&models.AuditEntry{}).Where("action = ?", action).Count(&n).Error)
	return n
}

// Before any run the page says how reconciliation runs and offers the button.
func TestReconPageBeforeAnyRun(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		body := getPageBoth(t, b, "/recon", "", http.StatusOK)
		requireText(t, body, "recon-no-run", "还没有运行过对账。对账每天 03:00 自动运行（时间可配置），也可随时运行：点上面的按钮、执行 unhold reconcile，或调用 POST /api/v1/reconcile。")
		requireElement(t, body, "recon-run", true)
		requireElement(t, body, "recon-runs", false)
		requireElement(t, body, "recon-tickets-empty", true)
		en := getPage(t, b, "/recon", true, http.StatusOK)
		if got, _ := testidText(en, "recon-no-run"); !strings.Contains(got, "runs daily at 03:00") {
			t.Errorf("English empty state = %q", got)
		}
	})
}

// POST /api/v1/reconcile runs synchronously and answers the run and the
// open tickets; the page then lists each planted diff with its sign, its
// links and its orders.
func TestReconAPIAndPage(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		pl := reconPlant(t, b)
		got := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		r := got.Run
		if r.ID == 0 || r.Trigger != models.ReconByAPI || r.Actor != "token:root" || r.Status != models.ReconDone ||
			r.FinishedAt == nil || r.Found < 5 || r.Opened != int64(len(got.Tickets)) || r.Opened < 4 || r.Opened >= r.Found || r.Closed != 0 {
			t.Fatalf("run = %+v", r)
		}
		for _, rt := range models.ResourceTypes {
			if _, ok := got.OpenDiffs[string(rt)]; !ok {
				t.Errorf("open_diffs lacks %s: %v", rt, got.OpenDiffs)
			}
		}
		if got.OpenDiffs["inventory"] < 2 || got.OpenDiffs["coupon"] < 1 || got.OpenDiffs["balance"] < 1 || got.OpenDiffs["quota"] != 0 {
			t.Errorf("open_diffs = %v", got.OpenDiffs)
		}
		// An empty object is as good as no body; a second run keeps the same tickets.
		again := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "{}")
		if again.Run.ID <= r.ID || again.Run.Opened != 0 || again.Run.Found != r.Found || !reflect.DeepEqual(again.OpenDiffs, got.OpenDiffs) {
			t.Fatalf("second run = %+v, open %v", again.Run, again.OpenDiffs)
		}

		held := reconTicket(t, b, models.ResInventory, "sku-h", models.CheckHeld)
		neg := reconTicket(t, b, models.ResInventory, "sku-n", models.CheckHeld)
		coupon := reconTicket(t, b, models.ResCoupon, strconv.FormatInt(pl.coupon, 10), models.CheckHeld)
		frozen := reconTicket(t, b, models.ResBalance, "u1", models.CheckHeld)
		if held.Sign != 1 || held.Expected != 2 || held.Actual != 5 || held.Orders != "p-1" ||
			neg.Sign != -1 || neg.Expected != 1 || neg.Actual != 0 || neg.Orders != "p-2" ||
			coupon.Sign != 1 || coupon.Expected != 0 || coupon.Actual != 1 || frozen.Sign != 1 || frozen.Actual-frozen.Expected != 7 {
			t.Fatalf("tickets:\n%+v\n%+v\n%+v\n%+v", held, neg, coupon, frozen)
		}

		body := getPageBoth(t, b, "/recon", "", http.StatusOK)
		requireElement(t, body, "recon-no-run", false)
		if got, want := markupText(testidElement(body, "recon-tickets-total")), fmt.Sprintf("共 %d 张工单", len(reconRowIDs(body))); got != want {
			t.Errorf("tickets total = %q, want %q", got, want)
		}
		run := testidElement(body, "recon-runs")
		for _, want := range []string{`data-run-id="` + strconv.FormatInt(again.Run.ID, 10) + `"`, "token:root", "完成"} {
			if !strings.Contains(run, want) {
				t.Errorf("runs table lacks %q:\n%s", want, run)
			}
		}
		type rowWant struct {
			d               models.DiffTicket
			key, delta, sig string
			orders          []string
		}
		for _, w := range []rowWant{
			{held, "/inventory/sku-h", "+3", "多出：漏释放", []string{"/orders/p-1"}},
			{neg, "/inventory/sku-n", "−1", "短少：重复释放或状态回滚", []string{"/orders/p-2"}},
			{coupon, "/coupons?coupon=" + strconv.FormatInt(pl.coupon, 10), "+1", "多出：漏释放", nil},
			{frozen, "/balances?asset=BALANCE&user=u1", "+7", "多出：漏释放", nil},
		} {
			row := reconRow(body, w.d.ID)
			if row == "" {
				t.Errorf("ticket %d (%s %s) not listed", w.d.ID, w.d.ResourceType, w.d.BizKey)
				continue
			}
			if href := mustHref(t, row, "ticket-key"); href != w.key {
				t.Errorf("ticket %d key link %q, want %q", w.d.ID, href, w.key)
			}
			if href := mustHref(t, row, "ticket-link"); href != "/recon/diffs/"+strconv.FormatInt(w.d.ID, 10) {
				t.Errorf("ticket %d link %q", w.d.ID, href)
			}
			checkText(t, row, "ticket-delta", w.delta)
			checkText(t, row, "ticket-sign", w.sig)
			checkText(t, row, "ticket-status", "待处理")
			if got := reconOrderLinks(row); !reflect.DeepEqual(got, w.orders) {
				t.Errorf("ticket %d orders %v, want %v", w.d.ID, got, w.orders)
			}
			if !strings.Contains(row, "占用量") {
				t.Errorf("ticket %d check not named:\n%s", w.d.ID, row)
			}
		}
		// The key's other checks are on its one ticket, each named and explained.
		heldRow := reconRow(body, held.ID)
		if checks := testidElement(heldRow, "ticket-checks"); !strings.Contains(checks, "总量守恒") ||
			!strings.Contains(checks, `title="可用 + 占用 + 已用`) || strings.Count(checks, "<span") != 3 {
			t.Errorf("sku-h's ticket does not name and explain its three checks:\n%s", checks)
		}
		// The summary counts the open tickets by resource and sign and links to them.
		var open []models.DiffTicket
		try(t, "open tickets", b.s.R.Where("status = ?", models.DiffOpen).Order("id DESC").Find(&open).Error)
		pos, negN := 0, 0
		for _, d := range open {
			if d.ResourceType == models.ResInventory {
				if d.Sign > 0 {
					pos++
				} else {
					negN++
				}
			}
		}
		inv := testidElement(body, "recon-summary-inventory")
		checkText(t, inv, "summary-pos", strconv.Itoa(pos))
		checkText(t, inv, "summary-neg", strconv.Itoa(negN))
		link := mustHref(t, inv, "summary-neg")
		u, _ := url.Parse(link)
		if u.Path != "/recon" || u.Query().Get("resource") != "inventory" || u.Query().Get("sign") != "-1" {
			t.Fatalf("summary link %q", link)
		}
		negPage := getPage(t, b, link, false, http.StatusOK)
		ids := reconRowIDs(negPage)
		if len(ids) != negN || !slicesHas(ids, neg.ID) || slicesHas(ids, held.ID) {
			t.Errorf("negative inventory list %v, want %d tickets with %d and without %d", ids, negN, neg.ID, held.ID)
		}
		if _, ok := testidText(body, "recon-summary-quota"); ok {
			t.Error("quota has no diff but a summary row")
		}
		if legend := markupText(testidElement(getPage(t, b, "/recon", true, http.StatusOK), "recon-sign-legend")); !strings.Contains(legend, "− Actual below expected. On the held amount (HELD) that is a double release or rolled-back state") {
			t.Errorf("English sign legend = %q", legend)
		}
	})
}

func slicesHas(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// The API refuses any body but nothing or {}.
func TestReconAPIRefusesBodies(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, body := range []string{`{"force":true}`, `null`, `[]`, `{} {}`, `{`} {
			wantError(t, b.call(http.MethodPost, "/api/v1/reconcile", body), http.StatusBadRequest, "INVALID_INPUT")
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1/reconcile", strings.NewReader("go"))
		req.Header.Set("Content-Type", "text/plain")
		wantError(t, b.serve(req), http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE")
		var n int64
		try(t, "count runs", b.s.R.Model(&models.ReconRun{}).Count(&n).Error)
		if n != 0 {
			t.Fatalf("%d runs after refused requests", n)
		}
		wantError(t, b.call(http.MethodGet, "/api/v1/reconcile", ""), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	})
}

// waitRun waits until a run newer than after has finished, and returns it.
func waitRun(t *testing.T, b bundle, after int64) models.ReconRun {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var runs []models.ReconRun
		try(t, "runs", b.s.R.Where("id > ? AND status <> ?", after, models.ReconRunning).Order("id").Find(&runs).Error)
		if len(runs) > 0 {
			return runs[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the background run did not finish in 20 s")
	return models.ReconRun{}
}

// The button audits the request, runs in the background and says so; a
// second press while a run is RUNNING starts nothing, unless that run is
// stale.
func TestReconRunButton(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		reconPlant(t, b)
		body := reconFlash(t, b, postForm(b, "/recon/run", nil, false), false, "/recon", true, "对账已开始，稍后刷新本页查看结果。")
		requireElement(t, body, "recon-run", true)
		run := waitRun(t, b, 0)
		if run.Trigger != models.ReconByOps || run.Actor != "root" || run.Status != models.ReconDone || run.Found < 5 {
			t.Fatalf("run = %+v", run)
		}
		if n := auditCount(t, b, "recon_run_now"); n != 1 {
			t.Fatalf("%d recon_run_now audit rows", n)
		}
		var e models.AuditEntry
		try(t, "audit", b.s.R.Where("action = ?", "recon_run_now").Take(&e).Error)
		if e.Actor != "root" || e.Outcome != "ok" {
			t.Errorf("audit = %+v", e)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(b.logs.String(), fmt.Sprintf("run_id=%d", run.ID)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if logs := b.logs.String(); !strings.Contains(logs, "reconciliation run") || !strings.Contains(logs, fmt.Sprintf("run_id=%d", run.ID)) {
			t.Errorf("the run was not logged:\n%s", logs)
		}
		page := getPageBoth(t, b, "/recon", "", http.StatusOK)
		row := testidElement(page, "recon-run-row")
		if !strings.Contains(row, "后台按钮") || !strings.Contains(row, "root") {
			t.Errorf("run row:\n%s", row)
		}
		checkText(t, row, "run-found", strconv.FormatInt(run.Found, 10))
		if len(reconRowIDs(page)) != int(run.Opened) {
			t.Errorf("page lists %d tickets, the run opened %d", len(reconRowIDs(page)), run.Opened)
		}

		// A run still RUNNING keeps the button from starting another.
		stuck := models.ReconRun{Trigger: models.ReconByCron, Status: models.ReconRunning, StartedAt: b.clock.Now().Add(time.Second)}
		try(t, "plant a running run", b.s.W.Create(&stuck).Error)
		b.clock.Advance(2 * time.Second)
		en := reconFlash(t, b, postForm(b, "/recon/run", nil, true), true, "/recon", false,
			fmt.Sprintf("Run #%d is still running, so no second run was started. Refresh in a moment.", stuck.ID))
		requireElement(t, en, "recon-running", true)
		if n := auditCount(t, b, "recon_run_now"); n != 1 {
			t.Fatalf("%d recon_run_now audit rows after a refused press", n)
		}
		// Past models.ReconAbandoned it is taken for dead.
		b.clock.Advance(models.ReconAbandoned)
		reconFlash(t, b, postForm(b, "/recon/run", nil, true), true, "/recon", true, "Reconciliation started — refresh in a moment.")
		if next := waitRun(t, b, stuck.ID); next.Status != models.ReconDone || next.Actor != "root" {
			t.Fatalf("run after the stale one = %+v", next)
		}
	})
}

// A ticket is acknowledged, then resolved, through its page's forms; each
// step is audited and flashed, and a move its status does not allow is
// refused with the reason.
func TestReconTicketWorkflow(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		reconPlant(t, b)
		must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		d := reconTicket(t, b, models.ResInventory, "sku-h", models.CheckHeld)
		path := "/recon/diffs/" + strconv.FormatInt(d.ID, 10)

		body := getPageBoth(t, b, path, "", http.StatusOK)
		checkText(t, body, "diff-status", "待处理")
		checkText(t, body, "diff-expected", "2")
		checkText(t, body, "diff-actual", "5")
		checkText(t, body, "ticket-delta", "+3")
		checkText(t, body, "ticket-sign", "多出：漏释放")
		if href := mustHref(t, body, "ticket-key"); href != "/inventory/sku-h" {
			t.Errorf("key link %q", href)
		}
		if got := reconOrderLinks(body); !reflect.DeepEqual(got, []string{"/orders/p-1"}) {
			t.Errorf("order links %v", got)
		}
		requireElement(t, body, "diff-ack-form", true)
		requireElement(t, body, "diff-resolve-form", true)
		requireElement(t, body, "diff-closed", false)
		if !strings.Contains(testidElement(body, "diff-history"), `data-kind="found"`) {
			t.Errorf("history lacks the finding run:\n%s", testidElement(body, "diff-history"))
		}

		// Acknowledge, with a note.
		ackPath := path + "/ack"
		body = reconFlash(t, b, postForm(b, ackPath, url.Values{"note": {"  looking into it "}}, false), false, path, true,
			fmt.Sprintf("工单 #%d 已确认。", d.ID))
		checkText(t, body, "diff-status", "已确认")
		if got, _ := testidText(body, "diff-acked"); !strings.HasPrefix(got, "root") {
			t.Errorf("acked by %q", got)
		}
		checkText(t, body, "event-note", "looking into it")
		requireElement(t, body, "diff-ack-form", false)
		requireElement(t, body, "diff-resolve-form", true)
		if n := auditCount(t, b, "diff_ack"); n != 1 {
			t.Fatalf("%d diff_ack audit rows", n)
		}

		// A second acknowledgement is refused, saying why; nothing changes.
		before := reconTicket(t, b, models.ResInventory, "sku-h", models.CheckHeld)
		reconFlash(t, b, postForm(b, ackPath, url.Values{"note": {"me too"}}, false), false, path, false,
			fmt.Sprintf("工单 #%d 已由 root 确认过，不能再次确认；处理完后请填写说明并“解决”。未做任何更改。", d.ID))
		reconFlash(t, b, postForm(b, ackPath, nil, true), true, path, false,
			fmt.Sprintf("Ticket #%d was already acknowledged by root and cannot be acknowledged again; resolve it with a note once it is handled. Nothing was changed.", d.ID))
		// Resolving without a note is refused; nothing changes.
		reconFlash(t, b, postForm(b, path+"/resolve", url.Values{"note": {"   "}}, false), false, path, false,
			"解决工单需要填写处理说明。未做任何更改。")
		reconFlash(t, b, postForm(b, path+"/resolve", url.Values{"note": {strings.Repeat("长", 1001)}}, true), true, path, false,
			"The note may be at most 1000 characters. Nothing was changed.")
		if after := reconTicket(t, b, models.ResInventory, "sku-h", models.CheckHeld); !reflect.DeepEqual(after, before) {
			t.Fatalf("a refused move changed the ticket:\n%+v\n%+v", before, after)
		}
		if n := auditCount(t, b, "diff_ack") + auditCount(t, b, "diff_resolve"); n != 1 {
			t.Fatalf("%d ticket audit rows after refusals", n)
		}

		// Resolve, with what was done.
		body = reconFlash(t, b, postForm(b, path+"/resolve", url.Values{"note": {"released by hand"}}, true), true, path, true,
			fmt.Sprintf("Ticket #%d resolved.", d.ID))
		checkText(t, body, "diff-status", "RESOLVED")
		requireElement(t, body, "diff-ack-form", false)
		requireElement(t, body, "diff-resolve-form", false)
		requireElement(t, body, "diff-closed", true)
		hist := testidElement(body, "diff-history")
		for _, want := range []string{`data-kind="found"`, `data-kind="ack"`, `data-kind="resolve"`, "released by hand", "resolved by root"} {
			if !strings.Contains(hist, want) {
				t.Errorf("history lacks %q:\n%s", want, hist)
			}
		}
		var e models.AuditEntry
		try(t, "audit", b.s.R.Where("action = ?", "diff_resolve").Take(&e).Error)
		if e.Actor != "root" || e.Reason != "released by hand" || e.Target != fmt.Sprintf("diff:%d", d.ID) {
			t.Errorf("audit = %+v", e)
		}
		reconFlash(t, b, postForm(b, path+"/resolve", url.Values{"note": {"again"}}, false), false, path, false,
			fmt.Sprintf("工单 #%d 已由 root 解决，无需再处理。未做任何更改。", d.ID))

		// The resolved ticket leaves the default list and shows under RESOLVED.
		list := getPage(t, b, "/recon", false, http.StatusOK)
		if reconRow(list, d.ID) != "" {
			t.Error("a resolved ticket is in the default list")
		}
		resolved := getPage(t, b, "/recon?status=RESOLVED", false, http.StatusOK)
		checkText(t, reconRow(resolved, d.ID), "ticket-status", "已解决")
	})
}

// Once the planted data is fixed, the next run closes the tickets
// automatically, and the pages say so.
func TestReconAutoClose(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		pl := reconPlant(t, b)
		first := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		d := reconTicket(t, b, models.ResCoupon, strconv.FormatInt(pl.coupon, 10), models.CheckHeld)
		path := "/recon/diffs/" + strconv.FormatInt(d.ID, 10)
		reconFlash(t, b, postForm(b, path+"/ack", nil, false), false, path, true, fmt.Sprintf("工单 #%d 已确认。", d.ID))

		reconRepair(t, b, pl)
		b.clock.Advance(time.Minute)
		second := must[reconAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		if second.Run.Found != 0 || second.Run.Closed != first.Run.Opened {
			t.Fatalf("second run = %+v after the repair, first found %d", second.Run, first.Run.Found)
		}
		for rt, n := range second.OpenDiffs {
			if n != 0 {
				t.Errorf("%s has %d open tickets after the repair", rt, n)
			}
		}
		list := getPageBoth(t, b, "/recon", "", http.StatusOK)
		requireElement(t, list, "recon-tickets-empty", true)
		requireText(t, list, "recon-summary-empty", "没有未解决的差异：最近一次对账全部对得上。")
		checkText(t, testidElement(list, "recon-run-row"), "run-closed", strconv.FormatInt(first.Run.Opened, 10))

		var coupons []int64
		try(t, "coupon tickets", b.s.R.Model(&models.DiffTicket{}).Where("resource_type = ?", models.ResCoupon).
			Order("id DESC").Pluck("id", &coupons).Error)
		resolved := getPage(t, b, "/recon?status=RESOLVED&resource=coupon", false, http.StatusOK)
		if !slicesHas(coupons, d.ID) || !reflect.DeepEqual(reconRowIDs(resolved), coupons) {
			t.Fatalf("resolved coupon tickets %v, want %v", reconRowIDs(resolved), coupons)
		}
		for _, id := range coupons {
			checkText(t, reconRow(resolved, id), "ticket-auto", "差异消失，自动关闭")
		}

		body := getPageBoth(t, b, path, "", http.StatusOK)
		checkText(t, body, "diff-status", "已解决")
		requireText(t, body, "diff-auto-closed", fmt.Sprintf("此工单已自动关闭：对账 #%d 中差异已消失。", second.Run.ID))
		if !strings.Contains(testidElement(body, "diff-history"), `data-kind="auto"`) {
			t.Errorf("history lacks the automatic close:\n%s", testidElement(body, "diff-history"))
		}
		requireElement(t, body, "diff-closed", true)
		en := getPage(t, b, path, true, http.StatusOK)
		checkText(t, en, "diff-auto-closed", fmt.Sprintf("This ticket was closed automatically: the diff was gone in run #%d.", second.Run.ID))
		// Acting on it now says it closed itself.
		reconFlash(t, b, postForm(b, path+"/resolve", url.Values{"note": {"late"}}, false), false, path, false,
			fmt.Sprintf("工单 #%d 已自动关闭：之后的对账中差异已消失，无需再处理。未做任何更改。", d.ID))
	})
}

// The list pages through exactly the tickets each filter keeps, newest
// first, by the next-page links.
func TestReconListPages(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 60 {
			_, err := b.s.SetStock(b.ctx, fmt.Sprintf("k-%02d", i), 10, 0, "test")
			try(t, "stock", err)
		}
		try(t, "plant", b.s.W.Exec("UPDATE inventory SET locked = locked + 1 WHERE sku_id LIKE 'k-%'").Error)
		reconPlant(t, b)
		_, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		try(t, "run", err)
		var all []models.DiffTicket
		try(t, "tickets", b.s.R.Order("id DESC").Find(&all).Error)
		if len(all) <= models.DiffPageSize {
			t.Fatalf("only %d tickets: not enough for two pages", len(all))
		}
		try(t, "ack", b.s.AckDiff(b.ctx, all[3].ID, "ops:t", ""))
		try(t, "resolve", b.s.ResolveDiff(b.ctx, all[4].ID, "ops:t", "ok"))
		try(t, "tickets", b.s.R.Order("id DESC").Find(&all).Error)
		for _, c := range []struct {
			path string
			keep func(models.DiffTicket) bool
		}{
			{"/recon", func(d models.DiffTicket) bool { return d.Status != models.DiffResolved }},
			{"/recon?status=OPEN&status=ACKED&status=RESOLVED", func(models.DiffTicket) bool { return true }},
			{"/recon?status=RESOLVED", func(d models.DiffTicket) bool { return d.Status == models.DiffResolved }},
			{"/recon?resource=inventory&sign=1", func(d models.DiffTicket) bool {
				return d.Status != models.DiffResolved && d.ResourceType == models.ResInventory && d.Sign == 1
			}},
			{"/recon?sign=-1&status=OPEN", func(d models.DiffTicket) bool { return d.Status == models.DiffOpen && d.Sign == -1 }},
		} {
			var want, got []int64
			for _, d := range all {
				if c.keep(d) {
					want = append(want, d.ID)
				}
			}
			path := c.path
			for pages := 0; path != ""; pages++ {
				if pages > 10 {
					t.Fatalf("%s: the pager does not advance", c.path)
				}
				body := getPage(t, b, path, pages == 1, http.StatusOK)
				ids := reconRowIDs(body)
				if len(ids) > models.DiffPageSize {
					t.Fatalf("%s: a page of %d", path, len(ids))
				}
				got = append(got, ids...)
				if pages > 0 {
					if first, ok := testidHref(body, "recon-first"); !ok || strings.Contains(first, "after=") {
						t.Errorf("%s: first-page link %q", path, first)
					}
				}
				path, _ = testidHref(body, "recon-next")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: got %v, want %v", c.path, got, want)
			}
		}
	})
}

// Bad parameters are 400 pages, unknown tickets 404 pages; both say what
// is wrong in either language.
func TestReconBadParams(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, path := range []string{
			"/recon?status=CLOSED", "/recon?resource=stock", "/recon?sign=2", "/recon?sign=%2B1",
			"/recon?after=abc", "/recon?after=0", "/recon?after=-5", "/recon/diffs/abc", "/recon/diffs/0", "/recon/diffs/-1",
		} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, path, en, http.StatusBadRequest)
				requireElement(t, body, "error-message", true)
			}
		}
		for _, path := range []string{"/recon/diffs/x/ack", "/recon/diffs/1.5/resolve"} {
			wantPage(t, postForm(b, path, url.Values{"note": {"n"}}, false), "POST "+path, http.StatusBadRequest)
		}
		body := getPage(t, b, "/recon/diffs/99999", false, http.StatusNotFound)
		requireText(t, body, "diff-notfound", "没有编号为 #99999 的对账工单。请从对账页的工单列表进入。")
		getPage(t, b, "/recon/diffs/99999", true, http.StatusNotFound)
		for _, path := range []string{"/recon/diffs/99999/ack", "/recon/diffs/99999/resolve"} {
			body := wantPage(t, postForm(b, path, url.Values{"note": {""}}, true), "POST "+path, http.StatusNotFound)
			requireText(t, body, "diff-notfound", "There is no reconciliation ticket #99999. Open tickets from the list on the reconciliation page.")
		}
		if n := auditCount(t, b, "diff_ack") + auditCount(t, b, "diff_resolve"); n != 0 {
			t.Fatalf("%d audit rows after refused requests", n)
		}
	})
}
