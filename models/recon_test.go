package models_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// tickets reads the tickets not yet resolved as "resource/key/check/sign".
func (b bundle) tickets(t *testing.T) []string {
	t.Helper()
	ts, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Statuses: []string{models.DiffOpen, models.DiffAcked}, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ts {
		var checks []string
		for _, c := range d.Checks {
			checks = append(checks, c.Check)
		}
		out = append(out, fmt.Sprintf("%s/%s/%s/%+d", d.ResourceType, d.BizKey, strings.Join(checks, "+"), d.Sign))
	}
	sort.Strings(out)
	return out
}

func (b bundle) ticket(t *testing.T, res models.ResourceType, key, check string) models.DiffTicket {
	t.Helper()
	ts, err := b.s.ListDiffs(b.ctx, models.DiffFilter{Resource: res, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ts {
		if d.BizKey == key && d.CheckName == check {
			return d
		}
	}
	t.Fatalf("no ticket for %s %s %s", res, key, check)
	return models.DiffTicket{}
}

// Reconciliation finds each kind of planted inconsistency — a missed
// release, a double release, a hand edit of locked, a coupon left LOCKED
// after close — and nothing on a consistent shop; diffs are tickets that
// later runs update, and close when the diff is gone.
func TestReconciliationFindsPlantedInconsistencies(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-3", 10, 0, "test"); return err })
		place := func(no, sku string, coupons ...int64) {
			t.Helper()
			req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 2}}, CouponIDs: coupons}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		place("paid", "sku-1")
		place("closed", "sku-1", cp)
		place("missed", "sku-2")
		place("pending", "sku-3")
		must(t, func() error { _, err := b.s.PayOrder(b.ctx, "paid", "txn"); return err })
		for _, no := range []string{"closed", "missed"} {
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system"); return err })
		}
		// The missed release: its task is marked DONE but nothing was given back.
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = 'DONE' WHERE order_no = 'missed'").Error
		})
		b.drain(t, "w1")

		run, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil {
			t.Fatal(err)
		}
		// Its ledger agrees with the row (LOCK, no RELEASE): only HELD sees it.
		if run.Found != 1 || run.Opened != 1 || run.Status != models.ReconDone {
			t.Fatalf("run on the missed release = %+v, want 1 found", run)
		}
		held := b.ticket(t, models.ResInventory, "sku-2", models.CheckHeld)
		if held.Sign != 1 || held.Expected != 0 || held.Actual != 2 {
			t.Fatalf("missed release ticket = %+v, want +2", held)
		}

		// A double release of sku-3 (the pending order's lock given back
		// twice, no ledger), a hand edit of sku-1's locked, and the closed
		// order's coupon put back to LOCKED by hand.
		for _, q := range []string{
			"UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-3'",
			"UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-1'",
			fmt.Sprintf("UPDATE user_coupons SET status = 'LOCKED', order_no = 'closed' WHERE id = %d", cp),
		} {
			must(t, func() error { return b.s.W.Exec(q).Error })
		}
		run2, err := b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
		if err != nil {
			t.Fatal(err)
		}
		// One ticket per key, listing its checks, HELD first, each with its
		// own expected and actual; the ticket's sign is HELD's.
		want := []string{
			fmt.Sprintf("coupon/%d/HELD+LEDGER_STATUS/+1", cp),
			"inventory/sku-1/HELD+CONSERVATION+LEDGER_HELD/+1",
			"inventory/sku-2/HELD/+1",
			"inventory/sku-3/HELD+LEDGER_AVAILABLE+LEDGER_HELD/-1",
		}
		if got := b.tickets(t); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("tickets:\n got %v\nwant %v", got, want)
		}
		if run2.Opened != 3 || run2.Found != 9 || run2.Closed != 0 {
			t.Fatalf("second run = %+v, want 9 diffs in 3 new tickets and sku-2's carried over", run2)
		}
		sku3 := b.ticket(t, models.ResInventory, "sku-3", models.CheckHeld)
		for _, c := range sku3.Checks {
			if c.Check == models.CheckLedgerHeld && c.Actual-c.Expected != -2 || c.Check == models.CheckLedgerAvail && c.Actual-c.Expected != 2 {
				t.Errorf("sku-3's %s check: expected %d, actual %d", c.Check, c.Expected, c.Actual)
			}
		}
		if sku3.Expected != sku3.Checks[0].Expected || sku3.Actual != sku3.Checks[0].Actual || sku3.Actual-sku3.Expected != -2 {
			t.Errorf("sku-3's ticket = %+v; want HELD's expected and actual (2 below)", sku3)
		}
		if again := b.ticket(t, models.ResInventory, "sku-2", models.CheckHeld); again.ID != held.ID || again.LastRunID != run2.ID {
			t.Fatalf("the open ticket was not carried over: %+v", again)
		}
		if d := b.ticket(t, models.ResInventory, "sku-3", models.CheckHeld); d.Orders != "pending" {
			t.Fatalf("double-release ticket names orders %q, want the pending order", d.Orders)
		}

		// The ticket workflow.
		if err := b.s.AckDiff(b.ctx, held.ID, "ops:alice", "looking"); err != nil {
			t.Fatal(err)
		}
		if err := b.s.AckDiff(b.ctx, held.ID, "ops:bob", ""); !errors.Is(err, models.ErrDiffState) {
			t.Fatalf("second ack = %v, want ErrDiffState", err)
		}
		if err := b.s.ResolveDiff(b.ctx, held.ID, "ops:alice", " "); !errors.Is(err, models.ErrInvalid) {
			t.Fatalf("resolve without a note = %v", err)
		}

		// Repair everything; the next run closes what is gone and says so.
		for _, q := range []string{
			"UPDATE inventory SET locked = locked + 2, available = available - 2 WHERE sku_id = 'sku-3'",
			"UPDATE inventory SET locked = locked - 1 WHERE sku_id = 'sku-1'",
			fmt.Sprintf("UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = %d", cp),
		} {
			must(t, func() error { return b.s.W.Exec(q).Error })
		}
		if err := b.s.ResolveDiff(b.ctx, held.ID, "ops:alice", "released by hand after the audit"); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(time.Hour)
		run3, err := b.s.RunReconciliation(b.ctx, models.ReconByCron, "")
		if err != nil {
			t.Fatal(err)
		}
		// sku-2's stock really was never released: its HELD diff, resolved
		// by a person without a fix, comes back as a new ticket.
		if got := b.tickets(t); strings.Join(got, " ") != "inventory/sku-2/HELD/+1" {
			t.Fatalf("after repair: %v", got)
		}
		if run3.Closed != 3 || run3.Opened != 1 {
			t.Fatalf("third run = %+v, want 3 closed and sku-2 HELD reopened", run3)
		}
		closed := b.ticket(t, models.ResInventory, "sku-3", models.CheckHeld)
		if closed.Status != models.DiffResolved || !closed.AutoClosed || closed.ResolvedBy != "system" ||
			!strings.Contains(closed.Note, fmt.Sprintf("gone in run %d", run3.ID)) {
			t.Fatalf("auto-closed ticket = %+v", closed)
		}
		counts, err := b.s.OpenDiffCounts(b.ctx)
		if err != nil || counts[models.ResInventory] != 1 || counts[models.ResCoupon] != 0 {
			t.Fatalf("open counts = %v, %v", counts, err)
		}
		var audits int64
		must(t, func() error {
			return b.s.R.Model(&models.AuditEntry{}).Where("target = ?", fmt.Sprintf("diff:%d", held.ID)).Count(&audits).Error
		})
		if audits != 2 {
			t.Fatalf("%d audit rows for the ticket, want ack + resolve", audits)
		}
	})
}

// On a consistent shop a run finds nothing and opens no ticket.
func TestReconciliationQuietOnConsistentShop(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w1")
		if _, err := b.s.PayOrder(b.ctx, "o-1", "late"); err != nil {
			t.Fatal(err)
		}
		run, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil || run.Found != 0 || run.Opened != 0 {
			t.Fatalf("run = %+v, %v; want nothing found", run, err)
		}
		last, err := b.s.LastReconRun(b.ctx)
		if err != nil || last.ID != run.ID || last.FinishedAt == nil {
			t.Fatalf("last run = %+v, %v", last, err)
		}
	})
}

// One reconciliation at a time: a second start is refused while one is
// RUNNING, and a run left RUNNING by a dead process is taken for dead.
func TestReconciliationOneAtATime(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error {
			return b.s.W.Exec("INSERT INTO recon_runs (trigger_type, actor, status, started_at) VALUES ('CRON', 'other', 'RUNNING', ?)", b.clock.Now()).Error
		})
		if _, err := b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test"); !errors.Is(err, models.ErrReconRunning) {
			t.Fatalf("second run = %v, want ErrReconRunning", err)
		}
		b.clock.Advance(31 * time.Minute)
		run, err := b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test")
		if err != nil || run.Status != models.ReconDone {
			t.Fatalf("run after the other died = %+v, %v", run, err)
		}
		runs, _ := b.s.ReconRuns(b.ctx, 10)
		if len(runs) != 2 || runs[1].Status != models.ReconFailed || !strings.Contains(runs[1].Error, "abandoned") {
			t.Fatalf("runs = %+v", runs)
		}
	})
}
