// Package modelstest opens real test databases for unhold's tests: a SQLite
// file in the test's temp dir, and, when UNHOLD_TEST_PG names a PostgreSQL
// server, a fresh schema there. Under CI a PostgreSQL that cannot be reached
// fails the test instead of skipping it.
package modelstest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for schema set-up
	"unhold/models"
)

// Engines are the database engines every domain test runs on.
var Engines = []models.Dialect{models.SQLite, models.Postgres}

// EachEngine runs fn as a parallel subtest on each of Engines.
func EachEngine(t *testing.T, fn func(t *testing.T, d models.Dialect)) {
	for _, d := range Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

// QuietLog is a logger that keeps nothing.
func QuietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// PlaceAndClose places order no holding qty of sku-1 for u1 and closes it
// at the user's request, so one release task is due.
func PlaceAndClose(t testing.TB, s *models.Store, no string, qty int64) {
	t.Helper()
	ctx := context.Background()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: qty}}}
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
}

// Clock is a settable clock for tests.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// DSN returns a DSN for a fresh, empty database of the given engine; the
// database is removed when the test ends.
func DSN(t testing.TB, d models.Dialect) string {
	t.Helper()
	if d == models.SQLite {
		return filepath.Join(t.TempDir(), "unhold.db")
	}
	base := os.Getenv("UNHOLD_TEST_PG")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("UNHOLD_TEST_PG is not set under CI: the PostgreSQL suite must run")
		}
		t.Skip("UNHOLD_TEST_PG not set: skipping the PostgreSQL run")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "t_" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("postgres at UNHOLD_TEST_PG does not answer: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse UNHOLD_TEST_PG: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open returns a migrated store on a fresh database, closed at test end.
func Open(t testing.TB, d models.Dialect, opt models.Options) *models.Store {
	t.Helper()
	s, err := models.Open(context.Background(), DSN(t, d), opt)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", d, err)
	}
	return s
}
