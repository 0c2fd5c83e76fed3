package views

import (
	"strings"
	"testing"
	"time"
)

// testid is how a data-testid appears in the HTML.
func testid(id string) string { return `data-testid="` + id + `"` }

func TestPageCan(t *testing.T) {
	t.Parallel()
	cases := []struct {
		role, need string
		want       bool
	}{
		{"admin", "viewer", true}, {"admin", "operator", true}, {"admin", "admin", true},
		{"operator", "viewer", true}, {"operator", "operator", true}, {"operator", "admin", false},
		{"viewer", "viewer", true}, {"viewer", "operator", false}, {"viewer", "admin", false},
		{"", "viewer", false}, {"", "", false}, {"root", "viewer", false}, {"admin", "", false},
		{"admin", "superuser", false}, {"Admin", "viewer", false},
	}
	for _, c := range cases {
		if got := (Page{Role: c.role}).Can(c.need); got != c.want {
			t.Errorf("Page{Role: %q}.Can(%q) = %v, want %v", c.role, c.need, got, c.want)
		}
	}
}

func TestCSRFField(t *testing.T) {
	t.Parallel()
	got := renderHTML(t, CSRFField(Page{CSRF: `a"b<c`}))
	if want := `<input type="hidden" name="_csrf" value="a&#34;b&lt;c">`; got != want {
		t.Errorf("CSRFField = %s, want %s", got, want)
	}
}

// The navigation and the header follow who is signed in.
func TestLayoutByRole(t *testing.T) {
	t.Parallel()
	body := func(lang Lang, role string) string {
		return renderHTML(t, ErrorPage(testPage(lang, role, "error.title", ""), 404, "NOT_FOUND", ""))
	}
	for _, lang := range []Lang{LangZH, LangEN} {
		out := body(lang, "")
		for _, id := range []string{"nav", "whoami", "logout", "change-password", "nav-audit"} {
			if strings.Contains(out, testid(id)) {
				t.Errorf("%s signed out: %s shown", lang, id)
			}
		}
		if !strings.Contains(out, testid("lang-switch")) {
			t.Errorf("%s signed out: no language switch", lang)
		}
		for role, want := range map[string]map[string]bool{
			RoleViewer:   {"nav-audit": true, "nav-orders": true, "nav-users": false, "nav-tokens": false, "nav-webhooks": false},
			RoleOperator: {"nav-audit": true, "nav-users": false, "nav-tokens": false, "nav-webhooks": false},
			RoleAdmin:    {"nav-audit": true, "nav-users": true, "nav-tokens": true, "nav-webhooks": true},
		} {
			out := body(lang, role)
			for id, shown := range want {
				if strings.Contains(out, testid(id)) != shown {
					t.Errorf("%s %s: %s shown = %v, want %v", lang, role, id, !shown, shown)
				}
			}
			for _, id := range []string{"nav", "whoami", "logout", "logout-submit", "change-password", "lang-switch"} {
				if !strings.Contains(out, testid(id)) {
					t.Errorf("%s %s: no %s", lang, role, id)
				}
			}
			if !strings.Contains(out, `<form method="post" action="/logout"`) {
				t.Errorf("%s %s: logout is not a POST form", lang, role)
			}
			if !strings.Contains(out, (Page{Lang: lang}).T("code.role."+role)) {
				t.Errorf("%s %s: role not shown in words", lang, role)
			}
		}
	}
}

// A viewer sees every page but none of the actions the server would
// refuse; an operator sees them all.
func TestViewersSeeNoActions(t *testing.T) {
	t.Parallel()
	actions := map[string][]string{
		"chain":      {"reruns", "rerun-inventory"},
		"rerun":      {"rerun-form"},
		"tasks":      {"tasks-rerun-link"},
		"task":       {"task-rerun"},
		"bulk":       {"bulk-form"},
		"recon":      {"recon-run-form", "recon-run"},
		"recon-diff": {"diff-ack-form", "diff-resolve-form", "diff-ack", "diff-resolve"},
		"jobs":       {"job-recon-run-form", "job-recon-run"},
	}
	for _, lang := range []Lang{LangZH, LangEN} {
		viewer, operator := samplePages(lang, RoleViewer), samplePages(lang, RoleOperator)
		for page, ids := range actions {
			vo, oo := renderHTML(t, viewer[page]), renderHTML(t, operator[page])
			for _, id := range ids {
				if strings.Contains(vo, testid(id)) {
					t.Errorf("%s viewer sees %s on %s", lang, id, page)
				}
				if !strings.Contains(oo, testid(id)) {
					t.Errorf("%s operator misses %s on %s", lang, id, page)
				}
			}
			if strings.Contains(vo, `method="post"`) && !strings.Contains(vo, `action="/logout"`) {
				t.Errorf("%s viewer: %s has a POST form", lang, page)
			}
			if strings.Count(vo, `method="post"`) != 1 {
				t.Errorf("%s viewer: %s has %d POST forms, want only logout", lang, page, strings.Count(vo, `method="post"`))
			}
		}
		for _, page := range []string{"rerun", "bulk", "recon-diff"} {
			if !strings.Contains(renderHTML(t, viewer[page]), testid("need-operator")) {
				t.Errorf("%s viewer: %s does not say who can act", lang, page)
			}
		}
	}
}

func TestLoginPage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v      LoginView
		zh, en string
	}{
		{LoginView{Error: "BAD_CREDENTIALS"}, "用户名或密码错误", "Wrong name or password"},
		{LoginView{Error: "LOGIN_THROTTLED", RetryAfter: "3 分钟"}, "尝试次数过多，请 3 分钟 后再试", "Too many attempts; try again in 3 分钟"},
		{LoginView{Error: "LOGIN_THROTTLED"}, "尝试次数过多，请稍后再试", "Too many attempts; try again later"},
		{LoginView{Error: "INVALID_INPUT"}, "输入无效", "not a valid name or password"},
		{LoginView{Error: "SESSION_ENDED"}, "会话已结束，请重新登录", "Your session ended; sign in again"},
		{LoginView{Error: "SOMETHING_NEW"}, "SOMETHING_NEW", "SOMETHING_NEW"},
	}
	for _, c := range cases {
		for lang, want := range map[Lang]string{LangZH: c.zh, LangEN: c.en} {
			p := testPage(lang, "", "login.title", "")
			out := renderHTML(t, LoginPage(p, c.v))
			i := strings.Index(out, testid("login-error"))
			if i < 0 || !strings.Contains(out[i:], want) || !strings.Contains(out, `role="alert"`) {
				t.Errorf("%s %s: error not shown as %q", lang, c.v.Error, want)
			}
		}
	}
	out := renderHTML(t, LoginPage(testPage(LangEN, "", "login.title", ""), LoginView{Name: "bob", Next: "/orders?x=1"}))
	for _, want := range []string{
		testid("login-form"), `action="/login"`, `name="name"`, `value="bob"`, `autocomplete="username"`,
		`type="password"`, `autocomplete="current-password"`, `name="next" value="/orders?x=1"`,
		`<label for="login-name">`, `<label for="login-password">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("login page lacks %s", want)
		}
	}
	if strings.Contains(out, testid("login-error")) {
		t.Error("login page shows an error without one")
	}
}

func TestPasswordPage(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"BAD_CREDENTIALS":   "当前密码不正确",
		"PASSWORD_MISMATCH": "两次输入的新密码不一致",
		"PASSWORD_WEAK":     "至少 12 个字符",
		"INVALID_INPUT":     "输入无效",
	}
	for code, want := range cases {
		out := renderHTML(t, PasswordPage(testPage(LangZH, RoleViewer, "password.title", ""), PasswordView{Error: code, MinLen: 12}))
		i := strings.Index(out, testid("password-error"))
		if i < 0 || !strings.Contains(out[i:], want) {
			t.Errorf("%s: error not shown as %q", code, want)
		}
	}
	out := renderHTML(t, PasswordPage(testPage(LangEN, RoleViewer, "password.title", ""), PasswordView{MinLen: 12}))
	for _, want := range []string{testid("password-form"), `action="/account/password"`, `name="old"`, `name="new"`,
		`name="confirm"`, `autocomplete="current-password"`, `autocomplete="new-password"`, `minlength="12"`} {
		if !strings.Contains(out, want) {
			t.Errorf("password page lacks %s", want)
		}
	}
	if out := renderHTML(t, PasswordPage(testPage(LangEN, RoleViewer, "password.title", ""), PasswordView{})); strings.Contains(out, "minlength") {
		t.Error("minlength shown without a minimum")
	}
}

func TestUsersPage(t *testing.T) {
	t.Parallel()
	for _, lang := range []Lang{LangZH, LangEN} {
		out := renderHTML(t, samplePages(lang, RoleAdmin)["users"])
		for _, want := range []string{
			testid("user-create-form"), `action="/admin/users"`, testid("secret"), testid("secret-value") + `>s3cret-value</code>`,
			(Page{Lang: lang}).T("secret.once"), `action="/admin/users/2/role"`, `action="/admin/users/2/disable"`,
			`action="/admin/users/2/reset"`, `action="/admin/users/3/enable"`, `data-confirm=`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s users page lacks %s", lang, want)
			}
		}
		if n := strings.Count(out, testid("user-row")); n != 3 {
			t.Errorf("%s: %d user rows, want 3", lang, n)
		}
		// The disabled user can be enabled, not disabled; the others the other way.
		for _, no := range []string{`action="/admin/users/3/disable"`, `action="/admin/users/2/enable"`} {
			if strings.Contains(out, no) {
				t.Errorf("%s users page shows %s", lang, no)
			}
		}
		// Nobody changes their own role or disables themselves here.
		for _, no := range []string{`action="/admin/users/1/role"`, `action="/admin/users/1/disable"`} {
			if strings.Contains(out, no) {
				t.Errorf("%s users page offers %s on one's own row", lang, no)
			}
		}
	}
	out := renderHTML(t, UsersPage(testPage(LangZH, RoleAdmin, "users.title", "users"), UsersView{Roles: []string{"viewer"}}))
	if strings.Contains(out, testid("secret")) || !strings.Contains(out, testid("users-empty")) {
		t.Error("users page without users or secret")
	}
}

func TestTokensPage(t *testing.T) {
	t.Parallel()
	out := renderHTML(t, samplePages(LangZH, RoleAdmin)["tokens"])
	for _, want := range []string{testid("token-create-form"), `action="/admin/tokens"`, tokenUsage,
		testid("token-prefix") + `>uh_abcd1234…</code>`, `action="/admin/tokens/1/revoke"`} {
		if !strings.Contains(out, want) {
			t.Errorf("tokens page lacks %s", want)
		}
	}
	if n := strings.Count(out, testid("token-row")); n != 2 {
		t.Errorf("%d token rows, want 2", n)
	}
	if strings.Contains(out, `action="/admin/tokens/2/revoke"`) {
		t.Error("a revoked token can be revoked again")
	}
	// The whole secret shows once, in the secret box only.
	if strings.Count(out, "uh_abcd1234_full_secret") != 1 {
		t.Error("the new token's secret is not shown exactly once")
	}
	v := TokensView{Tokens: []TokenRow{{ID: 1, Name: "erp", Role: "viewer", Prefix: "abcd1234"}}}
	out = renderHTML(t, TokensPage(testPage(LangEN, RoleAdmin, "tokens.title", "tokens"), v))
	if strings.Contains(out, testid("secret")) {
		t.Error("a secret box without a secret")
	}
}

func TestAuditPage(t *testing.T) {
	t.Parallel()
	out := renderHTML(t, samplePages(LangZH, RoleViewer)["audit"])
	for _, want := range []string{
		testid("audit-filters"), `action="/audit"`, `method="get"`, `type="date"`, `<option value="rerun" selected>重跑</option>`,
		`<option value="something_new">something_new</option>`, testid("audit-error"), `role="alert"`,
		testid("audit-action") + ` title="rerun" class="nowrap">重跑</td>`, `<a href="/orders/O-1" class="trunc" title="order:O-1/inventory"><code>order:O-1/inventory</code></a>`,
		testid("audit-reason") + ` class="prewrap">stock fixed`, `title="curl/8.0"`, "req-1", "运维",
		testid("audit-outcome") + ` class="nowrap bad">无权限`, testid("audit-outcome") + ` class="nowrap ">weird`, `href="/audit/`,
		testid("audit-first"), testid("audit-next"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit page lacks %s", want)
		}
	}
	if n := strings.Count(out, testid("audit-row")); n != 3 {
		t.Errorf("%d audit rows, want 3", n)
	}
	out = renderHTML(t, AuditPage(testPage(LangEN, RoleViewer, "audit.title", "audit"), AuditView{}))
	if !strings.Contains(out, testid("audit-empty")) || strings.Contains(out, testid("audit-error")) ||
		strings.Contains(out, testid("audit-next")) {
		t.Error("empty audit page")
	}
}

// Every audited action the models write has words in both languages.
func TestAuditActionsTranslated(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"rerun", "bulk_rerun", "diff_ack", "diff_resolve", "recon_run_now", "job_run_now", "login",
		"logout", "password_change", "user_create", "user_role", "user_disable", "user_enable", "user_reset_password",
		"token_create", "token_revoke", "denied", "set_stock", "credit", "coupon_create", "activity_set", "slot_put",
		"webhook_create", "webhook_delete", "webhook_pause", "webhook_resume", "webhook_redeliver"} {
		for _, lang := range []Lang{LangZH, LangEN} {
			if got := auditAction(Page{Lang: lang}, a); got == a && lang == LangZH {
				t.Errorf("action %s has no Chinese name", a)
			}
		}
	}
	for _, o := range []string{"ok", "failed", "refused", "throttled", "denied"} {
		if got := auditOutcome(Page{Lang: LangZH}, o); got == o {
			t.Errorf("outcome %s has no Chinese name", o)
		}
	}
}

// The chain shows an audit entry's actor with role and address.
func TestChainAuditEventRoleAndIP(t *testing.T) {
	t.Parallel()
	out := renderHTML(t, samplePages(LangEN, RoleViewer)["chain"])
	for _, want := range []string{testid("event-role") + `>Operations</small>`, testid("event-ip") + `>10.0.0.9</small>`,
		`<strong>rerun</strong>`, `>succeeded</span>`} {
		if !strings.Contains(out, want) {
			t.Errorf("chain lacks %s", want)
		}
	}
}

// Names come from users and token holders: they render as text, never as
// markup.
func TestNamesAreEscaped(t *testing.T) {
	t.Parallel()
	const evil = `<script>alert(1)</script>`
	const escaped = `&lt;script&gt;alert(1)&lt;/script&gt;`
	p := testPage(LangZH, RoleAdmin, "users.title", "users")
	p.User = evil
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	hook := WebhookRow{ID: 1, URL: evil, CreatedBy: evil, PausedAt: &at, PausedReason: evil}
	pages := map[string]string{
		"users": renderHTML(t, UsersPage(p, UsersView{Roles: []string{"viewer"},
			Users:  []UserRow{{ID: 2, Name: evil, Role: "viewer", RoleURL: "/r", DisableURL: "/d", ResetURL: "/x"}},
			Secret: &Secret{Title: evil, For: evil, Value: evil}})),
		"tokens": renderHTML(t, TokensPage(p, TokensView{Tokens: []TokenRow{{ID: 1, Name: evil, Prefix: evil, CreatedBy: evil, RevokeURL: "/r"}}})),
		"audit":  renderHTML(t, AuditPage(p, AuditView{Actor: evil, Rows: []AuditRow{{ID: 1, Actor: evil, Target: evil, Reason: evil, UserAgent: `"><script>alert(1)</script>`}}})),
		"login":  renderHTML(t, LoginPage(testPage(LangZH, "", "login.title", ""), LoginView{Name: evil, Next: evil, Error: "LOGIN_THROTTLED", RetryAfter: evil})),
		// A subscriber's answer is anybody's text.
		"webhook": renderHTML(t, WebhookPage(p, WebhookDetailView{Sub: hook, Deliveries: []DeliveryRow{{ID: 1, Status: "FAILED",
			LastStatus: 400, LastError: evil, LastAnswer: evil, RedeliverURL: "/r"}}})),
		"webhooks": renderHTML(t, WebhooksPage(p, WebhooksView{Rows: []WebhookRow{hook}, Form: WebhookForm{URL: evil, Error: evil}})),
	}
	for name, out := range pages {
		if strings.Contains(out, "<script>alert(1)") {
			t.Errorf("%s: a name became markup", name)
		}
		if !strings.Contains(out, escaped) {
			t.Errorf("%s: the name is not shown escaped", name)
		}
		if strings.Count(out, "<script") != 1 {
			t.Errorf("%s: %d scripts, want only the app's", name, strings.Count(out, "<script"))
		}
	}
	if !strings.Contains(pages["users"], testid("whoami")+`>`+escaped) {
		t.Error("whoami does not show the escaped name")
	}
}
