package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"unhold/auth"
	"unhold/internal/browsertest"
	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// TestBrowserRerunFlow drives the dashboard in a real headless Chromium:
// the login form, the overview, a failed order's chain, a rerun with a
// reason, the task coming back DONE through the real worker, the audit
// entry it left, and the language switch. No page may break the
// Content-Security-Policy on the way. It saves a screenshot of the order
// chain in web/testdata/artifacts.
func TestBrowserRerunFlow(t *testing.T) {
	t.Parallel()
	bin := browsertest.Chromium(t)
	ctx := context.Background()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := jobs.NewWorker(s, "browser-worker", 10, 30*time.Second, log)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(wctx)
	srv := httptest.NewServer(web.New(web.Deps{Store: s, Log: log, Wake: w.Wake, Location: time.UTC}))
	defer srv.Close()

	// A shop with one failed release: a hand edit took the lock away, so the
	// release found LOCKED_SHORT and went MANUAL.
	if _, err := s.SetStock(ctx, "SKU-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	req := models.PlaceRequest{OrderNo: "B-1001", UserID: "u1", Items: []models.Item{{SkuID: "SKU-1", Qty: 2}}}
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec("UPDATE inventory SET locked = 0, available = 10 WHERE sku_id = 'SKU-1'").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, "B-1001", models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
	if st := w.Drain(ctx); st[models.OutcomeManual] != 1 {
		t.Fatalf("setup drain = %v, want one MANUAL", st)
	}
	// A second order fails the same way, for a rerun of its one task; a
	// reconciliation opens the ticket the chain links to.
	req.OrderNo = "B-1002"
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec("UPDATE inventory SET locked = 0, available = 10 WHERE sku_id = 'SKU-1'").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, "B-1002", models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
	if st := w.Drain(ctx); st[models.OutcomeManual] != 1 {
		t.Fatalf("setup drain of B-1002 = %v, want one MANUAL", st)
	}
	if _, err := s.RunReconciliation(ctx, models.ReconByAPI, "test"); err != nil {
		t.Fatal(err)
	}
	const password = "ops password 2026"
	if _, err := auth.New(s, auth.Options{}).CreateUser(ctx, "ops-li", auth.RoleOperator, password, "test"); err != nil {
		t.Fatal(err)
	}

	br := browsertest.Start(t, bin, 1280, 1000)
	bctx, do, text, cspViolations := br.Ctx, br.Do, br.Text, br.CSPViolations
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// Nobody is signed in: the dashboard sends the browser to the login form.
	do(
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
		browsertest.Fill(`[data-testid="login-form"] input[name="name"]`, "ops-li"),
		browsertest.Fill(`[data-testid="login-form"] input[name="password"]`, password),
		chromedp.Click(css(`[data-testid="login-form"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="whoami"]`)),
	)
	if who := text(`[data-testid="whoami"]`); !strings.Contains(who, "ops-li") {
		t.Fatalf("signed in as %q", who)
	}
	if manual := text(`[data-testid="ov-manual"]`); !strings.Contains(manual, "2") {
		t.Fatalf("overview MANUAL = %q, want 2", manual)
	}
	// The chain's "does not reconcile" leads to its ticket.
	do(
		chromedp.Navigate(srv.URL+"/orders/B-1001"),
		chromedp.WaitVisible(css(`[data-testid="q-ticket-HELD"]`)),
		chromedp.Click(css(`[data-testid="q-ticket-HELD"]`)),
		chromedp.WaitVisible(css(`[data-testid="diff-fields"]`)),
	)
	if f := text(`[data-testid="diff-fields"]`); !strings.Contains(f, "SKU-1") {
		t.Fatalf("the ticket the chain links to reads %q, want SKU-1's", f)
	}
	// Overview → MANUAL tasks → the order's chain → the inventory rerun.
	do(
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="ov-manual"]`)),
		chromedp.Click(css(`[data-testid="ov-manual"] a, a[data-testid="ov-manual"]`)),
		chromedp.WaitVisible(css(`[data-testid="task-row"]`)),
		chromedp.Click(css(`[data-testid="task-row"] a[href="/orders/B-1001"]`)),
		chromedp.WaitVisible(css(`[data-testid="five-questions"]`)),
		chromedp.Click(css(`a[data-testid="rerun-inventory"]`)),
		chromedp.WaitVisible(css(`[data-testid="rerun-form"]`)),
		browsertest.Fill(`[data-testid="rerun-form"] textarea`, "stock repaired by hand, ticket OPS-42"),
	)
	// Ops repair the data before confirming the rerun.
	if err := s.W.Exec("UPDATE inventory SET locked = 2, available = 8 WHERE sku_id = 'SKU-1'").Error; err != nil {
		t.Fatal(err)
	}
	do(
		chromedp.Click(css(`[data-testid="rerun-form"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="flash"]`)),
	)
	t.Logf("flash: %s", text(`[data-testid="flash"]`))
	// The worker was woken; reload until the chain shows the release done.
	deadline := time.Now().Add(20 * time.Second)
	for {
		do(chromedp.Navigate(srv.URL+"/orders/B-1001"), chromedp.WaitVisible(css(`[data-testid="q-released"]`)))
		released := text(`[data-testid="q-released"]`)
		if strings.Contains(released, "已完成") || strings.Contains(released, "DONE") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rerun task never came back DONE: %q", released)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The rerun is on the record, in the operator's name, with its reason.
	do(
		chromedp.Navigate(srv.URL+"/audit?action=rerun"),
		chromedp.WaitVisible(css(`[data-testid="audit-row"]`)),
	)
	if row := text(`[data-testid="audit-row"]`); !strings.Contains(row, "ops-li") || !strings.Contains(row, "OPS-42") {
		t.Fatalf("audit row = %q, want ops-li's rerun with its reason", row)
	}
	do(chromedp.Navigate(srv.URL+"/orders/B-1001"), chromedp.WaitVisible(css(`[data-testid="five-questions"]`)))
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "order-chain.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	// B-1002's one task, rerun from its own page.
	var b2 []models.ReleaseTask
	if err := s.R.Where("order_no = 'B-1002'").Find(&b2).Error; err != nil || len(b2) != 1 {
		t.Fatalf("B-1002's tasks = %v, %v", b2, err)
	}
	if err := s.W.Exec("UPDATE inventory SET locked = 2, available = 8 WHERE sku_id = 'SKU-1'").Error; err != nil {
		t.Fatal(err)
	}
	if tk, err := s.Task(ctx, b2[0].ID); err != nil || tk.Status != models.TaskManual {
		t.Fatalf("B-1002's task before its rerun: %+v, %v; want MANUAL", tk, err)
	}
	do(
		chromedp.Navigate(fmt.Sprintf("%s/tasks/%d", srv.URL, b2[0].ID)),
		chromedp.WaitVisible(css(`[data-testid="task-rerun-form"]`)),
		browsertest.Fill(`[data-testid="task-rerun-form"] textarea`, "lock repaired, ticket OPS-43"),
		chromedp.Click(css(`[data-testid="task-rerun-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="flash"]`)),
	)
	for deadline := time.Now().Add(20 * time.Second); ; {
		tk, err := s.Task(ctx, b2[0].ID)
		if err == nil && tk.Status == models.TaskDone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B-1002's task after its rerun: %+v, %v; want DONE", tk, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	do(chromedp.Navigate(srv.URL+"/orders/B-1001"), chromedp.WaitVisible(css(`[data-testid="five-questions"]`)))
	// The language switch turns the page English and is remembered.
	do(
		chromedp.Click(css(`[data-testid="lang-switch"]`)),
		chromedp.WaitVisible(css(`[data-testid="five-questions"]`)),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`header.top nav`)),
	)
	if nav := text(`header.top nav`); !strings.Contains(nav, "Overview") || strings.Contains(nav, "概览") {
		t.Fatalf("after the switch the navigation reads %q", nav)
	}
	if sku, _ := s.GetSKU(ctx, "SKU-1"); sku.Available != 10 || sku.Locked != 0 {
		t.Fatalf("SKU-1 = %+v after the rerun, want all 10 available", sku)
	}
	// Signing out ends the session: the dashboard asks for the login again.
	do(
		chromedp.Click(css(`[data-testid="logout-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
		chromedp.Navigate(srv.URL+"/tasks"),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
	)
	if v := cspViolations(); v != "" {
		t.Fatalf("pages broke the Content-Security-Policy:\n%s", v)
	}
}

// TestBrowserLiveSearchAndScreens drives the header's search to an order,
// watches the order's chain redraw itself when the order is closed and
// released behind its back (no reload: a mark left on the window stays),
// stops and restarts the auto-refresh with its toggle, and saves a
// screenshot of every page at 1366 px in Chinese and English, in
// $UNHOLD_ARTIFACTS/screens or web/testdata/artifacts/screens (the log
// says where). No page may break the Content-Security-Policy.
func TestBrowserLiveSearchAndScreens(t *testing.T) {
	t.Parallel()
	bin := browsertest.Chromium(t)
	ctx := context.Background()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := jobs.NewWorker(s, "browser-worker", 10, 30*time.Second, log)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(wctx)
	srv := httptest.NewServer(web.New(web.Deps{Store: s, Log: log, Wake: w.Wake, Location: time.UTC}))
	defer srv.Close()

	// A shop with a released order (for the lists) and one still waiting
	// for its payment, holding stock.
	if _, err := s.SetStock(ctx, "SKU-7", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	for _, no := range []string{"L-2001", "L-2002"} {
		req := models.PlaceRequest{OrderNo: no, UserID: "u7", Items: []models.Item{{SkuID: "SKU-7", Qty: 1}}}
		if _, _, err := s.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CloseOrder(ctx, "L-2001", models.TriggerUserCancel, "u7"); err != nil {
		t.Fatal(err)
	}
	w.Drain(ctx)
	const password = "admin password 2026"
	if _, err := auth.New(s, auth.Options{}).CreateUser(ctx, "admin-wu", auth.RoleAdmin, password, "test"); err != nil {
		t.Fatal(err)
	}
	// A webhook subscription, paused, with a delivery waiting, for its pages.
	hook, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: "http://127.0.0.1:9/erp/unhold-events"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.W.Exec(`INSERT INTO events (type, order_no, occurred_at, data) VALUES (?, 'L-2001', ?, '{}')`,
		models.EventOrderClosed, time.Now().UTC()).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := s.FanOutWebhooks(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PauseWebhook(ctx, hook.ID, "admin-wu"); err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("UNHOLD_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	dir, err = filepath.Abs(filepath.Join(dir, "screens"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)

	br := browsertest.Start(t, bin, 1366, 900)
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	shoot := func(name string) {
		t.Helper()
		shot, err := chromedp.Run(br.Ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setLang := func(lang, back string) {
		t.Helper()
		br.Do(chromedp.Navigate(srv.URL+"/lang?to="+lang+"&back="+back), chromedp.WaitVisible(css(`main`)))
	}
	// The login form in both languages, before signing in.
	for _, lang := range []string{"en", "zh"} {
		setLang(lang, "/login")
		br.Do(chromedp.WaitVisible(css(`[data-testid="login-form"]`)))
		shoot("login-" + lang)
	}
	br.Do(
		browsertest.Fill(`[data-testid="login-form"] input[name="name"]`, "admin-wu"),
		browsertest.Fill(`[data-testid="login-form"] input[name="password"]`, password),
		chromedp.Click(css(`[data-testid="login-form"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="whoami"]`)),
	)

	// The header's search, case-insensitive: the one exact match opens
	// the order.
	br.Do(
		browsertest.Fill(`[data-testid="search-q"]`, "l-2002"),
		chromedp.Submit(css(`[data-testid="search-form"]`)),
		chromedp.WaitVisible(css(`[data-testid="five-questions"]`)),
	)
	if loc, _ := chromedp.Run(br.Ctx, chromedp.Location()); !strings.HasSuffix(loc, "/orders/L-2002") {
		t.Fatalf("the search for l-2002 opened %s", loc)
	}
	if released := br.Text(`[data-testid="q-released"]`); strings.Contains(released, "是") {
		t.Fatalf("L-2002, still pending, shows its stock released: %q", released)
	}

	// The chain redraws itself: close the order behind the page's back;
	// the worker releases it, and the page says so without a reload.
	br.Eval(`window.unholdMark = "still here"; ""`)
	drawn := br.Text(`[data-testid="drawn-at"]`)
	if _, err := s.CloseOrder(ctx, "L-2002", models.TriggerAdmin, "ops"); err != nil {
		t.Fatal(err)
	}
	w.Wake()
	deadline := time.Now().Add(30 * time.Second)
	// Read in the page in one step: the redraw swaps the node, and a read
	// by node id between finding it and reading it finds it gone.
	released := func() string {
		return br.Eval(`(document.querySelector('[data-testid="q-released"]') || {}).textContent || ""`)
	}
	for !strings.Contains(released(), "是") {
		if time.Now().After(deadline) {
			t.Fatalf("the chain never showed the release; drawn %q, now %q, the script's state %q", drawn,
				br.Text(`[data-testid="drawn-at"]`), br.Eval(`(document.querySelector('[data-testid="live-state"]') || {}).textContent || "none"`))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if mark := br.Eval(`window.unholdMark || ""`); mark != "still here" {
		t.Fatal("the page was reloaded, not redrawn")
	}
	if now := br.Text(`[data-testid="drawn-at"]`); now == drawn {
		t.Errorf("the stamp still says %q after the redraw", now)
	}
	// The toggle stops it, and the choice outlives a reload.
	br.Do(chromedp.Click(css(`[data-testid="live-toggle"]`)))
	if st := br.Eval(`document.querySelector('[data-testid="live-state"]').dataset.state`); st != "off" {
		t.Fatalf("after the toggle the state is %q, want off", st)
	}
	br.Do(chromedp.Navigate(srv.URL+"/orders/L-2002"), chromedp.WaitVisible(css(`[data-testid="live-state"]`)))
	if st := br.Eval(`document.querySelector('[data-testid="live-state"]').dataset.state`); st != "off" {
		t.Fatalf("after a reload the state is %q, want off", st)
	}
	br.Do(chromedp.Click(css(`[data-testid="live-toggle"]`)))
	if st := br.Eval(`document.querySelector('[data-testid="live-state"]').dataset.state`); st != "on" {
		t.Fatalf("after the second toggle the state is %q, want on", st)
	}

	// Every page, at 1366 px, in both languages.
	var task int64
	if err := s.R.Raw("SELECT id FROM release_tasks WHERE order_no = 'L-2002'").Scan(&task).Error; err != nil {
		t.Fatal(err)
	}
	pages := []struct{ name, path string }{
		{"overview", "/"}, {"overview-1h", "/?range=1h"}, {"overview-7d", "/?range=7d"},
		{"orders", "/orders"}, {"order-chain", "/orders/L-2002"},
		{"rerun", "/orders/L-2002/resources/inventory/rerun"},
		{"tasks", "/tasks"}, {"task", fmt.Sprintf("/tasks/%d", task)}, {"bulk-rerun", "/tasks/rerun?status=MANUAL"},
		{"inventory", "/inventory"}, {"sku", "/inventory/SKU-7"}, {"coupons", "/coupons"}, {"balances", "/balances"},
		{"report", "/reports/daily"}, {"recon", "/recon"}, {"jobs", "/jobs"}, {"audit", "/audit"},
		{"search", "/search?q=L-20"}, {"password", "/account/password"}, {"users", "/admin/users"}, {"tokens", "/admin/tokens"},
		{"webhooks", "/webhooks"}, {"webhook", fmt.Sprintf("/webhooks/%d", hook.ID)},
	}
	for _, lang := range []string{"zh", "en"} {
		setLang(lang, "/")
		for _, pg := range pages {
			br.Do(chromedp.Navigate(srv.URL+pg.path), chromedp.WaitVisible(css(`main`)))
			shoot(pg.name + "-" + lang)
			// At 1366 px the menu is one line, nothing runs off the page
			// sideways, and the header's search box shows its whole
			// placeholder.
			fit := br.Eval(`(function () {
				var tops = Array.from(document.querySelectorAll("header.top nav a")).map(function (a) { return a.getBoundingClientRect().top; });
				var one = tops.length === 0 || Math.max.apply(null, tops) === Math.min.apply(null, tops);
				var box = "";
				var q = document.querySelector('[data-testid="search-q"]');
				if (q) {
					var st = getComputedStyle(q), ctx = document.createElement("canvas").getContext("2d");
					ctx.font = st.font;
					var room = q.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
					var need = ctx.measureText(q.placeholder).width;
					box = need <= room ? ", placeholder fits" : ", placeholder cut: " + Math.ceil(need) + " px in " + room + " px";
				}
				return (one ? "one line" : "menu wraps") + ", " + (document.documentElement.scrollWidth <= window.innerWidth ? "fits" : "too wide: " + document.documentElement.scrollWidth) + box;
			})()`)
			if fit != "one line, fits, placeholder fits" {
				t.Errorf("%s in %s at 1366 px: %s", pg.path, lang, fit)
			}
		}
	}
	if v := br.CSPViolations(); v != "" {
		t.Fatalf("pages broke the Content-Security-Policy:\n%s", v)
	}
}
