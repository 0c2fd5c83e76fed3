package models_test

import (
	"os"
	"testing"

	"github.com/pressly/goose/v3"

	"unhold/models"
	"unhold/models/modelstest"
)

// downUp runs migration 00021 down and up again on b's database.
func downUp(t *testing.T, b bundle) {
	t.Helper()
	sqlDB, err := b.s.W.DB()
	must(t, func() error { return err })
	gd := goose.DialectSQLite3
	if b.s.Dialect == models.Postgres {
		gd = goose.DialectPostgres
	}
	p, err := goose.NewProvider(gd, sqlDB, os.DirFS("migrations/"+string(b.s.Dialect)))
	must(t, func() error { return err })
	_, err = p.DownTo(b.ctx, 20)
	must(t, func() error { return err })
	_, err = b.s.Migrate(b.ctx)
	must(t, func() error { return err })
}

// Migration 00021 down and up again while a paid order's gift card waits
// for its DEDUCT task: the task must still deduct (not release) what the
// customer paid for, and the ledger of calls must still know the lock.
func TestAttackMigration21DownUpKeepsDeductTask(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 5)
			placeOne(t, b, "o-dn", "u1", giftCard, "gc-1", 2, false)
			if _, err := b.s.PayOrder(b.ctx, "o-dn", "txn-dn"); err != nil {
				t.Fatal(err)
			}
			downUp(t, b)
			var ops []string
			must(t, func() error {
				return b.s.W.Raw("SELECT op FROM release_tasks WHERE order_no = 'o-dn'").Scan(&ops).Error
			})
			if len(ops) != 1 || ops[0] != string(models.FlowDeduct) {
				t.Errorf("after 00021 down and up the paid order's tasks are %v, want [DEDUCT]", ops)
			}
			var locks int64
			must(t, func() error {
				return b.s.W.Raw("SELECT COUNT(*) FROM remote_flows WHERE order_no = 'o-dn' AND type = 'LOCK'").Scan(&locks).Error
			})
			if locks != 1 {
				t.Errorf("after 00021 down and up the ledger of calls has %d LOCK rows of o-dn, want 1", locks)
			}
			b.drain(t, "w-dn")
			if st := b.svc.Stock("gc-1"); st.Spent != 2 || st.Held != 0 || st.Available != 3 {
				t.Errorf("paid order's gift card after drain = %+v, want 2 spent, 0 held, 3 available", st)
			}
		})
	}
}
