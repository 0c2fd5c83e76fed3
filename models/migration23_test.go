package models_test

import (
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// down23 runs migration 00023 (and those above it) down.
func down23(t *testing.T, b bundle) error { t.Helper(); return downTo(t, b, 22) }

// Migration 00023 widens CHECKs (on SQLite by editing the tables' text in
// sqlite_schema): after it, the new statuses and ledger row types are
// accepted and anything else is still refused; the
// lines' bounds hold (returned never above shipped); SQLite's integrity
// check passes. Going down is refused while an order has a life after
// payment, and on a database without one it goes down and up again, the
// old CHECKs back in between. Breaks if the text edit missed a table or
// the down step dropped what it would lose.
func TestMigration23WidensChecks(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			b.shop(t)
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}); err != nil {
				t.Fatal(err)
			}
			try := func(q string) error { return b.s.W.Exec(q).Error }
			if err := down23(t, b); err != nil {
				t.Fatalf("down on a database without a life after payment: %v", err)
			}
			if err := try("UPDATE orders SET status = 'SHIPPED' WHERE order_no = 'o-1'"); err == nil {
				t.Fatal("after down, SHIPPED is still accepted")
			}
			if _, err := b.s.Migrate(b.ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			for _, q := range []string{
				"UPDATE orders SET status = 'RETURNING' WHERE order_no = 'o-1'",
				"UPDATE release_tasks SET status = 'ABANDONED' WHERE 1 = 0",
			} {
				if err := try(q); err != nil {
					t.Errorf("%s: %v", q, err)
				}
			}
			for _, q := range []string{
				"UPDATE orders SET status = 'LOST' WHERE order_no = 'o-1'",
				"UPDATE order_holds SET deducted = 2, shipped = 1, returned = 2 WHERE order_no = 'o-1'",
				"UPDATE order_holds SET deducted = 2, shipped = 2, refunded = 1 WHERE order_no = 'o-1'",
				"UPDATE order_holds SET deducted = 2, shipped = 2, returned = 1, restocked = 1, written_off = 1 WHERE order_no = 'o-1'",
			} {
				if err := try(q); err == nil {
					t.Errorf("%s was accepted", q)
				}
			}
			must(t, func() error { return try("UPDATE orders SET status = 'PENDING' WHERE order_no = 'o-1'") })
			if _, err := b.s.PayOrder(b.ctx, "o-1", "t1"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Ship(b.ctx, "o-1", "sh-1", []models.LineQty{{SkuID: "sku-1", Qty: 1}}, "wms"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Refund(b.ctx, "o-1", "rf-1", nil, "", "cs"); err != nil {
				t.Fatal(err)
			}
			var types []string
			must(t, func() error {
				return b.s.R.Raw("SELECT type FROM inventory_flows WHERE order_no = 'o-1' ORDER BY id").Scan(&types).Error
			})
			if strings.Join(types, ",") != "LOCK,DEDUCT,REFUND" {
				t.Fatalf("ledger = %v", types)
			}
			if d == models.SQLite {
				var ic string
				must(t, func() error { return b.s.R.Raw("PRAGMA integrity_check").Scan(&ic).Error })
				if ic != "ok" {
					t.Fatalf("integrity_check = %q", ic)
				}
			}
			if err := down23(t, b); err == nil || !strings.Contains(err.Error(), "n = 0") && !strings.Contains(err.Error(), "refusing") {
				t.Fatalf("down with a refunded order: %v, want refused", err)
			}
			modelstest.CheckInvariants(t, b.s)
		})
	}
}
