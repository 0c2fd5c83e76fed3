package web_test

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// englishRun finds three or more English words in a row: a sentence, or
// the start of one. Codes (PENDING), ids (sku-1, u1) and numbers are not
// words, so they break a run.
var englishRun = regexp.MustCompile(`\b[A-Za-z][a-z]*(?:'[a-z]+)?(?:[ ,]+[A-Za-z][a-z]*(?:'[a-z]+)?){2,}\b`)

var (
	scriptRE = regexp.MustCompile(`(?s)<(script|style|head)\b.*?</(script|style|head)>`)
	anyTagRE = regexp.MustCompile(`<[^>]*>`)
	spaceRE  = regexp.MustCompile(`\s+`)
	idLikeRE = regexp.MustCompile(`[A-Za-z]*[0-9_@./:-][\w@./:-]*`)
)

// englishSentences returns the English runs of words in a page's visible
// text (tags, scripts and attributes left out: a title="…" holds the text
// as stored, for hover).
func englishSentences(body string) []string {
	text := scriptRE.ReplaceAllString(body, " ")
	text = anyTagRE.ReplaceAllString(text, "\n")
	text = html.UnescapeString(text)
	// An id or a code with digits or punctuation in it is no word.
	text = idLikeRE.ReplaceAllString(text, "\n")
	var found []string
	for _, line := range strings.Split(text, "\n") {
		line = spaceRE.ReplaceAllString(line, " ")
		found = append(found, englishRun.FindAllString(line, -1)...)
	}
	return found
}

// readableShop is seedShop and what puts stored English on pages: a
// cancelled order released, one gone MANUAL (LOCKED_SHORT) and rerun, one
// whose coupon was given back by hand gone MANUAL (STATE_MISMATCH), a late
// payment that found its coupon taken, an unpaid order closed by the
// timeout job, a reconciliation run with a ticket, and a run of every
// periodic job whose summary is stored.
func readableShop(t *testing.T, b bundle) {
	t.Helper()
	ctx := b.ctx
	sh := seedShop(t, b)
	log := slog.New(slog.DiscardHandler)
	w := jobs.NewWorker(b.s, "node-1", 10, time.Minute, log)
	_, err := b.s.CloseOrder(ctx, "held-1", models.TriggerUserCancel, "u1")
	try(t, "close held-1", err)
	w.Drain(ctx)
	_, _, err = b.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "short-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 1}}})
	try(t, "place short-1", err)
	try(t, "hand edit", b.s.W.Exec("UPDATE inventory SET locked = 0, available = 1 WHERE sku_id = 'sku-2'").Error)
	_, err = b.s.CloseOrder(ctx, "short-1", models.TriggerAdmin, "root")
	try(t, "close short-1", err)
	w.Drain(ctx)
	_, err = b.s.Rerun(ctx, "short-1", models.ResourceType("inventory"), "root", "库存已修正")
	try(t, "rerun short-1", err)
	w.Drain(ctx)
	_, _, err = b.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "cpn-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
		CouponIDs: []int64{sh.couponU1}})
	try(t, "place cpn-1", err)
	_, err = b.s.CloseOrder(ctx, "cpn-1", models.TriggerUserCancel, "u1")
	try(t, "close cpn-1", err)
	try(t, "hand edit", b.s.W.Exec("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", sh.couponU1).Error)
	w.Drain(ctx)
	cp, err := b.s.CreateCoupon(ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
	try(t, "coupon", err)
	_, _, err = b.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "late-cpn", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
		CouponIDs: []int64{cp.ID}})
	try(t, "place late-cpn", err)
	_, err = b.s.CloseOrder(ctx, "late-cpn", models.TriggerUserCancel, "u1")
	try(t, "close late-cpn", err)
	w.Drain(ctx)
	_, _, err = b.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "took-cpn", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
		CouponIDs: []int64{cp.ID}})
	try(t, "place took-cpn", err)
	_, err = b.s.PayOrder(ctx, "late-cpn", "txn-late-cpn")
	try(t, "pay late-cpn", err)
	_, _, err = b.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "late-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
	try(t, "place late-1", err)
	_, err = b.s.RunReconciliation(ctx, models.ReconByCLI, "root")
	try(t, "reconcile", err)

	b.clock.Advance(2 * time.Hour)
	var runs []models.JobRun
	add := func(job string, summary string, err error) {
		try(t, job, err)
		s, d, _ := strings.Cut(summary, "\n")
		runs = append(runs, models.JobRun{Job: job, Instance: "node-1", TriggeredBy: jobs.JobTriggerCron, Outcome: models.JobOK,
			Summary: s, Detail: d, StartedAt: b.clock.Now(), FinishedAt: b.clock.Now()})
	}
	summary, err := jobs.CloseExpired(ctx, b.s, func() {})
	add(jobs.JobTimeoutClose, summary, err)
	w.Drain(ctx)
	b.clock.Advance(24 * time.Hour)
	summary, err = jobs.LedgerReport(ctx, b.s, time.UTC, log)
	add(jobs.JobLedgerReport, summary, err)
	summary, err = jobs.CleanupAttempts(ctx, b.s, b.a, 90*24*time.Hour, jobs.DefaultEventsKeep)
	add(jobs.JobAttemptCleanup, summary, err)
	runs = append(runs, models.JobRun{Job: jobs.JobReconcile, Instance: "node-1", TriggeredBy: jobs.JobTriggerCron,
		Outcome: models.JobFailed, Error: "timed out after 10m0s: context deadline exceeded", StartedAt: b.clock.Now(), FinishedAt: b.clock.Now()})
	for _, r := range runs {
		try(t, "record run", b.s.W.Create(&r).Error)
	}
}

// readablePages are the dashboard's pages over readableShop.
func readablePages(t *testing.T, b bundle) []string {
	t.Helper()
	var task, couponTask, diff, audit int64
	try(t, "task", b.s.R.Raw("SELECT MAX(id) FROM release_tasks WHERE order_no = 'short-1'").Scan(&task).Error)
	try(t, "coupon task", b.s.R.Raw("SELECT MAX(id) FROM release_tasks WHERE order_no = 'cpn-1' AND resource_type = 'coupon'").Scan(&couponTask).Error)
	try(t, "diff", b.s.R.Raw("SELECT COALESCE(MAX(id), 0) FROM recon_diffs").Scan(&diff).Error)
	try(t, "audit", b.s.R.Raw("SELECT MAX(id) FROM audit_log WHERE action = 'rerun'").Scan(&audit).Error)
	pages := []string{"/", "/orders", "/orders/held-1", "/orders/short-1", "/orders/late-1", "/tasks",
		fmt.Sprintf("/tasks/%d", task), "/inventory", "/inventory/sku-2", "/coupons", "/balances",
		"/reports/daily", "/recon", "/jobs", "/audit", fmt.Sprintf("/audit/%d", audit), "/search?q=sku",
		"/admin/users", "/admin/tokens", "/account/password",
		"/orders/cpn-1", "/orders/late-cpn", fmt.Sprintf("/tasks/%d", couponTask), "/tasks?status=MANUAL",
		"/orders/short-1/resources/inventory/rerun", "/orders/cpn-1/resources/coupon/rerun", "/inventory/sku-2?for=short-1"}
	var coupon int64
	try(t, "coupon", b.s.R.Raw("SELECT CAST(biz_key AS INTEGER) FROM release_tasks WHERE id = ?", couponTask).Scan(&coupon).Error)
	pages = append(pages, fmt.Sprintf("/coupons?coupon=%d", coupon))
	if diff != 0 {
		pages = append(pages, fmt.Sprintf("/recon/diffs/%d", diff))
	}
	return pages
}

// No Chinese page shows an English sentence: every text, stored ones
// included (job summaries, audit details, attempt notes, errors), is in
// the viewer's language.
func TestChinesePagesHaveNoEnglish(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := jbSetup(t, d)
			b := env.bundle
			readableShop(t, b)
			for _, path := range readablePages(t, b) {
				body := wantPage(t, servePage(b, path, "zh", ""), "GET "+path, http.StatusOK)
				found := englishSentences(body)
				switch {
				case len(found) == 0:
				default:
					t.Errorf("%s shows English in Chinese: %q", path, found)
				}
			}
		})
	}
}

// The check finds what it looks for: an English sentence planted as a job
// summary of no known shape shows on the Chinese jobs page and is caught,
// while the same page without it is clean.
func TestChinesePagesCheckCatchesEnglish(t *testing.T) {
	t.Parallel()
	env := jbSetup(t, models.SQLite)
	b := env.bundle
	if found := englishSentences(wantPage(t, servePage(b, "/jobs", "zh", ""), "GET /jobs", http.StatusOK)); len(found) > 0 {
		t.Fatalf("a clean jobs page shows %q", found)
	}
	planted := models.JobRun{Job: jobs.JobTimeoutClose, Instance: "node-1", TriggeredBy: jobs.JobTriggerCron, Outcome: models.JobOK,
		Summary: "the warehouse was restocked by hand", StartedAt: b.clock.Now(), FinishedAt: b.clock.Now()}
	try(t, "plant", b.s.W.WithContext(context.Background()).Create(&planted).Error)
	found := englishSentences(wantPage(t, servePage(b, "/jobs", "zh", ""), "GET /jobs", http.StatusOK))
	if len(found) != 1 || found[0] != "the warehouse was restocked by hand" {
		t.Fatalf("planted sentence found as %q", found)
	}
}
