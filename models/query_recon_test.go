package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"unhold/models"
)

// reconShop plants diffs of several resources and both signs and gives the
// tickets every status: SKUs s-0..s-7 with a hand-raised locked (positive),
// sku-1 with its PENDING order's lock wiped (negative), two coupons set
// LOCKED by hand, u1's frozen balance raised; then two tickets are acked,
// one resolved by hand, and s-0 is fixed so the next run closes its
// ticket automatically.
func reconShop(t *testing.T, b bundle) {
	t.Helper()
	b.shop(t)
	for i := range 8 {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, fmt.Sprintf("s-%d", i), 10, 0, "test"); return err })
	}
	must(t, func() error {
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "p-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
		return err
	})
	for _, u := range []string{"u2", "u3"} {
		must(t, func() error {
			_, err := b.s.CreateCoupon(b.ctx, u, models.CouponMerchant, b.clock.Now().Add(time.Hour), "test")
			return err
		})
	}
	for _, q := range []string{
		"UPDATE inventory SET locked = locked + 1 WHERE sku_id LIKE 's-%'",
		"UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-1'",
		"UPDATE user_coupons SET status = 'LOCKED', order_no = 'gone' WHERE user_id IN ('u2','u3')",
		"UPDATE accounts SET frozen = frozen + 5 WHERE uid = 'u1' AND asset = 'BALANCE'",
	} {
		must(t, func() error { return b.s.W.Exec(q).Error })
	}
	if _, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test"); err != nil {
		t.Fatal(err)
	}
	all := allTickets(t, b)
	if len(all) < 12 {
		t.Fatalf("%d tickets, want at least 12 from the planted diffs", len(all))
	}
	must(t, func() error { return b.s.AckDiff(b.ctx, all[0].ID, "ops:a", "") })
	must(t, func() error { return b.s.AckDiff(b.ctx, all[1].ID, "ops:a", "looking") })
	must(t, func() error { return b.s.ResolveDiff(b.ctx, all[2].ID, "ops:b", "fixed by hand") })
	b.clock.Advance(time.Minute)
	must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = locked - 1 WHERE sku_id = 's-0'").Error })
	if _, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test"); err != nil {
		t.Fatal(err)
	}
}

// allTickets reads every ticket, newest first.
func allTickets(t *testing.T, b bundle) []models.DiffTicket {
	t.Helper()
	var all []models.DiffTicket
	must(t, func() error { return b.s.R.Order("id DESC").Find(&all).Error })
	return all
}

// DiffTickets pages through exactly the tickets each filter keeps, newest
// first, with no gap and no repeat.
func TestDiffTicketsPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		reconShop(t, b)
		all := allTickets(t, b)
		seen := map[string]bool{}
		for _, d := range all {
			seen[d.Status] = true
		}
		if !seen[models.DiffOpen] || !seen[models.DiffAcked] || !seen[models.DiffResolved] {
			t.Fatalf("statuses %v: the shop should have every one", seen)
		}
		filters := []models.DiffQuery{
			{},
			{Statuses: []string{models.DiffOpen, models.DiffAcked}},
			{Statuses: []string{models.DiffResolved}},
			{Statuses: []string{models.DiffOpen, models.DiffOpen}},
			{Resource: models.ResInventory},
			{Resource: models.ResInventory, Sign: -1},
			{Sign: 1, Statuses: []string{models.DiffOpen}},
			{Resource: models.ResCoupon, Statuses: []string{models.DiffOpen, models.DiffAcked}},
			{Resource: models.ResSlot},
		}
		for _, f := range filters {
			var want []int64
			for _, d := range all {
				if (len(f.Statuses) == 0 || slices.Contains(f.Statuses, d.Status)) &&
					(f.Resource == "" || d.ResourceType == f.Resource) && (f.Sign == 0 || d.Sign == f.Sign) {
					want = append(want, d.ID)
				}
			}
			var got []int64
			q := f
			q.Limit = 3
			for pages := 0; ; pages++ {
				if pages > 50 {
					t.Fatalf("%+v: the keyset does not advance", f)
				}
				p, err := b.s.DiffTickets(b.ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Tickets) > 3 {
					t.Fatalf("%+v: page of %d", f, len(p.Tickets))
				}
				for _, d := range p.Tickets {
					got = append(got, d.ID)
				}
				if p.Next == 0 {
					break
				}
				q.Before = p.Next
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%+v: got %v, want %v", f, got, want)
			}
		}
		// A page carries the whole ticket.
		p, err := b.s.DiffTickets(b.ctx, models.DiffQuery{Statuses: []string{models.DiffResolved}, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var auto *models.DiffTicket
		for i := range p.Tickets {
			if p.Tickets[i].AutoClosed {
				auto = &p.Tickets[i]
			}
		}
		if auto == nil || auto.BizKey != "s-0" || auto.ResolvedBy != "system" || auto.ResolvedAt == nil || auto.FirstRunID == 0 {
			t.Fatalf("auto-closed ticket = %+v", auto)
		}
	})
}

func TestDiffTicketsRefusesBadFilters(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, q := range []models.DiffQuery{
			{Statuses: []string{"CLOSED"}},
			{Resource: "stock"},
			{Sign: 2},
			{Before: -1},
		} {
			if _, err := b.s.DiffTickets(b.ctx, q); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%+v: err = %v, want ErrInvalid", q, err)
			}
		}
		if _, err := models.ParseDiffStatus("ACKED"); err != nil {
			t.Error(err)
		}
	})
}

// The summary counts unresolved tickets by resource and sign, acked ones
// apart, in resource order, positive first.
func TestOpenDiffSummary(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		reconShop(t, b)
		type key struct {
			t    models.ResourceType
			sign int
		}
		want := map[key]*models.DiffSummary{}
		var order []key
		for _, d := range allTickets(t, b) {
			if d.Status == models.DiffResolved {
				continue
			}
			k := key{d.ResourceType, d.Sign}
			if want[k] == nil {
				want[k] = &models.DiffSummary{Resource: d.ResourceType, Sign: d.Sign}
				order = append(order, k)
			}
			if d.Status == models.DiffAcked {
				want[k].Acked++
			} else {
				want[k].Open++
			}
		}
		got, err := b.s.OpenDiffSummary(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("summary %+v, want %d rows", got, len(want))
		}
		rank := map[models.ResourceType]int{}
		for i, rt := range models.ResourceTypes {
			rank[rt] = i
		}
		for i, g := range got {
			if w := want[key{g.Resource, g.Sign}]; w == nil || *w != g {
				t.Errorf("row %+v, want %+v", g, w)
			}
			if i > 0 {
				prev := got[i-1]
				if rank[prev.Resource] > rank[g.Resource] || (prev.Resource == g.Resource && prev.Sign < g.Sign) {
					t.Errorf("row %d %+v out of order after %+v", i, g, prev)
				}
			}
		}
		if w := want[key{models.ResInventory, -1}]; w == nil || w.Open+w.Acked == 0 {
			t.Errorf("no negative inventory diff in %+v", got)
		}
		if w := want[key{models.ResCoupon, 1}]; w == nil || w.Open+w.Acked < 2 {
			t.Errorf("the two LOCKED coupons are not positive diffs: %+v", got)
		}
	})
}

// Runs by id, the run that closed a ticket, and the ticket's history.
func TestReconRunLookups(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		if r, err := b.s.ReconRunAfter(b.ctx, 0); err != nil || r != nil {
			t.Fatalf("run after 0 on an empty shop = %+v, %v", r, err)
		}
		reconShop(t, b)
		runs, err := b.s.ReconRuns(b.ctx, 10)
		if err != nil || len(runs) != 2 {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		byID, err := b.s.ReconRunsByID(b.ctx, []int64{runs[0].ID, runs[1].ID, 9999})
		if err != nil || len(byID) != 2 || byID[runs[1].ID].Trigger != models.ReconByCLI {
			t.Fatalf("by id = %+v, %v", byID, err)
		}
		if m, err := b.s.ReconRunsByID(b.ctx, nil); err != nil || len(m) != 0 {
			t.Fatalf("no ids = %+v, %v", m, err)
		}
		next, err := b.s.ReconRunAfter(b.ctx, runs[1].ID)
		if err != nil || next == nil || next.ID != runs[0].ID {
			t.Fatalf("run after %d = %+v, %v", runs[1].ID, next, err)
		}
		if r, err := b.s.ReconRunAfter(b.ctx, runs[0].ID); err != nil || r != nil {
			t.Fatalf("run after the last = %+v, %v", r, err)
		}
		all := allTickets(t, b)
		var acked models.DiffTicket
		for _, d := range all {
			if d.Status == models.DiffAcked && d.Note == "looking" {
				acked = d
			}
		}
		must(t, func() error { return b.s.ResolveDiff(b.ctx, acked.ID, "ops:c", "done") })
		h, err := b.s.DiffHistory(b.ctx, acked.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 2 || h[0].Action != "diff_ack" || h[0].Reason != "looking" || h[1].Action != "diff_resolve" || h[1].Actor != "ops:c" {
			t.Fatalf("history = %+v", h)
		}
		must(t, func() error { return b.s.AuditReconRunNow(b.ctx, "ops:1.2.3.4") })
		var e models.AuditEntry
		must(t, func() error { return b.s.R.Where("action = ?", "recon_run_now").Take(&e).Error })
		if e.Actor != "ops:1.2.3.4" || e.Target != "recon" || e.Outcome != "ok" {
			t.Fatalf("audit = %+v", e)
		}
	})
}
