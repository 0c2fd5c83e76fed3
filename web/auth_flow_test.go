package web_test

import (
	"crypto/tls"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// browser is a cookie jar over the router, for flows that need one.
type browser struct {
	b       bundle
	cookies map[string]*http.Cookie
	tls     bool
}

func newBrowser(b bundle) *browser {
	return &browser{b: b.as(nil), cookies: map[string]*http.Cookie{}}
}

func (br *browser) do(req *http.Request) *httptest.ResponseRecorder {
	for _, c := range br.cookies {
		req.AddCookie(c)
	}
	if br.tls {
		req.TLS = &tls.ConnectionState{}
	}
	rec := br.b.serve(req)
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(br.cookies, c.Name)
		} else {
			br.cookies[c.Name] = &http.Cookie{Name: c.Name, Value: c.Value}
		}
	}
	return rec
}

func (br *browser) get(path string) *httptest.ResponseRecorder {
	return br.do(httptest.NewRequest(http.MethodGet, path, nil))
}

// post sends a form as a same-origin browser would.
func (br *browser) post(path string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return br.do(req)
}

var csrfFieldRE = regexp.MustCompile(`name="_csrf"[^>]*value="([^"]*)"`)

// formToken is the CSRF token a page's forms carry.
func formToken(t *testing.T, body string) string {
	t.Helper()
	m := csrfFieldRE.FindStringSubmatch(body)
	if m == nil || m[1] == "" {
		t.Fatalf("no _csrf field in the page:\n%s", body)
	}
	return m[1]
}

// login fetches the login form and signs in with it.
func (br *browser) login(t *testing.T, name, password string) *httptest.ResponseRecorder {
	t.Helper()
	page := br.get("/login")
	if page.Code != http.StatusOK {
		t.Fatalf("GET /login = %d", page.Code)
	}
	return br.post("/login", url.Values{"name": {name}, "password": {password}, "_csrf": {formToken(t, page.Body.String())}})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

const goodPassword = "correct horse battery"

func mustUser(t *testing.T, b bundle, name string, role auth.Role) *auth.User {
	t.Helper()
	u, err := b.a.CreateUser(b.ctx, name, role, goodPassword, "test")
	try(t, "create user "+name, err)
	return u
}

// Signing in gives a new session token whatever cookie the browser came
// with (no fixation), and the planted value never signs anyone in.
func TestLoginRenewsSessionToken(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		mustUser(t, b, "alice", auth.RoleOperator)
		br := newBrowser(b)
		planted := "attacker-chosen-session-token"
		br.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: planted}
		if rec := br.get("/orders"); !isLoginRedirect(rec) {
			t.Fatalf("GET /orders with a planted token = %d %s, want the login form", rec.Code, rec.Header().Get("Location"))
		}
		br.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: planted}
		rec := br.login(t, "alice", goodPassword)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/" {
			t.Fatalf("login = %d %s, want 303 to /\n%s", rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		got := br.cookies["unhold_session"]
		if got == nil || got.Value == planted || got.Value == "" {
			t.Fatalf("session cookie after login = %v, want a new token", got)
		}
		var setCookie string
		for _, v := range rec.Header().Values("Set-Cookie") {
			if strings.HasPrefix(v, "unhold_session=") {
				setCookie = v
			}
		}
		for _, attr := range []string{"HttpOnly", "SameSite=Lax", "Path=/"} {
			if !strings.Contains(setCookie, attr) {
				t.Errorf("session cookie %q lacks %s", setCookie, attr)
			}
		}
		if strings.Contains(setCookie, "Secure") {
			t.Errorf("session cookie over plain HTTP is Secure: %q", setCookie)
		}
		if rec := br.get("/orders"); rec.Code != http.StatusOK {
			t.Fatalf("GET /orders signed in = %d", rec.Code)
		}
		attacker := newBrowser(b)
		attacker.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: planted}
		if rec := attacker.get("/orders"); !isLoginRedirect(rec) {
			t.Fatalf("the planted token signs in: %d", rec.Code)
		}
		// Logout ends the session on the server, not just in the browser.
		token := br.cookies["unhold_session"].Value
		page := br.get("/orders")
		if rec := br.post("/logout", url.Values{"_csrf": {formToken(t, page.Body.String())}}); rec.Code != http.StatusSeeOther {
			t.Fatalf("logout = %d", rec.Code)
		}
		replay := newBrowser(b)
		replay.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: token}
		if rec := replay.get("/orders"); !isLoginRedirect(rec) {
			t.Fatalf("a logged-out token still works: %d", rec.Code)
		}
	})
}

// Over HTTPS every cookie is a __Host- one (Secure, Path=/, no Domain), read
// by that name only, and HSTS is sent; never over HTTP.
func TestHTTPSCookiesAndHSTS(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	mustUser(t, b, "alice", auth.RoleViewer)
	br := newBrowser(b)
	br.tls = true
	rec := br.login(t, "alice", goodPassword)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login over TLS = %d", rec.Code)
	}
	set := rec.Header().Values("Set-Cookie")
	names := map[string]bool{}
	for _, v := range set {
		name, _, _ := strings.Cut(v, "=")
		names[name] = true
		if !strings.HasPrefix(name, "__Host-") || !strings.Contains(v, "; Secure") || !strings.Contains(v, "; Path=/;") ||
			strings.Contains(v, "Domain=") {
			t.Errorf("cookie over HTTPS is not a __Host- one (Secure, Path=/, no Domain): %q", v)
		}
	}
	if !names["__Host-unhold_session"] || !names["__Host-_csrf"] {
		t.Fatalf("cookies set at the login over HTTPS: %q", set)
	}
	// The prefixed cookies are the ones read over HTTPS: the session works,
	// and a page's form posts with its token.
	page := br.get("/account/password")
	if page.Code != http.StatusOK {
		t.Fatalf("a page with the __Host- session cookie = %d %s", page.Code, page.Header().Get("Location"))
	}
	if rec := br.post("/logout", url.Values{"_csrf": {formToken(t, page.Body.String())}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("logout over HTTPS = %d %s", rec.Code, rec.Body)
	}
	// An unprefixed session cookie (planted over HTTP, or by a sibling
	// domain) is not read over HTTPS.
	planted := newBrowser(b)
	planted.tls = true
	planted.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: b.who.session}
	if rec := planted.get("/account/password"); rec.Code != http.StatusSeeOther {
		t.Fatalf("an unprefixed session cookie over HTTPS = %d, want the login redirect", rec.Code)
	}
	if h := rec.Header().Get("Strict-Transport-Security"); !strings.Contains(h, "max-age=") {
		t.Errorf("HSTS over HTTPS = %q", h)
	}
	if h := b.as(nil).call(http.MethodGet, "/login", "").Header().Get("Strict-Transport-Security"); h != "" {
		t.Errorf("HSTS over plain HTTP = %q, want none", h)
	}
}

// The 6th wrong password within the window is throttled, a right one too
// while the lock lasts, and a name that does not exist reads the same.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	mustUser(t, b, "alice", auth.RoleViewer)
	var bodies []string
	for _, name := range []string{"alice", "nobody"} {
		br := newBrowser(b)
		for i := 1; i <= 5; i++ {
			if rec := br.login(t, name, "wrong password "+name); rec.Code != http.StatusUnauthorized {
				t.Fatalf("%s: wrong password %d = %d, want 401", name, i, rec.Code)
			}
		}
		pw := "wrong again"
		if name == "alice" {
			pw = goodPassword
		}
		rec := br.login(t, name, pw)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("%s: 6th attempt = %d (Retry-After %q), want 429", name, rec.Code, rec.Header().Get("Retry-After"))
		}
		text, ok := testidText(rec.Body.String(), "login-error")
		if !ok || text == "" {
			t.Fatalf("%s: throttled page says nothing:\n%s", name, rec.Body)
		}
		bodies = append(bodies, text)
		if _, ok := br.cookies["unhold_session"]; ok {
			t.Fatalf("%s: a throttled login set a session", name)
		}
	}
	if bodies[0] != bodies[1] {
		t.Errorf("a locked account reads %q, an unknown name %q: that tells which exists", bodies[0], bodies[1])
	}
	var throttled int64
	try(t, "count", b.s.R.Model(&models.AuditEntry{}).Where("action = ? AND outcome = ?", "login", "throttled").Count(&throttled).Error)
	if throttled != 2 {
		t.Errorf("throttled logins audited = %d, want 2", throttled)
	}
	// Once the lock has passed, the right password works.
	b.clock.Advance(2 * time.Minute)
	if rec := newBrowser(b).login(t, "alice", goodPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("login after the lock = %d", rec.Code)
	}
}

// An admin who disables a user ends every session of theirs at once; one
// who changes a role renews the user's session token on their next request.
func TestDisableAndRoleChange(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		bob := mustUser(t, b, "bob", auth.RoleOperator)
		phone, laptop := newBrowser(b), newBrowser(b)
		for _, br := range []*browser{phone, laptop} {
			if rec := br.login(t, "bob", goodPassword); rec.Code != http.StatusSeeOther {
				t.Fatalf("login = %d", rec.Code)
			}
		}
		old := laptop.cookies["unhold_session"].Value
		rec := postForm(b, "/admin/users/"+itoa(bob.ID)+"/role", url.Values{"role": {"viewer"}}, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("role change = %d %s", rec.Code, rec.Body)
		}
		page := laptop.get("/tasks")
		if page.Code != http.StatusOK {
			t.Fatalf("GET /tasks after the role change = %d", page.Code)
		}
		renewed := laptop.cookies["unhold_session"].Value
		if renewed == old {
			t.Fatal("the session token did not change with the role")
		}
		if _, ok := testidText(page.Body.String(), "bulk-form"); ok {
			t.Error("a viewer is shown the bulk rerun form")
		}
		if rec := laptop.get("/tasks/rerun"); rec.Code != http.StatusForbidden {
			t.Errorf("operator page after the demotion = %d, want 403", rec.Code)
		}
		// The old token works a minute more, with the new role, for a
		// request racing the renewal; then it is gone.
		stale := newBrowser(b)
		stale.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: old}
		if rec := stale.get("/tasks/rerun"); rec.Code != http.StatusForbidden {
			t.Errorf("the pre-renewal token within its grace = %d, want 403 (a viewer now)", rec.Code)
		}
		b.clock.Advance(2 * time.Minute)
		if rec := stale.get("/tasks"); !isLoginRedirect(rec) {
			t.Errorf("the pre-renewal token still works: %d", rec.Code)
		}

		rec = postForm(b, "/admin/users/"+itoa(bob.ID)+"/disable", nil, false)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("disable = %d %s", rec.Code, rec.Body)
		}
		for name, br := range map[string]*browser{"phone": phone, "laptop": laptop} {
			rec := br.get("/tasks")
			if !isLoginRedirect(rec) || !strings.Contains(rec.Header().Get("Location"), "ended=1") {
				t.Errorf("%s after disable = %d %s, want the login form saying the session ended", name, rec.Code, rec.Header().Get("Location"))
			}
		}
		if rec := newBrowser(b).login(t, "bob", goodPassword); rec.Code != http.StatusUnauthorized {
			t.Errorf("a disabled user signs in: %d", rec.Code)
		}
	})
}

// Sessions end after the idle timeout and after the absolute one.
func TestSessionTimeouts(t *testing.T) {
	t.Parallel()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, models.SQLite, models.Options{Now: clock.Now})
	b := newBundle(s, clock)
	b.e = web.New(web.Deps{Store: s, Sessions: auth.SessionPolicy{Idle: 30 * time.Minute, Absolute: 2 * time.Hour}})
	mustUser(t, b, "carol", auth.RoleViewer)
	br := newBrowser(b)
	if rec := br.login(t, "carol", goodPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("login = %d", rec.Code)
	}
	for i := 0; i < 4; i++ { // active every 25 minutes: past the idle timeout in sum, never at once
		b.clock.Advance(25 * time.Minute)
		if rec := br.get("/orders"); rec.Code != http.StatusOK {
			t.Fatalf("active session after %d × 25 min = %d", i+1, rec.Code)
		}
	}
	b.clock.Advance(25 * time.Minute) // 2h05 after login, 25 min after the last request
	if rec := br.get("/orders"); !isLoginRedirect(rec) {
		t.Fatalf("session past its absolute timeout = %d", rec.Code)
	}
	if rec := br.login(t, "carol", goodPassword); rec.Code != http.StatusSeeOther {
		t.Fatalf("login = %d", rec.Code)
	}
	b.clock.Advance(31 * time.Minute)
	if rec := br.get("/orders"); !isLoginRedirect(rec) {
		t.Fatalf("session idle for 31 min = %d", rec.Code)
	}
}

// Redirects after sign-in and the language switch stay on this site,
// whatever path a link carries.
func TestRedirectsStayOnSite(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	for back, want := range map[string]string{
		"/orders?status=CLOSED": "/orders?status=CLOSED",
		"//evil.example":        "/",
		"/\\evil.example":       "/",
		"/\t/evil.example":      "/",
		"/\n/evil.example":      "/",
		"https://evil.example":  "/",
		"evil.example":          "/",
		"/%2F/evil.example":     "/%2F/evil.example",
		"":                      "/",
	} {
		rec := b.call(http.MethodGet, "/lang?"+url.Values{"to": {"en"}, "back": {back}}.Encode(), "")
		if got := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || got != want {
			t.Errorf("back=%q: %d to %q, want %q", back, rec.Code, got, want)
		}
		rec = b.as(nil).call(http.MethodGet, "/login?"+url.Values{"next": {back}}.Encode(), "")
		if v := regexp.MustCompile(`name="next" value="([^"]*)"`).FindStringSubmatch(rec.Body.String()); v == nil || html.UnescapeString(v[1]) != want {
			t.Errorf("login next=%q carries %v, want %q", back, v, want)
		}
	}
}
