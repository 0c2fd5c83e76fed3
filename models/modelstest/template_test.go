package modelstest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"unhold/models"
)

// A template is keyed by its migration files: any change to them names
// another template, so an old one is never taken for today's.
func TestHashFilesChangesWithTheFiles(t *testing.T) {
	t.Parallel()
	base := fstest.MapFS{
		"00001_init.sql": {Data: []byte("CREATE TABLE a (id INT);")},
		"00002_more.sql": {Data: []byte("CREATE TABLE b (id INT);")},
	}
	with := func(edit func(fstest.MapFS)) fstest.MapFS {
		m := fstest.MapFS{}
		for k, v := range base {
			m[k] = &fstest.MapFile{Data: append([]byte(nil), v.Data...)}
		}
		edit(m)
		return m
	}
	want, err := hashFiles(base)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := hashFiles(with(func(fstest.MapFS) {})); again != want {
		t.Fatalf("the same files hash %s, then %s", want, again)
	}
	for name, edit := range map[string]func(fstest.MapFS){
		"a body changed": func(m fstest.MapFS) { m["00002_more.sql"].Data = []byte("CREATE TABLE b (id BIGINT);") },
		"a file added":   func(m fstest.MapFS) { m["00003_next.sql"] = &fstest.MapFile{Data: []byte("SELECT 1;")} },
		"a file removed": func(m fstest.MapFS) { delete(m, "00002_more.sql") },
		"a file renamed": func(m fstest.MapFS) { m["00003_more.sql"] = m["00002_more.sql"]; delete(m, "00002_more.sql") },
		"bytes shifted from a body into the next name": func(m fstest.MapFS) {
			m["00001_init.sql"].Data = []byte("CREATE TABLE a (id INT)")
			m[";00002_more.sql"] = m["00002_more.sql"]
			delete(m, "00002_more.sql")
		},
	} {
		got, err := hashFiles(with(edit))
		if err != nil {
			t.Fatal(err)
		}
		if got == want {
			t.Errorf("%s: the hash stayed %s", name, got)
		}
	}
}

// A SQLite template is made under today's hash, whatever else lies in the
// directory: a stale template of other migrations and a build that died
// half way are never read.
func TestSQLiteTemplateIgnoresStaleAndHalfBuilt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, junk := range []string{"sqlite-0000000000000000.db", "sqlite-" + mustHash(t, models.SQLite) + ".db.123.building"} {
		if err := os.WriteFile(filepath.Join(dir, junk), []byte("not a database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := loadSQLiteTemplate(dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	wantMigrated(t, path, "a copy of the template")
	if _, err := os.Stat(filepath.Join(dir, "sqlite-"+mustHash(t, models.SQLite)+".db")); err != nil {
		t.Fatalf("the template is not kept under today's hash: %v", err)
	}
}

// On PostgreSQL a build that died half way left a database under the
// building name, and older migrations left their template: the next build
// drops the first, makes the template under today's name, and retires the
// second. Names of its own keep this test apart from the shared template.
func TestPGTemplateRebuildsAndRetires(t *testing.T) {
	t.Parallel()
	base := PGBase(t)
	prefix := "unhold_tmpltest_" + randomName() + "_"
	name := prefix + mustHash(t, models.Postgres)
	stale, halfBuilt := prefix+"0000000000000000", name+"_building"
	old, recent := prefix+"1111111111111111", prefix+"2222222222222222"
	for _, db := range []string{stale, halfBuilt, name, old, recent} {
		t.Cleanup(func() { dropPG(base, "DATABASE IF EXISTS "+db+" WITH (FORCE)") })
	}
	for _, db := range []string{stale, halfBuilt, old, recent} {
		if err := execPG(base, "CREATE DATABASE "+db); err != nil {
			t.Fatal(err)
		}
	}
	// Another checkout's template of other migrations, built an hour ago,
	// is in use; one built two days ago is not.
	for db, built := range map[string]time.Duration{old: 48 * time.Hour, recent: time.Hour} {
		if err := execPG(base, "COMMENT ON DATABASE "+db+" IS '"+builtComment(time.Now().Add(-built))+"'"); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ensurePGTemplate(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if got != name {
		t.Fatalf("template %s, want %s", got, name)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for db, want := range map[string]bool{name: true, stale: false, halfBuilt: false, old: false, recent: true} {
		var n int
		if err := admin.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if (n == 1) != want {
			t.Errorf("database %s exists: %v, want %v", db, n == 1, want)
		}
	}
	dsn, err := withDatabase(base, name)
	if err != nil {
		t.Fatal(err)
	}
	wantMigrated(t, dsn, "the template")
}

// wantMigrated fails t unless the database at dsn has every migration.
func wantMigrated(t *testing.T, dsn, what string) {
	t.Helper()
	s, err := models.Open(context.Background(), dsn, models.Options{Logger: QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ready(context.Background()); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Every test's database is its own, fully migrated, on both engines: a
// row written in one is not seen in another.
func TestMigratedDatabasesAreApart(t *testing.T) {
	EachEngine(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		a, b := Open(t, d, models.Options{}), Open(t, d, models.Options{})
		for _, s := range []*models.Store{a, b} {
			if err := s.Ready(ctx); err != nil {
				t.Fatalf("not migrated: %v", err)
			}
		}
		if _, err := a.SetStock(ctx, "sku-1", 5, 0, "test"); err != nil {
			t.Fatal(err)
		}
		if sku, err := b.GetSKU(ctx, "sku-1"); err == nil {
			t.Fatalf("another test's database shows %+v", sku)
		}
	})
}

func mustHash(t *testing.T, d models.Dialect) string {
	t.Helper()
	h, err := migrationsHash(d)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
