package models_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sqlite "github.com/libtnb/sqlite"

	"unhold/models"
	"unhold/models/modelstest"
)

// A backup never overwrites: a target that exists is refused and kept as
// it was; a PostgreSQL database is not backed up by unhold.
func TestBackupRefuses(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite, models.Options{})
	dir := t.TempDir()
	existing := filepath.Join(dir, "taken.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := b.s.Backup(b.ctx, existing)
	if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("backup to an existing file = %v, want ErrInvalid saying it exists", err)
	}
	if got, _ := os.ReadFile(existing); string(got) != "keep me" {
		t.Errorf("the existing file now holds %q", got)
	}
	err = models.BackupSQLite(b.ctx, "postgres://u:secret@db:5432/unhold", filepath.Join(dir, "pg.db"))
	if !errors.Is(err, models.ErrInvalid) || !strings.Contains(err.Error(), "pg_dump") || strings.Contains(err.Error(), "secret") {
		t.Errorf("backup of a PostgreSQL DSN = %v, want ErrInvalid naming pg_dump, without the password", err)
	}
	err = models.BackupSQLite(b.ctx, filepath.Join(dir, "missing.db"), filepath.Join(dir, "b.db"))
	if !errors.Is(err, models.ErrInvalid) {
		t.Errorf("backup of a missing database = %v, want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("backing up a missing database created it: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the backup directory holds %d entries after refusals, want only taken.db", len(entries))
	}
}

// A restore checks its file before it replaces anything: not a database,
// a SQLite database that is not unhold's, and an unhold database of a
// newer schema are each refused, and the database in place is untouched.
func TestRestoreRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	target := modelstest.MigratedDSN(t, models.SQLite)
	before, err := os.ReadFile(target)
	if err != nil {
		t.Fatal(err)
	}

	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	execSQLite(t, other, "CREATE TABLE things (id INTEGER PRIMARY KEY)")
	newer := filepath.Join(dir, "newer.db")
	if err := os.WriteFile(newer, before, 0o600); err != nil {
		t.Fatal(err)
	}
	binary, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	execSQLite(t, newer, "INSERT INTO goose_db_version (version_id, is_applied) VALUES ("+schemaText(binary+1)+", 1)")

	for _, c := range []struct {
		name, from, want string
		is               error
	}{
		{"not a database", notDB, "is not a SQLite database", models.ErrInvalid},
		{"not unhold's", other, "not unhold's", models.ErrInvalid},
		{"newer schema", newer, "this binary knows up to", models.ErrSchemaNewer},
		{"missing", filepath.Join(dir, "missing.db"), "cannot be read", models.ErrInvalid},
		{"postgres", "postgres://db/unhold", "not a PostgreSQL database", models.ErrInvalid},
	} {
		err := models.RestoreSQLite(ctx, c.from, target)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: restore = %v, want %v saying %q", c.name, err, c.is, c.want)
		}
	}
	if after, err := os.ReadFile(target); err != nil || string(after) != string(before) {
		t.Errorf("a refused restore changed the database in place (%v)", err)
	}
	err = models.RestoreSQLite(ctx, newer, "postgres://u:secret@db/unhold")
	if !errors.Is(err, models.ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Errorf("restore to a PostgreSQL DSN = %v, want ErrInvalid without the password", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(target))
	for _, e := range entries {
		if strings.Contains(e.Name(), ".restore-") {
			t.Errorf("a refused restore left %s behind", e.Name())
		}
	}
}

// A database a store holds open is not replaced; once the store is
// closed, the backup takes its place and opens with its rows.
func TestRestoreRefusesAnOpenDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := modelstest.MigratedDSN(t, models.SQLite)
	s, err := models.Open(ctx, path, models.Options{Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	must(t, func() error { _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); return err })
	modelstest.PlaceAndClose(t, s, "o-1", 2)
	backup := filepath.Join(t.TempDir(), "backup.db")
	must(t, func() error { return s.Backup(ctx, backup) })
	modelstest.PlaceAndClose(t, s, "o-2", 1)

	err = models.RestoreSQLite(ctx, backup, path)
	if !errors.Is(err, models.ErrInUse) || !strings.Contains(err.Error(), "stop it") {
		t.Fatalf("restore over an open database = %v, want ErrInUse", err)
	}
	must(t, s.Close)
	must(t, func() error { return models.RestoreSQLite(ctx, backup, path) })
	r, err := models.Open(ctx, path, models.Options{Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.OrderChain(ctx, "o-1"); err != nil {
		t.Errorf("the restored database lacks o-1, which the backup held: %v", err)
	}
	if _, err := r.OrderChain(ctx, "o-2"); !errors.Is(err, models.ErrNotFound) {
		t.Errorf("the restored database has o-2, placed after the backup: %v", err)
	}
	// o-2's order.closed had id 2 before the restore: a poller or a
	// subscriber holds it, so a new event never takes it again.
	must(t, func() error { return r.EmitEvent(ctx, models.EventOrderClosed, "o-3") })
	evs, err := r.EventsAfter(ctx, 0, 10, nil)
	if err != nil || len(evs) != 2 || evs[0].OrderNo != "o-1" || evs[1].OrderNo != "o-3" || evs[1].ID <= 2 {
		t.Fatalf("events after the restore: %+v, %v; want o-1's and o-3's, o-3's after id 2", evs, err)
	}
}

// execSQLite runs one statement on a SQLite file of its own connection.
func execSQLite(t *testing.T, path, stmt string) {
	t.Helper()
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}
