package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
	"unhold/remote/remotetest"
)

// Hostile input to the read API, by every role: never a 500, and every
// refusal a 4xx with a code.
func TestAttackReadAPIHostileInput(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 3,000 hostile requests per engine")
	}
	t.Parallel()
	svc := remotetest.New(remotetest.Options{})
	eachEngineWith(t, withGiftCards(svc), func(t *testing.T, b bundle) {
		svc.SetAvailable("GC-1", 100)
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: giftCards, Key: "GC-1", Qty: 3}}})
		try(t, "place", err)
		long := strings.Repeat("订", 3000)
		vals := []string{"x", "-1", "0", "99999999999999999999", "' OR 1=1 --", "\x00", "%", "订单😀", long,
			"eyJ0IjoiMjAyNi0wMS0wMSIsImlkIjoxfQ", "2026-01-01T00:00:00Z|1"}
		bases := []string{"/api/v1/orders", "/api/v1/orders/o-1/chain", "/api/v1/tasks", "/api/v1/ledgers/giftcard",
			"/api/v1/ledgers/inventory", "/api/v1/recon/tickets", "/api/v1/audit"}
		params := []string{"after", "limit", "status", "type", "key", "no", "user", "from", "to", "sort", "resource", "sign",
			"class", "older", "order", "due", "actor", "action", "target", "bogus"}
		paths := []string{"/api/v1/ledgers/nope", "/api/v1/ledgers/%00", "/api/v1/ledgers/" + url.PathEscape(long),
			"/api/v1/ledgers/GIFTCARD", "/api/v1/ledgers/remote_flows", "/api/v1/orders/%E8%AE%A2/chain",
			"/api/v1/orders/" + strings.Repeat("a", 41) + "/chain", "/api/v1/orders/o-1%27/chain", "/api/v1/tasks/0",
			"/api/v1/tasks/-1", "/api/v1/tasks/99999999999999999999", "/api/v1/tasks/1.0", "/api/v1/tasks/%20"}
		for _, base := range bases {
			for _, p := range params {
				for _, v := range vals {
					paths = append(paths, base+"?"+p+"="+url.QueryEscape(v))
				}
			}
		}
		viewer, err := b.signIn("v1", auth.RoleViewer)
		try(t, "sign in", err)
		for _, who := range []bundle{b, b.as(viewer)} {
			for _, p := range paths {
				rec := who.call(http.MethodGet, p, "")
				// A viewer reads the operational audit entries only, without
				// request metadata (TestAuditPolicy).
				leaks := strings.Contains(rec.Body.String(), `"ip"`) || strings.Contains(rec.Body.String(), `"request_id"`)
				if rec.Code >= 500 || rec.Code == http.StatusOK && strings.Contains(p, "/audit") && who.who == viewer && leaks {
					t.Errorf("GET %.200s as %s = %d %.300s", p, who.who.role, rec.Code, rec.Body)
					continue
				}
				if rec.Code >= 400 {
					var e struct {
						Error struct {
							Code string `json:"code"`
						} `json:"error"`
					}
					if json.Unmarshal(rec.Body.Bytes(), &e) != nil || e.Error.Code == "" {
						t.Errorf("GET %.200s as %s = %d without a code: %.300s", p, who.who.role, rec.Code, rec.Body)
					}
				}
			}
		}
	})
}
