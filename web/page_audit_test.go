package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
)

var auditRowRE = regexp.MustCompile(`data-testid="audit-row" data-audit-id="(\d+)"`)

// auditIDs are the audit rows a page lists, in order.
func auditIDs(body string) []int64 {
	var ids []int64
	for _, m := range auditRowRE.FindAllStringSubmatch(body, -1) {
		id, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, id)
	}
	return ids
}

// auditRowOf is the list row of audit entry id, or "".
func auditRowOf(body string, id int64) string {
	i := strings.Index(body, `data-testid="audit-row" data-audit-id="`+itoa(id)+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	return body[start : i+strings.Index(body[i:], "</tr>")]
}

// auditSeed is what seedAudit wrote: each row's id by a short name.
type auditSeed map[string]int64

// ids are the ids of the named rows, newest first, as the page lists them.
func (s auditSeed) ids(names ...string) []int64 {
	out := make([]int64, 0, len(names))
	for _, n := range names {
		out = append(out, s[n])
	}
	sort.Slice(out, func(i, j int) bool { return out[i] > out[j] })
	return out
}

// seedAudit writes audit rows over three days (2026-11-29 to 12-01, UTC),
// by several actors, of several actions, with targets that hold LIKE's
// wildcards.
func seedAudit(t *testing.T, b bundle) auditSeed {
	t.Helper()
	seed := auditSeed{}
	add := func(name, actor, action, target string) {
		try(t, "audit "+name, b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: actor, Action: action, Target: target,
			Outcome: "ok", Role: "operator", IP: "198.51.100.4", RequestID: "req-" + name}))
		var e models.AuditEntry
		try(t, "read "+name, b.s.R.Where("request_id = ?", "req-"+name).Take(&e).Error)
		seed[name] = e.ID
	}
	add("alice-rerun", "alice", "rerun", "order:A1/inventory")
	add("bob-ack", "bob", "diff_ack", "diff:3")
	b.clock.Advance(24 * time.Hour)
	add("alice-create", "alice", "user_create", "user:carol")
	add("erp-rerun", "token:erp", "rerun", "order:A2/coupon")
	add("bob-token", "bob", "token_create", "token:erp")
	b.clock.Advance(24 * time.Hour)
	add("pct", "bob", "rerun", "order:x%y/slot")
	add("under", "bob", "rerun", "order:x_y/slot")
	add("plain", "bob", "rerun", "order:xzy/slot")
	add("upper", "bob", "rerun", "order:XZY/slot")
	return seed
}

// The audit page filters by exact actor, by action from the log's own
// list, by target prefix (with % and _ taken literally) and by days; a bad
// filter is a 400 that says what is wrong and lists nothing.
func TestAuditPageFilters(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		s := seedAudit(t, b)
		all := s.ids("alice-rerun", "bob-ack", "alice-create", "erp-rerun", "bob-token", "pct", "under", "plain", "upper")
		body := getPageBoth(t, b, "/audit", "", http.StatusOK)
		if got := auditIDs(body); !reflect.DeepEqual(got, all) {
			t.Fatalf("unfiltered = %v, want %v", got, all)
		}
		for _, c := range []struct {
			name, query string
			want        []int64
		}{
			{"actor", "actor=alice", s.ids("alice-rerun", "alice-create")},
			{"actor is exact", "actor=ali", nil},
			{"actor, trimmed", "actor=+alice+", s.ids("alice-rerun", "alice-create")},
			{"token actor", "actor=token:erp", s.ids("erp-rerun")},
			{"action", "action=rerun", s.ids("alice-rerun", "erp-rerun", "pct", "under", "plain", "upper")},
			{"actor and action", "actor=alice&action=rerun", s.ids("alice-rerun")},
			{"target prefix", "target=order:A", s.ids("alice-rerun", "erp-rerun")},
			{"target exact", "target=order:A1/inventory", s.ids("alice-rerun")},
			{"target kind", "target=user:", s.ids("alice-create")},
			{"target % is literal", "target=" + url.QueryEscape("order:x%"), s.ids("pct")},
			{"target _ is literal", "target=order:x_", s.ids("under")},
			{"target is case-sensitive", "target=order:x", s.ids("pct", "under", "plain")},
			{"target in capitals", "target=ORDER:", nil},
			{"from", "from=2026-11-30", s.ids("alice-create", "erp-rerun", "bob-token", "pct", "under", "plain", "upper")},
			{"to", "to=2026-11-29", s.ids("alice-rerun", "bob-ack")},
			{"one day", "from=2026-11-30&to=2026-11-30", s.ids("alice-create", "erp-rerun", "bob-token")},
			{"a day with nothing", "from=2026-12-02", nil},
			{"everything at once", "actor=bob&action=rerun&target=order:x&from=2026-12-01&to=2026-12-01", s.ids("pct", "under", "plain")},
		} {
			body := getPage(t, b, "/audit?"+c.query, false, http.StatusOK)
			if got := auditIDs(body); !reflect.DeepEqual(got, c.want) && (len(got) != 0 || len(c.want) != 0) {
				t.Errorf("%s (%s) = %v, want %v", c.name, c.query, got, c.want)
			}
			requireElement(t, body, "audit-empty", len(c.want) == 0)
			requireElement(t, body, "audit-error", false)
			// The list says how many entries the filter keeps, on every page.
			if got, want := markupText(testidElement(body, "audit-total")), fmt.Sprintf("共 %d 条", len(c.want)); got != want {
				t.Errorf("%s: total = %q, want %q", c.name, got, want)
			}
		}
		// The form shows the filter it was sent.
		body = getPage(t, b, "/audit?actor=bob&action=diff_ack&target=diff:&from=2026-11-29", false, http.StatusOK)
		for id, want := range map[string]string{"audit-f-actor": `value="bob"`, "audit-f-target": `value="diff:"`, "audit-f-from": `value="2026-11-29"`} {
			if tag := testidTag(body, id); !strings.Contains(tag, want) {
				t.Errorf("%s = %s, want %s", id, tag, want)
			}
		}
		if !strings.Contains(testidElement(body, "audit-f-action"), `<option value="diff_ack" selected>`) {
			t.Errorf("action select does not keep diff_ack:\n%s", testidElement(body, "audit-f-action"))
		}

		for _, c := range []struct{ name, query, zh, en string }{
			{"unknown action", "action=" + url.QueryEscape("rerun' OR '1'='1"), "没有这种操作。", "There is no such action."},
			{"action not in the log", "action=user_disable", "没有这种操作。", "There is no such action."},
			{"bad from", "from=2026-13-01", "日期应写作 YYYY-MM-DD。", "A date is written YYYY-MM-DD."},
			{"bad to", "to=yesterday", "日期应写作 YYYY-MM-DD。", "A date is written YYYY-MM-DD."},
			{"long actor", "actor=" + strings.Repeat("a", 129), "筛选条件太长（最多 128 个字符）。", "A filter is too long (at most 128 characters)."},
			{"long target", "target=" + strings.Repeat("订", 129), "筛选条件太长（最多 128 个字符）。", "A filter is too long (at most 128 characters)."},
			{"bad cursor", "before=-5", "翻页链接无效，请从第一页开始。", "The page link is not valid; start from the first page."},
			{"cursor not a number", "before=1e3", "翻页链接无效，请从第一页开始。", "The page link is not valid; start from the first page."},
		} {
			for _, en := range []bool{false, true} {
				body := getPage(t, b, "/audit?"+c.query, en, http.StatusBadRequest)
				want := c.zh
				if en {
					want = c.en
				}
				checkText(t, body, "audit-error", want)
				if ids := auditIDs(body); len(ids) != 0 {
					t.Errorf("%s lists rows %v", c.name, ids)
				}
				requireElement(t, body, "audit-filters", true)
			}
		}
		// 128 characters is still a filter.
		getPage(t, b, "/audit?actor="+strings.Repeat("a", 128), false, http.StatusOK)
	})
}

// More than a page of rows: the next link leads to the rest, with the
// filter kept, no row twice and none left out; the last page has no next
// link and a link back to the first.
func TestAuditPagination(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := 0; i < 57; i++ {
			try(t, "audit", b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "bot", Action: "set_stock", Target: fmt.Sprintf("sku:s-%02d", i), Outcome: "ok"}))
			if i%10 == 0 {
				try(t, "other", b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "bot", Action: "credit", Target: "account:u1", Outcome: "ok"}))
			}
		}
		var want []int64
		try(t, "ids", b.s.R.Model(&models.AuditEntry{}).Where("action = ?", "set_stock").Order("id DESC").Pluck("id", &want).Error)
		first := getPage(t, b, "/audit?action=set_stock", false, http.StatusOK)
		p1 := auditIDs(first)
		if len(p1) != 50 {
			t.Fatalf("first page has %d rows, want 50", len(p1))
		}
		requireElement(t, first, "audit-first", false)
		next := mustHref(t, first, "audit-next")
		u, err := url.Parse(next)
		try(t, "next link", err)
		if u.Path != "/audit" || u.Query().Get("action") != "set_stock" || u.Query().Get("before") != itoa(p1[49]) {
			t.Fatalf("next link %q", next)
		}
		second := getPageBoth(t, b, next, "", http.StatusOK)
		p2 := auditIDs(second)
		if got := append(append([]int64{}, p1...), p2...); !reflect.DeepEqual(got, want) {
			t.Fatalf("pages %v + %v, want %v", p1, p2, want)
		}
		requireElement(t, second, "audit-next", false)
		if back := mustHref(t, second, "audit-first"); back != "/audit?action=set_stock" {
			t.Errorf("first-page link %q", back)
		}
		// Unfiltered, the pages still meet without overlap.
		var every []int64
		try(t, "ids", b.s.R.Model(&models.AuditEntry{}).Order("id DESC").Pluck("id", &every).Error)
		var seen []int64
		path := "/audit"
		for pages := 0; path != ""; pages++ {
			if pages > 3 {
				t.Fatal("more pages than rows allow")
			}
			body := getPage(t, b, path, false, http.StatusOK)
			seen = append(seen, auditIDs(body)...)
			path, _ = testidHref(body, "audit-next")
		}
		if !reflect.DeepEqual(seen, every) {
			t.Errorf("unfiltered pages %v, want %v", seen, every)
		}
	})
}

// Targets link to their pages: user: and token: ones (which only an admin
// sees) to the admin pages, order and ticket ones for everyone.
func TestAuditPageViewerLinks(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		s := seedAudit(t, b)
		v, err := b.signIn("vera", auth.RoleViewer)
		try(t, "vera", err)
		for _, c := range []struct {
			who       *identity
			row, link string // "" link: the target is plain text
		}{
			{v, "alice-rerun", "/orders/A1"},
			{v, "bob-ack", "/recon/diffs/3"},
			{b.who, "alice-create", "/admin/users"},
			{b.who, "bob-token", "/admin/tokens"},
			{b.who, "alice-rerun", "/orders/A1"},
		} {
			body := getPage(t, b.as(c.who), "/audit", false, http.StatusOK)
			row := auditRowOf(body, s[c.row])
			if row == "" {
				t.Fatalf("%s does not see %s", c.who.name, c.row)
			}
			target := testidElement(row, "audit-target")
			m := hrefRE.FindStringSubmatch(target)
			got := ""
			if m != nil {
				got = m[1]
			}
			if got != c.link {
				t.Errorf("%s sees %s's target linked to %q, want %q: %s", c.who.name, c.row, got, c.link, target)
			}
		}
		body := getPageBoth(t, b.as(v), "/audit", "", http.StatusOK)
		row := auditRowOf(body, s["erp-rerun"])
		checkText(t, row, "audit-actor", "token:erp 运维")
		checkText(t, row, "audit-role", "运维")
		if n := countAudit(t, b, "denied"); n != 0 {
			t.Errorf("a viewer reading the audit log was denied %d times", n)
		}
	})
}

// One audit policy for the pages, the API and the order chain: a viewer
// or an operator sees the operational entries (orders, tasks, tickets,
// jobs, resources) without the request's address, user agent and id, is
// refused 403 an admin-only entry (users, tokens, sign-ins, refusals) by
// id, and the list says it is limited; an admin sees everything, whole.
func TestAuditPolicy(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		s := seedAudit(t, b)
		add := func(name, action, target string) {
			try(t, name, b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "mallory", Action: action, Target: target,
				Outcome: "denied", IP: "198.51.100.4", RequestID: "req-" + name, UserAgent: "agent-" + name}))
			var e models.AuditEntry
			try(t, "read "+name, b.s.R.Where("request_id = ?", "req-"+name).Take(&e).Error)
			s[name] = e.ID
		}
		add("denied", "denied", "route:GET /admin/users")
		add("login", "login", "user:mallory")
		add("summary", models.RefusedSummaryAction, models.RefusedSummaryKind+":mallory")
		add("chain", "order.refund", "order:held-1")
		operational := s.ids("alice-rerun", "bob-ack", "erp-rerun", "pct", "under", "plain", "upper", "chain")
		adminOnly := []string{"alice-create", "bob-token", "denied", "login", "summary"}
		// The entries seedShop's set-up wrote are operational too.
		var setUp []int64
		try(t, "set-up entries", b.s.R.Raw(`SELECT id FROM audit_log WHERE actor = 'test' ORDER BY id DESC`).Scan(&setUp).Error)
		operational = append(operational, setUp...)

		viewer, err := b.signIn("vera", auth.RoleViewer)
		try(t, "vera", err)
		operator, err := b.signIn("otto", auth.RoleOperator)
		try(t, "otto", err)
		for _, who := range []*identity{viewer, operator} {
			as := b.as(who)
			body := getPage(t, as, "/audit", false, http.StatusOK)
			if got := auditIDs(body); !reflect.DeepEqual(got, operational) {
				t.Errorf("%s lists %v, want %v", who.name, got, operational)
			}
			requireElement(t, body, "audit-scope", true)
			if got, want := markupText(testidElement(body, "audit-total")), fmt.Sprintf("共 %d 条", len(operational)); got != want {
				t.Errorf("%s's total = %q, want %q", who.name, got, want)
			}
			requireElement(t, body, "audit-ip", false)
			requireElement(t, body, "audit-request-id", false)
			if strings.Contains(body, "198.51.100.4") || strings.Contains(body, "req-") {
				t.Errorf("%s's audit list shows request metadata", who.name)
			}
			if strings.Contains(testidElement(body, "audit-f-action"), `value="user_create"`) {
				t.Errorf("%s is offered the user_create filter", who.name)
			}
			api, _ := readAll[models.AuditEntry](t, as, "/api/v1/audit", 200)
			var ids []int64
			for _, e := range api {
				ids = append(ids, e.ID)
				if e.IP != "" || e.RequestID != "" || e.UserAgent != "" {
					t.Errorf("%s reads entry %d with its metadata: %+v", who.name, e.ID, e)
				}
			}
			if !reflect.DeepEqual(ids, operational) {
				t.Errorf("%s reads %v through the API, want %v", who.name, ids, operational)
			}
			for _, name := range adminOnly {
				before := countAudit(t, b, "denied")
				getPage(t, as, fmt.Sprintf("/audit/%d", s[name]), false, http.StatusForbidden)
				wantError(t, as.call(http.MethodGet, fmt.Sprintf("/api/v1/audit/%d", s[name]), ""), http.StatusForbidden, "FORBIDDEN")
				if got := countAudit(t, b, "denied") - before; got != 2 {
					t.Errorf("%s's two refused reads of %s wrote %d denied rows, want 2", who.name, name, got)
				}
			}
			entry := getPage(t, as, fmt.Sprintf("/audit/%d", s["chain"]), false, http.StatusOK)
			requireElement(t, entry, "audit-ip", false)
			one := decodeStrict[models.AuditEntry](t, as.call(http.MethodGet, fmt.Sprintf("/api/v1/audit/%d", s["chain"]), ""))
			if one.ID != s["chain"] || one.IP != "" || one.RequestID != "" || one.UserAgent != "" {
				t.Errorf("%s reads the order's entry as %+v", who.name, one)
			}
			// The order's chain shows its entry, without the address.
			chain := getPage(t, as, "/orders/held-1", false, http.StatusOK)
			if !strings.Contains(chain, fmt.Sprintf("#%d", s["chain"])) || strings.Contains(chain, "198.51.100.4") {
				t.Errorf("%s's chain page lacks entry %d or shows its address", who.name, s["chain"])
			}
			for _, path := range []string{"/api/v1/orders/held-1/chain", "/api/v1/orders/held-1"} {
				var ch struct {
					Audit []models.AuditEntry `json:"audit"`
				}
				try(t, path, json.Unmarshal(as.call(http.MethodGet, path, "").Body.Bytes(), &ch))
				if len(ch.Audit) != 1 || ch.Audit[0].ID != s["chain"] || ch.Audit[0].IP != "" || ch.Audit[0].RequestID != "" {
					t.Errorf("%s's %s has audit %+v", who.name, path, ch.Audit)
				}
			}
		}

		// An admin sees every entry, whole, and no note of a limit.
		body := getPage(t, b, "/audit", false, http.StatusOK)
		requireElement(t, body, "audit-scope", false)
		for _, name := range adminOnly {
			if auditRowOf(body, s[name]) == "" {
				t.Errorf("the admin's list lacks %s", name)
			}
			one := decodeStrict[models.AuditEntry](t, b.call(http.MethodGet, fmt.Sprintf("/api/v1/audit/%d", s[name]), ""))
			if one.IP != "198.51.100.4" || one.RequestID != "req-"+name {
				t.Errorf("the admin reads %s as %+v", name, one)
			}
		}
		checkText(t, getPage(t, b, fmt.Sprintf("/audit/%d", s["login"]), false, http.StatusOK), "audit-ip", "198.51.100.4")
		if chain := getPage(t, b, "/orders/held-1", false, http.StatusOK); !strings.Contains(chain, "198.51.100.4") {
			t.Error("the admin's chain page lacks the entry's address")
		}
		getPage(t, b, fmt.Sprintf("/audit/%d", s["login"]+1000), false, http.StatusNotFound)
	})
}

// A rerun from the order's page is audited with who, as what and from
// where; the order's chain page and the audit page both show it.
func TestAuditRerunOnChainPage(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		manualTask(t, b)
		otto, err := b.signIn("otto", auth.RoleOperator)
		try(t, "otto", err)
		req := httptest.NewRequest(http.MethodPost, "/orders/m-1/resources/inventory/rerun",
			strings.NewReader(url.Values{"reason": {"stock counted again"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Request-Id", "req-otto-1")
		req.Header.Set("User-Agent", "ops-laptop/1.0")
		req.RemoteAddr = "203.0.113.9:5555"
		rec := b.as(otto).serve(req)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/orders/m-1" {
			t.Fatalf("rerun = %d %s\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		e := oneAudit(t, b, "rerun")
		if e.Actor != "otto" || e.Role != "operator" || e.IP != "203.0.113.9" || e.RequestID != "req-otto-1" ||
			e.UserAgent != "ops-laptop/1.0" || e.Reason != "stock counted again" || e.Target != "order:m-1/inventory" {
			t.Fatalf("rerun audit row %+v", e)
		}

		body := getPageBoth(t, b, "/orders/m-1", "", http.StatusOK)
		var ev string
		for rest := body; ; {
			i := strings.Index(rest, `data-testid="event-audit"`)
			if i < 0 {
				break
			}
			row := testidElement(rest[strings.LastIndex(rest[:i], "<"):], "event-audit")
			if strings.Contains(row, "otto") {
				ev = row
				break
			}
			rest = rest[i+1:]
		}
		if ev == "" {
			t.Fatalf("the chain page has no audit event by otto:\n%s", body)
		}
		checkText(t, ev, "event-role", "运维")
		checkText(t, ev, "event-ip", "203.0.113.9")
		checkText(t, ev, "audit-reason", "原因：stock counted again")
		if !strings.HasPrefix(markupText(testidElement(ev, "event-actor")), "otto") {
			t.Errorf("event actor = %q", markupText(testidElement(ev, "event-actor")))
		}
		en := getPage(t, b, "/orders/m-1", true, http.StatusOK)
		if !strings.Contains(en, `data-testid="event-role">Operations<`) {
			t.Error("the English chain page does not name otto's role")
		}

		audit := getPage(t, b, "/audit?action=rerun", false, http.StatusOK)
		row := auditRowOf(audit, e.ID)
		checkText(t, row, "audit-ip", "203.0.113.9")
		checkText(t, row, "audit-request-id", "请求 req-otto-1")
		checkText(t, row, "audit-reason", "stock counted again")
		if tag := testidTag(row, "audit-ip"); !strings.Contains(tag, `title="ops-laptop/1.0"`) {
			t.Errorf("audit ip tag %q lacks the user agent", tag)
		}
		if href := hrefRE.FindStringSubmatch(testidElement(row, "audit-target")); href == nil || href[1] != "/orders/m-1" {
			t.Errorf("rerun target link %v", href)
		}
	})
}

// Every audit entry has a page of its own with the whole text: the list
// links to it, the target links to the order it names, the detail is in
// the viewer's language; an unknown id is a 404, a bad one a 400.
func TestAuditEntryPage(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		_, err := b.s.CloseOrder(b.ctx, "held-1", models.TriggerUserCancel, "u1")
		try(t, "close", err)
		try(t, "make MANUAL", b.s.W.Exec("UPDATE release_tasks SET status = 'MANUAL' WHERE order_no = 'held-1'").Error)
		_, err = b.s.Rerun(b.ctx, "held-1", models.ResourceType("inventory"), "root", "库存已修正")
		try(t, "rerun", err)
		var id int64
		try(t, "entry", b.s.R.Raw("SELECT MAX(id) FROM audit_log WHERE action = 'rerun'").Scan(&id).Error)
		list := getPage(t, b, "/audit", false, http.StatusOK)
		path := fmt.Sprintf("/audit/%d", id)
		if !strings.Contains(list, `href="`+path+`"`) {
			t.Fatalf("the list does not link %s", path)
		}
		// Set-up entries link the stock, the account and the coupon they set.
		for _, href := range []string{`href="/inventory/sku-1"`, `href="/balances?user=u1"`, `href="/coupons?coupon=1"`} {
			if !strings.Contains(list, href) {
				t.Errorf("the list has no target link %s", href)
			}
		}
		zh := getPageBoth(t, b, path, "", http.StatusOK)
		checkText(t, zh, "audit-detail", "1 个任务已重新排队")
		checkText(t, zh, "audit-reason", "库存已修正")
		if target := testidElement(zh, "audit-target"); !strings.Contains(target, `href="/orders/held-1"`) {
			t.Errorf("target does not link its order: %s", target)
		}
		en := getPage(t, b, path, true, http.StatusOK)
		checkText(t, en, "audit-detail", "1 task(s) made due")
		getPage(t, b, fmt.Sprintf("/audit/%d", id+1000), false, http.StatusNotFound)
		getPage(t, b, "/audit/x1", false, http.StatusBadRequest)
	})
}
