package models_test

import (
	"fmt"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// Invariant 4: ledger rows are never updated or deleted, at the database
// level, whatever code tries.
func TestLedgersAreAppendOnly(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResSlot, "ops", "x"); err == nil {
			t.Fatal("rerun of a pending order succeeded")
		}
		for _, table := range []string{"inventory_flows", "account_flows", "quota_flows", "coupon_flows", "slot_flows", "audit_log"} {
			var n int64
			must(t, func() error { return b.s.R.Raw("SELECT COUNT(*) FROM " + table).Scan(&n).Error })
			if n == 0 {
				t.Fatalf("%s is empty: the test would prove nothing", table)
			}
			if err := b.s.W.Exec(fmt.Sprintf("UPDATE %s SET actor = 'forged'", table)).Error; err == nil {
				t.Errorf("UPDATE on %s succeeded", table)
			}
			if err := b.s.W.Exec("DELETE FROM " + table).Error; err == nil {
				t.Errorf("DELETE on %s succeeded", table)
			}
			var after int64
			must(t, func() error { return b.s.R.Raw("SELECT COUNT(*) FROM " + table).Scan(&after).Error })
			if after != n {
				t.Errorf("%s: %d rows, then %d", table, n, after)
			}
		}
	})
}

func TestLedgerChainCatchesAHandEdit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		modelstest.CheckLedgerChains(t, b.s)
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET available = available + 1 WHERE sku_id = 'sku-2'").Error
		})
		ft := &fakeT{TB: t}
		func() {
			defer func() { _ = recover() }()
			modelstest.CheckLedgerChains(ft, b.s)
		}()
		if !ft.failed {
			t.Fatal("the chain check did not see a change made without a ledger row")
		}
	})
}
