package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Held on main: Host variants a rebinding page or a confused proxy might
// send are refused with 421 before anything else, the one configured
// name in any letter case is served, and X-Forwarded-Host changes nothing.
func TestAttackHostVariants(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		anon := b.as(nil)
		for _, c := range []struct {
			target, host, fwd string
			want              int
		}{
			{"/login", "EXAMPLE.com", "", http.StatusOK},
			{"/login", "example.com.", "", http.StatusMisdirectedRequest},
			{"/login", "example.com:80", "", http.StatusMisdirectedRequest},
			{"/login", "example.com:8080", "", http.StatusMisdirectedRequest},
			{"/login", "[::1]", "", http.StatusMisdirectedRequest},
			{"/login", "127.0.0.1", "", http.StatusMisdirectedRequest},
			{"/login", "evil.example", "example.com", http.StatusMisdirectedRequest},
			{"http://evil.example/login", "", "", http.StatusMisdirectedRequest},
			{"/metrics", "evil.example", "", http.StatusMisdirectedRequest},
			{"/healthz", "evil.example", "", http.StatusOK},
		} {
			req := httptest.NewRequest(http.MethodGet, c.target, nil)
			if c.host != "" {
				req.Host = c.host
			}
			if c.fwd != "" {
				req.Header.Set("X-Forwarded-Host", c.fwd)
			}
			if rec := anon.serve(req); rec.Code != c.want {
				t.Errorf("GET %s Host %q (X-Forwarded-Host %q) = %d, want %d", c.target, req.Host, c.fwd, rec.Code, c.want)
			}
		}
	})
}
