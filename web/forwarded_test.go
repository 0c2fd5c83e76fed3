package web_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models/modelstest"
	"unhold/web"
)

// forwardedWarning is what the WARNs about an untrusted proxy say.
const forwardedWarning = "no proxy is trusted"

// countWarnings counts the WARN lines about an untrusted proxy in a log.
func countWarnings(log string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, forwardedWarning) {
			n++
		}
	}
	return n
}

// forwardedServer is a second server over b's database, trusting proxies
// or not, logging to its own buffer.
func forwardedServer(b bundle, proxies []*net.IPNet) (bundle, *modelstest.LogBuffer) {
	logs := &modelstest.LogBuffer{}
	b.e = web.New(web.Deps{Store: b.s, Auth: b.a, Log: slog.New(slog.NewTextHandler(logs, nil)),
		Hosts: []string{testHost}, TrustedProxies: proxies})
	return b, logs
}

// sendForwarded sends n requests carrying X-Forwarded-For from a proxy.
func sendForwarded(t *testing.T, b bundle, n int) {
	t.Helper()
	for range n {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.RemoteAddr = "192.0.2.7:4000"
		req.Header.Set("X-Forwarded-For", "203.0.113.50")
		if rec := b.serve(req); rec.Code != http.StatusOK {
			t.Fatalf("healthz = %d", rec.Code)
		}
	}
}

// Forwarding headers on requests to a server that trusts no proxy: one
// WARN however many, a banner on the overview for admins, and a WARN at
// the next start of a server without the flag. With the flag set, none.
func TestForwardedWithoutTrustedProxies(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		first, logs := forwardedServer(b, nil)
		if n := countWarnings(logs.String()); n != 0 {
			t.Fatalf("a fresh database warns at start: %d", n)
		}
		sendForwarded(t, first, 3)
		if n := countWarnings(logs.String()); n != 1 {
			t.Fatalf("%d WARNs for three forwarded requests, want 1:\n%s", n, logs)
		}
		if !strings.Contains(logs.String(), "peer=192.0.2.7") || !strings.Contains(logs.String(), "trusted-proxies") {
			t.Errorf("the WARN names neither the peer nor the flag:\n%s", logs)
		}
		banner := testidElement(getPage(t, first, "/", false, http.StatusOK), "ov-forwarded")
		if !strings.Contains(banner, "192.0.2.7") || !strings.Contains(banner, "-trusted-proxies") {
			t.Errorf("the admin's overview banner = %q", banner)
		}
		requireElement(t, getPage(t, first.as(b.mustSignIn("otto", auth.RoleOperator)), "/", false, http.StatusOK), "ov-forwarded", false)

		_, again := forwardedServer(b, nil)
		if n := countWarnings(again.String()); n != 1 {
			t.Errorf("the next start without the flag logged %d WARNs, want 1:\n%s", n, again)
		}

		_, proxy, err := net.ParseCIDR("192.0.2.0/24")
		try(t, "cidr", err)
		trusting, tlogs := forwardedServer(b, []*net.IPNet{proxy})
		requireElement(t, getPage(t, trusting, "/", false, http.StatusOK), "ov-forwarded", false)
		if n := countWarnings(tlogs.String()); n != 0 {
			t.Errorf("a start with the flag set logged %d WARNs:\n%s", n, tlogs)
		}
	})
}

// With trusted proxies set, forwarded requests are what is expected:
// nothing is logged or remembered.
func TestForwardedWithTrustedProxies(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, proxy, err := net.ParseCIDR("192.0.2.0/24")
		try(t, "cidr", err)
		trusting, logs := forwardedServer(b, []*net.IPNet{proxy})
		sendForwarded(t, trusting, 2)
		if n := countWarnings(logs.String()); n != 0 {
			t.Errorf("%d WARNs with the flag set:\n%s", n, logs)
		}
		seen, err := b.s.ForwardedSince(b.ctx, b.clock.Now().AddDate(-1, 0, 0))
		try(t, "sightings", err)
		if seen != nil {
			t.Errorf("a sighting with the flag set: %+v", seen)
		}
		_, again := forwardedServer(b, nil)
		if n := countWarnings(again.String()); n != 0 {
			t.Errorf("a start without the flag, after none was seen, logged %d WARNs", n)
		}
	})
}
