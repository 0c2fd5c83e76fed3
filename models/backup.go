package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	sqlite "github.com/libtnb/sqlite"
)

// ErrInUse is a restore whose target database a running process holds
// open: replacing the file under it would lose what it writes next.
var ErrInUse = errors.New("the database is open in a running process")

// backupBusyTimeout is how long a backup's read waits for SQLite's locks;
// in WAL mode a read waits only for a checkpoint's short moments.
const backupBusyTimeout = 30 * time.Second

// Backup writes a consistent copy of the store's SQLite database to the
// new file to (see BackupSQLite).
func (s *Store) Backup(ctx context.Context, to string) error {
	if s.Dialect != SQLite {
		return fmt.Errorf("backup: %w: only a SQLite database is backed up by unhold; back up PostgreSQL with pg_dump", ErrInvalid)
	}
	return BackupSQLite(ctx, s.path, to)
}

// BackupSQLite writes a consistent copy of the SQLite database at path to
// the file to, which must not exist. It runs VACUUM INTO on a connection
// of its own: one read transaction, so the copy is the database as of one
// moment, and in WAL mode it neither waits for nor blocks a server that
// writes meanwhile. The copy is made beside to and linked into place once
// complete, so to is whole or absent, and never replaces a file that
// appeared meanwhile.
func BackupSQLite(ctx context.Context, path, to string) error {
	if IsPostgres(path) {
		return fmt.Errorf("backup: %w: %s is a PostgreSQL database; back it up with pg_dump", ErrInvalid, redactDSN(path))
	}
	if IsPostgres(to) {
		return fmt.Errorf("backup: %w: the backup is written to a file, not to a PostgreSQL database", ErrInvalid)
	}
	if st, err := os.Stat(path); err != nil {
		return fmt.Errorf("backup: %w: the database %s cannot be read: %w", ErrInvalid, path, err)
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("backup: %w: the database %s is not a file", ErrInvalid, path)
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("backup: %w: %s already exists; a backup never overwrites a file", ErrInvalid, to)
	}
	tmp, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".partial-*")
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	db, err := sql.Open(sqlite.DriverName, SQLiteDSN(path, false, backupBusyTimeout))
	if err != nil {
		return fmt.Errorf("backup: open %s: %w", path, err)
	}
	defer db.Close()
	// Not the query_only read DSN: SQLite counts VACUUM INTO as a write.
	// It writes into an empty file; the temporary one is.
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		return fmt.Errorf("backup: copy %s: %w", path, err)
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// A link, unlike a rename, fails when to exists.
	if err := os.Link(tmpPath, to); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	return syncDir(filepath.Dir(to))
}

// RestoreSQLite replaces the SQLite database to with the backup from. The
// backup must be an unhold database that passes SQLite's integrity check
// with a schema this binary knows (an older one is migrated at the next
// start); from is not changed. A database to that a running process holds
// open is refused (ErrInUse). The backup is copied beside to and checked
// there, its next event ids set after those to gave (keepEventIDs), then
// renamed over to, whose old -wal and -shm files go first: to is the old
// database or the backup, never a mix.
//
// A process that opens to during the restore is not seen: stop the
// servers before restoring.
func RestoreSQLite(ctx context.Context, from, to string) error {
	if IsPostgres(to) {
		return fmt.Errorf("restore: %w: %s is a PostgreSQL database; restore it with pg_restore", ErrInvalid, redactDSN(to))
	}
	if IsPostgres(from) {
		return fmt.Errorf("restore: %w: the backup is a file, not a PostgreSQL database", ErrInvalid)
	}
	src, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("restore: %w: the backup %s cannot be read: %w", ErrInvalid, from, err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".restore-*")
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath)
	_, err = io.Copy(tmp, src)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("restore: copy %s: %w", from, err)
	}
	if err := checkBackup(ctx, tmpPath, from); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := notInUse(ctx, to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := keepEventIDs(ctx, to, tmpPath); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	for _, side := range []string{to + "-wal", to + "-shm"} {
		if err := os.Remove(side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: %w", err)
		}
	}
	if err := os.Rename(tmpPath, to); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return syncDir(filepath.Dir(to))
}

// keepEventIDs makes the restored copy at path number its next events
// after every event id the database it replaces, old, ever gave: pollers
// and webhook subscribers hold those ids (after=, Unhold-Event-Id), and a
// new event that took one again would be skipped or taken for one seen.
// A copy with no events table (a schema before them) is left as it is.
func keepEventIDs(ctx context.Context, old, path string) error {
	if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var given int64
	if err := onSQLite(ctx, old, func(db *sql.DB) error {
		return db.QueryRowContext(ctx, `SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)
			WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence')`).Scan(&given)
	}); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read the event ids of %s: %w", old, err)
	}
	if given == 0 {
		return nil
	}
	err := onSQLite(ctx, path, func(db *sql.DB) error {
		var tables int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'events'").Scan(&tables); err != nil || tables == 0 {
			return err
		}
		if _, err := db.ExecContext(ctx, "DELETE FROM sqlite_sequence WHERE name = 'events' AND seq < ?", given); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `INSERT INTO sqlite_sequence (name, seq) SELECT 'events', ?
			WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'events')`, given)
		return err
	})
	if err != nil {
		return fmt.Errorf("number the restored events after %d: %w", given, err)
	}
	return nil
}

// onSQLite runs f on a connection of its own to the SQLite file at path,
// in rollback journal mode (as the files a restore handles are).
func onSQLite(ctx context.Context, path string, f func(*sql.DB) error) error {
	db, err := sql.Open(sqlite.DriverName, "file:"+uriPath.Replace(path)+"?_pragma=busy_timeout(1000)&_pragma=journal_mode(DELETE)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	return f(db)
}

// checkBackup opens the copy at path of the backup named name and checks
// it is a whole unhold database of a schema this binary knows. Its
// journal is left in rollback mode: the copy has no -wal of its own.
func checkBackup(ctx context.Context, path, name string) error {
	db, err := sql.Open(sqlite.DriverName, "file:"+uriPath.Replace(path)+"?_pragma=busy_timeout(1000)&_pragma=journal_mode(DELETE)")
	if err != nil {
		return fmt.Errorf("open %s: %w", name, err)
	}
	defer db.Close()
	var result string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&result); err != nil {
		return fmt.Errorf("%w: %s is not a SQLite database: %w", ErrInvalid, name, err)
	}
	if result != "ok" {
		return fmt.Errorf("%w: %s fails SQLite's integrity check: %s", ErrInvalid, name, result)
	}
	var tables int
	err = db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, 'orders', 'release_tasks')", gooseTable).Scan(&tables)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if tables != 3 {
		return fmt.Errorf("%w: %s is a SQLite database but not unhold's (no orders, release_tasks and %s tables)", ErrInvalid, name, gooseTable)
	}
	var version int64
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version_id), 0) FROM "+gooseTable).Scan(&version); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	binary, err := SchemaVersion(SQLite)
	if err != nil {
		return err
	}
	if version > binary {
		return fmt.Errorf("%s: %w", name, schemaNewer(version, binary))
	}
	return nil
}

// notInUse tells whether a process holds the SQLite database at path
// open. Leaving WAL mode needs the only connection to the file: any other,
// idle or not, keeps a lock that makes it fail as busy. A missing file is
// not in use.
func notInUse(ctx context.Context, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := sql.Open(sqlite.DriverName, "file:"+uriPath.Replace(path)+"?_pragma=busy_timeout(200)")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	var mode string
	err = db.QueryRowContext(ctx, "PRAGMA journal_mode=DELETE").Scan(&mode)
	switch {
	case IsBusy(err):
		return fmt.Errorf("%w: %s is open in a running unhold (or another process): stop it before restoring", ErrInUse, path)
	case err != nil:
		return fmt.Errorf("%w: %s is not a SQLite database and is not overwritten: move it away first: %w", ErrInvalid, path, err)
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// syncDir makes a file's new name in dir durable.
func syncDir(dir string) error {
	return syncFile(dir)
}

// redactDSN is a postgres:// DSN without its password, for messages.
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "the postgres:// DSN"
	}
	return u.Redacted()
}
