package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"unhold/models"
)

// pageEvery is how often the prober starts a page fetch: often enough to
// see a slow moment of the load, seldom enough not to be load itself. It
// fetches one page at a time, so a slow page delays the next.
const pageEvery = 250 * time.Millisecond

// benchAdmin is the dashboard account the prober signs in as.
const benchAdmin = "bench-admin"

var (
	csrfField = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)
	navLink   = regexp.MustCompile(`href="([^"]+)" data-testid="nav-`)
)

// pageTime is one page fetched with 200, from request to last byte.
type pageTime struct {
	path string
	ms   float64
}

// pageProber fetches the dashboard's main pages in turn, as a signed-in
// admin, while the load runs.
type pageProber struct {
	base   string
	client *http.Client
	paths  []string

	stop chan struct{}
	once sync.Once
	done chan struct{} // nil until start

	times    []pageTime
	errors   int
	firstErr string
}

// signIn signs in to the dashboard at base through its login form, as a
// browser does: the form's CSRF token and cookie, then the session cookie.
// The returned client carries the session and follows no redirect, so a
// page that sends it back to the login form is a non-200, not a login page
// timed as if it were the page.
func signIn(ctx context.Context, base, name, password string) (*http.Client, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	c := &http.Client{
		Jar:           jar,
		Timeout:       30 * time.Second,
		Transport:     &http.Transport{MaxIdleConnsPerHost: 1},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	form, status, err := getPage(ctx, c, base+"/login")
	if err != nil {
		return nil, err
	}
	m := csrfField.FindStringSubmatch(form)
	if status != http.StatusOK || m == nil {
		return nil, fmt.Errorf("GET /login = %d, with no CSRF field", status)
	}
	body := url.Values{"_csrf": {m[1]}, "name": {name}, "password": {password}, "next": {"/"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(body.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		return nil, fmt.Errorf("POST /login = %d to %q, want 303 to /: %s", res.StatusCode, res.Header.Get("Location"), clip(answer))
	}
	return c, nil
}

// clip is an answer cut short for an error message.
func clip(b []byte) string { return strings.TrimSpace(string(b[:min(len(b), 200)])) }

// getPage reads a whole answer.
func getPage(ctx context.Context, c *http.Client, u string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", 0, err
	}
	res, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), res.StatusCode, err
}

// newPageProber signs in as the bench's admin and lists the pages to fetch:
// every link of the dashboard's main navigation (read from the overview, so
// a page added to the nav is fetched too), one order's chain and, when the
// orders hold stock, one SKU's ledger.
func (b *benchRun) newPageProber(ctx context.Context) (*pageProber, error) {
	c, err := signIn(ctx, b.base, benchAdmin, b.adminPassword)
	if err != nil {
		return nil, fmt.Errorf("bench: sign in to the dashboard: %w", err)
	}
	home, status, err := getPage(ctx, c, b.base+"/")
	if err != nil {
		return nil, fmt.Errorf("bench: read the dashboard's nav: %w", err)
	}
	var paths []string
	for _, m := range navLink.FindAllStringSubmatch(home, -1) {
		if !slices.Contains(paths, m[1]) {
			paths = append(paths, m[1])
		}
	}
	if status != http.StatusOK || !slices.Contains(paths, "/admin/users") {
		return nil, fmt.Errorf("bench: GET / as %s = %d with nav %v; want 200 and the admin's nav", benchAdmin, status, paths)
	}
	paths = append(paths, "/orders/"+benchOrder(b.opt.orders/2))
	if slices.Contains(b.opt.mix, models.ResInventory) {
		paths = append(paths, "/inventory/"+benchSKU(0))
	}
	return &pageProber{base: b.base, client: c, paths: paths, stop: make(chan struct{})}, nil
}

// start fetches the first page at once, then one every pageEvery, until
// halt.
func (p *pageProber) start(ctx context.Context) {
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		tick := time.NewTicker(pageEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			p.fetch(ctx, p.paths[i%len(p.paths)])
			select {
			case <-tick.C:
			case <-p.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
}

// fetch times one page; anything but a whole 200 answer is an error.
func (p *pageProber) fetch(ctx context.Context, path string) {
	start := time.Now()
	_, status, err := getPage(ctx, p.client, p.base+path)
	ms := float64(time.Since(start).Microseconds()) / 1000
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	if err != nil {
		if p.errors == 0 {
			p.firstErr = fmt.Sprintf("GET %s: %v", path, err)
		}
		p.errors++
		return
	}
	p.times = append(p.times, pageTime{path, ms})
}

// halt stops the prober and waits for the page in flight; it may be
// called more than once.
func (p *pageProber) halt() {
	p.once.Do(func() { close(p.stop) })
	if p.done != nil {
		<-p.done
	}
}

// finish halts the prober and puts what it measured in res.
func (p *pageProber) finish(res *benchResult) {
	p.halt()
	res.PagesFetched, res.PageErrors, res.PageFirstError = len(p.times), p.errors, p.firstErr
	if len(p.times) == 0 {
		return
	}
	ms := make([]float64, len(p.times))
	slowest := p.times[0]
	res.PageMaxByPathMs = map[string]float64{}
	for i, t := range p.times {
		ms[i] = t.ms
		if t.ms > slowest.ms {
			slowest = t
		}
		res.PageMaxByPathMs[t.path] = max(res.PageMaxByPathMs[t.path], round1(t.ms))
	}
	slices.Sort(ms)
	res.PageP50Ms, res.PageP95Ms, res.PageP99Ms = percentile(ms, 0.50), percentile(ms, 0.95), percentile(ms, 0.99)
	res.PageMaxMs, res.PageSlowest = round1(slowest.ms), slowest.path
}

// percentile is the nearest-rank p-th percentile of sorted, rounded to
// 0.1.
func percentile(sorted []float64, p float64) float64 {
	return round1(sorted[int(math.Ceil(p*float64(len(sorted))))-1])
}

// slowestPages lists the n pages whose slowest fetch took longest, slowest
// first, each with that time.
func slowestPages(byPath map[string]float64, n int) string {
	paths := slices.Collect(maps.Keys(byPath))
	slices.SortFunc(paths, func(a, b string) int {
		if c := cmp.Compare(byPath[b], byPath[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, p := range paths[:min(n, len(paths))] {
		parts = append(parts, fmt.Sprintf("%s %.1f ms", p, byPath[p]))
	}
	return strings.Join(parts, ", ")
}
