package models_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"unhold/models"
)

// An old binary that meets a database migrated by a newer one refuses it,
// migrating or not, and changes nothing: the goose table keeps the newer
// version, and no migration of its own is recorded.
func TestSchemaNewerThanBinaryRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		binary, err := models.SchemaVersion(b.s.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		newer := binary + 2
		must(t, func() error {
			return b.s.W.Exec("INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)", newer, true).Error
		})
		_, err = b.s.Migrate(b.ctx)
		if !errors.Is(err, models.ErrSchemaNewer) {
			t.Fatalf("Migrate on a newer schema = %v, want ErrSchemaNewer", err)
		}
		want := []string{"the database's schema is " + schemaText(newer), "this binary knows up to " + schemaText(binary), "run the newer binary or restore"}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
		if err := b.s.CheckSchema(b.ctx); !errors.Is(err, models.ErrSchemaNewer) {
			t.Errorf("CheckSchema on a newer schema = %v, want ErrSchemaNewer", err)
		}
		if got, err := b.s.DBSchemaVersion(b.ctx); err != nil || got != newer {
			t.Errorf("DBSchemaVersion = %d, %v; want %d", got, err, newer)
		}
	})
}

// Without migrating at start, a database one migration behind is refused
// with the command that fixes it, and the migrated one is accepted.
func TestCheckSchemaOlderRefusedCurrentAccepted(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		if err := b.s.CheckSchema(b.ctx); err != nil {
			t.Fatalf("CheckSchema on the migrated database: %v", err)
		}
		binary, err := models.SchemaVersion(b.s.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		must(t, func() error { return b.s.W.Exec("DELETE FROM goose_db_version WHERE version_id = ?", binary).Error })
		err = b.s.CheckSchema(b.ctx)
		if !errors.Is(err, models.ErrSchemaOlder) || !strings.Contains(err.Error(), "run unhold migrate") {
			t.Fatalf("CheckSchema one migration behind = %v, want ErrSchemaOlder saying to run unhold migrate", err)
		}
	})
}

// The binary's schema version is its highest migration: the same on both
// engines, and what a migrated database records.
func TestSchemaVersionIsTheHighestMigration(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		binary, err := models.SchemaVersion(b.s.Dialect)
		if err != nil {
			t.Fatal(err)
		}
		other := models.SQLite
		if b.s.Dialect == models.SQLite {
			other = models.Postgres
		}
		if o, err := models.SchemaVersion(other); err != nil || o != binary {
			t.Errorf("SchemaVersion(%s) = %d, %v; %s's is %d", other, o, err, b.s.Dialect, binary)
		}
		if got, err := b.s.DBSchemaVersion(b.ctx); err != nil || got != binary || binary < 37 {
			t.Errorf("DBSchemaVersion of a migrated database = %d, %v; the binary's is %d", got, err, binary)
		}
	})
}

// schemaText is a schema version as SQL and messages write it.
func schemaText(n int64) string { return strconv.FormatInt(n, 10) }
