package modelstest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"unhold/models"
)

// Migrating a fresh database costs about a second on PostgreSQL and, under
// -race, several on SQLite; copying a migrated one costs milliseconds. So
// each test process migrates once per engine into a template and every
// test copies it. A template is named by the hash of the migration files it
// was made from: a changed, added or removed migration names a new
// template, and an old one is never reused. A template appears under its
// name only once it is whole (a rename after the last migration), so a
// build that dies half way leaves nothing that a later run would take.

// hashFiles is a digest of the migration files of one engine, their
// names and contents: the key of the templates made from them.
func hashFiles(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		// Lengths first, so no two sets of files hash alike by shifting
		// bytes from one name or body into the next.
		fmt.Fprintf(h, "%d:%s:%d:", len(path), path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func migrationsHash(d models.Dialect) (string, error) {
	fsys, err := models.Migrations(d)
	if err != nil {
		return "", err
	}
	return hashFiles(fsys)
}

// templateDir is where SQLite templates are kept between test processes:
// one file per set of migrations, about half a megabyte each.
func templateDir() string { return filepath.Join(os.TempDir(), "unhold-test-templates") }

var sqliteTmpl struct {
	once sync.Once
	b    []byte
	err  error
}

// sqliteTemplate is the bytes of a migrated SQLite file, read once per
// process from templateDir, made there first if no process has.
func sqliteTemplate() ([]byte, error) {
	sqliteTmpl.once.Do(func() {
		sqliteTmpl.b, sqliteTmpl.err = loadSQLiteTemplate(templateDir())
	})
	return sqliteTmpl.b, sqliteTmpl.err
}

func loadSQLiteTemplate(dir string) ([]byte, error) {
	hash, err := migrationsHash(models.SQLite)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "sqlite-"+hash+".db")
	if b, err := os.ReadFile(path); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := buildSQLiteTemplate(dir, path); err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// buildSQLiteTemplate migrates a file of its own beside path, then renames
// it to path. Two processes building at once each rename a whole file.
func buildSQLiteTemplate(dir, path string) error {
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*.building")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_ = f.Close()
	defer func() {
		for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
			_ = os.Remove(p)
		}
	}()
	if err := migrateDB(context.Background(), tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// migrateDB applies every migration to the database at dsn and closes it.
// On SQLite the WAL goes into the main file first, so the file alone is
// the database.
func migrateDB(ctx context.Context, dsn string) error {
	s, err := models.Open(ctx, dsn, models.Options{Logger: QuietLog()})
	if err != nil {
		return err
	}
	_, err = s.Migrate(ctx)
	if err == nil && s.Dialect == models.SQLite {
		err = s.W.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	return err
}

var pgTmpl struct {
	mu    sync.Mutex
	names map[string]string // UNHOLD_TEST_PG → its template database
}

// pgTemplate names the template database on base's server, made first if
// no process has. Only a success is remembered, so a test after a failed
// build tries again.
func pgTemplate(base string) (string, error) {
	pgTmpl.mu.Lock()
	defer pgTmpl.mu.Unlock()
	if name, ok := pgTmpl.names[base]; ok {
		return name, nil
	}
	name, err := ensurePGTemplate(base, pgTemplatePrefix)
	if err != nil {
		return "", err
	}
	if pgTmpl.names == nil {
		pgTmpl.names = map[string]string{}
	}
	pgTmpl.names[base] = name
	return name, nil
}

// pgTemplateLock is the advisory lock key under which a process looks for,
// builds and retires templates, so two test processes never build the same
// one at once.
const pgTemplateLock = 0x756e686f6c64 // "unhold"

// pgTemplatePrefix begins the name of every template database.
const pgTemplatePrefix = "unhold_tmpl_"

// ensurePGTemplate names the template of today's migrations among those
// whose names begin with prefix, built first if there is none.
func ensurePGTemplate(base, prefix string) (string, error) {
	hash, err := migrationsHash(models.Postgres)
	if err != nil {
		return "", err
	}
	name := prefix + hash
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", pgTemplateLock); err != nil {
		return "", err
	}
	// Closing the connection would release it too; unlocking says so.
	defer func() { _, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", pgTemplateLock) }()
	var one int
	err = conn.QueryRowContext(ctx, "SELECT 1 FROM pg_database WHERE datname = $1", name).Scan(&one)
	if err == nil {
		return name, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	if err := buildPGTemplate(ctx, conn, base, name); err != nil {
		return "", err
	}
	retireOldPGTemplates(ctx, conn, prefix, name)
	return name, nil
}

// buildPGTemplate migrates a database of its own, then renames it to name.
// A build that died half way left its database under the building name:
// it is dropped first, which the advisory lock makes safe.
func buildPGTemplate(ctx context.Context, conn *sql.Conn, base, name string) error {
	building := name + "_building"
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	dsn, err := withDatabase(base, building)
	if err != nil {
		return err
	}
	if err := migrateDB(ctx, dsn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMENT ON DATABASE "+building+" IS '"+builtComment(time.Now())+"'"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "ALTER DATABASE "+building+" RENAME TO "+name)
	return err
}

// builtComment is a template's comment: when it was built, in a form
// whose text order is time order.
func builtComment(t time.Time) string { return "built " + t.UTC().Format("2006-01-02T15:04:05Z") }

// templateKept is how long a template of other migrations is kept: another
// checkout of another commit may be running its tests from it now.
const templateKept = 24 * time.Hour

// retireOldPGTemplates drops the templates of other migration sets built
// over templateKept ago (or with no date), so they do not pile up as
// migrations are added while two checkouts of different migrations can
// test side by side. One still being copied by another run's CREATE
// DATABASE refuses the drop, which is ignored: the next build tries again.
func retireOldPGTemplates(ctx context.Context, conn *sql.Conn, prefix, keep string) {
	rows, err := conn.QueryContext(ctx, `SELECT d.datname FROM pg_database d
		LEFT JOIN pg_shdescription c ON c.objoid = d.oid AND c.classoid = 'pg_database'::regclass
		WHERE starts_with(d.datname, $1) AND d.datname <> $2 AND COALESCE(c.description, '') < $3`,
		prefix, keep, builtComment(time.Now().Add(-templateKept)))
	if err != nil {
		return
	}
	var old []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			old = append(old, n)
		}
	}
	_ = rows.Close()
	for _, n := range old {
		_, _ = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+n)
	}
}
