package models_test

import (
	"os"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"unhold/models"
	"unhold/models/modelstest"
)

// downTo runs the migrations above version down on b's database and
// returns the error.
func downTo(t *testing.T, b bundle, version int64) error {
	t.Helper()
	sqlDB, err := b.s.W.DB()
	must(t, func() error { return err })
	gd := goose.DialectSQLite3
	if b.s.Dialect == models.Postgres {
		gd = goose.DialectPostgres
	}
	p, err := goose.NewProvider(gd, sqlDB, os.DirFS("migrations/"+string(b.s.Dialect)))
	must(t, func() error { return err })
	_, err = p.DownTo(b.ctx, version)
	return err
}

// down21 runs migration 00021 (and those above it) down.
func down21(t *testing.T, b bundle) error { t.Helper(); return downTo(t, b, 20) }

// Migration 00021 down while a paid order's gift card waits for its DEDUCT
// task would turn the task into a RELEASE (the op column gone) and drop the
// ledger of calls: it is refused, and the task still deducts what the
// customer paid for. On a database no remote type has used, it goes down
// and up again. Breaks if the down step runs regardless of the rows it
// would lose.
func TestAttackMigration21DownUpKeepsDeductTask(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			empty := conformanceStore(t, d)
			if err := down21(t, empty); err != nil {
				t.Fatalf("00021 down on a database without remote rows: %v", err)
			}
			if _, err := empty.s.Migrate(empty.ctx); err != nil {
				t.Fatalf("00021 up again: %v", err)
			}

			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 5)
			placeOne(t, b, "o-dn", "u1", giftCard, "gc-1", 2, false)
			if _, err := b.s.PayOrder(b.ctx, "o-dn", "txn-dn"); err != nil {
				t.Fatal(err)
			}
			if err := down21(t, b); err == nil || !strings.Contains(err.Error(), "n = 0") && !strings.Contains(err.Error(), "00021 down refused") {
				t.Fatalf("00021 down with a DEDUCT task and the ledger of calls = %v, want it refused", err)
			}
			var ops []string
			must(t, func() error {
				return b.s.W.Raw("SELECT op FROM release_tasks WHERE order_no = 'o-dn'").Scan(&ops).Error
			})
			if len(ops) != 1 || ops[0] != string(models.FlowDeduct) {
				t.Errorf("after the refused down the paid order's tasks are %v, want [DEDUCT]", ops)
			}
			b.drain(t, "w-dn")
			if st := b.svc.Stock("gc-1"); st.Spent != 2 || st.Held != 0 || st.Available != 3 {
				t.Errorf("paid order's gift card after drain = %+v, want 2 spent, 0 held, 3 available", st)
			}
		})
	}
}
