package web_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// withWrapAndCards is setup with a declared counter type, gift_wrap, and
// a remote type, giftcard, as the demo shop has.
func withWrapAndCards(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	srv := httptest.NewServer(remotetest.New(remotetest.Options{}))
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCards), URL: srv.URL, Strict: true})
	try(t, "client", err)
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now,
		Declared: []models.DeclaredType{{Type: "gift_wrap", Label: models.Label{Zh: "礼品包装", En: "Gift wrap"}}},
		Remote:   []models.RemoteType{{Type: giftCards, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
	return newBundle(s, clock)
}

var resTypeLink = regexp.MustCompile(`href="(/resources/[^"/?]+)"`)

// Every link the dashboard draws to a resource type's page opens a page:
// the navigation's Resources entry and the declared pages' list of types.
// A remote type has no page of keys (its amounts are its service's): its
// URL shows its service's settings instead, and it is not in the declared
// counters' list; a shop whose only type beyond the built-in ones is
// remote has no Resources entry. Breaks if a remote type is linked as a
// declared counter (its page answered 400 INVALID_INPUT).
func TestAttackResourceTypeLinksOpen(t *testing.T) {
	t.Parallel()
	opens := map[string]func(*testing.T, models.Dialect) bundle{"declared and remote": withWrapAndCards,
		"remote only": withGiftCards(remotetest.New(remotetest.Options{}))}
	for name, open := range opens {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachEngineWith(t, open, func(t *testing.T, b bundle) {
				if rec := servePage(b, "/resources/giftcard", "", ""); rec.Code != http.StatusOK ||
					testidElement(rec.Body.String(), "res-remote") == "" {
					t.Errorf("/resources/giftcard answers %d without its service's settings, want 200 with them", rec.Code)
				}
				overview := getPage(t, b, "/", false, http.StatusOK)
				if name == "remote only" {
					if testidElement(overview, "nav-resources") != "" {
						t.Error("a shop with only a remote type has a Resources entry")
					}
					return
				}
				links := map[string]bool{mustHref(t, overview, "nav-resources"): true}
				for l := range links {
					body := servePage(b, l, "", "").Body.String()
					for _, m := range resTypeLink.FindAllStringSubmatch(body, -1) {
						links[m[1]] = true
					}
				}
				for l := range links {
					if rec := servePage(b, l, "", ""); rec.Code != http.StatusOK {
						t.Errorf("the dashboard links %s, which answers %d: %.200s", l, rec.Code, markupText(rec.Body.String()))
					}
				}
			})
		})
	}
}
