package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
)

// A user changes their own password: the current one is required (a wrong
// one is 400 and audited as refused), the two new ones must agree and be
// long enough; success ends their other sessions and keeps this one.
func TestAccountPasswordChange(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		u := mustUser(t, b, "pat", auth.RoleViewer)
		phone, laptop := newBrowser(b), newBrowser(b)
		for _, br := range []*browser{phone, laptop} {
			if rec := br.login(t, "pat", goodPassword); rec.Code != http.StatusSeeOther {
				t.Fatalf("login = %d", rec.Code)
			}
		}
		page := laptop.get("/account/password")
		form := wantPage(t, page, "GET /account/password", http.StatusOK)
		requireElement(t, form, "password-form", true)
		token := formToken(t, form)
		const newPW = "a much better passphrase"
		hashOf := func() string { return userNamed(t, b, "pat").PasswordHash }
		before := hashOf()
		post := func(old, nw, confirm string) (int, string) {
			t.Helper()
			rec := laptop.post("/account/password", url.Values{"_csrf": {token}, "old": {old}, "new": {nw}, "confirm": {confirm}})
			if rec.Code == http.StatusSeeOther {
				return rec.Code, rec.Header().Get("Location")
			}
			body := wantPage(t, rec, "POST /account/password", rec.Code)
			text, _ := testidText(body, "password-error")
			return rec.Code, text
		}

		for _, c := range []struct {
			name, old, nw, confirm, want string
			refused                      int64 // audit rows "refused" it writes
		}{
			{"wrong current password", "not my password", newPW, newPW, "当前密码不正确", 1},
			{"confirmation differs", goodPassword, newPW, newPW + "!", "两次输入的新密码不一致", 0},
			{"too short", goodPassword, "short1234", "short1234", "新密码不符合要求：至少 10 个字符", 0},
			// Only the start: the sentence names the minimum, not the maximum.
			{"too long", goodPassword, strings.Repeat("x", auth.MaxPasswordLen+1), strings.Repeat("x", auth.MaxPasswordLen+1), "新密码不符合要求", 0},
		} {
			refusedBefore := len(auditOf(t, b, "password_change"))
			code, text := post(c.old, c.nw, c.confirm)
			if code != http.StatusBadRequest || !strings.HasPrefix(text, c.want) || (c.name != "too long" && text != c.want) {
				t.Errorf("%s: %d %q, want 400 %q", c.name, code, text, c.want)
			}
			rows := auditOf(t, b, "password_change")
			if int64(len(rows)-refusedBefore) != c.refused {
				t.Errorf("%s: %d audit rows, want %d", c.name, len(rows)-refusedBefore, c.refused)
			}
			if c.refused == 1 {
				e := rows[len(rows)-1]
				wantAuditBy(t, e, "pat", "viewer", "user:pat", "refused")
				if e.IP != "192.0.2.1" {
					t.Errorf("refused change from %q", e.IP)
				}
			}
			if hashOf() != before {
				t.Fatalf("%s changed the password", c.name)
			}
		}
		if n, _ := b.a.UserSessions(b.ctx, u.ID); n != 2 {
			t.Fatalf("refused changes touched the sessions: %d left", n)
		}
		// The form speaks English too.
		laptop.cookies["lang"] = &http.Cookie{Name: "lang", Value: "en"}
		if code, text := post(goodPassword, newPW, "something else"); code != http.StatusBadRequest || text != "The two new passwords differ" {
			t.Errorf("English mismatch = %d %q", code, text)
		}
		delete(laptop.cookies, "lang")

		code, to := post(goodPassword, newPW, newPW)
		if code != http.StatusSeeOther || to != "/" {
			t.Fatalf("change = %d %q, want 303 to /", code, to)
		}
		home := laptop.get("/")
		body := wantPage(t, home, "GET / after the change", http.StatusOK)
		checkText(t, body, "flash", "密码已修改，其他设备上的登录已失效。")
		if rec := laptop.get("/orders"); rec.Code != http.StatusOK {
			t.Errorf("the session that made the change = %d, want still signed in", rec.Code)
		}
		if rec := phone.get("/orders"); !isLoginRedirect(rec) {
			t.Errorf("the other session = %d %s, want ended", rec.Code, rec.Header().Get("Location"))
		}
		if n, _ := b.a.UserSessions(b.ctx, u.ID); n != 1 {
			t.Errorf("%d sessions after the change, want 1", n)
		}
		rows := auditOf(t, b, "password_change")
		e := rows[len(rows)-1]
		wantAuditBy(t, e, "pat", "viewer", "user:pat", "ok")
		if e.Detail != "1 other session(s) ended" {
			t.Errorf("change detail %q", e.Detail)
		}
		if rec := newBrowser(b).login(t, "pat", goodPassword); rec.Code != http.StatusUnauthorized {
			t.Errorf("the old password = %d, want 401", rec.Code)
		}
		if rec := newBrowser(b).login(t, "pat", newPW); rec.Code != http.StatusSeeOther {
			t.Errorf("the new password = %d, want 303", rec.Code)
		}
	})
}

// The password page is there for every role, in both languages; nobody
// signed in is sent to the login form.
func TestAccountPasswordPage(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		v, err := b.signIn("vic", auth.RoleViewer)
		try(t, "vic", err)
		body := getPageBoth(t, b.as(v), "/account/password", "", http.StatusOK)
		for _, id := range []string{"password-old", "password-new", "password-confirm"} {
			if tag := testidTag(body, id); tag == "" || !strings.Contains(tag, `type="password"`) {
				t.Errorf("%s = %q, want a password field", id, tag)
			}
		}
		if tag := testidTag(body, "password-new"); !strings.Contains(tag, `minlength="10"`) {
			t.Errorf("new password field %q lacks minlength", tag)
		}
		requireElement(t, body, "password-error", false)
		if rec := b.as(nil).call(http.MethodGet, "/account/password", ""); !isLoginRedirect(rec) {
			t.Errorf("anonymous = %d %s", rec.Code, rec.Header().Get("Location"))
		}
	})
}
