package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"unhold/auth"
)

// Hostile keys, prefixes, cursors and amounts on a declared type's pages
// and its set form: never a 500, a viewer never sets, and nothing but a
// valid set changes the key.
func TestAttackDeclaredPagesHostile(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withWrapAndCards, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 5)
		setDeclared(t, b, "gift_wrap", "box_2", 6)
		long := strings.Repeat("k", 65)
		hostile := []string{"x", "%", "_", "box_", "box%", "' OR 1=1 --", "\x00", "订单", "😀", long, "..", "a/b", "-1",
			"99999999999999999999"}
		var paths []string
		for _, v := range hostile {
			q := url.QueryEscape(v)
			paths = append(paths, "/resources/gift_wrap?prefix="+q, "/resources/gift_wrap?after="+q,
				"/resources/gift_wrap/"+url.PathEscape(v), "/resources/gift_wrap/box-1?after="+q,
				"/resources/"+url.PathEscape(v), "/resources/"+url.PathEscape(v)+"/box-1")
		}
		viewer, err := b.signIn("v1", auth.RoleViewer)
		try(t, "viewer", err)
		for _, p := range paths {
			if rec := servePage(b, p, "", ""); rec.Code >= 500 {
				t.Errorf("GET %q = %d", p, rec.Code)
			}
		}
		if rec := servePage(b, "/resources/gift_wrap?prefix=box_", "", ""); !strings.Contains(rec.Body.String(), "box_2") ||
			strings.Contains(rec.Body.String(), `"/resources/gift_wrap/box-1"`) {
			t.Errorf("prefix box_ (an SQL wildcard) lists other keys or not box_2")
		}
		amounts := []string{"-1", "1e3", "0x10", "99999999999999999999", "1000000000001", " ", "", "五", "1.0", "9223372036854775807"}
		for _, who := range []bundle{b, b.as(viewer)} {
			for _, v := range hostile {
				for _, a := range amounts {
					rec := postForm(who, "/resources/gift_wrap/"+url.PathEscape(v), url.Values{"available": {a}}, false)
					if rec.Code >= 500 || rec.Code < 400 && who.who == viewer {
						t.Errorf("POST key %q available %q as %s = %d", v, a, who.who.role, rec.Code)
					}
				}
			}
			for _, a := range amounts {
				rec := postForm(who, "/resources/gift_wrap/box-1", url.Values{"available": {a}}, false)
				if rec.Code != http.StatusBadRequest && rec.Code != http.StatusForbidden {
					t.Errorf("POST box-1 available %q as %s = %d, want 400 or 403", a, who.who.role, rec.Code)
				}
			}
		}
		k, err := b.s.Counter(b.ctx, "gift_wrap", "box-1")
		try(t, "counter", err)
		if k.Available != 5 {
			t.Errorf("box-1 = %+v after refused sets, want 5 available", k)
		}
	})
}

// The set form takes the key's new amount. "+3" reads as "add three", but
// strconv.ParseInt takes the sign: a key holding 5 is set to 3, where any
// other amount that is not plain digits ("1e3", "1.0", " ") is refused 400
// and changes nothing.
func TestAttackDeclaredSetSignedAmount(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, withDeclared, func(t *testing.T, b bundle) {
		setDeclared(t, b, "gift_wrap", "box-1", 5)
		rec := postForm(b, "/resources/gift_wrap/box-1", url.Values{"available": {"+3"}}, false)
		k, err := b.s.Counter(b.ctx, "gift_wrap", "box-1")
		try(t, "counter", err)
		if rec.Code != http.StatusBadRequest || k.Available != 5 {
			t.Errorf("set form with available +3 = %d, box-1 now %d available; want 400 and 5 unchanged", rec.Code, k.Available)
		}
	})
}
