package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// asUnhold marks a child process of the tests: unhold bench starts this
// binary (os.Executable) as "unhold web", "unhold worker" and "unhold serve",
// and under go test that binary is the test binary.
const asUnhold = "UNHOLD_TEST_RUN_AS_UNHOLD"

func TestMain(m *testing.M) {
	if os.Getenv(asUnhold) == "1" {
		if n, err := strconv.Atoi(os.Getenv(killAtGroupCommit)); err == nil {
			storeFaults = killAtGroupOf(int64(n))
		}
		main()
		os.Exit(0)
	}
	os.Setenv(asUnhold, "1") // inherited by the processes unhold bench starts
	os.Exit(m.Run())
}

// process is one unhold subcommand running in the test, on its own context.
type process struct {
	stop  context.CancelFunc
	done  chan error
	first string // the first line it printed
}

func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	p := &process{stop: cancel, done: make(chan error, 1)}
	go func() {
		p.done <- run(ctx, args, func(string) string { return "" }, nil, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("unhold %s: %v (%v)", args[0], err, <-p.done)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	p.first = line
	t.Cleanup(func() { p.shutdown(t) })
	return p
}

// shutdown stops the process as SIGTERM would and waits for it.
func (p *process) shutdown(t *testing.T) {
	t.Helper()
	if p.done == nil {
		return
	}
	p.stop()
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("did not stop")
	}
	p.done = nil
}

func (p *process) addr(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(p.first)
	if m == nil {
		t.Fatalf("no address in %q", p.first)
	}
	return "http://" + m[1]
}

func get(t *testing.T, url string) int {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// unhold web serves the API and closes orders but releases nothing: it has
// no worker, and no sweep; unhold worker, started after, releases them, and
// serves only /healthz and /metrics on -metrics-addr. Both stop cleanly.
func TestWebClosesAndWorkerReleases(t *testing.T) {
	t.Parallel()
	db, s := migratedSQLite(t)
	ctx := context.Background()
	if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	_, secret, err := auth.New(s, auth.Options{}).CreateAPIToken(ctx, "it", auth.RoleOperator, "test")
	if err != nil {
		t.Fatal(err)
	}

	web := startProcess(t, "web", "-addr", "127.0.0.1:0", "-db", db, "-log-format", "json", "-sweep-every", "1s")
	if !strings.Contains(web.first, "no worker") {
		t.Fatalf("web says %q", web.first)
	}
	base := web.addr(t)
	post := func(path, body string) int {
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, no := range []string{"o-1", "o-2", "o-3"} {
		if code := post("/api/v1/orders", `{"order_no":"`+no+`","user_id":"u1","items":[{"sku_id":"sku-1","qty":2}]}`); code != http.StatusCreated {
			t.Fatalf("place %s = %d", no, code)
		}
		if code := post("/api/v1/orders/"+no+"/close", `{"reason":"USER_CANCEL"}`); code != http.StatusOK {
			t.Fatalf("close %s = %d", no, code)
		}
	}
	// Longer than a sweep interval: nothing in unhold web releases.
	time.Sleep(2500 * time.Millisecond)
	var done int64
	s.R.Model(&models.ReleaseTask{}).Where("status = ?", models.TaskDone).Count(&done)
	if sku, _ := s.GetSKU(ctx, "sku-1"); done != 0 || sku.Available != 4 {
		t.Fatalf("under unhold web alone: %d tasks DONE, sku %+v; want none released", done, sku)
	}

	worker := startProcess(t, "worker", "-db", db, "-log-format", "json", "-pools", "3", "-worker-id", "w",
		"-metrics-addr", "127.0.0.1:0")
	if !strings.Contains(worker.first, "w-1, w-2, w-3") {
		t.Fatalf("worker says %q, want its three pools", worker.first)
	}
	wbase := worker.addr(t)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		if code := get(t, wbase+path); code != http.StatusOK {
			t.Fatalf("worker %s = %d", path, code)
		}
	}
	if code := get(t, wbase+"/api/v1/skus/sku-1"); code != http.StatusNotFound {
		t.Fatalf("worker serves the API: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sku, _ := s.GetSKU(ctx, "sku-1")
		if sku.Available == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("unhold worker did not release: %+v", sku)
		}
		time.Sleep(20 * time.Millisecond)
	}
	worker.shutdown(t)
	web.shutdown(t)
	modelstest.CheckInvariants(t, s)
}

// unhold serve, web and worker each start and stop on their context's end.
func TestSubcommandsStartAndStop(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"serve", "web", "worker"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			db := filepath.Join(t.TempDir(), cmd+".db")
			p := startProcess(t, cmd, "-addr", "127.0.0.1:0", "-db", db, "-log-format", "json")
			if cmd != "worker" && get(t, p.addr(t)+"/healthz") != http.StatusOK {
				t.Fatalf("%s: /healthz not OK", cmd)
			}
			if cmd == "worker" && !strings.Contains(p.first, "no HTTP listener") {
				t.Fatalf("worker says %q", p.first)
			}
			p.shutdown(t)
		})
	}
}

// unhold bench runs end to end on a small shop and reports clean
// invariants, every order released and, unless -pages=false, dashboard
// pages fetched as a signed-in admin without an error. Only correctness is
// asserted, never timing. A backlog places two orders on each of the
// bench's 100 SKUs, so that a batch releases some SKU twice (a batch that
// gave back one unit for two fails it). A burst's batches hold a few
// tasks each at 200 orders as at 50 (that defect passes both), so a burst
// places 50, or 30 holding all six types (its one activity's quota is
// released many times a batch at any size).
func TestBench(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		pg   bool
		args []string
	}{
		{"burst sqlite", false, []string{"-mode", "burst", "-orders", "50", "-json"}},
		{"burst sqlite no pages", false, []string{"-mode", "burst", "-orders", "50", "-json", "-pages=false"}},
		{"backlog sqlite", false, []string{"-mode", "backlog", "-orders", "200", "-pools", "2", "-json"}},
		{"burst sqlite mix", false, []string{"-mode", "burst", "-orders", "30", "-mix", "inventory,coupon,balance,points,quota,slot", "-json"}},
		{"backlog postgres", true, []string{"-mode", "backlog", "-orders", "200", "-pools", "2", "-json", "-ceiling"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := func(string) string { return "" }
			if c.pg {
				if testing.Short() {
					t.Skip("the PostgreSQL backlog and its ceilings take 15 s and more")
				}
				pg := modelstest.PGBase(t)
				env = func(k string) string {
					if k == "UNHOLD_DB" {
						return pg
					}
					return ""
				}
			}
			var out, errs strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			if err := run(ctx, append([]string{"bench"}, c.args...), env, nil, &out, &errs); err != nil {
				t.Fatalf("bench: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errs.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("-json printed %d lines, want one:\n%s", len(lines), out.String())
			}
			var res benchResult
			if err := json.Unmarshal([]byte(lines[0]), &res); err != nil {
				t.Fatalf("the JSON line does not parse: %v\n%s", err, lines[0])
			}
			var raw map[string]any
			_ = json.Unmarshal([]byte(lines[0]), &raw)
			for _, k := range []string{"mode", "orders", "closes_per_s", "releases_per_s", "releases_while_closing_per_s",
				"p50_ms", "p95_ms", "p99_ms", "max_ms", "peak_rss_mb", "invariants_ok",
				"pages_fetched", "page_errors", "page_p50_ms", "page_p95_ms", "page_p99_ms", "page_max_ms", "page_slowest"} {
				if _, ok := raw[k]; !ok {
					t.Errorf("the JSON line has no %q: %s", k, lines[0])
				}
			}
			perOrder := len(strings.Split(res.Mix, ","))
			if !res.InvariantsOK || res.Tasks != res.Orders*perOrder || res.PeakRSSMB <= 0 {
				t.Fatalf("bench = %+v; want clean invariants, every order's %d tasks released, a peak RSS", res, perOrder)
			}
			pagesOff := slices.Contains(c.args, "-pages=false")
			switch {
			case pagesOff && res.PagesFetched+res.PageErrors != 0:
				t.Fatalf("bench -pages=false = %+v; want no page fetched", res)
			case !pagesOff && (res.PagesFetched == 0 || res.PageErrors != 0 || res.PageSlowest == "" || res.PageMaxMs <= 0):
				t.Fatalf("bench = %+v; want dashboard pages fetched, none in error, a slowest page", res)
			}
			if c.pg && (res.Engine != "postgres" || res.CeilingOnePerCommitPerS <= 0 || res.CeilingHundredPerCommitPerS <= 0) {
				t.Fatalf("bench = %+v; want a PostgreSQL run with both ceilings", res)
			}
		})
	}
}

// unhold worker stopped (as by SIGTERM) in the middle of a backlog leaves
// no task leased and none counted CRASHED or failed: the try in hand and
// the rest of each pool's batch are handed back.
func TestWorkerStopsMidBacklog(t *testing.T) {
	t.Parallel()
	db, s := migratedSQLite(t)
	ctx := context.Background()
	// Four batches of 50 over two pools: when the first is DONE, two more
	// are claimed, so the stop finds a batch in hand to hand back.
	const n = 200
	if _, err := s.SetStock(ctx, "sku-1", n, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		no := "o-" + strconv.Itoa(i)
		if _, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
	}
	worker := startProcess(t, "worker", "-db", db, "-log-format", "json", "-pools", "2", "-worker-batch", "50")
	deadline := time.Now().Add(20 * time.Second)
	for {
		var done int64
		s.R.Model(&models.ReleaseTask{}).Where("status = ?", models.TaskDone).Count(&done)
		if done > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("unhold worker released nothing")
		}
		time.Sleep(time.Millisecond)
	}
	worker.shutdown(t)
	var done, leased, failed int64
	s.R.Model(&models.ReleaseTask{}).Where("status = ?", models.TaskDone).Count(&done)
	s.R.Model(&models.ReleaseTask{}).Where("lease_until IS NOT NULL").Count(&leased)
	s.R.Model(&models.ReleaseTask{}).Where("failures > 0").Count(&failed)
	if leased != 0 || failed != 0 {
		t.Fatalf("after the stop: %d tasks leased, %d with failures (%d DONE); want none", leased, failed, done)
	}
	if done == n {
		t.Logf("the worker finished all %d tasks before the stop: nothing was in flight to hand back", n)
	}
	modelstest.CheckInvariants(t, s)
}
