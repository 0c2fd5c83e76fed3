package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// withDeclared is setup with two declared counter types, gift_wrap and
// ticket.
func withDeclared(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now, Declared: []models.DeclaredType{
		{Type: "ticket", Label: models.Label{Zh: "门票", En: "Tickets"}},
		{Type: "gift_wrap", Label: models.Label{Zh: "礼品包装", En: "Gift wrap"}},
	}})
	return newBundle(s, clock)
}

// setDeclared sets a declared key's available amount through the store.
func setDeclared(t *testing.T, b bundle, typ models.ResourceType, key string, n int64) {
	t.Helper()
	_, err := b.s.SetDeclared(b.ctx, typ, key, n, "test")
	try(t, "set "+string(typ)+" "+key, err)
}

// placeHolding places a PENDING order holding qty of gift_wrap key.
func placeHolding(t *testing.T, b bundle, no, key string, qty int64) {
	t.Helper()
	_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
		Holds: []models.HoldRequest{{Type: "gift_wrap", Key: key, Qty: qty}}})
	try(t, "place "+no, err)
}

// A shop that declared no resource type has no Resources entry, and no
// type's page.
func TestResourcesNavNone(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		body := getPageBoth(t, b, "/", "", http.StatusOK)
		requireElement(t, body, "nav-resources", false)
		body = getPageBoth(t, b, "/resources/gift_wrap", "", http.StatusNotFound)
		requireElement(t, body, "res-none-declared", true)
	})
}

// The navigation has one Resources entry, opening the first declared type,
// whose page links the others.
func TestResourcesNav(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		for _, en := range []bool{false, true} {
			body := getPage(t, b, "/", en, http.StatusOK)
			wantHref(t, body, "nav-resources", "/resources/gift_wrap")
			want := map[bool]string{false: "资源", true: "Resources"}[en]
			checkText(t, body, "nav-resources", want)
			nav := testidElement(body, "nav")
			if i, j := strings.Index(nav, "nav-balances"), strings.Index(nav, "nav-resources"); i < 0 || j < i {
				t.Errorf("Resources is not after the built-in types' pages:\n%s", nav)
			}
		}
		viewer, err := b.signIn("v1", auth.RoleViewer)
		try(t, "viewer", err)
		body := getPage(t, b.as(viewer), "/resources/ticket", false, http.StatusOK)
		if !strings.Contains(testidTag(body, "nav-resources"), "active") {
			t.Error("Resources is not marked active on a type's page")
		}
		wantHref(t, body, "res-type-gift_wrap", "/resources/gift_wrap")
		if !strings.Contains(body, "<h1>门票 <small>ticket</small></h1>") {
			t.Error("the heading does not name the type by its label")
		}
	})
}

// A type's keys page by key, 50 a page, filter by an exact,
// case-sensitive prefix, and say how many there are.
func TestResourcesListPagesAndPrefix(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		for i := range 55 {
			setDeclared(t, b, "gift_wrap", fmt.Sprintf("a-%02d", i), int64(i))
		}
		setDeclared(t, b, "gift_wrap", "b_1", 7)
		setDeclared(t, b, "ticket", "a-00", 1)
		placeHolding(t, b, "o-1", "b_1", 3)

		first := getPageBoth(t, b, "/resources/gift_wrap", "", http.StatusOK)
		if n := len(ledRows(first, "res-row-")); n != 50 {
			t.Fatalf("first page has %d keys, want 50", n)
		}
		requireText(t, first, "res-total", "共 56 个键")
		requireElement(t, first, "page-first", false)
		next := mustHref(t, first, "page-next")
		if next != "/resources/gift_wrap?after=a-49" {
			t.Fatalf("next link %q", next)
		}
		second := getPageBoth(t, b, next, "", http.StatusOK)
		rows := ledRows(second, "res-row-")
		if len(rows) != 6 || !strings.Contains(rows[0], "a-50") || !strings.Contains(rows[5], "b_1") {
			t.Fatalf("second page rows %v", rows)
		}
		requireElement(t, second, "page-next", false)
		wantHref(t, second, "page-first", "/resources/gift_wrap")
		row := ledElement(second, `data-testid="res-row-b_1"`)
		for _, want := range []string{`href="/resources/gift_wrap/b_1"`, `<td class="num">4</td>`, `<td class="num">3</td>`} {
			if !strings.Contains(row, want) {
				t.Errorf("b_1's row lacks %s:\n%s", want, row)
			}
		}

		only := getPageBoth(t, b, "/resources/gift_wrap?prefix=+b_+", "", http.StatusOK)
		if rows := ledRows(only, "res-row-"); len(rows) != 1 || !strings.Contains(rows[0], "b_1") {
			t.Fatalf("prefix b_ rows %v", rows)
		}
		requireText(t, only, "res-total", "共 1 个键")
		tens := getPageBoth(t, b, "/resources/gift_wrap?prefix=a-1", "", http.StatusOK)
		if n := len(ledRows(tens, "res-row-")); n != 10 {
			t.Fatalf("prefix a-1 has %d keys, want 10", n)
		}
		for _, p := range []string{"a_", "A-", "B_"} {
			none := getPageBoth(t, b, "/resources/gift_wrap?prefix="+p, "", http.StatusOK)
			requireElement(t, none, "res-empty", true)
			requireText(t, none, "res-total", "共 0 个键")
		}
		tickets := getPageBoth(t, b, "/resources/ticket", "", http.StatusOK)
		if rows := ledRows(tickets, "res-row-"); len(rows) != 1 {
			t.Fatalf("ticket lists %v, want its own key only", rows)
		}
		en := getPage(t, b, "/resources/gift_wrap", true, http.StatusOK)
		checkText(t, en, "res-total", "56 keys in all")

		for _, q := range []string{"prefix=a%25", "prefix=a%20b", "prefix=" + strings.Repeat("x", 65), "after=a%20b", "after=" + url.QueryEscape("键")} {
			body := getPageBoth(t, b, "/resources/gift_wrap?"+q, "", http.StatusBadRequest)
			requireElement(t, body, "error-message", true)
		}
	})
}

// Past DeclaredCountCap keys the list says "more than" instead of counting
// them all.
func TestResourcesListCountCap(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		try(t, "keys", b.s.W.Exec(`INSERT INTO declared_counters (resource_type, biz_key, updated_at)
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i <= ?)
			SELECT 'ticket', 'k-' || CAST(i AS TEXT), ? FROM n`, models.DeclaredCountCap, b.clock.Now()).Error)
		body := getPageBoth(t, b, "/resources/ticket", "", http.StatusOK)
		requireText(t, body, "res-total", "超过 10,000 个键")
		checkText(t, getPage(t, b, "/resources/ticket", true, http.StatusOK), "res-total", "More than 10,000 keys")
		requireText(t, getPageBoth(t, b, "/resources/ticket?prefix=k-99", "", http.StatusOK), "res-total", "共 111 个键")
	})
}

// A built-in or unknown type, or a key the type lacks, answers 404 saying
// which, and where to look instead.
func TestResourcesNotFound(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 1)
		_, err := b.s.SetStock(b.ctx, "sku-1", 3, 0, "test")
		try(t, "stock", err)
		for _, tc := range []struct {
			path, says, link string
		}{
			{"/resources/inventory", "“库存”是内置资源类型", "/inventory"},
			{"/resources/points", "“积分”是内置资源类型", "/balances"},
			{"/resources/quota", "“活动名额”是内置资源类型", ""},
			{"/resources/gold", "没有名为“gold”的资源类型", ""},
			{"/resources/quota/act-1", "“活动名额”是内置资源类型", ""},
			{"/resources/gold/box-1", "没有名为“gold”的资源类型", ""},
			{"/resources/gift_wrap/box-2", "礼品包装 没有键“box-2”", ""},
			{"/resources/gift_wrap/" + url.PathEscape("bad key"), "礼品包装 没有键“bad key”", ""},
		} {
			body := getPageBoth(t, b, tc.path, "", http.StatusNotFound)
			got, _ := testidText(body, "res-notfound")
			if !strings.Contains(got, tc.says) {
				t.Errorf("%s says %q, want %q", tc.path, got, tc.says)
			}
			href, ok := testidHref(body, "res-builtin-page")
			if href != tc.link || ok != (tc.link != "") {
				t.Errorf("%s links its own page %q, want %q", tc.path, href, tc.link)
			}
		}
		body := getPageBoth(t, b, "/resources/gold", "", http.StatusNotFound)
		wantHref(t, body, "res-type-ticket", "/resources/ticket")
		key := getPageBoth(t, b, "/resources/gift_wrap/box-2", "", http.StatusNotFound)
		wantHref(t, key, "res-back", "/resources/gift_wrap")
	})
}

// A key's page shows its amounts, the PENDING orders and unfinished
// release tasks holding it (each linking its order), whether locked
// reconciles, and its ledger newest first.
func TestResourceKeyHolders(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 10)
		b.clock.Advance(time.Minute)
		placeHolding(t, b, "o-1", "box-1", 3)
		placeHolding(t, b, "o-2", "box-1", 2)
		placeHolding(t, b, "o-3", "box-1", 1)
		placeHolding(t, b, "o-4", "box-1", 1)
		_, err := b.s.CloseOrder(b.ctx, "o-3", models.TriggerUserCancel, "user:u1")
		try(t, "close o-3", err)
		_, err = b.s.PayOrder(b.ctx, "o-4", "txn-4")
		try(t, "pay o-4", err)
		var task models.ReleaseTask
		try(t, "task", b.s.R.Where("order_no = ?", "o-3").Take(&task).Error)

		body := getPageBoth(t, b, "/resources/gift_wrap/box-1", "", http.StatusOK)
		requireText(t, body, "res-available", "3")
		requireText(t, body, "res-locked", "6")
		requireText(t, body, "res-spent", "1")
		requireElement(t, body, "res-locked-ok", true)
		if rows := ledRows(body, "res-hold-"); len(rows) != 2 {
			t.Fatalf("holds %v, want o-1 and o-2 (o-3 is closed, o-4 paid)", rows)
		}
		for no, qty := range map[string]string{"o-1": "3", "o-2": "2"} {
			row := ledElement(body, `data-testid="res-hold-`+no+`"`)
			if !strings.Contains(row, `href="/orders/`+no+`"`) || !strings.Contains(row, `<td class="num">`+qty+`</td>`) {
				t.Errorf("%s's hold row:\n%s", no, row)
			}
		}
		row := ledElement(body, fmt.Sprintf(`data-testid="res-task-%d"`, task.ID))
		for _, want := range []string{`href="/orders/o-3"`, fmt.Sprintf(`href="/tasks/%d"`, task.ID), "待处理"} {
			if !strings.Contains(row, want) {
				t.Errorf("the task row lacks %s:\n%s", want, row)
			}
		}
		requireElement(t, body, "res-holds-more", false)
		flows := ledRows(body, "flow-")
		if len(flows) != 6 {
			t.Fatalf("ledger rows %v, want ADJUST, 4 LOCKs, DEDUCT", flows)
		}
		top := ledElement(body, flows[0])
		for _, want := range []string{`href="/orders/o-4"`, "扣减", "7 → <strong>6</strong>", "0 → <strong>1</strong>"} {
			if !strings.Contains(top, want) {
				t.Errorf("the newest row lacks %s:\n%s", want, top)
			}
		}
		if last := ledElement(body, flows[5]); !strings.Contains(last, "调整") || !strings.Contains(last, "0 → <strong>10</strong>") {
			t.Errorf("the oldest row is not the ADJUST:\n%s", last)
		}

		// Once released, the task is gone; a hand edit of locked is flagged.
		tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
		try(t, "claim", err)
		_, err = b.s.ReleaseBatch(b.ctx, tasks, "w1")
		try(t, "release", err)
		try(t, "plant", b.s.W.Exec(`UPDATE declared_counters SET locked = locked + 2 WHERE biz_key = 'box-1'`).Error)
		body = getPageBoth(t, b, "/resources/gift_wrap/box-1", "", http.StatusOK)
		requireElement(t, body, "res-tasks", false)
		requireText(t, body, "res-locked-bad", "锁定差 +2")

		getPageBoth(t, b, "/resources/gift_wrap/box-1?after=x", "", http.StatusBadRequest)
	})
}

// The holders list stops at models.KeyHolders and says how many there are.
func TestResourceKeyHoldersBounded(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 100)
		for i := range models.KeyHolders + 2 {
			placeHolding(t, b, fmt.Sprintf("o-%03d", i), "box-1", 1)
		}
		body := getPageBoth(t, b, "/resources/gift_wrap/box-1", "", http.StatusOK)
		if n := len(ledRows(body, "res-hold-")); n != models.KeyHolders {
			t.Fatalf("%d holds listed, want %d", n, models.KeyHolders)
		}
		requireText(t, body, "res-holds-more", "只列出前 50 个，共 52 个。")
		requireElement(t, body, "res-locked-ok", true)
	})
}

// A key's ledger pages 50 rows at a time, newest first.
func TestResourceKeyLedgerPages(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		for i := range 60 {
			setDeclared(t, b, "gift_wrap", "box-1", int64(100+i))
			b.clock.Advance(time.Second)
		}
		setDeclared(t, b, "ticket", "box-1", 5)
		body := getPageBoth(t, b, "/resources/gift_wrap/box-1", "", http.StatusOK)
		if n := len(ledRows(body, "flow-")); n != 50 {
			t.Fatalf("first page has %d rows, want 50", n)
		}
		requireElement(t, body, "res-holders-empty", true)
		second := getPageBoth(t, b, mustHref(t, body, "page-next"), "", http.StatusOK)
		if n := len(ledRows(second, "flow-")); n != 10 {
			t.Fatalf("second page has %d rows, want 10 (ticket's row is not gift_wrap's)", n)
		}
		requireElement(t, second, "page-next", false)
		wantHref(t, second, "page-first", "/resources/gift_wrap/box-1")
	})
}

// wantHref reports, and lets the test go on, unless element id links want.
func wantHref(t *testing.T, body, id, want string) {
	t.Helper()
	if href := mustHref(t, body, id); href != want {
		t.Errorf("%s links %q, want %q", id, href, want)
	}
}

var csrfInPage = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

// declaredState is the declared tables and the audit log's set_counter
// entries, to show that a refused set changed nothing (a refusal writes
// its own audit entry).
func declaredState(t *testing.T, b bundle) string {
	t.Helper()
	var rows []map[string]any
	try(t, "counters", b.s.W.Raw(`SELECT resource_type, biz_key, available, locked, spent FROM declared_counters
		ORDER BY resource_type, biz_key`).Scan(&rows).Error)
	var flows, audit int64
	try(t, "flows", b.s.W.Raw(`SELECT COUNT(*) FROM declared_counter_flows`).Scan(&flows).Error)
	try(t, "audit", b.s.W.Raw(`SELECT COUNT(*) FROM audit_log WHERE action = 'set_counter'`).Scan(&audit).Error)
	return fmt.Sprint(rows, " flows ", flows, " audit ", audit)
}

// An operator sets a key's available amount from its page, with the form's
// CSRF token: one ADJUST row and one audit entry, as the API writes. A bad
// number shows the page again with what was wrong, a stale token or a
// missing key is refused, and none of them changes anything. A viewer sees
// no form.
func TestResourceSetForm(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 10)
		placeHolding(t, b, "o-1", "box-1", 4)
		op, err := b.signIn("op1", auth.RoleOperator)
		try(t, "operator", err)
		ob := b.as(op)
		page := getPage(t, ob, "/resources/gift_wrap/box-1", false, http.StatusOK)
		requireElement(t, page, "res-set-form", true)
		if !strings.Contains(testidElement(page, "res-set-form"), `value="6"`) {
			t.Error("the form does not start from the available amount")
		}
		m := csrfInPage.FindStringSubmatch(testidElement(page, "res-set-form"))
		if m == nil {
			t.Fatal("the set form carries no CSRF token")
		}

		before := declaredState(t, b)
		for _, bad := range []string{"", "abc", "-1", "1.5", "1e3", "1000000000001", "99999999999999999999", strings.Repeat("9", 200)} {
			for _, en := range []bool{false, true} {
				rec := postForm(ob, "/resources/gift_wrap/box-1", url.Values{"_csrf": {m[1]}, "available": {bad}}, en)
				body := wantPage(t, rec, "set "+bad, http.StatusBadRequest)
				msg, _ := testidText(body, "res-set-error")
				want := map[bool]string{false: "可用量必须是 0 到 1,000,000,000,000 之间的整数", true: "must be a whole number from 0 to 1,000,000,000,000"}[en]
				if !strings.Contains(msg, want) || len(msg) > 400 {
					t.Errorf("%q (en=%v): error %q", bad, en, msg)
				}
				requireText(t, body, "res-available", "6")
			}
		}
		stale := postForm(ob, "/resources/gift_wrap/box-1", url.Values{"_csrf": {"stale"}, "available": {"3"}}, false)
		if stale.Code != http.StatusForbidden {
			t.Errorf("a stale CSRF token = %d, want 403", stale.Code)
		}
		missing := postForm(ob, "/resources/gift_wrap/box-9", url.Values{"_csrf": {m[1]}, "available": {"3"}}, false)
		wantPage(t, missing, "set a missing key", http.StatusNotFound)
		builtin := postForm(ob, "/resources/inventory/sku-1", url.Values{"_csrf": {m[1]}, "available": {"3"}}, false)
		wantPage(t, builtin, "set a built-in type", http.StatusNotFound)
		if after := declaredState(t, b); after != before {
			t.Fatalf("a refused set changed something:\nbefore %s\nafter  %s", before, after)
		}

		rec := postForm(ob, "/resources/gift_wrap/box-1", url.Values{"_csrf": {m[1]}, "available": {" 20 "}}, false)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/resources/gift_wrap/box-1" {
			t.Fatalf("set = %d to %q, want 303 back to the key", rec.Code, rec.Header().Get("Location"))
		}
		st, err := b.s.Counter(b.ctx, "gift_wrap", "box-1")
		if err != nil || st != (models.CounterState{Available: 20, Locked: 4}) {
			t.Fatalf("after the set: %+v, %v", st, err)
		}
		var a models.AuditEntry
		try(t, "audit", b.s.R.Where("action = ?", "set_counter").Order("id DESC").Take(&a).Error)
		if a.Actor != "op1" || a.Target != "gift_wrap:box-1" || a.Detail != "available 6 → 20" {
			t.Errorf("audit %+v", a)
		}
		if got := ordFlash(t, rec); got != "1|礼品包装 box-1 的可用量已从 6 改为 20。" {
			t.Errorf("flash %q", got)
		}
		after := getPage(t, ob, "/resources/gift_wrap/box-1", false, http.StatusOK)
		requireText(t, after, "res-available", "20")
		top := ledElement(after, ledRows(after, "flow-")[0])
		for _, want := range []string{"调整", "op1", "6 → <strong>20</strong>"} {
			if !strings.Contains(top, want) {
				t.Errorf("the newest ledger row lacks %s:\n%s", want, top)
			}
		}

		viewer, err := b.signIn("v1", auth.RoleViewer)
		try(t, "viewer", err)
		vp := getPage(t, b.as(viewer), "/resources/gift_wrap/box-1", false, http.StatusOK)
		requireElement(t, vp, "res-set-form", false)
		requireElement(t, vp, "need-operator", true)
		if rec := postForm(b.as(viewer), "/resources/gift_wrap/box-1", url.Values{"available": {"1"}}, false); rec.Code != http.StatusForbidden {
			t.Errorf("a viewer's set = %d, want 403", rec.Code)
		}
	})
}

// A declared key links to its page from the reconciliation tickets and the
// order chain, as the built-in types' keys do.
func TestDeclaredKeysLinked(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box:1", 10)
		placeHolding(t, b, "o-1", "box:1", 2)
		if got := b.s.KeyPage("gift_wrap", "box:1"); got != "/resources/gift_wrap/box:1" {
			t.Fatalf("KeyPage = %q", got)
		}
		try(t, "plant", b.s.W.Exec(`UPDATE declared_counters SET locked = locked + 1 WHERE biz_key = 'box:1'`).Error)
		_, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		try(t, "reconcile", err)
		var id int64
		try(t, "diff", b.s.R.Raw(`SELECT id FROM recon_diffs WHERE resource_type = 'gift_wrap' AND check_name = 'HELD'`).Scan(&id).Error)
		diff := getPageBoth(t, b, fmt.Sprintf("/recon/diffs/%d", id), "", http.StatusOK)
		wantHref(t, diff, "ticket-key", "/resources/gift_wrap/box:1")
		chain := getPageBoth(t, b, "/orders/o-1", "", http.StatusOK)
		wantHref(t, chain, "resource-key-gift_wrap-box:1", "/resources/gift_wrap/box:1")
	})
}

// The page of a key with holders, a task and a ledger, on the fixed test
// clock, matches the golden file; refresh it with go test ./web/ -run
// Golden -update.
func TestResourceKeyGolden(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 10)
		b.clock.Advance(time.Minute)
		placeHolding(t, b, "o-1", "box-1", 3)
		placeHolding(t, b, "o-2", "box-1", 1)
		b.clock.Advance(time.Minute)
		_, err := b.s.CloseOrder(b.ctx, "o-2", models.TriggerTimeout, "system")
		try(t, "close", err)
		checkGolden(t, "resource_key.golden.html", getPage(t, b, "/resources/gift_wrap/box-1", false, http.StatusOK))
	})
}
