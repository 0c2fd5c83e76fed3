package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What every page test uses: fetching a page as a given viewer, and reading
// its elements by data-testid.

// servePage sends GET path as a viewer whose language cookie is lang and
// whose time-zone cookie is tz; an empty value sends no cookie.
func servePage(b bundle, path, lang, tz string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if lang != "" {
		req.AddCookie(&http.Cookie{Name: "lang", Value: lang})
	}
	if tz != "" {
		req.AddCookie(&http.Cookie{Name: "tz", Value: url.QueryEscape(tz)})
	}
	return b.serve(req)
}

// getPage fetches a page, in English when en is set (else with no language
// cookie), failing unless the status is want; every page must be fully
// translated.
func getPage(t *testing.T, b bundle, path string, en bool, want int) string {
	t.Helper()
	lang := ""
	if en {
		lang = "en"
	}
	return wantPage(t, servePage(b, path, lang, ""), fmt.Sprintf("GET %s (en=%v)", path, en), want)
}

// getPageBoth fetches a page as a Chinese viewer and as an English one, in
// the zone tz ("" for the server's), failing unless both answer want with
// every text translated; it returns the Chinese body.
func getPageBoth(t *testing.T, b bundle, path, tz string, want int) string {
	t.Helper()
	var zh string
	for _, lang := range []string{"zh", "en"} {
		body := wantPage(t, servePage(b, path, lang, tz), fmt.Sprintf("GET %s (%s)", path, lang), want)
		if lang == "zh" {
			zh = body
		}
	}
	return zh
}

// wantPage fails the test unless the answer to what has status want and no
// untranslated key; it returns the body.
func wantPage(t *testing.T, rec *httptest.ResponseRecorder, what string, want int) string {
	t.Helper()
	if rec.Code != want {
		t.Fatalf("%s = %d, want %d\n%s", what, rec.Code, want, rec.Body)
	}
	body := rec.Body.String()
	if strings.Contains(body, "⟦") {
		t.Fatalf("%s has an untranslated key:\n%s", what, body)
	}
	return body
}

// postForm sends a dashboard form, in English when en is set.
func postForm(b bundle, path string, form url.Values, en bool) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if en {
		req.AddCookie(&http.Cookie{Name: "lang", Value: "en"})
	}
	return b.serve(req)
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// markupText is the text of markup: tags removed, entities decoded, spaces
// folded.
func markupText(markup string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(markup, " "))), " ")
}

// testidElement returns the first element whose data-testid is id, from its
// start tag to its matching end tag, or "" when there is none.
func testidElement(body, id string) string {
	i := strings.Index(body, `data-testid="`+id+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<")
	name := body[start+1:]
	name = name[:strings.IndexAny(name, " >")]
	depth := 0
	for j := start; j < len(body); {
		next := strings.Index(body[j:], "<")
		if next < 0 {
			break
		}
		j += next
		switch {
		case strings.HasPrefix(body[j:], "</"+name+">"):
			depth--
			if depth == 0 {
				return body[start : j+len(name)+3]
			}
		case strings.HasPrefix(body[j:], "<"+name+" "), strings.HasPrefix(body[j:], "<"+name+">"):
			depth++
		}
		j++
	}
	return body[start:]
}

// testidText is the text (as markupText) of the first element whose
// data-testid is id, up to its first nested end tag; ok is false when there
// is no such element.
func testidText(body, id string) (text string, ok bool) {
	i := strings.Index(body, `data-testid="`+id+`"`)
	if i < 0 {
		return "", false
	}
	rest := body[i:]
	rest = rest[strings.Index(rest, ">")+1:]
	if end := strings.Index(rest, "</"); end >= 0 {
		rest = rest[:end]
	}
	return markupText(rest), true
}

// testidTag is the start tag of the element whose data-testid is id, or ""
// when there is none.
func testidTag(body, id string) string {
	return regexp.MustCompile(`<[^<>]*data-testid="` + regexp.QuoteMeta(id) + `"[^<>]*>`).FindString(body)
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// testidHref is the link of the element whose data-testid is id; ok is false
// when there is no such element or it has no link.
func testidHref(body, id string) (href string, ok bool) {
	m := hrefRE.FindStringSubmatch(testidTag(body, id))
	if m == nil {
		return "", false
	}
	return html.UnescapeString(m[1]), true
}

// mustHref is testidHref for an element that must have a link.
func mustHref(t *testing.T, body, id string) string {
	t.Helper()
	href, ok := testidHref(body, id)
	if !ok {
		t.Fatalf("element %q has no link", id)
	}
	return href
}

// checkText reports, and lets the test go on, unless element id reads want.
func checkText(t *testing.T, body, id, want string) {
	t.Helper()
	if msg := textMismatch(body, id, want); msg != "" {
		t.Error(msg)
	}
}

// requireText stops the test unless element id reads want.
func requireText(t *testing.T, body, id, want string) {
	t.Helper()
	if msg := textMismatch(body, id, want); msg != "" {
		t.Fatal(msg)
	}
}

// textMismatch says how element id fails to read want, or "" when it does.
func textMismatch(body, id, want string) string {
	got, ok := testidText(body, id)
	if !ok {
		return fmt.Sprintf("no element %q in:\n%s", id, body)
	}
	if got != want {
		return fmt.Sprintf("%s = %q, want %q", id, got, want)
	}
	return ""
}

// requireElement stops the test unless the page has (or, with present
// false, lacks) element id.
func requireElement(t *testing.T, body, id string, present bool) {
	t.Helper()
	if _, ok := testidText(body, id); ok != present {
		t.Fatalf("element %q present = %v, want %v in:\n%s", id, ok, present, body)
	}
}

// checkGolden compares a page with the golden file testdata/name, written
// by the SQLite run under -update (go test ./web/ -run Golden -update,
// then review the diff): both engines must render the same page.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if strings.HasSuffix(t.Name(), "/sqlite") {
			try(t, "mkdir", os.MkdirAll("testdata", 0o755))
			try(t, "write golden", os.WriteFile(path, []byte(got), 0o644))
		}
		return
	}
	want, err := os.ReadFile(path)
	try(t, "read golden (run with -update to create it)", err)
	if got != string(want) {
		t.Errorf("the page differs from %s (run go test ./web/ -run Golden -update after checking the change):\n%s", path, got)
	}
}

// The layout speaks Chinese by default and English once switched; the
// switch is remembered in a cookie and comes back to the same page.
func TestLanguageSwitch(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := b.call(http.MethodGet, "/no/such/page", "")
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "页面不存在") {
			t.Fatalf("default page = %d, want the Chinese 404 page:\n%s", rec.Code, rec.Body.String())
		}
		sw := b.call(http.MethodGet, "/lang?to=en&back=/no/such/page", "")
		if sw.Code != http.StatusSeeOther || sw.Header().Get("Location") != "/no/such/page" {
			t.Fatalf("switch = %d to %q", sw.Code, sw.Header().Get("Location"))
		}
		req, _ := http.NewRequest(http.MethodGet, "/no/such/page", nil)
		for _, ck := range sw.Result().Cookies() {
			req.AddCookie(ck)
		}
		en := b.serve(req)
		if !strings.Contains(en.Body.String(), "There is no such page") || strings.Contains(en.Body.String(), "⟦") {
			t.Fatalf("English page:\n%s", en.Body.String())
		}
		// An off-site "back" stays on this site.
		if loc := b.call(http.MethodGet, "/lang?to=zh&back=//evil.example/", "").Header().Get("Location"); loc != "/" {
			t.Fatalf("off-site back went to %q", loc)
		}
	})
}

// API paths keep answering JSON errors; pages answer HTML.
func TestErrorsByAudience(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		api := b.call(http.MethodGet, "/api/v1/nope", "")
		if !strings.HasPrefix(api.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("API 404 content type %q", api.Header().Get("Content-Type"))
		}
		page := b.call(http.MethodGet, "/nope", "")
		if !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") || !strings.Contains(page.Body.String(), `data-testid="error-code"`) {
			t.Fatalf("page 404: %s\n%s", page.Header().Get("Content-Type"), page.Body.String())
		}
	})
}

// followPost follows a POST's 303 with its cookies, as a Chinese or an
// English viewer, and returns where it went and the page there.
func followPost(t *testing.T, b bundle, rec *httptest.ResponseRecorder, en bool) (location, body string) {
	t.Helper()
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("POST = %d, want 303\n%s", rec.Code, rec.Body)
	}
	location = rec.Header().Get("Location")
	req := httptest.NewRequest(http.MethodGet, location, nil)
	for _, ck := range rec.Result().Cookies() {
		req.AddCookie(ck)
	}
	if en {
		req.AddCookie(&http.Cookie{Name: "lang", Value: "en"})
	}
	return location, wantPage(t, b.serve(req), "GET "+location, http.StatusOK)
}
