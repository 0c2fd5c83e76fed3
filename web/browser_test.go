package web_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"unhold/auth"
	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// chromium finds the system's Chromium; under CI its absence fails the test
// (.ci/run installs Debian's chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no Chromium on PATH under CI: .ci/run should have installed it")
	}
	t.Skip("no Chromium on PATH")
	return ""
}

// TestBrowserRerunFlow drives the dashboard in a real headless Chromium:
// the login form, the overview, a failed order's chain, a rerun with a
// reason, the task coming back DONE through the real worker, the audit
// entry it left, and the language switch. No page may break the
// Content-Security-Policy on the way. It saves a screenshot of the order
// chain in web/testdata/artifacts.
func TestBrowserRerunFlow(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
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
	const password = "ops password 2026"
	if _, err := auth.New(s, auth.Options{}).CreateUser(ctx, "ops-li", auth.RoleOperator, password, "test"); err != nil {
		t.Fatal(err)
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1000),
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	bctx, cancel = context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Text(css(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return v
	}
	// fill types v into the field sel as a page script would. SendKeys
	// resolves a DOM node id first, and chromedp now and then loses that id
	// to a late DOM update on a loaded machine ("Could not find node with
	// given id"); a script looks the field up when it runs.
	fill := func(sel, v string) chromedp.Action[chromedp.Void] {
		js := fmt.Sprintf(`(function () {
			var e = document.querySelector(%q);
			if (!e) return false;
			e.focus();
			e.value = %q;
			e.dispatchEvent(new Event("input", {bubbles: true}));
			return true;
		})()`, sel, v)
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			ok, err := chromedp.Evaluate[bool](js)(ctx, tg)
			if err == nil && !ok {
				err = fmt.Errorf("no %s to fill", sel)
			}
			return chromedp.Void{}, err
		}
	}
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		for i, step := range steps {
			sctx, cancel := context.WithTimeout(bctx, 15*time.Second)
			_, err := chromedp.Run(sctx, step)
			cancel()
			if err != nil {
				url, _ := chromedp.Run(bctx, chromedp.Location())
				t.Fatalf("step %d of %d failed on %s: %v", i+1, len(steps), url, err)
			}
		}
	}
	// The rerun button asks for confirmation; accept it like an operator.
	dialogs := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	// Every document records Content-Security-Policy violations where the
	// test can read them, across navigations.
	_, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `document.addEventListener("securitypolicyviolation", function (e) {
			sessionStorage.setItem("csp", (sessionStorage.getItem("csp") || "") + location.pathname + ": " +
				e.violatedDirective + " " + e.blockedURI + "\n");
		});`,
	})
	if err != nil {
		t.Fatal(err)
	}
	cspViolations := func() string {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`sessionStorage.getItem("csp") || ""`))
		if err != nil {
			t.Fatalf("read CSP violations: %v", err)
		}
		return v
	}

	// Nobody is signed in: the dashboard sends the browser to the login form.
	do(
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
		fill(`[data-testid="login-form"] input[name="name"]`, "ops-li"),
		fill(`[data-testid="login-form"] input[name="password"]`, password),
		chromedp.Click(css(`[data-testid="login-form"] button[type="submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="whoami"]`)),
	)
	if who := text(`[data-testid="whoami"]`); !strings.Contains(who, "ops-li") {
		t.Fatalf("signed in as %q", who)
	}
	if manual := text(`[data-testid="ov-manual"]`); !strings.Contains(manual, "1") {
		t.Fatalf("overview MANUAL = %q, want 1", manual)
	}
	// Overview → MANUAL tasks → the order's chain → the inventory rerun.
	do(
		chromedp.Click(css(`[data-testid="ov-manual"] a, a[data-testid="ov-manual"]`)),
		chromedp.WaitVisible(css(`[data-testid="task-row"]`)),
		chromedp.Click(css(`[data-testid="task-row"] a[href="/orders/B-1001"]`)),
		chromedp.WaitVisible(css(`[data-testid="five-questions"]`)),
		chromedp.Click(css(`a[data-testid="rerun-inventory"]`)),
		chromedp.WaitVisible(css(`[data-testid="rerun-form"]`)),
		fill(`[data-testid="rerun-form"] textarea`, "stock repaired by hand, ticket OPS-42"),
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
