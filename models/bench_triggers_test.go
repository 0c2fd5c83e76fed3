package models_test

import (
	"context"
	"fmt"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// BenchmarkReleaseInsertGuards measures what SQLite's append-only insert
// guards (migration 00013: a BEFORE INSERT trigger on id and one on the
// ledger key, per ledger) cost a release: the same release transaction
// with the guards and with them dropped. The inventory ledger is filled
// with ledgerRows rows first, so each guard's lookup walks a real index.
func BenchmarkReleaseInsertGuards(b *testing.B) {
	const ledgerRows = 20_000
	for _, guarded := range []bool{true, false} {
		b.Run(fmt.Sprintf("guards=%v", guarded), func(b *testing.B) {
			s := modelstest.Open(b, models.SQLite, models.Options{})
			ctx := context.Background()
			benchShop(b, s)
			if !guarded {
				for _, tr := range []string{"inventory_flows_no_replace", "inventory_flows_keep_key"} {
					if err := s.W.Exec("DROP TRIGGER " + tr).Error; err != nil {
						b.Fatal(err)
					}
				}
			}
			err := s.W.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
				INSERT INTO inventory_flows (order_no, sku_id, type, trigger_type, qty, avail_before, avail_after, held_before, held_after,
					spent_before, spent_after, actor, created_at)
				SELECT 'fill-' || i, 'sku-2', 'LOCK', '', 1, 0, 0, 0, 0, 0, 0, 'bench', '2026-01-01 00:00:00+00:00' FROM n`, ledgerRows).Error
			if err != nil {
				b.Fatal(err)
			}
			benchReleases(ctx, b, s, 50, false)
		})
	}
}

// BenchmarkLedgerInsertGuards is the guards' cost per ledger row alone, as
// a batched release would pay it: b.N rows inserted in one transaction
// through the statement the release uses, with and without the guards.
func BenchmarkLedgerInsertGuards(b *testing.B) {
	for _, guarded := range []bool{true, false} {
		b.Run(fmt.Sprintf("guards=%v", guarded), func(b *testing.B) {
			s := modelstest.Open(b, models.SQLite, models.Options{})
			if !guarded {
				for _, tr := range []string{"inventory_flows_no_replace", "inventory_flows_keep_key"} {
					if err := s.W.Exec("DROP TRIGGER " + tr).Error; err != nil {
						b.Fatal(err)
					}
				}
			}
			tx := s.W.Begin()
			defer tx.Rollback()
			b.ResetTimer()
			for i := range b.N {
				res := tx.Exec(`INSERT INTO inventory_flows (order_no, sku_id, type, trigger_type, qty, avail_before, avail_after,
					held_before, held_after, spent_before, spent_after, actor, created_at)
					VALUES (?, 'sku-1', 'RELEASE', 'TIMEOUT', 1, 0, 0, 0, 0, 0, 0, 'bench', '2026-01-01 00:00:00+00:00')
					ON CONFLICT (order_no, sku_id, type, epoch) DO NOTHING`, fmt.Sprintf("o-%d", i))
				if res.Error != nil || res.RowsAffected != 1 {
					b.Fatalf("insert: %v, %d rows", res.Error, res.RowsAffected)
				}
			}
		})
	}
}
