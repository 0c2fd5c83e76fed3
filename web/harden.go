package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v5"
)

// maxFormBody is the largest request body any route reads; the API's JSON
// bodies have their own, smaller limit (maxBody).
const maxFormBody = 1 << 20

// contentSecurityPolicy allows nothing but this origin: every script, style
// and image is embedded and served from /static, and no page has inline
// script or style.
const contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

// harden runs before routing, so 404s get it too: a request id, security
// headers, the Host check, and a bound on the body.
func (s *server) harden(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		h := c.Response().Header()
		id := r.Header.Get(echo.HeaderXRequestID)
		if !validRequestID(id) {
			id = randomToken(12)
		}
		c.Set(ctxRequestID, id)
		h.Set(echo.HeaderXRequestID, id)
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if c.Scheme() == "https" {
			h.Set("Strict-Transport-Security", "max-age=63072000; includeSubDomains")
		}
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set(echo.HeaderCacheControl, "no-store")
		}
		if err := s.checkHost(c); err != nil {
			return err
		}
		if r.ContentLength > maxFormBody {
			return &apiError{Status: http.StatusRequestEntityTooLarge, Code: "BODY_TOO_LARGE",
				Message: fmt.Sprintf("request body is larger than %d bytes", maxFormBody)}
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxFormBody)
		return next(c)
	}
}

// validRequestID accepts a caller's X-Request-Id only when it is short and
// plain, since it is logged and audited.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func requestID(c *echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// randomToken is n random bytes, base64url.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CSRF: every state-changing dashboard request must pass both checks.
//   - Fetch metadata: a browser's Sec-Fetch-Site must say same-origin (or
//     none, a typed URL); an Origin header, when sent, must be this host.
//   - A token bound to the session: the _csrf form field (or X-CSRF-Token
//     header) must be the HMAC of the session's token under the site's
//     csrf secret (Store.SiteSecret, shared by every instance on the
//     database), compared in constant time. A signed-out visitor (the login
//     form) has a random pre-session id in the HttpOnly _csrf cookie instead,
//     and the token is the HMAC of that. A token from one session is
//     refused in any other, and another site can neither read nor set the
//     cookies it is made from.
//
// echo's CSRF middleware accepts a same-origin Sec-Fetch-Site without
// looking at the token; we want both, so a browser bug or a same-origin
// injection in one check does not open the door. The API is not covered:
// it takes bearer tokens only, which a browser never sends on its own.
const (
	cookieCSRF    = "_csrf"
	csrfFormField = "_csrf"
	csrfHeader    = "X-CSRF-Token"
)

func (s *server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		if isAPI(r.URL.Path) {
			return next(c)
		}
		key, err := s.csrfKey(r.Context())
		if err != nil {
			return err
		}
		var bound string // what the token is the HMAC of
		if p := principalOf(c); p != nil {
			bound = "session:" + p.Session
		} else {
			var pre string
			if ck, err := readCookie(c, cookieCSRF); err == nil && len(ck.Value) == 43 {
				pre = ck.Value
			} else {
				pre = randomToken(32)
				setCSRFCookie(c, pre)
			}
			bound = "visitor:" + pre
		}
		token := csrfHMAC(key, bound)
		c.Set(ctxCSRF, token)
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		// The refusal is audited: a header is quoted briefly, as checkHost
		// quotes a Host, so a refused request stores no text of its sender's
		// beyond the clipped path and User-Agent.
		if site := r.Header.Get(echo.HeaderSecFetchSite); site != "" && site != "same-origin" && site != "none" {
			return s.csrfRefused(c, fmt.Sprintf("a %.64q request may not change anything here", site))
		}
		if o := r.Header.Get(echo.HeaderOrigin); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				return s.csrfRefused(c, fmt.Sprintf("the request comes from another origin (%.64q)", o))
			}
		}
		sent := r.FormValue(csrfFormField)
		if sent == "" {
			sent = r.Header.Get(csrfHeader)
		}
		if subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return s.csrfRefused(c, "the form's security token is missing or stale; reload the page and try again")
		}
		return next(c)
	}
}

// csrfHMAC is the CSRF token of what it is bound to: HMAC-SHA256 under key,
// base64url.
func csrfHMAC(key []byte, bound string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(bound))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfKey is the site's CSRF secret, read from the database once and kept.
func (s *server) csrfKey(ctx context.Context) ([]byte, error) {
	s.csrfMu.Lock()
	defer s.csrfMu.Unlock()
	if s.csrfSecret == nil {
		key, err := s.auth.SiteSecret(ctx, "csrf")
		if err != nil {
			return nil, err
		}
		s.csrfSecret = key
	}
	return s.csrfSecret, nil
}

// checkHost refuses, with 421 MISDIRECTED before any database work, a
// request whose Host is not one this server answers to (Deps.Hosts): a
// page reached under a foreign name is what DNS rebinding needs to read
// the login form, or anything on the loopback, from another site. The
// health checks are exempt (probes reach an instance by its address, and
// they tell nothing), and so is /metrics with its bearer token (scrapers
// do the same); /metrics for the loopback without the token is not, since
// a rebound page would be on the loopback too.
func (s *server) checkHost(c *echo.Context) error {
	r := c.Request()
	if len(s.hosts) == 0 || s.hosts[strings.ToLower(r.Host)] {
		return nil
	}
	switch r.URL.Path {
	case "/healthz", "/readyz":
		return nil
	case "/metrics":
		if tok := bearer(r); s.metricsToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.metricsToken)) == 1 {
			return nil
		}
	}
	return &apiError{Status: http.StatusMisdirectedRequest, Code: "MISDIRECTED",
		Message: fmt.Sprintf("this server does not answer to the host %.64q; use its public URL (-public-url)", r.Host)}
}

// csrfRefused answers 403 CSRF and audits the refusal when someone is
// signed in (an anonymous cross-site POST is noise, not an action).
func (s *server) csrfRefused(c *echo.Context, why string) error {
	if p := principalOf(c); p != nil {
		if err := s.auditDenied(c, p, "csrf: "+why); err != nil {
			return err
		}
	}
	return &apiError{Status: http.StatusForbidden, Code: "CSRF", Message: why}
}

// maxRequestURI is the longest path and query, in bytes, a request may
// have. No page or API route of ours comes near it, and a refused request's
// path is audited, so a longer one is answered 414 before the session is
// read or anything is written.
const maxRequestURI = 8 << 10

// boundedURI answers 414 URI_TOO_LONG to a request whose path and query
// are longer than maxRequestURI. It runs before routing and authentication
// (see New), so such a request costs no database work at all.
func (s *server) boundedURI(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		if n := len(c.Request().URL.RequestURI()); n > maxRequestURI {
			return &apiError{Status: http.StatusRequestURITooLong, Code: "URI_TOO_LONG",
				Message: fmt.Sprintf("the path and query are %d bytes; at most %d are read", n, maxRequestURI)}
		}
		return next(c)
	}
}

// plainText refuses, with 400 INVALID_INPUT before the CSRF and role
// checks and any handler, a path, query or form value that is not valid
// UTF-8 or holds a NUL byte: PostgreSQL cannot store either in a text
// column, and no field of ours means them. Forms are read whatever their
// encoding (urlencoded or multipart, any letter case), as FormValue would.
func (s *server) plainText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		text := func(v string) bool { return utf8.ValidString(v) && !strings.ContainsRune(v, 0) }
		if !text(r.URL.Path) {
			return invalidf("the path must be valid UTF-8 text without NUL bytes")
		}
		values := r.URL.Query()
		if r.Method == http.MethodPost && !isAPI(r.URL.Path) { // the API reads JSON bodies only (readBody checks them)
			err := r.ParseMultipartForm(maxFormBody)
			if err != nil && !errors.Is(err, http.ErrNotMultipart) {
				return invalidf("could not read the form: %v", err)
			}
			values = r.Form
		}
		for k, vs := range values {
			ok := text(k)
			for _, v := range vs {
				ok = ok && text(v)
			}
			if !ok {
				return invalidf("%.32q must be valid UTF-8 text without NUL bytes", k)
			}
		}
		return next(c)
	}
}

// setCSRFCookie hands a signed-out browser its pre-session id, which its
// CSRF token is bound to until it signs in.
func setCSRFCookie(c *echo.Context, id string) { c.SetCookie(siteCookie(c, cookieCSRF, id, 0)) }

// hostPrefix starts the name of every cookie the server sets over HTTPS:
// a browser accepts a __Host- cookie only when it is Secure, for path /
// and without a Domain, so neither a sibling subdomain nor a plain-HTTP
// page can plant or shadow one.
const hostPrefix = "__Host-"

// cookieName is the name a cookie of ours has in this request: prefixed
// over HTTPS.
func cookieName(c *echo.Context, name string) string {
	if c.Scheme() == "https" {
		return hostPrefix + name
	}
	return name
}

// readCookie reads a cookie of ours by its name in this request: over
// HTTPS only the __Host- one counts.
func readCookie(c *echo.Context, name string) (*http.Cookie, error) {
	return c.Request().Cookie(cookieName(c, name))
}

// csrfToken is the token this request's forms carry.
func csrfToken(c *echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}
