package models_test

import (
	"testing"

	"unhold/models"
)

// The task count is what the filter selects, and stops at its limit,
// saying there are more. Breaks if the count ignored the filter or read
// past the limit's answer.
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
		n, over, err = b.s.CountTasks(b.ctx, models.TaskFilter{}, 3)
		if err != nil || n != 3 || !over {
			t.Fatalf("count capped at 3 = %d, over %v, %v; want 3 and more", n, over, err)
		}
		if _, _, err := b.s.CountTasks(b.ctx, models.TaskFilter{Key: "sku-1"}, 3); err == nil {
			t.Fatal("a key without a type was counted")
		}
	})
}
