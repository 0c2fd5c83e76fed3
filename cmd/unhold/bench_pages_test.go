package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"unhold/auth"
	"unhold/models"
)

// The prober times only whole 200 answers; a redirect (to the login form,
// say) or a server error is counted as an error, with the first one kept.
func TestPageProberCountsNon200(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("<html>page</html>"))
		case "/gone":
			http.Redirect(w, r, "/login", http.StatusSeeOther)
		default:
			http.Error(w, "boom", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := &pageProber{base: srv.URL, client: client, stop: make(chan struct{})}
	for _, path := range []string{"/ok", "/gone", "/ok", "/boom"} {
		p.fetch(context.Background(), path)
	}
	var res benchResult
	p.finish(&res)
	if res.PagesFetched != 2 || res.PageErrors != 2 || res.PageFirstError != "GET /gone: status 303" || res.PageSlowest != "/ok" {
		t.Fatalf("probed = %+v; want 2 fetched, 2 errors, the first GET /gone: status 303, the slowest /ok", res)
	}
}

// The prober signs in through the real login form of unhold web (a wrong
// password is an error, not a client that goes on to fetch login pages),
// finds the admin's whole nav, and every page it lists answers 200.
func TestPageProberSignsInAndFetchesEveryPage(t *testing.T) {
	t.Parallel()
	db, s := migratedSQLite(t)
	ctx := context.Background()
	if _, err := s.SetStock(ctx, benchSKU(0), 1, 0, "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: benchOrder(0), UserID: benchUser(0),
		Items: []models.Item{{SkuID: benchSKU(0), Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	pw := auth.NewPassword()
	if _, err := auth.New(s, auth.Options{}).CreateUser(ctx, benchAdmin, auth.RoleAdmin, pw, "test"); err != nil {
		t.Fatal(err)
	}
	base := startProcess(t, "web", "-db", db, "-addr", "127.0.0.1:0", "-log-format", "json").addr(t)
	if _, err := signIn(ctx, base, benchAdmin, pw+"x"); err == nil || !strings.Contains(err.Error(), "POST /login = 401") {
		t.Fatalf("sign in with a wrong password: %v; want POST /login = 401", err)
	}
	b := &benchRun{opt: benchOptions{orders: 1, mix: []models.ResourceType{models.ResInventory}}, base: base, adminPassword: pw}
	p, err := b.newPageProber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/", "/orders", "/tasks", "/inventory", "/recon", "/admin/tokens", "/orders/" + benchOrder(0), "/inventory/" + benchSKU(0)} {
		if !slices.Contains(p.paths, want) {
			t.Errorf("the prober's pages %v have no %s", p.paths, want)
		}
	}
	for _, path := range p.paths {
		p.fetch(ctx, path)
	}
	var res benchResult
	p.finish(&res)
	if res.PagesFetched != len(p.paths) || res.PageErrors != 0 {
		t.Fatalf("fetched %d of %d pages, %d errors, the first %q", res.PagesFetched, len(p.paths), res.PageErrors, res.PageFirstError)
	}
}

// The table names the slowest pages by their slowest fetch, slowest first,
// ties in path order, at most n of them.
func TestSlowestPages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		byPath map[string]float64
		n      int
		want   string
	}{
		{map[string]float64{}, 3, ""},
		{map[string]float64{"/a": 1.5}, 3, "/a 1.5 ms"},
		{map[string]float64{"/a": 1, "/b": 30, "/c": 2, "/d": 30}, 3, "/b 30.0 ms, /d 30.0 ms, /c 2.0 ms"},
	} {
		if got := slowestPages(tc.byPath, tc.n); got != tc.want {
			t.Errorf("slowestPages(%v, %d) = %q, want %q", tc.byPath, tc.n, got, tc.want)
		}
	}
}
