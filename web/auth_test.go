package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// routeGates is who may use each route, as the issue puts it: customer
// service (viewer) reads, ops (operator) act, admins manage users and
// tokens. A route registered but missing here fails TestEveryRouteHasAGate,
// so a new route cannot slip in without somebody deciding its gate.
var routeGates = map[string]string{
	"GET /healthz":           "open",
	"GET /readyz":            "open",
	"GET /static*":           "open",
	"GET /metrics":           "metrics",
	"GET /login":             "open",
	"POST /login":            "open",
	"GET /lang":              "open",
	"POST /logout":           "viewer",
	"GET /account/password":  "viewer",
	"POST /account/password": "viewer",

	"GET /":                 "viewer",
	"GET /orders":           "viewer",
	"GET /orders/:order_no": "viewer",
	"GET /orders/:order_no/resources/:type/rerun":  "operator",
	"POST /orders/:order_no/resources/:type/rerun": "operator",
	"GET /tasks":                                          "viewer",
	"GET /tasks/rerun":                                    "operator",
	"POST /tasks/rerun":                                   "operator",
	"POST /tasks/:id/rerun":                               "operator",
	"POST /tasks/:id/abandon":                             "admin",
	"GET /tasks/:id":                                      "viewer",
	"POST /tasks/:id/requests":                            "operator",
	"GET /approvals":                                      "viewer",
	"GET /approvals/:id":                                  "viewer",
	"POST /approvals/:id/approve":                         "operator",
	"POST /approvals/:id/reject":                          "operator",
	"GET /inventory":                                      "viewer",
	"GET /inventory/:sku_id":                              "viewer",
	"GET /coupons":                                        "viewer",
	"GET /balances":                                       "viewer",
	"GET /resources/:type":                                "viewer",
	"GET /resources/:type/:key":                           "viewer",
	"POST /resources/:type/:key":                          "operator",
	"POST /resources/:type/:key/correct":                  "operator",
	"POST /resources/:type/:key/holds":                    "operator",
	"GET /reports/daily":                                  "viewer",
	"GET /reports/daily.csv":                              "viewer",
	"GET /reports/daily-rows.csv":                         "viewer",
	"GET /recon":                                          "viewer",
	"POST /recon/run":                                     "operator",
	"GET /recon/diffs/:id":                                "viewer",
	"POST /recon/diffs/:id/ack":                           "operator",
	"POST /recon/diffs/:id/resolve":                       "operator",
	"GET /jobs":                                           "viewer",
	"POST /jobs/:name/run":                                "operator",
	"GET /audit":                                          "viewer",
	"GET /audit/:id":                                      "viewer",
	"GET /users/:id":                                      "viewer",
	"GET /search":                                         "viewer",
	"GET /admin/users":                                    "admin",
	"POST /admin/users":                                   "admin",
	"POST /admin/users/:id/role":                          "admin",
	"POST /admin/users/:id/disable":                       "admin",
	"POST /admin/users/:id/enable":                        "admin",
	"POST /admin/users/:id/reset":                         "admin",
	"GET /admin/tokens":                                   "admin",
	"POST /admin/tokens":                                  "admin",
	"POST /admin/tokens/:id/revoke":                       "admin",
	"GET /webhooks":                                       "admin",
	"POST /webhooks":                                      "admin",
	"GET /webhooks/:id":                                   "admin",
	"POST /webhooks/:id/pause":                            "admin",
	"POST /webhooks/:id/resume":                           "admin",
	"POST /webhooks/:id/delete":                           "admin",
	"POST /webhooks/:id/deliveries/:did/redeliver":        "admin",
	"PUT /api/v1/skus/:sku_id":                            "operator",
	"GET /api/v1/skus/:sku_id":                            "viewer",
	"PUT /api/v1/resources/:type/:key":                    "operator",
	"POST /api/v1/resources/:type/:key/correct":           "operator",
	"GET /api/v1/resources":                               "viewer",
	"GET /api/v1/resources/:type/:key":                    "viewer",
	"POST /api/v1/coupons":                                "operator",
	"GET /api/v1/coupons/:coupon_id":                      "viewer",
	"POST /api/v1/accounts/:uid/credit":                   "operator",
	"GET /api/v1/accounts/:uid":                           "viewer",
	"PUT /api/v1/activities/:activity_id":                 "operator",
	"GET /api/v1/activities/:activity_id":                 "viewer",
	"PUT /api/v1/slots/:slot_id":                          "operator",
	"GET /api/v1/slots/:slot_id":                          "viewer",
	"POST /api/v1/orders":                                 "operator",
	"GET /api/v1/orders/:order_no":                        "viewer",
	"POST /api/v1/orders/:order_no/pay":                   "operator",
	"POST /api/v1/orders/:order_no/close":                 "operator",
	"POST /api/v1/orders/:order_no/lines/:sku_id/cancel":  "operator",
	"POST /api/v1/orders/:order_no/ship":                  "operator",
	"POST /api/v1/orders/:order_no/refunds":               "operator",
	"POST /api/v1/orders/:order_no/returns":               "operator",
	"POST /api/v1/returns/:return_id/inbound":             "operator",
	"POST /api/v1/orders/:order_no/resources/:type/rerun": "operator",
	"POST /api/v1/tasks/:id/rerun":                        "operator",
	"POST /api/v1/tasks/:id/abandon":                      "admin",
	"POST /api/v1/reconcile":                              "operator",
	"GET /api/v1/orders":                                  "viewer",
	"GET /api/v1/orders/:order_no/chain":                  "viewer",
	"GET /api/v1/tasks":                                   "viewer",
	"GET /api/v1/tasks/:id":                               "viewer",
	"POST /api/v1/tasks/:id/requests":                     "operator",
	"POST /api/v1/webhooks":                               "admin",
	"GET /api/v1/webhooks":                                "admin",
	"GET /api/v1/webhooks/:id":                            "admin",
	"DELETE /api/v1/webhooks/:id":                         "admin",
	"POST /api/v1/webhooks/:id/pause":                     "admin",
	"POST /api/v1/webhooks/:id/resume":                    "admin",
	"GET /api/v1/webhooks/:id/deliveries":                 "admin",
	"POST /api/v1/webhooks/:id/deliveries/:did/redeliver": "admin",
	"GET /api/v1/approvals":                               "viewer",
	"GET /api/v1/approvals/:id":                           "viewer",
	"POST /api/v1/approvals/:id/approve":                  "operator",
	"POST /api/v1/approvals/:id/reject":                   "operator",
	"GET /api/v1/ledgers/:type":                           "viewer",
	"GET /api/v1/events":                                  "viewer",
	"GET /api/v1/recon/tickets":                           "viewer",
	"GET /api/v1/audit":                                   "viewer",
	"GET /api/v1/audit/:id":                               "viewer",
	"GET /api/v1/openapi.json":                            "viewer",
	"POST /tasks/:id/assign":                              "operator",
	"POST /tasks/:id/notes":                               "operator",
	"POST /recon/diffs/:id/assign":                        "operator",
	"POST /recon/diffs/:id/notes":                         "operator",
	"GET /api/v1/recon/tickets/:ticket_id":                "viewer",
	"POST /api/v1/tasks/:id/assign":                       "operator",
	"POST /api/v1/tasks/:id/notes":                        "operator",
	"POST /api/v1/recon/tickets/:ticket_id/assign":        "operator",
	"POST /api/v1/recon/tickets/:ticket_id/notes":         "operator",
}

var roleRank = map[string]int{"viewer": 1, "operator": 2, "admin": 3}

// registeredRoutes is every route the router has, as "METHOD /path".
func registeredRoutes(b bundle) []string {
	var out []string
	for _, r := range b.e.Router().Routes() {
		out = append(out, r.Method+" "+r.Path)
	}
	sort.Strings(out)
	return out
}

func TestEveryRouteHasAGate(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite)
	seen := map[string]bool{}
	for _, r := range registeredRoutes(b) {
		seen[r] = true
		if _, ok := routeGates[r]; !ok {
			t.Errorf("route %s is registered but routeGates does not say who may use it", r)
		}
	}
	for r := range routeGates {
		if !seen[r] {
			t.Errorf("routeGates names %s, which is not registered", r)
		}
	}
}

// concretePath fills a route's parameters with values that parse.
func concretePath(route string) string {
	r := strings.NewReplacer(":order_no", "held-1", ":type", "inventory", ":id", "1", ":sku_id", "sku-1",
		":coupon_id", "1", ":uid", "u1", ":activity_id", "act-1", ":slot_id", "seat-1", ":name", "sweep")
	p := r.Replace(route)
	if strings.HasSuffix(p, "*") {
		p = strings.TrimSuffix(p, "*") + "/app.css"
	}
	return p
}

// TestRoleMatrix sends every route as nobody, a viewer, an operator and an
// admin. Nobody is sent to the login form (pages) or gets 401 (API); a role
// below the gate gets 403 and one audit row; a role at or above it passes
// (whatever the handler then answers). Each request gets a fresh identity,
// so an action in one case (a logout, a disable) cannot change another.
func TestRoleMatrix(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		seedShop(t, b)
		n := 0
		for _, route := range registeredRoutes(b) {
			gate := routeGates[route]
			method, path, _ := strings.Cut(route, " ")
			api := strings.HasPrefix(path, "/api/")
			for _, role := range []string{"", "viewer", "operator", "admin"} {
				n++
				who := (*identity)(nil)
				if role != "" {
					var err error
					who, err = b.signIn(fmt.Sprintf("m%d-%s", n, role), auth.Role(role))
					try(t, "sign in", err)
				}
				before := countAudit(t, b, "denied")
				req := httptest.NewRequest(method, concretePath(path), strings.NewReader(""))
				req.RemoteAddr = "192.0.2.10:4000"
				if !api && method != http.MethodGet {
					// Past CSRF, to test the gate alone (CSRF has its own tests).
					req.AddCookie(&http.Cookie{Name: "_csrf", Value: testCSRF})
					if who != nil {
						req.Header.Set("X-CSRF-Token", b.csrfFor(t, who.session, false))
					} else {
						req.Header.Set("X-CSRF-Token", b.csrfFor(t, testCSRF, true))
					}
				}
				rec := b.as(who).serve(req)
				name := fmt.Sprintf("%s as %q", route, role)
				switch {
				case gate == "open":
					if rec.Code == http.StatusForbidden || isLoginRedirect(rec) {
						t.Errorf("%s = %d %s, want it open", name, rec.Code, rec.Header().Get("Location"))
					}
				case gate == "metrics":
					if rec.Code != http.StatusUnauthorized {
						t.Errorf("%s from off the loopback = %d, want 401", name, rec.Code)
					}
				case role == "" && api:
					if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
						t.Errorf("%s = %d (WWW-Authenticate %q), want 401 asking for a bearer token", name, rec.Code, rec.Header().Get("WWW-Authenticate"))
					}
				case role == "":
					if !isLoginRedirect(rec) {
						t.Errorf("%s = %d %s, want 303 to /login", name, rec.Code, rec.Header().Get("Location"))
					}
				case roleRank[role] < roleRank[gate]:
					if rec.Code != http.StatusForbidden {
						t.Errorf("%s = %d, want 403", name, rec.Code)
					}
					if got := countAudit(t, b, "denied") - before; got != 1 {
						t.Errorf("%s wrote %d denied audit rows, want 1", name, got)
					}
				case route == "POST /logout":
					if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" || countSessions(t, b, who) != 0 {
						t.Errorf("%s = %d %s, want 303 to /login and the session gone", name, rec.Code, rec.Header().Get("Location"))
					}
				default:
					if rec.Code == http.StatusUnauthorized || rec.Code == http.StatusForbidden || isLoginRedirect(rec) {
						t.Errorf("%s = %d %s, want it let through", name, rec.Code, rec.Header().Get("Location"))
					}
				}
				if method == http.MethodPost && role == "viewer" && gate != "open" && gate != "viewer" && rec.Code != http.StatusForbidden {
					t.Errorf("a viewer's %s = %d, want 403", route, rec.Code)
				}
			}
		}
	})
}

func isLoginRedirect(rec *httptest.ResponseRecorder) bool {
	return rec.Code == http.StatusSeeOther && strings.HasPrefix(rec.Header().Get("Location"), "/login")
}

// countAudit counts audit rows with this action.
func countAudit(t *testing.T, b bundle, action string) int64 {
	t.Helper()
	var n int64
	try(t, "count audit", b.s.R.Model(&models.AuditEntry{}).Where("action = ?", action).Count(&n).Error)
	return n
}

// countSessions counts the live session rows of who.
func countSessions(t *testing.T, b bundle, who *identity) int64 {
	t.Helper()
	var n int64
	try(t, "count sessions", b.s.R.Model(&auth.Session{}).Where("token_hash = ?", sha256Hex(who.session)).Count(&n).Error)
	return n
}
