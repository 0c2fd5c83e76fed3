package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// offSite tells whether a browser sent to loc would leave this site. A
// browser drops tabs and line breaks from a URL before reading it, and
// reads a backslash as a slash, so "/\t/evil.example" and "/\evil.example"
// are "//evil.example": another host.
func offSite(loc string) bool {
	clean := strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, loc)
	return !strings.HasPrefix(clean, "/") || strings.HasPrefix(clean, "//")
}

var nextFieldRE = regexp.MustCompile(`name="next" value="([^"]*)"`)

// fuzzBundle is one SQLite bundle for a whole fuzz test: set-up runs once,
// not once per input.
func fuzzBundle(f *testing.F) bundle {
	f.Helper()
	clock := modelstest.NewClock()
	return newBundle(modelstest.Open(f, models.SQLite, models.Options{Now: clock.Now}), clock)
}

// postLogin sends the login form as a browser that fetched it would (CSRF
// cookie and field), from its own address, so that the per-address
// throttle does not turn every later input into a 429.
func postLogin(b bundle, remote, name, password, next string) *httptest.ResponseRecorder {
	form := url.Values{"name": {name}, "password": {password}, "next": {next}, "_csrf": {b.csrfFor(panicT{}, testCSRF, true)}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: "_csrf", Value: testCSRF})
	req.RemoteAddr = remote
	return b.as(nil).serve(req)
}

// FuzzLoginForm posts the login form with any name, password and next:
// the answer is 303 (only for the right password), 400, 401 or 429, never
// 500, and a redirect never leaves the site. The same next, given to the
// login form of someone signed in (a redirect without a password check) and
// of someone who is not (a hidden field), stays on the site too.
func FuzzLoginForm(f *testing.F) {
	b := fuzzBundle(f)
	_, err := b.a.CreateUser(b.ctx, "fuzzer", auth.RoleViewer, goodPassword, "test")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []struct{ name, password, next string }{
		{"fuzzer", goodPassword, "/orders?no=x&sort=old"},
		{"fuzzer", goodPassword, "//evil.example/"},
		{"fuzzer", goodPassword, "/\t/evil.example"},
		{"fuzzer", "wrong password", `/\evil.example`},
		{"", "", ""},
		{strings.Repeat("n", 300), strings.Repeat("p", 2000), "/" + strings.Repeat("a", 4096)},
		{"fu\x00zzer", "pass\x00word", "/\x00next"},
		{"\xff\xfe", "\xc3\x28", "\xff/"},
	} {
		f.Add(s.name, s.password, s.next)
	}
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, name, password, next string) {
		i := n.Add(1)
		remote := fmt.Sprintf("10.%d.%d.%d:4000", i>>16&0xff, i>>8&0xff, i&0xff)
		rec := postLogin(b, remote, name, password, next)
		switch rec.Code {
		case http.StatusSeeOther:
			if name != "fuzzer" || password != goodPassword {
				t.Fatalf("name %q password %q signed in", name, password)
			}
			if loc := rec.Header().Get("Location"); offSite(loc) {
				t.Fatalf("next %q sent the browser to %q", next, loc)
			}
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusTooManyRequests:
			for _, v := range rec.Header().Values("Set-Cookie") {
				if strings.HasPrefix(v, "unhold_session=") && !strings.Contains(v, "Max-Age=0") {
					t.Fatalf("a refused login (%d) set a session: %q", rec.Code, v)
				}
			}
			if strings.Contains(rec.Body.String(), "⟦") {
				t.Fatalf("untranslated text on the %d page", rec.Code)
			}
		default:
			t.Fatalf("name %q password %q next %q = %d, want 303, 400, 401 or 429\n%s", name, password, next, rec.Code, rec.Body)
		}
		// Text that is not UTF-8 or holds NUL is refused before any handler.
		plain := func(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
		if !plain(name) || !plain(password) || !plain(next) {
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("name %q password %q next %q = %d, want 400", name, password, next, rec.Code)
			}
			return
		}
		if name == "fuzzer" && password == goodPassword && rec.Code != http.StatusSeeOther && rec.Code != http.StatusTooManyRequests {
			t.Fatalf("the right password = %d", rec.Code)
		}

		// Signed in, GET /login goes straight to next.
		path := "/login?" + url.Values{"next": {next}}.Encode()
		signed := b.serve(httptest.NewRequest(http.MethodGet, path, nil))
		if signed.Code != http.StatusSeeOther || offSite(signed.Header().Get("Location")) {
			t.Fatalf("signed in, next %q = %d to %q", next, signed.Code, signed.Header().Get("Location"))
		}
		// Not signed in, the form carries next in a hidden field.
		form := b.as(nil).serve(httptest.NewRequest(http.MethodGet, path, nil))
		if form.Code != http.StatusOK {
			t.Fatalf("login form with next %q = %d", next, form.Code)
		}
		m := nextFieldRE.FindStringSubmatch(form.Body.String())
		if m == nil || offSite(html.UnescapeString(m[1])) {
			t.Fatalf("next %q: the form's hidden next is %v", next, m)
		}
	})
}

// FuzzRerunForm posts the rerun form of a MANUAL task with any reason: the
// answer is 303, 400 or 404, never 500. A reason that is accepted is
// stored exactly (trimmed) and shown escaped; one that is empty or too
// long goes back to the form with nothing changed.
func FuzzRerunForm(f *testing.F) {
	b := fuzzBundle(f)
	manualTaskF(f, b)
	for _, s := range []string{
		"stock counted again",
		"",
		"   \t\n ",
		strings.Repeat("长", 500),
		strings.Repeat("长", 501),
		"<script>alert(1)</script>' OR 1=1 --",
		"nul\x00inside",
		"bad \xff\xfe utf-8",
	} {
		f.Add(s)
	}
	const path = "/orders/m-1/resources/inventory/rerun"
	f.Fuzz(func(t *testing.T, reason string) {
		try(t, "make the task MANUAL again", b.s.W.Exec(
			"UPDATE release_tasks SET status = 'MANUAL' WHERE order_no = 'm-1' AND resource_type = 'inventory'").Error)
		before := countAudit(t, b, "rerun")
		rec := postForm(b, path, url.Values{"reason": {reason}}, false)
		switch rec.Code {
		case http.StatusSeeOther:
		case http.StatusBadRequest, http.StatusNotFound:
			if countAudit(t, b, "rerun") != before {
				t.Fatalf("a refused rerun (%d) was audited", rec.Code)
			}
			return
		default:
			t.Fatalf("reason %q = %d, want 303, 400 or 404\n%s", reason, rec.Code, rec.Body)
		}
		trimmed := strings.TrimSpace(reason)
		accepted := trimmed != "" && utf8.RuneCountInString(trimmed) <= 500
		loc := rec.Header().Get("Location")
		switch {
		case accepted && loc != "/orders/m-1":
			t.Fatalf("reason %q: redirected to %q, want the chain page", reason, loc)
		case !accepted && loc != path:
			t.Fatalf("reason %q (refused): redirected to %q, want the form", reason, loc)
		}
		after := countAudit(t, b, "rerun")
		if !accepted {
			if after != before {
				t.Fatalf("a refused reason was audited")
			}
			return
		}
		var last models.AuditEntry
		try(t, "newest rerun row", b.s.R.Where("action = ?", "rerun").Order("id DESC").Limit(1).Take(&last).Error)
		if after != before+1 || last.Reason != trimmed || last.Outcome != "ok" {
			t.Fatalf("reason %q: audit rows %d → %d, newest %+v", reason, before, after, last)
		}
		// The newest row of the audit page shows the reason, escaped.
		page := servePage(b, "/audit?action=rerun", "", "")
		if page.Code != http.StatusOK {
			t.Fatalf("audit page after reason %q = %d", reason, page.Code)
		}
		body := page.Body.String()
		i := strings.Index(body, `data-testid="audit-reason" class="prewrap">`)
		if i < 0 {
			t.Fatalf("no reason on the audit page")
		}
		shown := body[i+len(`data-testid="audit-reason" class="prewrap">`):]
		shown = shown[:strings.Index(shown, "</span>")]
		if shown != html.EscapeString(trimmed) {
			t.Fatalf("reason %q shown as %q", trimmed, shown)
		}
	})
}

// manualTaskF is manualTask for a fuzz test's set-up.
func manualTaskF(f *testing.F, b bundle) {
	f.Helper()
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	if err == nil {
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "m-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}})
	}
	if err == nil {
		err = b.s.W.Exec("UPDATE inventory SET locked = 0, available = 10 WHERE sku_id = 'sku-1'").Error
	}
	if err == nil {
		_, err = b.s.CloseOrder(b.ctx, "m-1", models.TriggerUserCancel, "u1")
	}
	for err == nil {
		var tasks []models.ReleaseTask
		tasks, err = b.s.ClaimTasks(b.ctx, "fuzz", 50, time.Minute)
		if len(tasks) == 0 {
			break
		}
		for _, tk := range tasks {
			if _, err = b.s.ReleaseTask(b.ctx, tk, "fuzz"); err != nil {
				break
			}
		}
	}
	if err != nil {
		f.Fatalf("manual task: %v", err)
	}
}

// After a login, next takes the browser to a path on this site, whatever
// it held; the login form itself is never the destination.
func TestLoginNextStaysOnSite(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	for _, c := range []struct{ next, want string }{
		{"/orders?no=x", "/orders?no=x"},
		{"", "/"},
		{"//evil.example/", "/"},
		{`/\evil.example`, "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/login", "/"},
		{"/login?next=//evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
	} {
		t.Run(fmt.Sprintf("%q", c.next), func(t *testing.T) {
			// Signed in, GET /login?next= redirects at once: no password hash.
			rec := b.serve(httptest.NewRequest(http.MethodGet, "/login?"+url.Values{"next": {c.next}}.Encode(), nil))
			if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != c.want || offSite(loc) {
				t.Errorf("next %q = %d to %q, want %q", c.next, rec.Code, loc, c.want)
			}
		})
	}
}
