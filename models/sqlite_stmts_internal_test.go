package models

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	sqlite "modernc.org/sqlite"
)

// openStmtDB opens a one-connection pool on a new SQLite file whose
// connection keeps at most max statements.
func openStmtDB(t *testing.T, max int) *sql.DB {
	t.Helper()
	c, err := sqlite.NewConnector(SQLiteDSN(filepath.Join(t.TempDir(), "s.db"), false, DefaultBusyTimeout))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(stmtConnector{Connector: c, max: max})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// kept lists the texts of the statements db's one connection keeps, most
// recently used first.
func kept(t *testing.T, db *sql.DB) []string {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []string
	err = conn.Raw(func(dc any) error {
		for e := dc.(*stmtConn).lru.Front(); e != nil; e = e.Next() {
			out = append(out, e.Value.(*cachedStmt).query)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func values(t *testing.T, q interface {
	Query(string, ...any) (*sql.Rows, error)
}, query string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A text run again runs the statement compiled the first time, with its
// new arguments, inside transactions as outside them.
func TestSQLiteStatementsCompiledOnce(t *testing.T) {
	t.Parallel()
	db := openStmtDB(t, 8)
	const ins = `INSERT INTO t (k, v) VALUES (?, ?)`
	const sel = `SELECT v FROM t WHERE k >= ? ORDER BY k`
	for k, v := range []string{"a", "b", "c"} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ins, k, v); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if got := values(t, db, sel, 1); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("read %v, want [b c]", got)
	}
	if got := values(t, db, sel, 0); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("read %v, want [a b c]", got)
	}
	if got := kept(t, db); len(got) != 3 || got[0] != sel || got[1] != ins {
		t.Fatalf("the connection keeps %q, want the select and the insert once each, then the CREATE TABLE", got)
	}
}

// A text run again while the rows of its kept statement are still open is
// compiled apart: resetting the kept one would end the rows being read.
func TestSQLiteStatementInUseNotReused(t *testing.T) {
	t.Parallel()
	db := openStmtDB(t, 8)
	for k, v := range []string{"a", "b", "c"} {
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, k, v); err != nil {
			t.Fatal(err)
		}
	}
	const sel = `SELECT v FROM t ORDER BY k`
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.Query(sel)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var v string
		if err := outer.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
		if inner := values(t, tx, sel); !slices.Equal(inner, []string{"a", "b", "c"}) {
			t.Fatalf("the nested read got %v", inner)
		}
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("the outer read got %v beside nested reads of the same text, want [a b c]", got)
	}
}

// Beyond max, the least recently used statement goes; one evicted while
// its rows are open is finalized when they close, and its rows read on.
func TestSQLiteStatementsEvicted(t *testing.T) {
	t.Parallel()
	db := openStmtDB(t, 2)
	for k, v := range []string{"a", "b"} {
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, k, v); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.Query(`SELECT v FROM t ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`SELECT COUNT(*) FROM t`, `SELECT MAX(k) FROM t`, `SELECT MIN(k) FROM t`} {
		var n int
		if err := tx.QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("rows of an evicted statement read %v, want [a b]", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := kept(t, db); !slices.Equal(got, []string{`SELECT MIN(k) FROM t`, `SELECT MAX(k) FROM t`}) {
		t.Fatalf("the connection keeps %q, want the two last used", got)
	}
}

// A kept statement follows the schema: SQLite compiles it again once a
// migration changed a table it reads.
func TestSQLiteStatementAfterSchemaChange(t *testing.T) {
	t.Parallel()
	db := openStmtDB(t, 8)
	if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (1, 'a')`); err != nil {
		t.Fatal(err)
	}
	cols := func() []string {
		rows, err := db.Query(`SELECT * FROM t`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		c, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := cols(); !slices.Equal(got, []string{"k", "v"}) {
		t.Fatalf("columns %v", got)
	}
	if _, err := db.Exec(`ALTER TABLE t ADD COLUMN w TEXT`); err != nil {
		t.Fatal(err)
	}
	if got := cols(); !slices.Equal(got, []string{"k", "v", "w"}) {
		t.Fatalf("after ALTER TABLE the kept SELECT * reads columns %v, want [k v w]", got)
	}
}

// A kept statement that failed (a unique key) or whose rows were left
// half read leaves nothing behind: the same text runs again from its
// start, and the connection commits the next transaction.
func TestSQLiteStatementAfterFailure(t *testing.T) {
	t.Parallel()
	db := openStmtDB(t, 8)
	const ins = `INSERT INTO t (k, v) VALUES (?, ?)`
	if _, err := db.Exec(ins, 1, "a"); err != nil {
		t.Fatal(err)
	}
	_, err := db.Exec(ins, 1, "again")
	if !IsUniqueViolation(err) {
		t.Fatalf("a second row of key 1: %v, want a unique violation", err)
	}
	if _, err := db.Exec(ins, 2, "b"); err != nil {
		t.Fatal(err)
	}
	const sel = `SELECT v FROM t ORDER BY k`
	rows, err := db.Query(sel)
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal("no first row")
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ins, 3, "c"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := values(t, db, sel); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("read %v, want [a b c]", got)
	}
}
