package models

import (
	"container/list"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"

	sqlite "modernc.org/sqlite"
)

// stmtCacheSize bounds the compiled statements each SQLite connection
// keeps. The hot paths run a few dozen texts; an IN list or a multi-row
// insert makes one text per length (up to closeChunk), so a burst of
// closes in groups of 1 to 64 needs a few hundred at most.
const stmtCacheSize = 512

// openSQLite opens a pool of SQLite connections to dsn, each of which keeps
// the statements it compiled (stmtConn). The driver compiles a statement's
// SQL on every execution unless it is prepared, and gorm prepares only
// outside transactions; compiling was a fifth of a close's CPU and the
// largest part of the one write connection's time that was not the
// statements' own work.
func openSQLite(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(stmtConnector{Connector: c, max: stmtCacheSize}), nil
}

type stmtConnector struct {
	driver.Connector
	max int // statements kept per connection
}

func (c stmtConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newStmtConn(conn, c.max), nil
}

// sqliteConn is what the driver's connection does that stmtConn passes on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// stmtConn is one SQLite connection with its compiled statements: an
// Exec or Query runs the statement compiled for its text the last time,
// reset, instead of compiling the text again. A statement still reading
// rows is not reused: a second use of its text meanwhile is compiled once,
// as before. The least recently used statement beyond max is finalized.
//
// database/sql uses a connection from one goroutine at a time, so
// stmtConn needs no lock.
type stmtConn struct {
	sqliteConn
	max   int
	byKey map[string]*list.Element
	lru   list.List // of *cachedStmt, most recently used first
}

type cachedStmt struct {
	query string
	stmt  driver.Stmt
	busy  bool // rows of it are open
	gone  bool // evicted while busy: finalize when its rows close
}

func newStmtConn(c driver.Conn, max int) driver.Conn {
	sc, ok := c.(sqliteConn)
	if !ok {
		return c
	}
	return &stmtConn{sqliteConn: sc, max: max, byKey: map[string]*list.Element{}}
}

// take returns the compiled statement for query, compiling and keeping it
// if there is none, or nil if the one there is reading rows.
func (c *stmtConn) take(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.byKey[query]; ok {
		cs := e.Value.(*cachedStmt)
		if cs.busy {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		return cs, nil
	}
	st, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	cs := &cachedStmt{query: query, stmt: st}
	c.byKey[query] = c.lru.PushFront(cs)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		ocs := old.Value.(*cachedStmt)
		delete(c.byKey, ocs.query)
		if ocs.busy {
			ocs.gone = true
			continue
		}
		_ = ocs.stmt.Close()
	}
	return cs, nil
}

func (c *stmtConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	return cs.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *stmtConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	if cs == nil {
		return c.sqliteConn.QueryContext(ctx, query, args)
	}
	rows, err := cs.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	cs.busy = true
	return &stmtRows{sqliteRows: rows.(sqliteRows), cs: cs}, nil
}

// Close finalizes the kept statements, then closes the connection.
func (c *stmtConn) Close() error {
	var errs []error
	for e := c.lru.Front(); e != nil; e = e.Next() {
		if cs := e.Value.(*cachedStmt); !cs.busy {
			errs = append(errs, cs.stmt.Close())
		}
	}
	c.lru.Init()
	clear(c.byKey)
	errs = append(errs, c.sqliteConn.Close())
	return errors.Join(errs...)
}

// sqliteRows is what the driver's rows do that stmtRows passes on: gorm
// reads the column types to scan into maps.
type sqliteRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// stmtRows are the rows of a kept statement, which is free for reuse once
// they close (the driver resets it then).
type stmtRows struct {
	sqliteRows
	cs *cachedStmt
}

func (r *stmtRows) Close() error {
	err := r.sqliteRows.Close()
	if r.cs != nil {
		r.cs.busy = false
		if r.cs.gone {
			err = errors.Join(err, r.cs.stmt.Close())
		}
		r.cs = nil
	}
	return err
}
