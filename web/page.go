package web

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/views"
)

// Cookies the dashboard keeps: the chosen language, the viewer's time zone
// (set by static/app.js), and a one-time flash message.
const (
	cookieLang  = "lang"
	cookieTZ    = "tz"
	cookieFlash = "flash"
)

// page builds the layout's view model for this request.
func (s *server) page(c *echo.Context, title, active string) views.Page {
	r := c.Request()
	p := views.Page{Lang: views.LangZH, Title: title, Active: active, URL: r.URL.RequestURI(), Now: s.store.Now(), Loc: s.loc,
		ShopLoc: s.loc, CSRF: csrfToken(c), Labels: s.labels, Counters: s.counters}
	if who := principalOf(c); who != nil {
		p.User, p.Role = who.Name, string(who.Role)
	}
	if ck, err := readCookie(c, cookieLang); err == nil {
		p.Lang = views.ParseLang(ck.Value)
	}
	// Set by static/app.js, so never prefixed.
	if ck, err := r.Cookie(cookieTZ); err == nil {
		if tz, err := url.QueryUnescape(ck.Value); err == nil {
			if loc := s.zones.load(tz); loc != nil {
				p.Loc = loc
			}
		}
	}
	if ck, err := readCookie(c, cookieFlash); err == nil {
		if v, err := url.QueryUnescape(ck.Value); err == nil && len(v) > 2 {
			p.Flash = &views.Flash{OK: v[0] == '1', Text: v[2:]}
		}
		c.SetCookie(siteCookie(c, cookieFlash, "", -1))
	}
	return p
}

// flashPage is enough of a page to word a flash message in the viewer's
// language.
func flashPage(c *echo.Context) views.Page {
	p := views.Page{Lang: views.LangZH}
	if ck, err := readCookie(c, cookieLang); err == nil {
		p.Lang = views.ParseLang(ck.Value)
	}
	return p
}

// redirectWithFlash answers an action: POST → 303 → GET, with a message
// the next page shows once.
func redirectWithFlash(c *echo.Context, to string, ok bool, text string) error {
	v := "0|" + text
	if ok {
		v = "1|" + text
	}
	c.SetCookie(siteCookie(c, cookieFlash, flashValue(v), 60))
	return c.Redirect(http.StatusSeeOther, to)
}

// maxFlashValue bounds a flash cookie's value. A browser keeps a cookie of
// at most 4096 bytes, its name and attributes counted, and drops a bigger
// one without a word: the page after would say nothing at all. A Chinese
// character takes nine bytes escaped, so a flash that says many tasks'
// errors can pass it.
const maxFlashValue = 3800

// flashValue is v escaped as a flash cookie's value, cut to what fits
// maxFlashValue and ended with "…" when it is cut.
func flashValue(v string) string {
	if e := url.QueryEscape(v); len(e) <= maxFlashValue {
		return e
	}
	more := url.QueryEscape("…")
	var b strings.Builder
	for _, r := range v {
		esc := url.QueryEscape(string(r))
		if b.Len()+len(esc)+len(more) > maxFlashValue {
			break
		}
		b.WriteString(esc)
	}
	return b.String() + more
}

// siteCookie is a cookie of this site: path /, HttpOnly, SameSite=Lax, and
// Secure and __Host- prefixed when the request came over HTTPS. maxAge 0 lasts the browser's
// session; below 0 deletes the cookie.
func siteCookie(c *echo.Context, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: cookieName(c, name), Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: c.Scheme() == "https"}
}

// localPath keeps a redirect target on this site: a path of ours, with no
// scheme, host, backslash or control character (browsers drop tabs and
// newlines from URLs, so "/\t/evil.example" would become "//evil.example").
func localPath(to string) string {
	if !strings.HasPrefix(to, "/") || strings.HasPrefix(to, "//") {
		return "/"
	}
	for _, r := range to {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return "/"
		}
	}
	if u, err := url.Parse(to); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return to
}

// setLang remembers the chosen language and goes back where the viewer was.
func (s *server) setLang(c *echo.Context) error {
	lang := views.ParseLang(c.QueryParam("to"))
	ck := siteCookie(c, cookieLang, string(lang), 365*24*3600)
	ck.HttpOnly = false // a preference, not a secret
	c.SetCookie(ck)
	return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("back")))
}

// zoneCache loads time zones once each; an unknown name loads as nil.
type zoneCache struct {
	mu sync.Mutex
	m  map[string]*time.Location
}

func (z *zoneCache) load(name string) *time.Location {
	if name == "" || len(name) > 64 {
		return nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if loc, ok := z.m[name]; ok {
		return loc
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		loc = nil
	}
	if z.m == nil {
		z.m = map[string]*time.Location{}
	}
	if len(z.m) < 1000 {
		z.m[name] = loc
	}
	return loc
}

// isAPI tells requests answered in JSON from dashboard pages.
func isAPI(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/healthz" || path == "/readyz" || path == "/metrics"
}
