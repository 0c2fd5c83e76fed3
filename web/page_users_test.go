package web_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// What the account, token, audit and injection tests share: audit rows by
// action, a user by name, and the flash a POST leaves.

// auditOf is every audit row of an action, oldest first.
func auditOf(t *testing.T, b bundle, action string) []models.AuditEntry {
	t.Helper()
	var out []models.AuditEntry
	try(t, "audit "+action, b.s.R.Where("action = ?", action).Order("id").Find(&out).Error)
	return out
}

// oneAudit is the only audit row of an action; the test stops unless there
// is exactly one.
func oneAudit(t *testing.T, b bundle, action string) models.AuditEntry {
	t.Helper()
	rows := auditOf(t, b, action)
	if len(rows) != 1 {
		t.Fatalf("%d audit rows %q, want 1: %+v", len(rows), action, rows)
	}
	return rows[0]
}

// wantAuditBy checks an audit row's actor, role, target and outcome, and
// that it names the request it came from.
func wantAuditBy(t *testing.T, e models.AuditEntry, actor, role, target, outcome string) {
	t.Helper()
	if e.Actor != actor || e.Role != role || e.Target != target || e.Outcome != outcome {
		t.Errorf("audit %s = actor %q role %q target %q outcome %q, want %q %q %q %q",
			e.Action, e.Actor, e.Role, e.Target, e.Outcome, actor, role, target, outcome)
	}
	if e.RequestID == "" || e.IP == "" {
		t.Errorf("audit %s lacks its request: request_id %q, ip %q", e.Action, e.RequestID, e.IP)
	}
}

// userNamed is the user with this exact name, or nil.
func userNamed(t *testing.T, b bundle, name string) *auth.User {
	t.Helper()
	var us []auth.User
	try(t, "user "+name, b.s.R.Where("name = ?", name).Find(&us).Error)
	if len(us) == 0 {
		return nil
	}
	return &us[0]
}

// rowCount counts a table's rows.
func rowCount(t *testing.T, b bundle, table string) int64 {
	t.Helper()
	var n int64
	try(t, "count "+table, b.s.R.Table(table).Count(&n).Error)
	return n
}

// flashAfter follows a POST's 303, which must go to wantTo, and returns
// whether the flash it left is a success and what it says.
func flashAfter(t *testing.T, b bundle, rec *httptest.ResponseRecorder, en bool, wantTo string) (ok bool, text string) {
	t.Helper()
	to, body := followPost(t, b, rec, en)
	if to != wantTo {
		t.Fatalf("redirected to %q, want %q", to, wantTo)
	}
	tag := testidTag(body, "flash")
	if tag == "" {
		t.Fatalf("no flash after the POST:\n%s", body)
	}
	text, _ = testidText(body, "flash")
	return strings.Contains(tag, `"flash ok"`), text
}

// wantFlash is flashAfter that checks the flash too.
func wantFlash(t *testing.T, b bundle, rec *httptest.ResponseRecorder, en bool, wantTo string, ok bool, text string) {
	t.Helper()
	gotOK, got := flashAfter(t, b, rec, en, wantTo)
	if gotOK != ok || got != text {
		t.Errorf("flash = ok %v %q, want ok %v %q", gotOK, got, ok, text)
	}
}

// secretValues are the texts of every secret-value element of a page.
func secretValues(body string) []string {
	var out []string
	for rest := body; ; {
		i := strings.Index(rest, `data-testid="secret-value"`)
		if i < 0 {
			return out
		}
		v, _ := testidText(rest[i:], "secret-value")
		out = append(out, v)
		rest = rest[i+1:]
	}
}

// userPath is a user's action URL on the users page.
func userPath(id int64, action string) string { return "/admin/users/" + itoa(id) + "/" + action }

// An admin creates a user with a typed password: 303, a flash naming the
// user, the user with that role, and one audit row saying who, as what,
// from where. The password is the one typed: it signs in.
func TestUsersCreateTyped(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := postForm(b, "/admin/users", url.Values{"name": {"alice"}, "role": {"operator"}, "password": {goodPassword}}, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("create = %d, want 303\n%s", rec.Code, rec.Body)
		}
		if secretValues(rec.Body.String()) != nil {
			t.Error("a typed password is shown back")
		}
		wantFlash(t, b, rec, false, "/admin/users", true, "用户 alice 已创建")
		u := userNamed(t, b, "alice")
		if u == nil || u.Role != auth.RoleOperator || u.Disabled {
			t.Fatalf("alice = %+v, want an enabled operator", u)
		}
		e := oneAudit(t, b, "user_create")
		wantAuditBy(t, e, "root", "admin", "user:alice", "ok")
		if e.IP != "192.0.2.1" || e.Detail != "operator" {
			t.Errorf("audit ip %q detail %q, want 192.0.2.1 and the role", e.IP, e.Detail)
		}
		if rec := newBrowser(b).login(t, "alice", goodPassword); rec.Code != http.StatusSeeOther {
			t.Errorf("alice signs in with the typed password: %d", rec.Code)
		}
		// The list shows her, and root as "you" without controls over himself.
		body := getPageBoth(t, b, "/admin/users", "", http.StatusOK)
		table := testidElement(body, "users-table")
		if !strings.Contains(table, ">alice</span>") || !strings.Contains(table, "运维") {
			t.Errorf("users table lacks alice the operator:\n%s", table)
		}
		i := strings.Index(body, `data-testid="user-self"`)
		if i < 0 {
			t.Fatalf("root is not marked as the viewer:\n%s", table)
		}
		selfRow := body[strings.LastIndex(body[:i], "<tr"):]
		selfRow = selfRow[:strings.Index(selfRow, "</tr>")]
		for _, id := range []string{"user-role-form", "user-disable-form", "user-reset-form"} {
			if strings.Contains(selfRow, id) {
				t.Errorf("root's own row offers %s", id)
			}
		}
	})
}

// An empty password field makes one up and shows it on the answer, once:
// 200, not a redirect, with the secret; the list afterwards does not show
// it, and it signs in.
func TestUsersCreateGenerated(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := postForm(b, "/admin/users", url.Values{"name": {"carol"}, "role": {"viewer"}, "password": {""}}, true)
		body := wantPage(t, rec, "create with an empty password", http.StatusOK)
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the page with a secret has Cache-Control %q", cc)
		}
		vals := secretValues(body)
		if len(vals) != 1 || len(vals[0]) != 24 {
			t.Fatalf("secret values %q, want one 24-character password", vals)
		}
		pw := vals[0]
		if strings.Count(body, pw) != 1 {
			t.Errorf("the password appears %d times on the page", strings.Count(body, pw))
		}
		checkText(t, body, "secret-for", "For: carol")
		u := userNamed(t, b, "carol")
		if u == nil || u.Role != auth.RoleViewer {
			t.Fatalf("carol = %+v", u)
		}
		if strings.Contains(u.PasswordHash, pw) {
			t.Fatal("the password is stored as typed")
		}
		wantAuditBy(t, oneAudit(t, b, "user_create"), "root", "admin", "user:carol", "ok")
		for _, en := range []bool{false, true} {
			again := getPage(t, b, "/admin/users", en, http.StatusOK)
			if _, ok := testidText(again, "secret"); ok || strings.Contains(again, pw) {
				t.Fatalf("the secret is shown again (en=%v)", en)
			}
		}
		br := newBrowser(b)
		if rec := br.login(t, "carol", pw); rec.Code != http.StatusSeeOther {
			t.Fatalf("carol with the generated password = %d", rec.Code)
		}
		if rec := br.get("/orders"); rec.Code != http.StatusOK {
			t.Fatalf("carol's session: GET /orders = %d", rec.Code)
		}
	})
}

// Refused creations say why in the flash and create nothing.
func TestUsersCreateRefused(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.signIn("dora", auth.RoleViewer)
		try(t, "dora", err)
		for i, c := range []struct {
			name string
			form url.Values
			en   bool
			want string
		}{
			{"duplicate name", url.Values{"name": {"dora"}, "role": {"operator"}, "password": {goodPassword}}, false, "用户名已被占用"},
			{"duplicate name, English", url.Values{"name": {"dora"}, "role": {"admin"}, "password": {""}}, true, "That user name is taken"},
			{"bad role", url.Values{"name": {"eve"}, "role": {"superuser"}, "password": {goodPassword}}, false, "没有这种角色，未做任何更改"},
			{"no role", url.Values{"name": {"eve"}, "password": {goodPassword}}, true, "There is no such role; nothing was changed"},
			{"role in capitals", url.Values{"name": {"eve"}, "role": {"ADMIN"}, "password": {goodPassword}}, false, "没有这种角色，未做任何更改"},
		} {
			users := rowCount(t, b, "users")
			rec := postForm(b, "/admin/users", c.form, c.en)
			wantFlash(t, b, rec, c.en, "/admin/users", false, c.want)
			if got := rowCount(t, b, "users"); got != users {
				t.Errorf("%s: users %d → %d", c.name, users, got)
			}
			// Each refusal is one user_create row with outcome refused.
			if n, r := countAudit(t, b, "user_create"), auditRefused(t, b); n != int64(i+1) || r != int64(i+1) {
				t.Errorf("%s: %d user_create rows, %d refused, want %d", c.name, n, r, i+1)
			}
		}
		if u := userNamed(t, b, "dora"); u == nil || u.Role != auth.RoleViewer {
			t.Errorf("dora changed: %+v", u)
		}
		// Invalid names and short passwords are refused with the reason.
		for _, c := range []struct{ name, pw, want string }{
			{" lead", goodPassword, "name must not start or end with a space"},
			{"", goodPassword, "name must be 1 to 64 characters"},
			{strings.Repeat("名", 65), goodPassword, "name must be 1 to 64 characters"},
			{"tab\tname", goodPassword, "name must not contain control characters"},
			{"rlo\u202ename", goodPassword, "name must not contain control characters"},
			{"token:ci", goodPassword, "name must not contain ':'"},
			{"short", "123456789", "password must be at least 10 characters"},
		} {
			rec := postForm(b, "/admin/users", url.Values{"name": {c.name}, "role": {"viewer"}, "password": {c.pw}}, false)
			ok, text := flashAfter(t, b, rec, false, "/admin/users")
			if ok || !strings.HasPrefix(text, "输入无效") || !strings.HasSuffix(text, c.want) {
				t.Errorf("name %q pw %q: flash ok %v %q, want %q", c.name, c.pw, ok, text, c.want)
			}
			if u := userNamed(t, b, c.name); u != nil {
				t.Errorf("user %q created", c.name)
			}
		}
	})
}

// Each administrative action on a user writes exactly one audit row of its
// own action, in the admin's name and role.
func TestUsersActionsAudited(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		bob, err := b.signIn("bob", auth.RoleOperator)
		try(t, "bob", err)
		id := userNamed(t, b, "bob").ID
		type step struct {
			action, path string
			form         url.Values
			flash        string // "" when the answer is the page with a secret
			detail       string
			check        func(u *auth.User) bool
		}
		for _, s := range []step{
			{"user_role", userPath(id, "role"), url.Values{"role": {"viewer"}}, "角色已改为客服（只读）", "operator→viewer",
				func(u *auth.User) bool { return u.Role == auth.RoleViewer }},
			{"user_disable", userPath(id, "disable"), nil, "用户已停用，其会话已结束", "1 session(s) ended",
				func(u *auth.User) bool { return u.Disabled }},
			{"user_enable", userPath(id, "enable"), nil, "用户已启用", "",
				func(u *auth.User) bool { return !u.Disabled }},
			{"user_reset_password", userPath(id, "reset"), url.Values{"password": {goodPassword}}, "bob 的密码已重置，其会话已结束", "0 session(s) ended",
				func(u *auth.User) bool { return !strings.HasSuffix(u.PasswordHash, "$"+strings.Repeat("A", 43)) }},
		} {
			before := countAudit(t, b, s.action)
			rec := postForm(b, s.path, s.form, false)
			wantFlash(t, b, rec, false, "/admin/users", true, s.flash)
			rows := auditOf(t, b, s.action)
			if int64(len(rows)) != before+1 {
				t.Fatalf("%s: %d audit rows, want %d", s.action, len(rows), before+1)
			}
			e := rows[len(rows)-1]
			wantAuditBy(t, e, "root", "admin", "user:bob", "ok")
			if e.Detail != s.detail {
				t.Errorf("%s detail %q, want %q", s.action, e.Detail, s.detail)
			}
			if u := userNamed(t, b, "bob"); !s.check(u) {
				t.Errorf("%s: bob is %+v", s.action, u)
			}
		}
		if n := countSessions(t, b, bob); n != 0 {
			t.Errorf("bob's session outlived the disable: %d", n)
		}
		if rec := newBrowser(b).login(t, "bob", goodPassword); rec.Code != http.StatusSeeOther {
			t.Fatalf("bob with the reset password = %d", rec.Code)
		}
		// A reset with an empty field makes one up, shows it once and ends
		// bob's sessions; the typed one stops working.
		if n, err := b.a.UserSessions(b.ctx, id); err != nil || n != 1 {
			t.Fatalf("bob's sessions before the reset = %d, %v", n, err)
		}
		rec := postForm(b, userPath(id, "reset"), url.Values{"password": {""}}, false)
		body := wantPage(t, rec, "generated reset", http.StatusOK)
		vals := secretValues(body)
		if len(vals) != 1 || len(vals[0]) != 24 {
			t.Fatalf("reset secret %q", vals)
		}
		checkText(t, body, "secret-for", "属于：bob")
		resets := auditOf(t, b, "user_reset_password")
		if len(resets) != 2 || resets[1].Detail != "1 session(s) ended" {
			t.Fatalf("reset audit rows %+v, want a second one ending 1 session", resets)
		}
		wantAuditBy(t, resets[1], "root", "admin", "user:bob", "ok")
		if n, _ := b.a.UserSessions(b.ctx, id); n != 0 {
			t.Errorf("bob keeps %d sessions after the reset", n)
		}
		if strings.Contains(getPage(t, b, "/admin/users", false, http.StatusOK), vals[0]) {
			t.Error("the reset password is shown again")
		}
		if rec := newBrowser(b).login(t, "bob", goodPassword); rec.Code != http.StatusUnauthorized {
			t.Errorf("the old password after the reset = %d, want 401", rec.Code)
		}
		if rec := newBrowser(b).login(t, "bob", vals[0]); rec.Code != http.StatusSeeOther {
			t.Errorf("the generated password = %d, want 303", rec.Code)
		}
		// No-ops write nothing: the same role again, enabling an enabled user.
		roles, enables := countAudit(t, b, "user_role"), countAudit(t, b, "user_enable")
		wantFlash(t, b, postForm(b, userPath(id, "role"), url.Values{"role": {"viewer"}}, false), false, "/admin/users", true, "角色已改为客服（只读）")
		wantFlash(t, b, postForm(b, userPath(id, "enable"), nil, false), false, "/admin/users", true, "用户已启用")
		if countAudit(t, b, "user_role") != roles || countAudit(t, b, "user_enable") != enables {
			t.Error("a change that changed nothing was audited")
		}
		// A bad role (refused and audited), an unknown user and a malformed
		// id change nothing.
		refused := auditRefused(t, b)
		wantFlash(t, b, postForm(b, userPath(id, "role"), url.Values{"role": {"root"}}, false), false, "/admin/users", false, "没有这种角色，未做任何更改")
		if got := auditRefused(t, b) - refused; got != 1 {
			t.Errorf("a refused role change wrote %d refused audit rows, want 1", got)
		}
		if rec := postForm(b, userPath(9999, "disable"), nil, false); rec.Code != http.StatusNotFound {
			t.Errorf("disable of an unknown user = %d, want 404", rec.Code)
		}
		if rec := postForm(b, "/admin/users/x/disable", nil, false); rec.Code != http.StatusBadRequest {
			t.Errorf("disable user x = %d, want 400", rec.Code)
		}
		if rec := postForm(b, userPath(9999, "reset"), url.Values{"password": {""}}, false); rec.Code != http.StatusNotFound {
			t.Errorf("reset of an unknown user = %d, want 404", rec.Code)
		}
		if u := userNamed(t, b, "bob"); u.Role != auth.RoleViewer || u.Disabled {
			t.Errorf("bob after refused changes: %+v", u)
		}
	})
}

// An admin cannot disable, demote or reset themselves from the users page
// (the page offers no control over oneself; a POST is refused, SELF, and
// audited): so the last admin cannot lock everyone out by a slip. The
// LAST_ADMIN guard behind it, for two admins racing, is tested in models.
func TestUsersSelfRefused(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		root := userNamed(t, b, "root")
		refused := auditRefused(t, b)
		for _, c := range []struct {
			path string
			form url.Values
			en   bool
			want string
		}{
			{userPath(root.ID, "disable"), nil, false, "不能在这里修改自己的角色、停用自己或重置自己的密码；请用“修改密码”"},
			{userPath(root.ID, "role"), url.Values{"role": {"operator"}}, false, "不能在这里修改自己的角色、停用自己或重置自己的密码；请用“修改密码”"},
			{userPath(root.ID, "reset"), url.Values{"password": {""}}, true, "You cannot change your own role, disable yourself or reset your own password here; use Password at the top"},
		} {
			wantFlash(t, b, postForm(b, c.path, c.form, c.en), c.en, "/admin/users", false, c.want)
		}
		if got := userNamed(t, b, "root"); got.Role != auth.RoleAdmin || got.Disabled || got.PasswordHash != root.PasswordHash {
			t.Fatalf("root after refused changes: %+v", got)
		}
		if got := auditRefused(t, b) - refused; got != 3 {
			t.Errorf("refused changes wrote %d refused audit rows, want 3", got)
		}
		if rec := getPage(t, b, "/admin/users", false, http.StatusOK); !strings.Contains(rec, "users-table") {
			t.Error("root lost the users page")
		}
	})
}

// auditRefused counts audit rows with outcome refused.
func auditRefused(t *testing.T, b bundle) int64 {
	t.Helper()
	var n int64
	try(t, "count refused", b.s.R.Model(&models.AuditEntry{}).Where("outcome = ?", "refused").Count(&n).Error)
	return n
}

// Only admins reach the users page or its forms; an operator's attempt is
// 403, audited, and creates nothing.
func TestUsersAdminOnly(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		op, err := b.signIn("opal", auth.RoleOperator)
		try(t, "opal", err)
		as := b.as(op)
		for _, en := range []bool{false, true} {
			body := getPage(t, as, "/admin/users", en, http.StatusForbidden)
			requireElement(t, body, "error-forbidden", true)
			if strings.Contains(body, "users-table") {
				t.Error("the 403 page shows the users")
			}
		}
		rec := postForm(as, "/admin/users", url.Values{"name": {"mallory"}, "role": {"admin"}, "password": {goodPassword}}, false)
		if rec.Code != http.StatusForbidden {
			t.Fatalf("operator creating a user = %d", rec.Code)
		}
		if userNamed(t, b, "mallory") != nil {
			t.Fatal("an operator created a user")
		}
		denied := auditOf(t, b, "denied")
		if len(denied) != 3 {
			t.Fatalf("denied rows %+v, want 3", denied)
		}
		wantAuditBy(t, denied[2], "opal", "operator", "route:POST /admin/users", "denied")
		if nav, _ := testidText(getPage(t, as, "/", false, http.StatusOK), "nav-users"); nav != "" {
			t.Errorf("an operator's menu links to users: %q", nav)
		}
		// Both languages of the admin's page are complete.
		getPageBoth(t, b, "/admin/users", "", http.StatusOK)
	})
}
