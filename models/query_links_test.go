package models_test

import (
	"testing"

	"unhold/models"
)

// OpenTickets finds the unresolved tickets of the keys asked about, and
// only theirs.
func TestOpenTickets(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, sku := range []string{"sku-1", "sku-2"} {
			must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 10, 0, "test"); return err })
			must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 3 WHERE sku_id = ?", sku).Error })
		}
		must(t, func() error { _, err := b.s.RunReconciliation(b.ctx, "test", "test"); return err })
		key := models.ResourceKey{Type: models.ResInventory, Key: "sku-1"}
		got, err := b.s.OpenTickets(b.ctx, []models.ResourceKey{key, {Type: models.ResCoupon, Key: "sku-2"}})
		if err != nil {
			t.Fatal(err)
		}
		checks := map[string]int64{}
		for _, tk := range got {
			if tk.Type != key.Type || tk.Key != key.Key {
				t.Errorf("ticket %+v is not of %v", tk, key)
			}
			checks[tk.Check] = tk.ID
		}
		// One ticket per key, its main check HELD (the others listed in it).
		if len(got) != 1 || checks[models.CheckHeld] == 0 {
			t.Fatalf("tickets %+v, want sku-1's one ticket, HELD", got)
		}
		must(t, func() error { return b.s.ResolveDiff(b.ctx, checks[models.CheckHeld], "ops", "fixed") })
		got, err = b.s.OpenTickets(b.ctx, []models.ResourceKey{key})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range got {
			if tk.Check == models.CheckHeld {
				t.Errorf("the resolved ticket %d is still listed", tk.ID)
			}
		}
	})
}

// The SKU list counts what its prefix selects, up to the count asked for.
func TestSKUCount(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, sku := range []string{"sku-1", "sku-2", "sku-3", "x-1"} {
			must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 1, 0, "test"); return err })
		}
		for _, c := range []struct {
			prefix string
			count  int
			total  int64
			over   bool
		}{{"", 100, 4, false}, {"x", 100, 1, false}, {"sku", 2, 2, true}, {"sku", 3, 3, false}, {"", 0, 0, false}} {
			page, err := b.s.ListSKUs(b.ctx, models.SKUQuery{Prefix: c.prefix, Count: c.count, Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != c.total || page.Over != c.over {
				t.Errorf("prefix %q count %d: total %d over %v, want %d %v", c.prefix, c.count, page.Total, page.Over, c.total, c.over)
			}
		}
	})
}
