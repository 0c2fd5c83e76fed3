package web_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"unhold/web"
)

// Attack (fails on main 84f401e): behind a TLS-terminating proxy named by
// -trusted-proxies, whether a request came over HTTPS is still decided by
// echo's default, which believes X-Forwarded-Proto from loopback and
// private addresses only, never from the configured proxy. A proxy on a
// public address (a cloud load balancer) gets cookies without Secure or
// the __Host- prefix and no HSTS, so the session cookie goes out over any
// plain-HTTP request too; meanwhile any private-network client that is
// not the proxy decides the scheme for itself.
func TestAttackSchemeFollowsTrustedProxies(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, lb, err := net.ParseCIDR("203.0.113.0/24")
		try(t, "cidr", err)
		b.e = web.New(web.Deps{Store: b.s, Sessions: testSessions, Hosts: []string{testHost}, TrustedProxies: []*net.IPNet{lb}})
		for _, c := range []struct {
			peer  string
			https bool
		}{
			{"203.0.113.5:5000", true},
			{"10.1.2.3:5000", false},
		} {
			req := httptest.NewRequest(http.MethodGet, "/login", nil)
			req.RemoteAddr = c.peer
			req.Header.Set("X-Forwarded-Proto", "https")
			rec := b.as(nil).serve(req)
			if rec.Code != http.StatusOK {
				t.Fatalf("GET /login via %s = %d", c.peer, rec.Code)
			}
			cookie := rec.Header().Get("Set-Cookie")
			secure := strings.HasPrefix(cookie, "__Host-_csrf=") && strings.Contains(cookie, "Secure")
			hsts := rec.Header().Get("Strict-Transport-Security") != ""
			if secure != c.https || hsts != c.https {
				t.Errorf("X-Forwarded-Proto https from %s: cookie %q, HSTS %v; want HTTPS %v", c.peer, cookie, hsts, c.https)
			}
		}
	})
}
