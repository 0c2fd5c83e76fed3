package models_test

import (
	"os"
	"testing"

	"github.com/pressly/goose/v3"

	"unhold/models"
	"unhold/models/modelstest"
)

// Migration 00013 down and up again on a database with data: accounts keep
// every row, the guards and the bound go and come back, the books still
// reconcile.
func TestMigration13DownKeepsAccounts(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, _ := openDSN(t, d)
			// Local flows only: 00021 refuses to go down over remote rows.
			withLocalFlows(t, b)
			_, err := b.s.Credit(b.ctx, "u2", models.AssetPoints, 7, "test")
			must(t, func() error { return err })
			var before, down, up []models.AccountAsset
			must(t, func() error { return b.s.W.Order("uid, asset").Find(&before).Error })
			sqlDB, err := b.s.W.DB()
			must(t, func() error { return err })
			gd := goose.DialectSQLite3
			if d == models.Postgres {
				gd = goose.DialectPostgres
			}
			p, err := goose.NewProvider(gd, sqlDB, os.DirFS("migrations/"+string(d)))
			must(t, func() error { return err })
			_, err = p.DownTo(b.ctx, 12)
			must(t, func() error { return err })
			// The columns 00012 has: on PostgreSQL, the SELECT * read before
			// the down would answer expire_at (00027), which the down dropped.
			must(t, func() error { return b.s.W.Select(accountCols12).Order("uid, asset").Find(&down).Error })
			if err := b.s.W.Exec("UPDATE accounts SET available = ? WHERE uid = 'u2'", int64(models.MaxBalance)+1).Error; err != nil {
				t.Errorf("after down the bound still holds: %v", err)
			}
			must(t, func() error {
				return b.s.W.Exec("UPDATE accounts SET available = 7 WHERE uid = 'u2'").Error
			})
			_, err = b.s.Migrate(b.ctx)
			must(t, func() error { return err })
			must(t, func() error { return b.s.W.Order("uid, asset").Find(&up).Error })
			if len(before) != 3 || len(down) != 3 || len(up) != 3 {
				t.Fatalf("accounts %v → down %v → up %v, want the same 3 rows", before, down, up)
			}
			for i := range before {
				if before[i] != down[i] && !before[i].UpdatedAt.Equal(down[i].UpdatedAt) || before[i].Available != up[i].Available ||
					before[i].Frozen != up[i].Frozen || before[i].Spent != up[i].Spent || before[i].UID != up[i].UID {
					t.Errorf("row %d: %+v → down %+v → up %+v", i, before[i], down[i], up[i])
				}
			}
			diffs, err := b.s.Reconcile(b.ctx)
			if err != nil || len(diffs) != 0 {
				t.Fatalf("reconcile = %v, %v; want no diffs", diffs, err)
			}
		})
	}
}
