// Package modelstest opens real test databases for unhold's tests: a SQLite
// file in the test's temp dir, and, when UNHOLD_TEST_PG names a PostgreSQL
// server, a database of the test's own there, both copies of a migrated
// template (template.go). Under CI a PostgreSQL that cannot be reached
// fails the test instead of skipping it.
package modelstest

import (
	"bytes"
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
	"gorm.io/gorm"
	"unhold/models"
)

// Engines are the database engines every domain test runs on.
var Engines = []models.Dialect{models.SQLite, models.Postgres}

// EachEngine runs fn as a parallel subtest on each of Engines. The caller
// says t.Parallel() itself, so the pair overlaps the package's other tests.
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

// HoldWriteTurn begins a write transaction of s that holds a write turn
// until the returned function ends it (and fails t if it failed).
func HoldWriteTurn(t testing.TB, s *models.Store) (end func()) {
	t.Helper()
	held, hold, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.W.Transaction(func(*gorm.DB) error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	return func() {
		t.Helper()
		close(hold)
		if err := <-done; err != nil {
			t.Fatalf("the transaction holding a write turn: %v", err)
		}
	}
}

// LogBuffer is a log sink that several goroutines may write to, and a test
// read from.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
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
// database is removed when the test ends. Tests of the migrations start
// here; every other test starts from MigratedDSN.
func DSN(t testing.TB, d models.Dialect) string {
	t.Helper()
	if d == models.SQLite {
		return filepath.Join(t.TempDir(), "unhold.db")
	}
	base := PGBase(t)
	db, err := adminPool(base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	schema := "t_" + randomName()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("postgres at UNHOLD_TEST_PG does not answer: %v", err)
	}
	t.Logf("postgres: empty schema %s in UNHOLD_TEST_PG's database", schema)
	t.Cleanup(func() { dropPG(base, "SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse UNHOLD_TEST_PG: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// MigratedDSN returns a DSN for a fresh database of the given engine with
// every migration applied, removed when the test ends. It is a copy of a
// template migrated once (see template.go), not migrated anew: on SQLite a
// copy of the template file in the test's temp dir, on PostgreSQL a
// database created from the template database.
func MigratedDSN(t testing.TB, d models.Dialect) string {
	t.Helper()
	if d == models.SQLite {
		tmpl, err := sqliteTemplate()
		if err != nil {
			t.Fatalf("sqlite template: %v", err)
		}
		path := filepath.Join(t.TempDir(), "unhold.db")
		if err := os.WriteFile(path, tmpl, 0o600); err != nil {
			t.Fatalf("copy the sqlite template: %v", err)
		}
		t.Logf("sqlite: %s", path)
		return path
	}
	base := PGBase(t)
	tmpl, err := pgTemplate(base)
	if err != nil {
		t.Fatalf("postgres template: %v", err)
	}
	name := "t_" + randomName()
	if err := execPG(base, "CREATE DATABASE "+name+" TEMPLATE "+tmpl); err != nil {
		t.Fatalf("postgres at UNHOLD_TEST_PG: create a database from template %s: %v", tmpl, err)
	}
	t.Logf("postgres: database %s (from template %s)", name, tmpl)
	t.Cleanup(func() { dropPG(base, "DATABASE "+name+" WITH (FORCE)") })
	dsn, err := withDatabase(base, name)
	if err != nil {
		t.Fatalf("parse UNHOLD_TEST_PG: %v", err)
	}
	return dsn
}

// PGBase is UNHOLD_TEST_PG; without it the test is skipped, or fails
// under CI, where the PostgreSQL suite must run.
func PGBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv("UNHOLD_TEST_PG")
	if base == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("UNHOLD_TEST_PG is not set under CI: the PostgreSQL suite must run")
		}
		t.Skip("UNHOLD_TEST_PG not set: skipping the PostgreSQL run")
	}
	return base
}

// randomName is 12 hex digits, a name no other test of any process picks.
func randomName() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// admin holds, per server, one small pool for the statements that make and
// drop the tests' databases, open for the life of the test process: a new
// PostgreSQL connection costs its server a process (about 30 ms of CPU on
// the project's machine), and each test used to open two.
var admin struct {
	mu    sync.Mutex
	pools map[string]*sql.DB
}

func adminPool(base string) (*sql.DB, error) {
	admin.mu.Lock()
	defer admin.mu.Unlock()
	if db, ok := admin.pools[base]; ok {
		return db, nil
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		return nil, err
	}
	db.SetMaxIdleConns(2)
	if admin.pools == nil {
		admin.pools = map[string]*sql.DB{}
	}
	admin.pools[base] = db
	return db, nil
}

// execPG runs one statement on base's database outside any transaction
// (CREATE and DROP DATABASE cannot run in one) and outside the test's
// context, which a cleanup runs after.
func execPG(base, stmt string) error {
	db, err := adminPool(base)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// dropPG drops what a test made; a failure leaves a name nobody reuses.
func dropPG(base, what string) { _ = execPG(base, "DROP "+what) }

// withDatabase is base naming another database on the same server.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// Open returns a migrated store on a fresh database, closed at test end.
func Open(t testing.TB, d models.Dialect, opt models.Options) *models.Store {
	t.Helper()
	s, err := models.Open(context.Background(), MigratedDSN(t, d), opt)
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
