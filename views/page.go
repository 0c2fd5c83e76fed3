package views

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"unhold/auth"
)

// Lang is the dashboard's language: Chinese first, English second.
type Lang string

// Languages.
const (
	LangZH Lang = "zh"
	LangEN Lang = "en"
)

// ParseLang accepts zh or en; anything else is Chinese.
func ParseLang(s string) Lang {
	if Lang(s) == LangEN {
		return LangEN
	}
	return LangZH
}

// Flash is a one-time message shown after an action.
type Flash struct {
	OK   bool
	Text string
}

// Page is what every page's layout needs: language, time zone, clock,
// where the viewer is, who the viewer is, and a flash message.
type Page struct {
	Lang   Lang
	Title  string // catalog key
	Active string // nav item id
	URL    string // this page's path and query, for the language switch
	Flash  *Flash
	Now    time.Time
	Loc    *time.Location
	User   string // signed-in user's name (or API token name); "" on the login page
	Role   string // "viewer", "operator" or "admin"; "" when nobody is signed in
	CSRF   string // the CSRF token every POST form carries in a hidden field named "_csrf"
	// Labels name the codes the catalog does not know (the shop's
	// declared and remote resource types), in Chinese and English.
	Labels map[string][2]string
	// Counters are the declared counter types, by name: each has pages
	// of its own under /resources.
	Counters []string
	// ShopLoc is the shop's business zone (UNHOLD_TZ). Times show in Loc,
	// the viewer's zone, but every date filter reads its days in ShopLoc,
	// so every viewer's "2026-11-29" is the same day and the same rows.
	ShopLoc *time.Location
}

// Roles, weakest first: each can do all the one before it can.
const (
	RoleViewer   = string(auth.RoleViewer)
	RoleOperator = string(auth.RoleOperator)
	RoleAdmin    = string(auth.RoleAdmin)
)

// Can tells whether the viewer's role includes role, as auth ranks them
// (auth.Role.Allows). Nobody signed in, or an unknown role on either side,
// can nothing. The server checks roles on every request; this only hides
// what would be refused.
func (p Page) Can(role string) bool {
	return auth.Role(p.Role).Allows(auth.Role(role))
}

// T translates a catalog key. A missing key shows as ⟦key⟧, which tests look for.
func (p Page) T(key string) string {
	e, ok := catalog[key]
	if !ok {
		return "⟦" + key + "⟧"
	}
	if p.Lang == LangEN {
		return e[1]
	}
	return e[0]
}

// Tf translates a key whose text is a fmt format.
func (p Page) Tf(key string, a ...any) string { return fmt.Sprintf(p.T(key), a...) }

// Code translates a status, class, trigger, type or error code; an unknown
// one is shown as it is.
func (p Page) Code(code string) string {
	if code == "" {
		return ""
	}
	if _, ok := catalog["code."+code]; ok {
		return p.T("code." + code)
	}
	if l, ok := p.Labels[code]; ok {
		if p.Lang == LangEN {
			return l[1]
		}
		return l[0]
	}
	return code
}

// Class translates a release error class.
func (p Page) Class(class string) string {
	if _, ok := catalog["class."+class]; ok {
		return p.T("class." + class)
	}
	return p.Code(class)
}

// Time shows t in the viewer's time zone.
func (p Page) Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.In(p.Loc).Format("2006-01-02 15:04:05")
}

// TimePtr shows an optional time.
func (p Page) TimePtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return p.Time(*t)
}

// ISO is t for a datetime attribute.
func (p Page) ISO(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Ago is how long before Now t was, in words: "3 分钟前", "3 min ago".
func (p Page) Ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := p.Now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < time.Minute:
		n, unit = int64(d/time.Second), "s"
	case d < time.Hour:
		n, unit = int64(d/time.Minute), "m"
	case d < 24*time.Hour:
		n, unit = int64(d/time.Hour), "h"
	default:
		n, unit = int64(d/(24*time.Hour)), "d"
	}
	if future {
		return p.Tf("ago.in."+unit, n)
	}
	return p.Tf("ago."+unit, n)
}

// Num shows an integer with thousands separators.
func (p Page) Num(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// LangURL is the link that switches to the other language and comes back here.
func (p Page) LangURL() string {
	to := LangEN
	if p.Lang == LangEN {
		to = LangZH
	}
	return "/lang?" + url.Values{"to": {string(to)}, "back": {p.URL}}.Encode()
}

// LangSwitchLabel names the language the switch goes to.
func (p Page) LangSwitchLabel() string {
	if p.Lang == LangEN {
		return "中文"
	}
	return "English"
}

// HTMLLang is the lang attribute of the page.
func (p Page) HTMLLang() string {
	if p.Lang == LangEN {
		return "en"
	}
	return "zh-CN"
}

// Query builds a link to path with the given query pairs, skipping empty values.
func Query(path string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}
