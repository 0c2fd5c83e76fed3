package web_test

import (
	"bytes"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/metrics"
	"unhold/models"
	"unhold/web"
)

// manualTask makes order m-1's inventory release MANUAL: a hand edit took
// its lock away.
func manualTask(t *testing.T, b bundle) {
	t.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	try(t, "stock", err)
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "m-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}})
	try(t, "place", err)
	try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = 0, available = 10 WHERE sku_id = 'sku-1'").Error)
	_, err = b.s.CloseOrder(b.ctx, "m-1", models.TriggerUserCancel, "u1")
	try(t, "close", err)
	drain(t, b)
}

// taskStatus is the status of m-1's inventory task.
func taskStatus(t *testing.T, b bundle) models.TaskStatus {
	t.Helper()
	var tk models.ReleaseTask
	try(t, "task", b.s.R.Where("order_no = ? AND resource_type = ?", "m-1", models.ResInventory).Take(&tk).Error)
	return tk.Status
}

// A state-changing form must come from our own page: a cross-site POST, a
// POST without the token, with a stale token or from another origin is
// refused with 403 and changes nothing; the same POST from the page works.
func TestCSRF(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		manualTask(t, b)
		if st := taskStatus(t, b); st != models.TaskManual {
			t.Fatalf("set-up task = %s, want MANUAL", st)
		}
		const path = "/orders/m-1/resources/inventory/rerun"
		form := func(token string) url.Values {
			v := url.Values{"reason": {"counted again"}}
			if token != "" {
				v.Set("_csrf", token)
			}
			return v
		}
		signed := b.as(nil)
		send := func(v url.Values, cookie string, header map[string]string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(v.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.AddCookie(&http.Cookie{Name: "unhold_session", Value: b.who.session})
			if cookie != "" {
				req.AddCookie(&http.Cookie{Name: "_csrf", Value: cookie})
			}
			for k, val := range header {
				req.Header.Set(k, val)
			}
			return signed.serve(req)
		}
		good := b.csrfFor(t, b.who.session, false)
		other, err := b.signIn("mallory", auth.RoleAdmin)
		try(t, "mallory", err)
		for _, c := range []struct {
			name   string
			form   url.Values
			cookie string
			header map[string]string
		}{
			{"cross-site with a good token", form(good), testCSRF, map[string]string{"Sec-Fetch-Site": "cross-site"}},
			{"same-site sibling", form(good), testCSRF, map[string]string{"Sec-Fetch-Site": "same-site"}},
			{"another origin", form(good), testCSRF, map[string]string{"Origin": "https://evil.example"}},
			{"no token", form(""), testCSRF, map[string]string{"Sec-Fetch-Site": "same-origin"}},
			{"token mismatch", form(strings.Repeat("x", 43)), testCSRF, nil},
			{"the cookie's value as the token", form(testCSRF), testCSRF, nil},
			{"another session's token", form(b.csrfFor(t, other.session, false)), testCSRF, nil},
			{"a signed-out visitor's token", form(b.csrfFor(t, testCSRF, true)), testCSRF, nil},
		} {
			before := countAudit(t, b, "denied")
			rec := send(c.form, c.cookie, c.header)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "CSRF") {
				t.Errorf("%s: = %d, want 403 CSRF\n%s", c.name, rec.Code, rec.Body)
			}
			if got := countAudit(t, b, "denied") - before; got != 1 {
				t.Errorf("%s: %d denied audit rows, want 1", c.name, got)
			}
			if st := taskStatus(t, b); st != models.TaskManual {
				t.Fatalf("%s: the task became %s", c.name, st)
			}
		}
		if n := countAudit(t, b, "rerun"); n != 0 {
			t.Fatalf("refused reruns audited as reruns: %d", n)
		}
		// From the page: its form's token, its cookie, same origin.
		br := newBrowser(b)
		br.cookies["unhold_session"] = &http.Cookie{Name: "unhold_session", Value: b.who.session}
		page := br.get(path)
		if page.Code != http.StatusOK {
			t.Fatalf("GET the rerun form = %d", page.Code)
		}
		rec := br.post(path, form(formToken(t, page.Body.String())))
		if rec.Code != http.StatusSeeOther || taskStatus(t, b) != models.TaskPending {
			t.Fatalf("the page's own POST = %d, task %s", rec.Code, taskStatus(t, b))
		}
	})
}

// Every answer, pages, API, errors and static files alike, carries the
// security headers; pages and the API are never cached.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	for _, path := range []string{"/", "/login", "/api/v1/orders/x", "/no/such/page", "/static/app.css", "/healthz"} {
		rec := b.call(http.MethodGet, path, "")
		h := rec.Header()
		want := map[string]string{
			"Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
			"X-Content-Type-Options":  "nosniff",
			"X-Frame-Options":         "DENY",
			"Referrer-Policy":         "same-origin",
		}
		for k, v := range want {
			if h.Get(k) != v {
				t.Errorf("%s: %s = %q, want %q", path, k, h.Get(k), v)
			}
		}
		if h.Get("X-Request-Id") == "" {
			t.Errorf("%s: no X-Request-Id", path)
		}
		if cc := h.Get("Cache-Control"); (cc == "no-store") == strings.HasPrefix(path, "/static/") {
			t.Errorf("%s: Cache-Control = %q", path, cc)
		}
		if h.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s: HSTS over plain HTTP", path)
		}
	}
	// A caller's plain request id is kept; anything else is replaced.
	for id, keep := range map[string]bool{"req-42.a_b": true, "<script>": false, strings.Repeat("a", 65): false} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.Header.Set("X-Request-Id", id)
		got := b.serve(req).Header().Get("X-Request-Id")
		if (got == id) != keep || got == "" {
			t.Errorf("X-Request-Id %q came back as %q", id, got)
		}
	}
}

// A body over the limit is refused before any handler reads it.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	big := strings.Repeat("a", 1<<20+1)
	req := httptest.NewRequest(http.MethodPost, "/orders/m-1/resources/inventory/rerun", strings.NewReader("reason="+big))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rec := b.serve(req); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 1 MiB form = %d, want 413", rec.Code)
	}
}

// /metrics is open to the loopback and to the configured token, to nobody
// else; API tokens and sessions do not open it.
func TestMetricsAccess(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	b.e = web.New(web.Deps{Store: b.s, MetricsToken: "scrape-0123456789abcdef", Sessions: testSessions})
	for _, c := range []struct {
		name, remote, auth string
		want               int
	}{
		{"loopback v4", "127.0.0.1:9000", "", http.StatusNotFound}, // allowed; this server has no metrics: 404
		{"loopback v6", "[::1]:9000", "", http.StatusNotFound},
		{"remote with the token", "198.51.100.7:9000", "Bearer scrape-0123456789abcdef", http.StatusNotFound},
		{"remote", "198.51.100.7:9000", "", http.StatusUnauthorized},
		{"remote, wrong token", "198.51.100.7:9000", "Bearer scrape-0123456789abcdeX", http.StatusUnauthorized},
		{"remote, an admin API token", "198.51.100.7:9000", "Bearer " + b.who.token, http.StatusUnauthorized},
		{"remote, forged X-Forwarded-For", "198.51.100.7:9000", "", http.StatusUnauthorized},
		{"through a proxy on this host", "127.0.0.1:9000", "", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = c.remote
		if !strings.HasPrefix(c.name, "loopback") {
			req.Header.Set("X-Forwarded-For", "127.0.0.1")
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if rec := b.as(nil).serve(req); rec.Code != c.want {
			t.Errorf("%s: /metrics = %d, want %d", c.name, rec.Code, c.want)
		}
	}
}

// The API takes bearer tokens only: none, a malformed, an unknown or a
// revoked one is 401; a session cookie does not open it.
func TestAPITokens(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		tok, secret, err := b.a.CreateAPIToken(b.ctx, "erp", auth.RoleOperator, "test")
		try(t, "token", err)
		get := func(auth string, cookie bool) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/skus/sku-x", nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			if cookie {
				req.AddCookie(&http.Cookie{Name: "unhold_session", Value: b.who.session})
			}
			return b.as(nil).serve(req)
		}
		if rec := get("Bearer "+secret, false); rec.Code != http.StatusNotFound {
			t.Fatalf("a good token = %d, want through to the handler's 404", rec.Code)
		}
		if rec := get("bearer "+secret, false); rec.Code != http.StatusNotFound {
			t.Fatalf("the scheme is case-insensitive; got %d", rec.Code)
		}
		for name, auth := range map[string]string{"none": "", "basic": "Basic " + secret, "malformed": "Bearer uh_short",
			"unknown": "Bearer uh_" + strings.Repeat("A", 43)} {
			wantError(t, get(auth, false), http.StatusUnauthorized, "UNAUTHENTICATED")
			_ = name
		}
		wantError(t, get("", true), http.StatusUnauthorized, "UNAUTHENTICATED")
		try(t, "revoke", b.a.RevokeAPIToken(b.ctx, tok.ID, "test"))
		wantError(t, get("Bearer "+secret, false), http.StatusUnauthorized, "UNAUTHENTICATED")
	})
}

// Behind a configured proxy, the client is the address its X-Forwarded-For
// names: in the audit log, for login throttling and for /metrics. From any
// other peer the header is ignored.
func TestTrustedProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	_, proxy, err := net.ParseCIDR("10.0.0.0/8")
	try(t, "cidr", err)
	b.e = web.New(web.Deps{Store: b.s, Sessions: testSessions, TrustedProxies: []*net.IPNet{proxy}})
	for _, c := range []struct{ peer, xff, want string }{
		{"10.1.2.3:5000", "198.51.100.9", "198.51.100.9"},
		{"10.1.2.3:5000", "198.51.100.9, 10.9.9.9", "198.51.100.9"},
		{"203.0.113.5:5000", "198.51.100.9", "203.0.113.5"},
		{"127.0.0.1:5000", "198.51.100.9", "127.0.0.1"},
	} {
		before := countAudit(t, b, "set_stock")
		req := httptest.NewRequest(http.MethodPut, "/api/v1/skus/sku-p", strings.NewReader(`{"available":1}`))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = c.peer
		req.Header.Set("X-Forwarded-For", c.xff)
		if rec := b.serve(req); rec.Code != http.StatusOK {
			t.Fatalf("PUT sku via %s = %d", c.peer, rec.Code)
		}
		var e models.AuditEntry
		try(t, "last", b.s.R.Where("action = ?", "set_stock").Order("id DESC").Take(&e).Error)
		if countAudit(t, b, "set_stock") != before+1 || e.IP != c.want {
			t.Errorf("peer %s XFF %q: audited address %q, want %q", c.peer, c.xff, e.IP, c.want)
		}
	}
	// /metrics: a forwarded request is never the loopback's, whatever the
	// header says and whoever sent it.
	for _, c := range []struct{ peer, header, value string }{
		{"10.1.2.3:5000", "X-Forwarded-For", "198.51.100.9"},
		{"10.1.2.3:5000", "X-Forwarded-For", "127.0.0.1"},
		{"127.0.0.1:5000", "X-Real-IP", "198.51.100.9"},
		{"127.0.0.1:5000", "Forwarded", "for=198.51.100.9"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.RemoteAddr = c.peer
		req.Header.Set(c.header, c.value)
		if rec := b.as(nil).serve(req); rec.Code != http.StatusUnauthorized {
			t.Errorf("/metrics from %s with %s: %s = %d, want 401", c.peer, c.header, c.value, rec.Code)
		}
	}
}

// Text PostgreSQL cannot store is refused with 400 before any check or
// handler, however the form is encoded and wherever it sits, even in the
// path of a route the sender may not use; nothing is written.
func TestPlainTextEverywhere(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		viewer, err := b.signIn("cs-li", auth.RoleViewer)
		try(t, "viewer", err)
		before := snapshot(t, b)
		var multi bytes.Buffer
		mw := multipart.NewWriter(&multi)
		try(t, "field", mw.WriteField("name", "a\x00b"))
		try(t, "field", mw.WriteField("password", "whatever it is"))
		try(t, "close", mw.Close())
		for _, c := range []struct {
			name        string
			path, ctype string
			body        string
		}{
			{"multipart login", "/login", mw.FormDataContentType(), multi.String()},
			{"form type in capitals", "/login", "Application/X-WWW-Form-Urlencoded", "name=a%00b&password=x"},
			{"path of a route beyond the role", "/admin/users/%FF/disable", "application/x-www-form-urlencoded", ""},
			{"NUL in the path", "/admin/users/1%00/disable", "application/x-www-form-urlencoded", ""},
		} {
			req := httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", c.ctype)
			rec := b.as(viewer).serve(req)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("%s = %d, want 400\n%s", c.name, rec.Code, rec.Body)
			}
		}
		before.sameExcept(t, snapshot(t, b), nil)
	})
}

// A request for a host the server does not answer to is refused with 421
// before any database work (no audit row, no session read), closing DNS
// rebinding; the configured host is served. Health checks answer under any
// name, /metrics only with its token.
func TestForeignHost(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		const token = "scrape-0123456789abcdef"
		b.e = web.New(web.Deps{Store: b.s, MetricsToken: token, Sessions: testSessions, Hosts: []string{testHost, "127.0.0.1:8080"},
			Metrics: metrics.New(b.s, nil)})
		get := func(path, host string, header map[string]string) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Host = host
			req.RemoteAddr = "127.0.0.1:5000"
			for k, v := range header {
				req.Header.Set(k, v)
			}
			return b.as(nil).serve(req)
		}
		for _, host := range []string{"rebound.evil.example", "127.0.0.1:9999", "example.com.evil.example"} {
			for _, path := range []string{"/login", "/", "/api/v1/skus/sku-1", "/metrics"} {
				rec := get(path, host, nil)
				if path == "/api/v1/skus/sku-1" || path == "/metrics" {
					wantError(t, rec, http.StatusMisdirectedRequest, "MISDIRECTED")
				} else if rec.Code != http.StatusMisdirectedRequest || !strings.Contains(rec.Body.String(), "MISDIRECTED") {
					t.Errorf("GET %s for %q = %d %s, want 421 MISDIRECTED", path, host, rec.Code, rec.Body)
				}
			}
		}
		noHost := httptest.NewRequest(http.MethodGet, "/login", nil)
		noHost.Host = ""
		rec := httptest.NewRecorder()
		b.e.ServeHTTP(rec, noHost)
		if rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("GET /login without a Host = %d, want 421", rec.Code)
		}
		before := countAudit(t, b, "denied") + countAudit(t, b, "login")
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader("name=root&password=x"))
		req.Host = "rebound.evil.example"
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: "unhold_session", Value: b.who.session})
		if rec := b.as(nil).serve(req); rec.Code != http.StatusMisdirectedRequest {
			t.Errorf("POST /login for a rebound name = %d", rec.Code)
		}
		if after := countAudit(t, b, "denied") + countAudit(t, b, "login"); after != before {
			t.Errorf("a misdirected request wrote %d audit rows", after-before)
		}
		for _, host := range []string{testHost, "EXAMPLE.com", "127.0.0.1:8080"} {
			if rec := get("/login", host, nil); rec.Code != http.StatusOK {
				t.Errorf("GET /login for %q = %d", host, rec.Code)
			}
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if rec := get(path, "10.1.2.3:8080", nil); rec.Code != http.StatusOK {
				t.Errorf("GET %s by address = %d %s", path, rec.Code, rec.Body)
			}
		}
		if rec := get("/metrics", "10.1.2.3:8080", map[string]string{"Authorization": "Bearer " + token}); rec.Code != http.StatusOK {
			t.Errorf("GET /metrics with its token by address = %d", rec.Code)
		}
	})
}

// The login form's token is bound to the visitor's pre-session id: one
// visitor's token is refused in another's browser, and works in its own.
func TestCSRFLoginFormBound(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		a, other := newBrowser(b), newBrowser(b)
		tokA := formToken(t, a.get("/login").Body.String())
		tokB := formToken(t, other.get("/login").Body.String())
		if tokA == tokB {
			t.Fatal("two visitors got the same login form token")
		}
		form := url.Values{"name": {"root"}, "password": {"not the password"}, "_csrf": {tokA}}
		if rec := other.post("/login", form); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "CSRF") {
			t.Errorf("visitor A's token in B's browser = %d, want 403 CSRF", rec.Code)
		}
		if rec := a.post("/login", form); rec.Code != http.StatusUnauthorized {
			t.Errorf("visitor A's token in A's browser = %d, want 401 (past CSRF, wrong password)", rec.Code)
		}
	})
}
