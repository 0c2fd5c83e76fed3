package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// The layout speaks Chinese by default and English once switched; the
// switch is remembered in a cookie and comes back to the same page.
func TestLanguageSwitch(t *testing.T) {
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
