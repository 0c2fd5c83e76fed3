package models_test

import (
	"testing"

	"unhold/models"
)

// The task count is what the filter selects, statuses included, and stops
// at its limit, saying there are more. Breaks if the count ignored the
// filter (the status one, say) or read past the limit's answer.
func TestCountTasks(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
		b.closedOrders(t, 0, 5)
		all, over, err := b.s.CountTasks(b.ctx, models.TaskFilter{}, 100)
		if err != nil || all != 8 || over {
			t.Fatalf("count of all = %d, over %v, %v; want 8 (5 stock, 3 quota)", all, over, err)
		}
		n, over, err := b.s.CountTasks(b.ctx, models.TaskFilter{Type: models.ResInventory}, 100)
		if err != nil || n != 5 || over {
			t.Fatalf("count of inventory = %d, over %v, %v; want 5", n, over, err)
		}
		for _, c := range []struct {
			f    models.TaskFilter
			want int64
		}{
			{models.TaskFilter{Statuses: []models.TaskStatus{models.TaskPending}}, 8},
			{models.TaskFilter{Statuses: []models.TaskStatus{models.TaskDone}}, 0},
			{models.TaskFilter{Statuses: []models.TaskStatus{models.TaskDone}, Due: true}, 0},
		} {
			if n, _, err := b.s.CountTasks(b.ctx, c.f, 100); err != nil || n != c.want {
				t.Fatalf("count of %v = %d, %v; want %d", c.f.Values(), n, err, c.want)
			}
		}
		n, over, err = b.s.CountTasks(b.ctx, models.TaskFilter{}, 3)
		if err != nil || n != 3 || !over {
			t.Fatalf("count capped at 3 = %d, over %v, %v; want 3 and more", n, over, err)
		}
		if _, _, err := b.s.CountTasks(b.ctx, models.TaskFilter{Key: "sku-1"}, 3); err == nil {
			t.Fatal("a key without a type was counted")
		}
	})
}

// The tickets' and the audit log's counts keep their filters and stop at
// their limits, as the tasks' do.
func TestCountTicketsAndAudit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 10, 0, "test"); return err })
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET available = available + 1 WHERE sku_id IN ('sku-1', 'sku-2')").Error
		})
		if _, err := b.s.Reconcile(b.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.RunReconciliation(b.ctx, models.ReconByAPI, "test"); err != nil {
			t.Fatal(err)
		}
		n, over, err := b.s.CountDiffTickets(b.ctx, models.DiffQuery{Statuses: []string{models.DiffOpen}}, 100)
		if err != nil || n != 2 || over {
			t.Fatalf("open tickets = %d, over %v, %v; want 2 (one a key)", n, over, err)
		}
		if n, over, _ := b.s.CountDiffTickets(b.ctx, models.DiffQuery{Statuses: []string{models.DiffResolved}}, 100); n != 0 || over {
			t.Fatalf("resolved tickets = %d, over %v; want 0", n, over)
		}
		if n, over, _ := b.s.CountDiffTickets(b.ctx, models.DiffQuery{}, 1); n != 1 || !over {
			t.Fatalf("tickets capped at 1 = %d, over %v; want 1 and more", n, over)
		}
		all, _, err := b.s.CountAudit(b.ctx, models.AuditFilter{}, 1000)
		if err != nil || all == 0 {
			t.Fatalf("audit entries = %d, %v; want some", all, err)
		}
		if n, _, _ := b.s.CountAudit(b.ctx, models.AuditFilter{Actor: "nobody"}, 1000); n != 0 {
			t.Fatalf("audit entries of nobody = %d, want 0", n)
		}
		if n, over, _ := b.s.CountAudit(b.ctx, models.AuditFilter{}, 1); n != 1 || over != (all > 1) {
			t.Fatalf("audit capped at 1 = %d, over %v (of %d)", n, over, all)
		}
	})
}
