package web

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/auth"
	"unhold/models"
)

// gate says who may use a route. Every route declares one in routes.go; a
// matched route without one is refused (deny by default).
type gate int

const (
	gateOpen     gate = iota + 1 // anyone: health checks, static files, the login form
	gateViewer                   // any signed-in user or API token: reading
	gateOperator                 // ops: reruns, tickets, jobs, API writes
	gateAdmin                    // users and API tokens
	gateMetrics                  // the loopback, or the configured metrics token
)

// role is the least role that passes the gate.
func (g gate) role() auth.Role {
	switch g {
	case gateViewer:
		return auth.RoleViewer
	case gateOperator:
		return auth.RoleOperator
	case gateAdmin:
		return auth.RoleAdmin
	}
	return ""
}

func (g gate) String() string {
	switch g {
	case gateOpen:
		return "open"
	case gateMetrics:
		return "metrics"
	}
	return string(g.role())
}

// principal is who sent a request: a signed-in user or an API token.
type principal struct {
	Name    string // audit actor: the user's name, or "token:<name>"
	Person  string // the user behind it: the user's name, or the token's creator
	Role    auth.Role
	UserID  int64  // 0 for a token
	Session string // the session cookie's token; "" for a token
}

// Request-scoped values the middleware leaves for handlers.
const (
	ctxPrincipal    = "unhold.principal"
	ctxCSRF         = "unhold.csrf"
	ctxSessionEnded = "unhold.session_ended"
	ctxRequestID    = "unhold.request_id"
)

// cookieSession carries the dashboard session's token.
const cookieSession = "unhold_session"

// principalOf is who sent the request, or nil.
func principalOf(c *echo.Context) *principal {
	p, _ := c.Get(ctxPrincipal).(*principal)
	return p
}

// isAdmin tells whether the request's principal is an admin.
func isAdmin(c *echo.Context) bool {
	p := principalOf(c)
	return p != nil && p.Role.Allows(auth.RoleAdmin)
}

// actor names who made a change, for ledgers and the audit log.
func actor(c *echo.Context) string {
	if p := principalOf(c); p != nil {
		return p.Name
	}
	return "anonymous:" + c.RealIP()
}

// bearer is the token of an "Authorization: Bearer …" header, or "".
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authenticate finds who sent the request: an API token for /api/, the
// session cookie for the dashboard (never the other way round, so a page
// cannot be driven by a stolen API token, nor the API by a cross-site form).
// It puts the request's metadata in its context, where every audit row
// written for it picks them up.
func (s *server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		ctx := r.Context()
		var p *principal
		switch path := r.URL.Path; {
		case path == "/metrics" || path == "/healthz" || path == "/readyz":
		case strings.HasPrefix(path, "/api/"):
			if tok := bearer(r); tok != "" {
				t, err := s.auth.AuthenticateToken(ctx, tok)
				switch {
				case err == nil:
					p = &principal{Name: "token:" + t.Name, Person: t.CreatedBy, Role: t.Role}
				case !errors.Is(err, auth.ErrNoSession):
					return err
				}
			}
		default:
			ck, err := readCookie(c, cookieSession)
			if err != nil || ck.Value == "" {
				break
			}
			u, _, renewed, err := s.auth.SessionUser(ctx, ck.Value, s.sessions)
			switch {
			case err == nil:
				p = &principal{Name: u.Name, Person: u.Name, Role: u.Role, UserID: u.ID, Session: ck.Value}
				if renewed != "" {
					p.Session = renewed
					s.setSessionCookie(c, renewed)
				}
			case errors.Is(err, auth.ErrNoSession):
				s.clearSessionCookie(c)
				c.Set(ctxSessionEnded, true)
			default:
				return err
			}
		}
		meta := models.RequestMeta{RequestID: requestID(c), IP: c.RealIP(), UserAgent: r.UserAgent()}
		if p != nil {
			meta.Role = string(p.Role)
			c.Set(ctxPrincipal, p)
		}
		c.SetRequest(r.WithContext(models.WithRequestMeta(ctx, meta)))
		return next(c)
	}
}

// authorize lets a request through its route's gate. Without a principal a
// page redirects to the login form and the API answers 401; a principal
// whose role is too low gets 403, and the refusal is audited.
func (s *server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		ri := c.RouteInfo()
		if ri.Path == "" {
			return next(c) // no route: the router's 404 or 405
		}
		g, ok := s.gates[routeKey(ri.Method, ri.Path)]
		if !ok {
			s.log.ErrorContext(c.Request().Context(), "route declares no gate; refused",
				slog.String("method", ri.Method), slog.String("route", ri.Path))
			return &apiError{Status: http.StatusForbidden, Code: "FORBIDDEN", Message: "this route is not open to anyone"}
		}
		switch g {
		case gateOpen:
			return next(c)
		case gateMetrics:
			if s.metricsAllowed(c) {
				return next(c)
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="unhold metrics"`)
			return &apiError{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED",
				Message: "metrics are served to the loopback or with the configured metrics token"}
		}
		p := principalOf(c)
		if p == nil {
			return s.unauthenticated(c)
		}
		if !p.Role.Allows(g.role()) {
			return s.deny(c, p, g)
		}
		return next(c)
	}
}

// unauthenticated answers a request nobody signed: 401 for the API, and a
// redirect to the login form, which comes back here, for pages.
func (s *server) unauthenticated(c *echo.Context) error {
	r := c.Request()
	if strings.HasPrefix(r.URL.Path, "/api/") {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="unhold"`)
		return &apiError{Status: http.StatusUnauthorized, Code: "UNAUTHENTICATED",
			Message: "send an API token: Authorization: Bearer uh_…"}
	}
	q := url.Values{}
	if r.Method == http.MethodGet && r.URL.Path != "/" {
		q.Set("next", r.URL.RequestURI())
	}
	if ended, _ := c.Get(ctxSessionEnded).(bool); ended {
		q.Set("ended", "1")
	}
	to := "/login"
	if len(q) > 0 {
		to += "?" + q.Encode()
	}
	return c.Redirect(http.StatusSeeOther, to)
}

// deny refuses a principal whose role is below the gate's, and audits it.
func (s *server) deny(c *echo.Context, p *principal, g gate) error {
	if err := s.auditDenied(c, p, fmt.Sprintf("needs %s, has %s", g, p.Role)); err != nil {
		return err
	}
	return &apiError{Status: http.StatusForbidden, Code: "FORBIDDEN",
		Message: fmt.Sprintf("your role %s may not do this; it needs %s", p.Role, g)}
}

// auditDenied records that p's request was refused before its handler, and
// why; past the first few of p in a minute, counted (see auditRefusal).
func (s *server) auditDenied(c *echo.Context, p *principal, why string) error {
	r := c.Request()
	return s.auditRefusal(r.Context(), models.AuditEntry{Actor: p.Name, Action: "denied",
		Target: "route:" + r.Method + " " + r.URL.Path, Outcome: "denied", Detail: why})
}

// metricsAllowed lets the loopback read /metrics, and anyone else holding
// the configured token. Loopback means the connection's own address, and
// no forwarding header: a forwarded request came through a proxy, maybe on
// this very host, from anywhere.
func (s *server) metricsAllowed(c *echo.Context) bool {
	r := c.Request()
	if tok := bearer(r); s.metricsToken != "" && tok != "" &&
		subtle.ConstantTimeCompare([]byte(tok), []byte(s.metricsToken)) == 1 {
		return true
	}
	for _, h := range []string{echo.HeaderXForwardedFor, echo.HeaderXRealIP, "Forwarded"} {
		if r.Header.Get(h) != "" {
			return false
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// setSessionCookie hands the browser a session token: HttpOnly, SameSite
// Lax, Secure over HTTPS, for at most the session's absolute lifetime.
func (s *server) setSessionCookie(c *echo.Context, token string) {
	c.SetCookie(siteCookie(c, cookieSession, token, int(s.sessions.Absolute.Seconds())))
}

func (s *server) clearSessionCookie(c *echo.Context) {
	c.SetCookie(siteCookie(c, cookieSession, "", -1))
}

func routeKey(method, path string) string { return method + " " + path }
