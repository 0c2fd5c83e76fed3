package web

import (
	"crypto/rand"
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
// headers, and a bound on the body.
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
//   - A token: the _csrf form field (or X-CSRF-Token header) must equal the
//     HttpOnly _csrf cookie, which another site can neither read nor set.
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
		token := ""
		if ck, err := r.Cookie(cookieCSRF); err == nil && len(ck.Value) == 43 {
			token = ck.Value
		}
		fresh := token == ""
		if fresh {
			token = randomToken(32)
			setCSRFCookie(c, token)
		}
		c.Set(ctxCSRF, token)
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if site := r.Header.Get(echo.HeaderSecFetchSite); site != "" && site != "same-origin" && site != "none" {
			return s.csrfRefused(c, "a "+site+" request may not change anything here")
		}
		if o := r.Header.Get(echo.HeaderOrigin); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host != r.Host {
				return s.csrfRefused(c, "the request comes from another origin ("+o+")")
			}
		}
		sent := r.FormValue(csrfFormField)
		if sent == "" {
			sent = r.Header.Get(csrfHeader)
		}
		if fresh || subtle.ConstantTimeCompare([]byte(sent), []byte(token)) != 1 {
			return s.csrfRefused(c, "the form's security token is missing or stale; reload the page and try again")
		}
		return next(c)
	}
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

// setCSRFCookie hands the browser the CSRF token for the rest of its
// session.
func setCSRFCookie(c *echo.Context, token string) { c.SetCookie(siteCookie(c, cookieCSRF, token, 0)) }

// csrfToken is the token this request's forms carry.
func csrfToken(c *echo.Context) string {
	t, _ := c.Get(ctxCSRF).(string)
	return t
}
