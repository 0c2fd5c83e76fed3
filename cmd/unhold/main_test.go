package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// demoTestOrders is the size of the demo shops the tests build. The shop
// costs time in proportion, but a smaller one misses states the tests
// look for in more of the weeks it can end in (the demo's draws are
// seeded; its week is not): at 800 orders 2 of 10 weeks tried had no
// RETRY task (too few orders in their last hour and a half to plant one)
// or no RETURNED order; at 1200, 4 of 24 missed one state.
const demoTestOrders = 1200

// demoTestEnd is when the tests' demo weeks end: the last Wednesday 14:00
// in China (06:00 UTC) before now. A week ending late on a weekend night
// or early on a Monday misses a state at any size (see demoTestOrders); a
// week ending on a weekday afternoon has them all, every time.
func demoTestEnd() time.Time {
	now := time.Now().UTC()
	end := time.Date(now.Year(), now.Month(), now.Day(), 6, 0, 0, 0, time.UTC)
	end = end.AddDate(0, 0, -int((end.Weekday()-time.Wednesday+7)%7))
	if end.After(now) {
		end = end.AddDate(0, 0, -7)
	}
	return end
}

// sqliteDemo is the SQLite demo shop TestDemoShopHasEveryState and
// TestDemoShopSpansAWeek both read, built once per test process: it takes
// tens of seconds under -race.
var sqliteDemo struct {
	once sync.Once
	file []byte
	now  time.Time
	st   demoStats
	err  error
}

// sqliteDemoShop is a copy, in t's temp dir, of the SQLite demo shop of
// demoTestOrders orders over the week up to now, with what demoShop
// counted in it.
func sqliteDemoShop(t *testing.T) (dsn string, now time.Time, st demoStats) {
	t.Helper()
	sqliteDemo.once.Do(func() {
		// What every later test reads if the build stops at a t.Fatal.
		sqliteDemo.err = errors.New("the first test to build the demo shop failed")
		sqliteDemo.file, sqliteDemo.now, sqliteDemo.st, sqliteDemo.err = buildSQLiteDemo(t)
	})
	if sqliteDemo.err != nil {
		t.Fatalf("sqlite demo shop: %v", sqliteDemo.err)
	}
	dsn = filepath.Join(t.TempDir(), "demo.db")
	if err := os.WriteFile(dsn, sqliteDemo.file, 0o600); err != nil {
		t.Fatal(err)
	}
	return dsn, sqliteDemo.now, sqliteDemo.st
}

// buildSQLiteDemo builds the shop in a file of t's and returns the file.
func buildSQLiteDemo(t *testing.T) (file []byte, now time.Time, st demoStats, err error) {
	ctx := context.Background()
	path := modelstest.MigratedDSN(t, models.SQLite)
	now = demoTestEnd()
	log := modelstest.QuietLog()
	if st, err = demoShop(ctx, path, models.Options{Logger: log}, demoTestOrders, now, log); err != nil {
		return nil, now, st, err
	}
	// Everything into the main file, so the file alone is the shop.
	s, err := models.Open(ctx, path, models.Options{Logger: log})
	if err != nil {
		return nil, now, st, err
	}
	err = s.W.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, now, st, err
	}
	file, err = os.ReadFile(path)
	return file, now, st, err
}

// The demo shop has orders in every state, releases done, failures in RETRY
// and MANUAL, late payments and planted reconciliation diffs.
func TestDemoShopHasEveryState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds demo shops of 1200 orders: tens of seconds")
	}
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var dsn string
			var st demoStats
			if d == models.SQLite {
				dsn, _, st = sqliteDemoShop(t)
			} else {
				// The demo's thousands of commits need no disk flush each:
				// the test is about the shop, not durability.
				dsn = modelstest.MigratedDSN(t, d) + "&synchronous_commit=off"
				log := modelstest.QuietLog()
				var err error
				if st, err = demoShop(ctx, dsn, models.Options{Logger: log}, demoTestOrders, demoTestEnd(), log); err != nil {
					t.Fatal(err)
				}
			}
			s, err := models.Open(ctx, dsn, models.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, status := range []models.OrderStatus{models.OrderPending, models.OrderPaid, models.OrderClosed, models.OrderRefundPending} {
				if st.statuses[status] == 0 {
					t.Errorf("no %s orders: %s", status, st.summary())
				}
			}
			for _, status := range []models.TaskStatus{models.TaskDone, models.TaskRetry, models.TaskManual} {
				if st.tasks[status] == 0 {
					t.Errorf("no %s tasks: %s", status, st.summary())
				}
			}
			var late int64
			s.R.Model(&models.Order{}).Where("late_paid = ?", true).Count(&late)
			if late == 0 {
				t.Error("no late payments")
			}
			diffs, err := s.Reconcile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(diffs) == 0 {
				t.Error("no reconciliation diffs planted")
			}
			open, err := s.OpenDiffCounts(ctx)
			if err != nil || open[models.ResInventory] == 0 || open[models.ResCoupon] == 0 {
				t.Errorf("open tickets after the demo = %v, %v; want inventory and coupon tickets", open, err)
			}
		})
	}
}

// serve wires HTTP, the worker and cron, answers on the loopback, and shuts
// down cleanly when its context ends.
func TestServeStartsAndStops(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "serve.db")
	ctx, cancel := context.WithCancel(context.Background())
	var tok strings.Builder
	if err := run(ctx, []string{"token", "add", "--role", "operator", "it", "-db", db}, func(string) string { return "" },
		nil, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + strings.TrimSpace(tok.String())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", "127.0.0.1:0", "-db", db, "-log-format", "json"},
			func(string) string { return "" }, nil, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if addr == nil {
		t.Fatalf("no address in %q", line)
	}
	base := "http://" + addr[1]
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s = %d", path, res.StatusCode)
		}
	}
	// A close through the API wakes the worker, which releases at once.
	send := func(method, path, body, auth string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	post := func(path, body string) int {
		code, _ := send(http.MethodPost, path, body, bearer)
		return code
	}
	if code, _ := send(http.MethodPut, "/api/v1/skus/sku-1", `{"available":5}`, ""); code != http.StatusUnauthorized {
		t.Fatalf("an API write without a token = %d, want 401", code)
	}
	send(http.MethodPut, "/api/v1/skus/sku-1", `{"available":5}`, bearer)
	if code := post("/api/v1/orders", `{"order_no":"o-1","user_id":"u1","items":[{"sku_id":"sku-1","qty":2}]}`); code != http.StatusCreated {
		t.Fatalf("place = %d", code)
	}
	if code := post("/api/v1/orders/o-1/close", `{"reason":"USER_CANCEL"}`); code != http.StatusOK {
		t.Fatalf("close = %d", code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, b := send(http.MethodGet, "/api/v1/skus/sku-1", "", bearer)
		if strings.Contains(b, `"available":5`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the close was not released: %s", b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"explode"}, func(string) string { return "" }, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `unknown command "explode"`) {
		t.Fatalf("err = %v", err)
	}
}

// unhold reconcile prints the run and its tickets, and fails while any is
// open.
func TestReconcileCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "recon.db")
	env := func(string) string { return "" }
	ctx := context.Background()
	var out strings.Builder
	if err := run(ctx, []string{"reconcile", "-db", db}, env, nil, &out, io.Discard); err != nil {
		t.Fatalf("reconcile on an empty shop: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "0 diffs found") {
		t.Fatalf("output: %s", out.String())
	}
	s, err := models.Open(ctx, db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.SetStock(ctx, "sku-1", 5, 0, "test"); err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec("UPDATE inventory SET locked = 1").Error; err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = run(ctx, []string{"reconcile", "-db", db}, env, nil, &out, io.Discard)
	if err == nil || !strings.Contains(out.String(), "inventory sku-1 HELD expected 0 actual 1 (+1) OPEN") {
		t.Fatalf("reconcile with a hand edit = %v\n%s", err, out.String())
	}
}

// A partial run fails unhold reconcile, saying what it could not check,
// though it found no diff; an UNCHECKED ticket is listed as such.
func TestReconReportPartial(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	end := start.Add(time.Second)
	run := &models.ReconRun{ID: 7, Status: models.ReconPartial, StartedAt: start, FinishedAt: &end,
		Coverage: []models.ReconCoverage{{ResourceType: "giftcard", Compared: 2, NoAnswer: 3, HeldOffered: true}}}
	open := []models.DiffTicket{{ID: 4, Kind: models.TicketUnchecked, ResourceType: "giftcard", BizKey: "GC-1",
		CheckName: models.CheckUnchecked, Streak: 3, Reasons: "NO_ANSWER", Status: models.DiffOpen}}
	var out strings.Builder
	err := reconReport(&out, run, open)
	for _, want := range []string{"run 7 PARTIAL: 0 diffs found", "giftcard 3 keys not checked", "#4 giftcard GC-1 UNCHECKED 3 runs in a row (NO_ANSWER) OPEN"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "the run was partial") {
		t.Errorf("err = %v, want the run was partial", err)
	}
	run.Status, run.Coverage = models.ReconDone, nil
	if err := reconReport(io.Discard, run, nil); err != nil {
		t.Errorf("a DONE run with no ticket: %v", err)
	}
}

// migratedSQLite is a migrated SQLite store (a copy of the template, see
// modelstest.MigratedDSN), closed when the test ends, and the file's path
// for the processes the test starts on it.
func migratedSQLite(t *testing.T) (string, *models.Store) {
	t.Helper()
	db := modelstest.MigratedDSN(t, models.SQLite)
	s, err := models.Open(context.Background(), db, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return db, s
}
