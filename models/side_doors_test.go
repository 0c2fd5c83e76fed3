package models_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the raw "sqlite" driver, for a connection without our pragmas

	"unhold/models"
	"unhold/models/modelstest"
)

// openDSN is setup that also returns the DSN, for a second, raw connection.
func openDSN(t *testing.T, d models.Dialect) (bundle, string) {
	t.Helper()
	clock := modelstest.NewClock()
	dsn := modelstest.DSN(t, d)
	s, err := models.Open(context.Background(), dsn, models.Options{Now: clock.Now})
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	b := bundle{s: s, clock: clock, ctx: context.Background()}
	_, err = s.Migrate(b.ctx)
	must(t, func() error { return err })
	return b, dsn
}

// appendOnlyTables lists, from the schema itself, every table whose rows
// may not be updated or deleted, so that a new one cannot be left out.
func appendOnlyTables(t *testing.T, b bundle) []string {
	t.Helper()
	q := `SELECT DISTINCT tbl_name FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%\_no\_delete' ESCAPE '\' ORDER BY 1`
	if b.s.Dialect == models.Postgres {
		q = `SELECT DISTINCT c.relname FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
			JOIN pg_proc p ON p.oid = tg.tgfoid
			WHERE p.proname = 'reject_append_only_change' AND c.relnamespace = current_schema()::regnamespace
				AND (tg.tgtype & 16) <> 0 ORDER BY 1` // 16: a DELETE trigger
	}
	var tables []string
	must(t, func() error { return b.s.W.Raw(q).Scan(&tables).Error })
	if want := []string{"account_flows", "audit_log", "coupon_flows", "inventory_flows", "quota_flows", "slot_flows"}; len(tables) < len(want) {
		t.Fatalf("append-only tables = %v, want at least %v", tables, want)
	}
	return tables
}

// withEveryFlow fills every ledger and the audit log: set-up rows (ADJUST,
// no order) and an order's LOCK rows; withLocalFlows, and the ledger of
// remote calls.
func withEveryFlow(t *testing.T, b bundle) {
	t.Helper()
	withLocalFlows(t, b)
	// Notes on tasks and tickets (00032, unless the test stopped
	// migrating before it).
	if b.s.W.Migrator().HasTable("item_notes") {
		must(t, func() error {
			return b.s.W.Exec(`INSERT INTO item_notes (item_kind, item_id, order_no, author, text, created_at)
				VALUES ('task', 1, 'o-1', 'test', 'a note', ?)`, b.clock.Now()).Error
		})
	}
	// No remote type is registered, so its ledger of calls (00021, unless
	// the test stopped migrating before it) gets an order's LOCK and
	// RELEASE rows as the remote resource writes them.
	if !b.s.W.Migrator().HasTable("remote_flows") {
		return
	}
	must(t, func() error {
		now := b.clock.Now()
		return b.s.W.Exec(`INSERT INTO remote_flows (order_no, resource_type, biz_key, type, epoch, trigger_type, qty,
			idempotency_key, answer, actor, created_at)
			VALUES ('o-1', 'giftcard', 'c1', 'LOCK', 0, 'PLACE', 1, 'uh1-a', 'SENT', 'test', ?),
			('o-1', 'giftcard', 'c1', 'RELEASE', 0, 'USER_CANCEL', 1, 'uh1-b', '200', 'test', ?)`, now, now).Error
	})
}

// withLocalFlows fills every ledger of unhold's own resources and the
// audit log: set-up rows (ADJUST, no order) and an order's LOCK rows.
func withLocalFlows(t *testing.T, b bundle) {
	t.Helper()
	cp := b.shop(t)
	_, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp))
	must(t, func() error { return err })
	// No declared type is placed yet, so the declared counters' ledger
	// (00018, unless the test stopped migrating before it) gets its two
	// rows as the generic counter writes them.
	if !b.s.W.Migrator().HasTable("declared_counter_flows") {
		return
	}
	must(t, func() error {
		now := b.clock.Now()
		return b.s.W.Exec(`INSERT INTO declared_counter_flows (order_no, resource_type, biz_key, type, epoch, trigger_type, qty,
			avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at)
			VALUES (NULL, 'gift_wrap', 'k1', 'ADJUST', 0, 'SETUP', 5, 0, 5, 0, 0, 0, 0, 'test', ?),
			('o-1', 'gift_wrap', 'k1', 'LOCK', 0, 'PLACE', 1, 5, 4, 0, 1, 0, 0, 'test', ?)`, now, now).Error
	})
}

// columns are a table's columns but id, in order.
func columns(t *testing.T, b bundle, table string) string {
	t.Helper()
	var cols []string
	q := `SELECT name FROM pragma_table_info(?) WHERE name <> 'id' ORDER BY cid`
	if b.s.Dialect == models.Postgres {
		q = `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = ? AND column_name <> 'id' ORDER BY ordinal_position`
	}
	must(t, func() error { return b.s.W.Raw(q, table).Scan(&cols).Error })
	return strings.Join(cols, ", ")
}

// rowState is a table's row count and its smallest and largest id.
func rowState(t *testing.T, db *sql.DB, table string) [3]int64 {
	t.Helper()
	var st [3]int64
	must(t, func() error {
		return db.QueryRow("SELECT COUNT(*), MIN(id), MAX(id) FROM "+table).Scan(&st[0], &st[1], &st[2])
	})
	return st
}

// On SQLite, INSERT OR REPLACE and REPLACE INTO delete the row they
// conflict with without firing the no_delete triggers. On every append-only
// table, from our connection and from one without our pragmas (as the
// sqlite3 CLI opens the file), a replace on the row id is refused and one
// on the ledger key leaves the row as it was; INSERT ... ON CONFLICT DO
// NOTHING still reports a duplicate as 0 rows.
func TestSQLiteReplaceCannotDeleteAppendOnlyRows(t *testing.T) {
	t.Parallel()
	b, path := openDSN(t, models.SQLite)
	withEveryFlow(t, b)
	ours, err := b.s.W.DB()
	must(t, func() error { return err })
	raw, err := sql.Open("sqlite", "file:"+path)
	must(t, func() error { return err })
	t.Cleanup(func() { _ = raw.Close() })
	for _, table := range appendOnlyTables(t, b) {
		cols := columns(t, b, table)
		keyed := table != "audit_log" && table != "item_notes" // the ledgers' unique key; audit rows and notes have only their id
		for name, db := range map[string]*sql.DB{"ours": ours, "raw": raw} {
			before := rowState(t, db, table)
			for _, verb := range []string{"INSERT OR REPLACE", "REPLACE"} {
				_, err := db.Exec(verb + " INTO " + table + " (id, " + cols + ") SELECT id, " + cols + " FROM " + table +
					" WHERE id = (SELECT MIN(id) FROM " + table + ")")
				if err == nil {
					t.Errorf("%s %s on %s's first id: accepted, want refused", name, verb, table)
				}
				if keyed {
					_, err := db.Exec(verb + " INTO " + table + " (" + cols + ") SELECT " + cols + " FROM " + table +
						" WHERE id = (SELECT MAX(id) FROM " + table + " WHERE order_no IS NOT NULL)")
					if err != nil {
						t.Errorf("%s %s on %s's ledger key: %v, want the row left as it was", name, verb, table, err)
					}
				}
				if got := rowState(t, db, table); got != before {
					t.Errorf("%s %s on %s: count, min id, max id %v → %v", name, verb, table, before, got)
				}
			}
			if keyed {
				res, err := db.Exec("INSERT INTO " + table + " (" + cols + ") SELECT " + cols + " FROM " + table +
					" WHERE id = (SELECT MAX(id) FROM " + table + " WHERE order_no IS NOT NULL) ON CONFLICT DO NOTHING")
				if err != nil {
					t.Fatalf("%s ON CONFLICT DO NOTHING on %s: %v", name, table, err)
				}
				if n, _ := res.RowsAffected(); n != 0 {
					t.Errorf("%s ON CONFLICT DO NOTHING on %s's ledger key inserted %d rows, want 0", name, table, n)
				}
			}
		}
	}
	diffs, err := b.s.Reconcile(b.ctx)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("reconcile = %v, %v; want no diffs", diffs, err)
	}
}

// On PostgreSQL, TRUNCATE fires no row trigger: every append-only table
// refuses it itself, alone or reached by CASCADE.
func TestPostgresTruncateRefusedOnAppendOnlyTables(t *testing.T) {
	t.Parallel()
	b, _ := openDSN(t, models.Postgres)
	withEveryFlow(t, b)
	db, err := b.s.W.DB()
	must(t, func() error { return err })
	for _, table := range appendOnlyTables(t, b) {
		before := rowState(t, db, table)
		for _, stmt := range []string{"TRUNCATE " + table, "TRUNCATE " + table + " CASCADE"} {
			if _, err := db.Exec(stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %v, want refused as append-only", stmt, err)
			}
		}
		if got := rowState(t, db, table); got != before {
			t.Errorf("%s after TRUNCATE: count, min id, max id %v → %v", table, before, got)
		}
	}
}

// accountCols12 are the columns of accounts up to migration 00026.
const accountCols12 = "uid, asset, available, frozen, spent, updated_at"

// Migration 00013 rebuilds accounts on SQLite to add its CHECK: on a
// database with accounts, orders and ledgers, every row stays as it was,
// the key still holds, the bound holds on every column and the books still
// reconcile. The data is written by today's code and taken down to 00012:
// points' reads and writes name the columns of 00027.
func TestMigration13KeepsAccounts(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, _ := openDSN(t, d)
			withLocalFlows(t, b)
			_, err := b.s.Credit(b.ctx, "u2", models.AssetPoints, 7, "test")
			must(t, func() error { return err })
			must(t, func() error { return downTo(t, b, 12) })
			var before, after []models.AccountAsset
			must(t, func() error { return b.s.W.Select(accountCols12).Order("uid, asset").Find(&before).Error })
			_, err = b.s.Migrate(b.ctx)
			must(t, func() error { return err })
			must(t, func() error { return b.s.W.Order("uid, asset").Find(&after).Error })
			if len(before) != 3 || len(after) != len(before) {
				t.Fatalf("accounts %v → %v, want the same 3 rows", before, after)
			}
			for i := range before {
				if !before[i].UpdatedAt.Equal(after[i].UpdatedAt) {
					t.Errorf("row %d updated_at %v → %v", i, before[i].UpdatedAt, after[i].UpdatedAt)
				}
				before[i].UpdatedAt, after[i].UpdatedAt = time.Time{}, time.Time{}
				if before[i] != after[i] {
					t.Errorf("row %d %+v → %+v", i, before[i], after[i])
				}
			}
			if err := b.s.W.Exec(`INSERT INTO accounts (uid, asset, updated_at) VALUES ('u1', 'BALANCE', ?)`, b.clock.Now()).Error; err == nil {
				t.Error("a second u1 BALANCE row was accepted: the key is gone")
			}
			for _, col := range []string{"available", "frozen", "spent"} {
				err := b.s.W.Exec("UPDATE accounts SET "+col+" = ? WHERE uid = 'u2'", int64(models.MaxBalance)+1).Error
				if err == nil {
					t.Errorf("%s past MaxBalance was accepted", col)
				}
			}
			diffs, err := b.s.Reconcile(b.ctx)
			if err != nil || len(diffs) != 0 {
				t.Fatalf("reconcile = %v, %v; want no diffs", diffs, err)
			}
			if _, err := b.s.Credit(b.ctx, "u2", models.AssetPoints, 1, "test"); err != nil {
				t.Fatalf("credit after the migration: %v", err)
			}
		})
	}
}

// A credit that would take an account's total past MaxBalance is refused
// with BALANCE_OVERFLOW, whether the total sits in available, frozen or
// spent; one that reaches it exactly passes.
func TestCreditPastMaxBalanceRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 1, "test")
		must(t, func() error { return err })
		const near = int64(models.MaxBalance) - 5
		for col, set := range map[string][3]int64{"available": {near, 0, 0}, "frozen": {0, near, 0}, "spent": {0, 0, near}} {
			must(t, func() error {
				return b.s.W.Exec("UPDATE accounts SET available = ?, frozen = ?, spent = ? WHERE uid = 'u1'", set[0], set[1], set[2]).Error
			})
			if _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 6, "test"); !errors.Is(err, models.ErrBalanceOverflow) {
				t.Errorf("credit 6 on %s = max-5: %v, want BALANCE_OVERFLOW", col, err)
			}
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE accounts SET available = 0, frozen = 0, spent = ? WHERE uid = 'u1'", near).Error
		})
		a, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 5, "test")
		if err != nil || a.Spent != models.MaxBalance-5 || a.Available != 5 {
			t.Fatalf("credit 5 = %+v, %v; want available 5 with spent at max-5", a, err)
		}
	})
}
