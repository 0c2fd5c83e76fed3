package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"unhold/auth"
	"unhold/internal/browsertest"
	"unhold/jobs"
	"unhold/models"
	"unhold/web"
)

// TestBrowserManualDesk works a MANUAL balance task as a support desk
// does, in a real headless Chromium on the demo shop, with a screenshot
// after each step (in $UNHOLD_ARTIFACTS/desk or
// cmd/unhold/testdata/artifacts/desk): one operator takes the task,
// writes a note and asks for a rerun; the rerun does nothing until a
// second operator approves it; then the worker releases the frozen
// balance and the task reads DONE, its note and owner still on it.
func TestBrowserManualDesk(t *testing.T) {
	t.Parallel()
	bin := browsertest.Chromium(t)
	dsn, demoNow, _ := sqliteDemoShop(t)
	ctx := context.Background()
	start := time.Now()
	now := func() time.Time { return demoNow.Add(time.Since(start)) }
	// The balance service is down until the approver is about to approve:
	// the release fails once and, by its type's policy, goes MANUAL at
	// once.
	const no = "DESK-1"
	var down atomic.Bool
	down.Store(true)
	s, err := models.Open(ctx, dsn, models.Options{Now: now,
		Retry: []models.RetryPolicy{{Type: models.ResBalance, Steps: []time.Duration{time.Second}, Tries: 1}},
		Faults: func(point string, t *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && t.OrderNo == no && t.ResourceType == models.ResBalance && down.Load() {
				return fmt.Errorf("balance service unavailable")
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	w := jobs.NewWorker(s, "browser-worker", 10, 30*time.Second, log)
	if _, err := s.Credit(ctx, "desk-user", models.AssetBalance, 1000, "test"); err != nil {
		t.Fatal(err)
	}
	var sku string
	if err := s.R.Raw(`SELECT sku_id FROM inventory WHERE available > 0 ORDER BY sku_id LIMIT 1`).Scan(&sku).Error; err != nil || sku == "" {
		t.Fatalf("no SKU with stock: %v", err)
	}
	if _, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "desk-user",
		Items:  []models.Item{{SkuID: sku, Qty: 1}},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 300}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "desk-user"); err != nil {
		t.Fatal(err)
	}
	w.Drain(ctx)
	var task models.ReleaseTask
	if err := s.R.Where("order_no = ? AND resource_type = ?", no, models.ResBalance).Take(&task).Error; err != nil {
		t.Fatal(err)
	}
	if task.Status != models.TaskManual {
		t.Fatalf("the balance task of %s is %s, want MANUAL", no, task.Status)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go w.Run(wctx)
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.New(web.Deps{Store: s, Log: log, Wake: w.Wake, Location: loc, RerunWait: 5 * time.Second}))
	defer srv.Close()
	const password = "desk operator password 2026"
	for _, name := range []string{"alice", "bob"} {
		if _, err := auth.New(s, auth.Options{}).CreateUser(ctx, name, auth.RoleOperator, password, "test"); err != nil {
			t.Fatal(err)
		}
	}

	dir := os.Getenv("UNHOLD_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if dir, err = filepath.Abs(filepath.Join(dir, "desk")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	br := browsertest.Start(t, bin, 1366, 900)
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }
	step := 0
	shoot := func(what string) {
		t.Helper()
		step++
		sctx, cancel := context.WithTimeout(br.Ctx, 30*time.Second)
		defer cancel()
		shot, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %d %s: %v", step, what, err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-%s.png", step, what)), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// submit clicks what opens a page, and shoots the page.
	submit := func(sel, what string) {
		t.Helper()
		br.ClickToPage(sel)
		shoot(what)
	}
	signIn := func(name string) {
		t.Helper()
		br.Do(
			chromedp.Navigate(srv.URL+"/login"),
			chromedp.WaitVisible(css(`[data-testid="login-form"]`)),
			browsertest.Fill(`[data-testid="login-form"] input[name="name"]`, name),
			browsertest.Fill(`[data-testid="login-form"] input[name="password"]`, password),
		)
		submit(`[data-testid="login-form"] button[type="submit"]`, "sign-in-"+name)
		if who := br.Text(`[data-testid="whoami"]`); !strings.Contains(who, name) {
			t.Fatalf("signed in as %q, want %s", who, name)
		}
	}
	taskURL := fmt.Sprintf("%s/tasks/%d", srv.URL, task.ID)

	// Alice takes the task, writes what she found, and asks for a rerun.
	signIn("alice")
	br.Do(chromedp.Navigate(taskURL), chromedp.WaitVisible(css(`[data-testid="task-needs-approval"]`)))
	shoot("task")
	submit(`[data-testid="owner-take"]`, "taken")
	if owner := br.Eval(`document.querySelector('[data-testid="owner"]').dataset.owner`); owner != "alice" {
		t.Fatalf("after taking it the task's owner is %q, want alice (flash %q)", owner, br.Text(`[data-testid="flash"]`))
	}
	const note = "balance service was down 10:00–10:20; back now, a rerun should release"
	br.Do(browsertest.Fill(`#note-text`, note))
	submit(`[data-testid="note-submit"]`, "noted")
	br.Do(browsertest.Fill(`[data-testid="task-request-rerun-reason"]`, "service back; release the frozen 300"))
	submit(`[data-testid="task-request-rerun-submit"]`, "requested")
	if st := br.Eval(`document.querySelector('[data-testid="approval-status"]').dataset.status || ""`); st != "PENDING" {
		t.Fatalf("the request reads %q, want PENDING (flash %q)", st, br.Text(`[data-testid="flash"]`))
	}
	approval, _ := chromedp.Run(br.Ctx, chromedp.Location())
	// The approver reads money as money: the 300 fen frozen are 3 yuan.
	if got := br.Text(`[data-testid="approval-amount"]`); got != "3.00 元" {
		t.Errorf("the request's amount reads %q, want 3.00 元", got)
	}
	if n := br.Eval(`String(document.querySelectorAll('[data-testid="approval-approve-form"]').length)`); n != "0" {
		t.Fatalf("alice is offered to approve her own request")
	}
	if got := taskStatus(t, s, task.ID); got != models.TaskManual {
		t.Fatalf("the task is %s before anyone approved, want MANUAL", got)
	}

	// Bob finds it waiting and approves; the worker releases.
	submit(`[data-testid="logout-submit"]`, "signed-out")
	signIn("bob")
	br.Do(chromedp.Navigate(srv.URL+"/approvals"), chromedp.WaitVisible(css(`main`)))
	shoot("approvals")
	submit(`[data-testid="approval-link"]`, "approval")
	if loc, _ := chromedp.Run(br.Ctx, chromedp.Location()); loc != approval {
		t.Fatalf("bob's first pending approval is %s, want alice's %s", loc, approval)
	}
	down.Store(false)
	br.Do(browsertest.Fill(`[data-testid="approval-approve-reason"]`, "checked the service's status page"))
	submit(`[data-testid="approval-approve-submit"]`, "approved")
	if st := br.Eval(`document.querySelector('[data-testid="approval-status"]').dataset.status || ""`); st != "APPROVED" {
		t.Fatalf("the request reads %q after approval, want APPROVED (flash %q)", st, br.Text(`[data-testid="flash"]`))
	}
	submit(`[data-testid="approval-task"]`, "task-after")
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(br.Text(`[data-testid="task-status"]`), "已完成") {
		if time.Now().After(deadline) {
			t.Fatalf("the task page reads %q 20 s after the approval, want DONE", br.Text(`[data-testid="task-status"]`))
		}
		time.Sleep(200 * time.Millisecond)
		br.Do(chromedp.Reload(), chromedp.WaitVisible(css(`[data-testid="task-status"]`)))
	}
	shoot("done")
	if got := br.Text(`[data-testid="note-text"]`); got != note {
		t.Errorf("the done task's note reads %q, want %q", got, note)
	}
	if owner := br.Eval(`document.querySelector('[data-testid="owner"]').dataset.owner`); owner != "alice" {
		t.Errorf("the done task's owner reads %q, want alice's as history", owner)
	}
	var frozen int64
	if err := s.R.Raw(`SELECT frozen FROM accounts WHERE uid = 'desk-user' AND asset = 'BALANCE'`).Scan(&frozen).Error; err != nil || frozen != 0 {
		t.Errorf("desk-user's frozen balance is %d (%v), want 0 once released", frozen, err)
	}
	if v := br.CSPViolations(); v != "" {
		t.Fatalf("pages broke the Content-Security-Policy:\n%s", v)
	}
}

func taskStatus(t *testing.T, s *models.Store, id int64) models.TaskStatus {
	t.Helper()
	var st models.TaskStatus
	if err := s.R.Raw(`SELECT status FROM release_tasks WHERE id = ?`, id).Scan(&st).Error; err != nil {
		t.Fatal(err)
	}
	return st
}
