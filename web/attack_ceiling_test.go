package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// loginFrom signs in through the login form from the client address addr
// (host:port), with a fresh browser, and returns the answer.
func loginFrom(t *testing.T, b bundle, addr, name, password string) *httptest.ResponseRecorder {
	t.Helper()
	br := newBrowser(b)
	page := httptest.NewRequest(http.MethodGet, "/login", nil)
	page.RemoteAddr = addr
	rec := br.do(page)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /login from %s = %d", addr, rec.Code)
	}
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {formToken(t, rec.Body.String())}}
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.RemoteAddr = addr
	return br.do(req)
}

// Attack (fails on main 84f401e): the name-wide ceiling refuses the right
// password from everywhere, the user's own usual address included, so
// NameFailures wrong passwords at the start of every window, spread over
// a few addresses (20 IPv4 addresses or IPv6 /64s at the default 100),
// keep the user out for good: each lock lasts a window at most, but the
// next one starts as soon as it ends. Here the ceiling is 10, reached from
// two addresses each window, for three windows. An address the user has
// signed in from before must still let the right password in; a fresh
// address stays under the ceiling.
func TestAttackNameCeilingLocksOutForGood(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: about fifty argon2id logins per engine")
	}
	t.Parallel()
	open := func(t *testing.T, d models.Dialect) bundle {
		clock := modelstest.NewClock()
		return newBundleWith(modelstest.Open(t, d, models.Options{Now: clock.Now}), clock,
			auth.Options{Throttle: auth.ThrottlePolicy{NameFailures: 10}})
	}
	eachEngineWith(t, open, func(t *testing.T, b bundle) {
		mustUser(t, b, "alice", auth.RoleViewer)
		const home = "198.51.100.7:5000"
		if rec := loginFrom(t, b, home, "alice", goodPassword); rec.Code != http.StatusSeeOther {
			t.Fatalf("alice at home = %d", rec.Code)
		}
		for window := range 3 {
			for i := range 10 {
				addr := fmt.Sprintf("[2001:db8:%d:%d::1]:4000", window, i/5)
				if rec := loginFrom(t, b, addr, "alice", "a wrong guess"); rec.Code != http.StatusUnauthorized {
					t.Fatalf("window %d: guess %d from %s = %d", window, i, addr, rec.Code)
				}
			}
			if rec := loginFrom(t, b, "203.0.113.50:4000", "alice", "another wrong guess"); rec.Code != http.StatusTooManyRequests {
				t.Fatalf("window %d: a fresh address past the ceiling = %d, want 429", window, rec.Code)
			}
			for _, at := range []time.Duration{time.Minute, 6 * time.Minute, 6 * time.Minute} {
				b.clock.Advance(at)
				if rec := loginFrom(t, b, home, "alice", goodPassword); rec.Code != http.StatusSeeOther {
					t.Errorf("window %d, +%s: alice with her password at her usual address = %d, want 303", window, at, rec.Code)
				}
			}
			b.clock.Advance(2*time.Minute + time.Second) // the window is over
		}
	})
}
