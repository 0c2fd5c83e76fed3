package models_test

import (
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// Migration 00028 lets a line deducted at payment order nothing (cancelled
// whole before payment) and nothing less; on SQLite by editing the table's
// text in sqlite_schema. Before it ordered 0 is refused; after it a whole
// cancel is accepted, a negative order still refused, the integrity check
// passes, and going down is refused while such a line exists. Breaks if
// the text edit missed or the down step dropped the guard.
func TestMigration28LetsALineOrderNothing(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			b.shop(t)
			payModelSKU(t, b, "sku-p", 5)
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
				Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-p", Qty: 2}}})
			if err != nil {
				t.Fatal(err)
			}
			try := func(q string) error { return b.s.W.Exec(q).Error }
			const orderNothing = "UPDATE order_holds SET ordered = 0 WHERE order_no = 'o-1' AND biz_key = 'sku-p'"
			if err := downTo(t, b, 27); err != nil {
				t.Fatalf("down without a line cancelled whole: %v", err)
			}
			if err := try(orderNothing); err == nil {
				t.Fatal("before 00028 a line ordering nothing was accepted")
			}
			if _, err := b.s.Migrate(b.ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			if err := try("UPDATE order_holds SET ordered = -1 WHERE order_no = 'o-1' AND biz_key = 'sku-p'"); err == nil {
				t.Fatal("a line ordering -1 was accepted")
			}
			res, err := b.s.CancelLine(b.ctx, "o-1", "sku-p", 2, -1, "c-1", "", "user:u1")
			if err != nil || res.Status != models.OrderPending {
				t.Fatalf("cancel of the whole sku-p line: %+v, %v", res, err)
			}
			if d == models.SQLite {
				var ic string
				must(t, func() error { return b.s.R.Raw("PRAGMA integrity_check").Scan(&ic).Error })
				if ic != "ok" {
					t.Fatalf("integrity_check = %q", ic)
				}
			}
			if err := downTo(t, b, 27); err == nil {
				t.Fatal("down with a line cancelled whole was not refused")
			}
			if err := try(orderNothing); err != nil {
				t.Fatalf("after the refused down, the line ordering nothing: %v", err)
			}
			modelstest.CheckInvariants(t, b.s)
		})
	}
}
