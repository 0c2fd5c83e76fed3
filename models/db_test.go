package models_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"unhold/models"
)

// The SQLite DSN options are applied: a DSN option the driver ignores would
// fail silently, so read the pragmas back on both pools.
func TestSQLitePragmas(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite, models.Options{})
	for _, c := range []struct {
		pool, pragma, want string
	}{
		{"W", "journal_mode", "wal"}, {"W", "foreign_keys", "1"}, {"W", "busy_timeout", "10000"}, {"W", "query_only", "0"},
		{"R", "journal_mode", "wal"}, {"R", "foreign_keys", "1"}, {"R", "busy_timeout", "10000"}, {"R", "query_only", "1"},
	} {
		db := b.s.W
		if c.pool == "R" {
			db = b.s.R
		}
		var got string
		must(t, func() error { return db.Raw("PRAGMA " + c.pragma).Row().Scan(&got) })
		if got != c.want {
			t.Errorf("%s PRAGMA %s = %s, want %s", c.pool, c.pragma, got, c.want)
		}
	}
	if err := b.s.R.Exec("DELETE FROM orders").Error; err == nil {
		t.Error("the read pool accepted a write")
	}
}

// Two processes on one SQLite file (two stores, each with its own writer)
// run read-then-write transactions at once: with immediate transactions and
// a busy timeout none fails with SQLITE_BUSY, and no update is lost.
func TestSQLiteConcurrentWritersFromTwoStores(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.db")
	ctx := context.Background()
	stores := twoProcesses(t, path)
	const per = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*per)
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range per {
				no := "o-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
				req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
				if _, _, err := s.PlaceOrder(ctx, req); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("place under contention: %v", err)
	}
	sku, err := stores[1].GetSKU(ctx, "sku-1")
	if err != nil {
		t.Fatal(err)
	}
	if sku.Locked != 2*per || sku.Available != 1000-2*per {
		t.Fatalf("sku = %+v, want %d locked", sku, 2*per)
	}
}

// Write transactions begin IMMEDIATE: two processes (two stores) running
// read-then-write transactions on one file at once neither fail with
// SQLITE_BUSY nor lose an update. With DEFERRED transactions (a DSN option
// the driver ignored once) the second writer's upgrade fails at once.
func TestSQLiteWriteTransactionsAreImmediate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "immediate.db")
	ctx := context.Background()
	stores := twoProcesses(t, path)
	const per = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*per)
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				errs <- s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					var n int64
					if err := tx.Raw("SELECT available FROM inventory WHERE sku_id = 'sku-1'").Scan(&n).Error; err != nil {
						return err
					}
					time.Sleep(time.Millisecond) // let the other process commit in between, if it can
					return tx.Exec("UPDATE inventory SET available = ? WHERE sku_id = 'sku-1'", n-1).Error
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("read-then-write transaction: %v", err)
		}
	}
	sku, err := stores[0].GetSKU(ctx, "sku-1")
	if err != nil {
		t.Fatal(err)
	}
	if sku.Available != 1000-2*per {
		t.Fatalf("available = %d, want %d: an update was lost", sku.Available, 1000-2*per)
	}
}

// twoProcesses opens two stores on one SQLite file, as two processes would,
// with a migrated schema and sku-1 holding 1000.
func twoProcesses(t *testing.T, path string) []*models.Store {
	t.Helper()
	ctx := context.Background()
	var stores []*models.Store
	for range 2 {
		s, err := models.Open(ctx, path, models.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	if _, err := stores[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[0].SetStock(ctx, "sku-1", 1000, 0, "test"); err != nil {
		t.Fatal(err)
	}
	return stores
}

// A SQLite path holding characters a file: URI reads otherwise — "?"
// (its query), "#" (its fragment), "%" (an escape) — opens that very file
// with both pools: without escaping, the path was cut at "#" (a database
// beside the one asked for) or refused.
func TestSQLitePathWithURICharacters(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shop#01?x=1%y")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "unhold.db")
	s, err := models.Open(context.Background(), path, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetStock(context.Background(), "sku-1", 3, 0, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSKU(context.Background(), "sku-1"); err != nil {
		t.Fatalf("the read pool does not see the write pool's database: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %s: %v", path, err)
	}
}

// A burst of concurrent reads keeps the read pool's connections open:
// closing one after use and opening it again cost a SQLite read
// connection the schema's parse, and a PostgreSQL one a server process.
func TestPoolsKeepTheirConnections(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for range 10 {
					var n int64
					if err := b.s.R.Raw("SELECT COUNT(*) FROM orders").Scan(&n).Error; err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		db, err := b.s.R.DB()
		if err != nil {
			t.Fatal(err)
		}
		if st := db.Stats(); st.MaxIdleClosed != 0 {
			t.Fatalf("%d connections closed for want of idle room after a burst of reads, want 0 (%+v)", st.MaxIdleClosed, st)
		}
	})
}
