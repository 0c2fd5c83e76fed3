package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
)

// Free text typed into the dashboard — names, reasons, notes, filters — is
// data: stored exactly, shown escaped, never run as markup or SQL.

const (
	xssText = `<script>alert(1)</script>`
	sqlText = `x'); DROP TABLE users;--`
	zhText  = `张三（测试）`
)

// inert fails the test when payload appears in body as markup: a payload
// with HTML's special characters must appear only escaped, one without
// must appear as it is.
func inert(t *testing.T, what, body, payload string) {
	t.Helper()
	esc := html.EscapeString(payload)
	if esc != payload && strings.Contains(body, payload) {
		t.Errorf("%s shows %q unescaped", what, payload)
	}
	if !strings.Contains(body, esc) {
		t.Errorf("%s does not show %q (as %q)", what, payload, esc)
	}
}

// noMarkup fails the test when any of the payloads appears in body
// unescaped.
func noMarkup(t *testing.T, what, body string, payloads ...string) {
	t.Helper()
	for _, p := range payloads {
		if html.EscapeString(p) != p && strings.Contains(body, p) {
			t.Errorf("%s shows %q unescaped", what, p)
		}
	}
}

// schemaIntact fails the test unless every table still answers, and the
// users table still holds at least minUsers rows.
func schemaIntact(t *testing.T, b bundle, minUsers int64) {
	t.Helper()
	for _, tb := range append([]string{"users", "sessions", "api_tokens", "recon_diffs", "inventory", "login_throttle"}, countedTables...) {
		var n int64
		if err := b.s.R.Table(tb).Count(&n).Error; err != nil {
			t.Fatalf("table %s after the payloads: %v", tb, err)
		}
	}
	if n := rowCount(t, b, "users"); n < minUsers {
		t.Fatalf("users has %d rows, want at least %d", n, minUsers)
	}
}

// User and token names are names whatever they hold: created, listed,
// flashed, audited and signed in with, they come back verbatim and
// escaped.
func TestInjectionUserAndTokenNames(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		// Typed password: the flash names the user. Generated: the secret box does.
		rec := postForm(b, "/admin/users", url.Values{"name": {xssText}, "role": {"viewer"}, "password": {goodPassword}}, false)
		_, flash := followPost(t, b, rec, false)
		inert(t, "the flash", flash, xssText)
		checkText(t, flash, "flash", "用户 "+xssText+" 已创建")
		secret := wantPage(t, postForm(b, "/admin/users", url.Values{"name": {sqlText}, "role": {"operator"}, "password": {""}}, true),
			"create "+sqlText, http.StatusOK)
		inert(t, "the secret box", secret, sqlText)
		checkText(t, secret, "secret-for", "For: "+sqlText)
		rec = postForm(b, "/admin/users", url.Values{"name": {zhText}, "role": {"viewer"}, "password": {goodPassword}}, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("create %s = %d", zhText, rec.Code)
		}
		for _, name := range []string{xssText, sqlText, zhText} {
			if u := userNamed(t, b, name); u == nil {
				t.Fatalf("no user named %q", name)
			}
		}
		for _, en := range []bool{false, true} {
			users := getPage(t, b, "/admin/users", en, http.StatusOK)
			for _, name := range []string{xssText, sqlText, zhText} {
				inert(t, "the users page", users, name)
			}
		}
		// The login form gives the typed name back, escaped; and the name
		// signs in.
		login := newBrowser(b).login(t, sqlText, "not the password")
		body := wantPage(t, login, "login as "+sqlText, http.StatusUnauthorized)
		inert(t, "the login form", body, sqlText)
		if tag := testidTag(body, "login-name"); !strings.Contains(tag, `value="`+html.EscapeString(sqlText)+`"`) {
			t.Errorf("login name field %s", tag)
		}
		br := newBrowser(b)
		if rec := br.login(t, xssText, goodPassword); rec.Code != http.StatusSeeOther {
			t.Fatalf("login as %q = %d", xssText, rec.Code)
		}
		home := wantPage(t, br.get("/"), "home of "+xssText, http.StatusOK)
		inert(t, "the home page's whoami", home, xssText)
		if who, _ := testidText(home, "whoami"); !strings.HasPrefix(who, xssText+" ") {
			t.Errorf("whoami = %q", who)
		}

		// Tokens.
		for _, name := range []string{xssText, sqlText, zhText} {
			body := wantPage(t, postForm(b, "/admin/tokens", url.Values{"name": {name}, "role": {"viewer"}}, false), "token "+name, http.StatusOK)
			inert(t, "the new token's page", body, name)
			var tok auth.APIToken
			try(t, "token "+name, b.s.R.Where("name = ?", name).Take(&tok).Error)
		}
		tokens := getPage(t, b, "/admin/tokens", false, http.StatusOK)
		for _, name := range []string{xssText, sqlText, zhText} {
			inert(t, "the tokens page", tokens, name)
		}
		audit := getPageBoth(t, b, "/audit", "", http.StatusOK)
		for _, name := range []string{xssText, sqlText, zhText} {
			inert(t, "the audit page", audit, "user:"+name)
			inert(t, "the audit page", audit, "token:"+name)
		}
		// The login audit rows carry the typed name as actor.
		if rows := auditOf(t, b, "login"); len(rows) != 2 || rows[0].Actor != sqlText || rows[1].Actor != xssText {
			t.Errorf("login audit rows %+v", rows)
		}
		schemaIntact(t, b, 4)
	})
}

// A rerun reason and a reconciliation note are stored as typed and shown
// escaped on every page that shows them.
func TestInjectionReasonsAndNotes(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		reason := xssText + " " + sqlText + " " + zhText
		manualTask(t, b)
		rec := postForm(b, "/orders/m-1/resources/inventory/rerun", url.Values{"reason": {reason}}, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("rerun = %d\n%s", rec.Code, rec.Body)
		}
		if got := oneAudit(t, b, "rerun"); got.Reason != reason {
			t.Fatalf("stored reason %q, want %q", got.Reason, reason)
		}
		var tk models.ReleaseTask
		try(t, "task", b.s.R.Where("order_no = ? AND resource_type = ?", "m-1", models.ResInventory).Take(&tk).Error)
		if tk.RerunReason != reason {
			t.Fatalf("task rerun reason %q", tk.RerunReason)
		}
		for path, what := range map[string]string{
			"/orders/m-1":                "the chain page",
			"/audit?action=rerun":        "the audit page",
			"/tasks/" + itoa(tk.ID):      "the task page",
			"/tasks?order=m-1":           "the task list",
			"/orders/m-1?print=1":        "the printed chain",
			"/audit?actor=root&target=o": "the filtered audit page",
		} {
			body := getPageBoth(t, b, path, "", http.StatusOK)
			noMarkup(t, what, body, reason, xssText, sqlText)
			if path != "/tasks?order=m-1" && path != "/audit?actor=root&target=o" {
				inert(t, what, body, reason)
			}
		}

		// A ticket: stock locked by hand beyond what the order holds.
		_, err := b.s.SetStock(b.ctx, "sku-r", 10, 0, "test")
		try(t, "stock", err)
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "r-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-r", Qty: 2}}})
		try(t, "place", err)
		try(t, "plant", b.s.W.Exec("UPDATE inventory SET locked = locked + 3 WHERE sku_id = 'sku-r'").Error)
		if rec := b.call(http.MethodPost, "/api/v1/reconcile", ""); rec.Code != http.StatusOK {
			t.Fatalf("reconcile = %d %s", rec.Code, rec.Body)
		}
		var d models.DiffTicket
		try(t, "ticket", b.s.R.Where("resource_type = ? AND biz_key = ? AND check_name = ?", models.ResInventory, "sku-r", models.CheckHeld).Take(&d).Error)
		note := `<img src=x onerror=alert(1)> '; DELETE FROM diff_tickets;-- ` + zhText
		diff := "/recon/diffs/" + itoa(d.ID)
		_, body := followPost(t, b, postForm(b, diff+"/ack", url.Values{"note": {note}}, false), false)
		inert(t, "the ticket page", body, note)
		checkText(t, body, "event-note", note)
		rnote := "\"><script>alert('resolved')</script>"
		_, body = followPost(t, b, postForm(b, diff+"/resolve", url.Values{"note": {rnote}}, true), true)
		inert(t, "the resolved ticket page", body, rnote)
		inert(t, "the resolved ticket page", body, note)
		audit := getPageBoth(t, b, "/audit?target=diff:", "", http.StatusOK)
		inert(t, "the audit page", audit, note)
		inert(t, "the audit page", audit, rnote)
		recon := getPageBoth(t, b, "/recon?status=RESOLVED", "", http.StatusOK)
		noMarkup(t, "the recon page", recon, note, rnote)
		var after models.DiffTicket
		try(t, "ticket after", b.s.R.Where("id = ?", d.ID).Take(&after).Error)
		if after.Status != models.DiffResolved || after.Note != note+" / "+rnote {
			t.Errorf("ticket after = status %s note %q", after.Status, after.Note)
		}
		schemaIntact(t, b, 1)
		if n := rowCount(t, b, "recon_diffs"); n == 0 {
			t.Error("the tickets are gone")
		}
	})
}

// Filters are parameters, never SQL: quotes and wildcards find nothing
// (or are refused as malformed) and are echoed escaped; nothing answers 500.
func TestInjectionFilters(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		b.clock.Advance(time.Minute)
		for _, actor := range []string{`' OR 1=1 --`, `root' --`, `%`, `_`, `" OR ""="`, xssText} {
			body := getPage(t, b, "/audit?actor="+url.QueryEscape(actor), false, http.StatusOK)
			if ids := auditIDs(body); len(ids) != 0 {
				t.Errorf("actor %q finds %v", actor, ids)
			}
			requireElement(t, body, "audit-empty", true)
			if tag := testidTag(body, "audit-f-actor"); !strings.Contains(tag, `value="`+html.EscapeString(actor)+`"`) {
				t.Errorf("actor %q echoed as %s", actor, tag)
			}
			noMarkup(t, "the audit filter", body, actor)
		}
		for _, target := range []string{`%`, `_`, `' OR '1'='1`, `order:%`, `\`, xssText} {
			body := getPage(t, b, "/audit?target="+url.QueryEscape(target), false, http.StatusOK)
			if ids := auditIDs(body); len(ids) != 0 {
				t.Errorf("target %q finds %v", target, ids)
			}
			noMarkup(t, "the audit filter", body, target)
		}
		for _, c := range []struct {
			path, param, value string
		}{
			{"/orders", "no", "<b>x</b>"},
			{"/orders", "no", "%"},
			{"/orders", "no", "'"},
			{"/orders", "no", "held-1' OR '1'='1"},
			{"/orders", "user", "<b>x</b>"},
			{"/orders", "user", "%"},
			{"/orders", "user", "u1' --"},
			{"/tasks", "order", "<b>x</b>"},
			{"/tasks", "order", "%"},
			{"/coupons", "owner", "<b>x</b>"},
			{"/coupons", "owner", "' OR 1=1 --"},
			{"/balances", "user", "<b>x</b>"},
			{"/inventory", "after", "<b>x</b>"},
		} {
			path := c.path + "?" + url.Values{c.param: {c.value}}.Encode()
			rec := servePage(b, path, "", "")
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Errorf("GET %s = %d, want 200 or 400", path, rec.Code)
				continue
			}
			body := wantPage(t, rec, "GET "+path, rec.Code)
			noMarkup(t, "GET "+path, body, c.value)
			if rec.Code == http.StatusOK && c.path == "/orders" {
				if rows := ordRowsOf(body); rows != 0 {
					t.Errorf("GET %s lists %d orders", path, rows)
				}
			}
		}
		// The orders list still lists both orders, and every table is there.
		if n := ordRowsOf(getPage(t, b, "/orders", false, http.StatusOK)); n != 2 {
			t.Errorf("orders list has %d rows after the filters, want 2", n)
		}
		schemaIntact(t, b, 1)
		if n := rowCount(t, b, "orders"); n != 2 {
			t.Errorf("orders has %d rows", n)
		}
	})
}

// ordRowsOf counts the order rows of the orders list.
func ordRowsOf(body string) int {
	return strings.Count(body, `data-testid="order-row"`)
}

// NUL and bytes that are not UTF-8, in any free-text field or filter, are
// refused with 400 before any handler runs (PostgreSQL cannot store them),
// on both engines alike; never a 500, and nothing is written.
func TestInjectionControlBytes(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		manualTask(t, b)
		before := snapshot(t, b)
		refused := func(what string, rec *httptest.ResponseRecorder) {
			t.Helper()
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "INVALID_INPUT") {
				t.Errorf("%s = %d, want 400 INVALID_INPUT\n%s", what, rec.Code, rec.Body)
			}
		}
		for _, name := range []string{"ro\x00ot", "\xff\xfe", "root\x00"} {
			refused(fmt.Sprintf("login name %q", name), postLogin(b, "192.0.2.7:4000", name, "not the password", "/"))
		}
		for _, q := range []string{"actor=%00", "actor=%FF%FE", "target=order:%00", "target=%FF", "%00=x"} {
			refused("GET /audit?"+q, servePage(b, "/audit?"+q, "", ""))
		}
		for _, reason := range []string{"nul\x00inside", "bad \xff\xfe utf-8"} {
			refused(fmt.Sprintf("rerun reason %q", reason), postForm(b, "/orders/m-1/resources/inventory/rerun", url.Values{"reason": {reason}}, false))
		}
		refused("ack note with NUL", postForm(b, "/recon/diffs/1/ack", url.Values{"note": {"nul\x00\xff"}}, false))
		refused("API rerun reason with \\u0000", b.call(http.MethodPost, "/api/v1/orders/m-1/resources/inventory/rerun", `{"reason":"a\u0000b"}`))
		// Refused before any handler: nothing written, not even an audit row.
		before.sameExcept(t, snapshot(t, b), nil)
		schemaIntact(t, b, 1)
	})
}
