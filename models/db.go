package models

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	sqlite "github.com/libtnb/sqlite"
	"github.com/pressly/goose/v3"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Dialect is the database engine behind a Store.
type Dialect string

// Supported engines.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

//go:embed migrations
var migrations embed.FS

// FaultFunc is called at named points inside a transaction; a non-nil
// error (or a panic) there aborts the transaction as a real failure at that
// point would. It exists for failure drills and tests.
type FaultFunc func(point string, t *ReleaseTask) error

// Fault points.
const (
	FaultAfterLedger = "release.after_ledger"
	// FaultAfterCall is passed after a remote type's service answered a
	// task's call, before the answer is recorded, outside any transaction
	// and from the goroutine that made the call; an error fails the try as
	// if the process had died there.
	FaultAfterCall = "release.after_call"
	// FaultBetweenReads is passed, with a nil task, between the statements
	// of a snapshot read (a reconciliation, ReconcileKeys, the order chain):
	// whatever a test commits there must not show in that read.
	FaultBetweenReads = "read.between_statements"
)

// Options tune a Store. The zero value is the production default.
type Options struct {
	Now     func() time.Time
	Coupons CouponPolicy
	// Points is what a release or refund of points does to the account's
	// expiry: the coupons' two policies, extend (by ExtendDays) or keep.
	Points    CouponPolicy
	Faults    FaultFunc
	Logger    *slog.Logger
	ReadConns int
	// Declared are the counter types a shop declares in its resources file,
	// registered after the built-in ones.
	Declared []DeclaredType
	// Remote are the types whose holds other services keep, registered
	// after the declared counters.
	Remote []RemoteType
	// BusyTimeout is how long a write waits for its turn (writeGate),
	// and a statement for another connection's lock (SQLite's write lock,
	// PostgreSQL's lock_timeout), before it fails as busy; zero is
	// DefaultBusyTimeout.
	BusyTimeout time.Duration
	// ReconUncheckedAfter is how many reconciliation runs in a row must
	// skip a key before it gets an UNCHECKED ticket; zero is
	// DefaultUncheckedAfter.
	ReconUncheckedAfter int
	// ManualSLA is how long a MANUAL task or an unresolved ticket may
	// wait for a person before it is past the SLA; zero is
	// DefaultManualSLA.
	ManualSLA time.Duration
	// ApprovalThreshold is the smallest amount of a task of a type that
	// needs approval whose rerun or abandon is a request another person
	// approves (0: every one). ApprovalTypes are the declared types that
	// need it besides balance and points.
	ApprovalThreshold int64
	ApprovalTypes     []ResourceType
	// RetryDefault is the retry policy of any type and class that Retry
	// does not name; zero is DefaultRetryPolicy. Retry are the policies of
	// a type, a class, or both (RetryPolicy).
	RetryDefault RetryPolicy
	Retry        []RetryPolicy
	// CloseGroup is how many concurrent closes may share one write
	// transaction (closeGroups), and on SQLite how many placements and
	// payments (writeGroups); zero is DefaultCloseGroup, and 1 gives every
	// one a transaction of its own.
	CloseGroup int
	// Writers is how many write transactions of this Store run at once on
	// PostgreSQL (writeGate); zero is DefaultWriters. SQLite has one write
	// connection and takes no other number.
	Writers int
	// LookupHost resolves a webhook URL's host when a subscription is
	// made, to refuse one that names a link-local address; nil is the
	// system resolver.
	LookupHost func(ctx context.Context, host string) ([]string, error)
}

// DefaultBusyTimeout is how long a write waits for its turn, or a SQLite
// statement for the write lock, unless Options say otherwise. A request
// still waiting then is answered 503 BUSY (IsBusy).
const DefaultBusyTimeout = 10 * time.Second

// DefaultWriters is how many write transactions a Store runs at once on
// PostgreSQL unless Options say otherwise. Twenty, the pool's size, let a
// burst of closes crowd the server's CPU, where no one chooses the order,
// and the worker's statements waited behind every close's; what brought
// close→released down is the worker writing alone, in rounds of its own
// (writeGate), and the closes waiting meanwhile sharing commits. Eight
// let placements, which share no commit, run as fast as twenty did
// (docs/performance.md).
const DefaultWriters = 8

// pgReadConns is how many connections of a PostgreSQL pool are the
// reads' beside the write turns (Options.Writers).
const pgReadConns = 20

// Store is the domain's handle on the database. Writes (W) take turns
// (writeGate: by arrival, the worker every other round): on SQLite one at a
// time on its one write connection, on PostgreSQL Options.Writers at a
// time on the pool. Reads (R) never wait for a turn: on SQLite they have
// a small pool of their own, on PostgreSQL they share the pool with W.
type Store struct {
	W, R      *gorm.DB
	Dialect   Dialect
	path      string // the SQLite file; empty on PostgreSQL
	now       func() time.Time
	coupons   CouponPolicy
	points    CouponPolicy
	faults    FaultFunc
	log       *slog.Logger
	resources map[ResourceType]Resource
	types     []ResourceType         // the registry's types, in the order holds are taken
	labels    map[ResourceType]Label // the declared and remote types' names
	remotes   map[ResourceType]*remoteResource
	// uncheckedAfter is Options.ReconUncheckedAfter.
	uncheckedAfter int
	// manualSLA is Options.ManualSLA.
	manualSLA time.Duration
	// approval says which tasks' reruns and abandons need a second person.
	approval approvalPolicy
	retry    retryPolicies
	// lookupHost is Options.LookupHost.
	lookupHost func(ctx context.Context, host string) ([]string, error)
	// closes gathers concurrent closes into shared transactions; nil
	// when Options.CloseGroup is 1.
	closes *closeGroups
	// shared gathers concurrent placements and payments into shared
	// transactions on SQLite; nil on PostgreSQL and when
	// Options.CloseGroup is 1.
	shared *writeGroups
	// ckpt copies the WAL into the SQLite file beside the writes; nil on
	// PostgreSQL.
	ckpt *checkpointer
	// busy is how long a write waits for SQLite's write turn (the busy
	// timeout), each close of a group its own (runCloseGroup).
	busy time.Duration
}

// IsPostgres tells whether a DSN names a PostgreSQL database.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// SQLiteDSN turns a file path into the DSN unhold opens it with: WAL, the
// busy timeout, foreign keys, and immediate write transactions.
func SQLiteDSN(path string, readOnly bool, busyTimeout time.Duration) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// A batch of releases puts each in a savepoint, whose journal is a
	// temporary file unless temp storage is memory: a write per page.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
		q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walBackstop))
	}
	// Times are written as "2006-01-02 15:04:05.999999999-07:00", the
	// layout the queries compare as text (the driver's default is Go's
	// time.String).
	q.Set("_time_format", "sqlite")
	return "file:" + uriPath.Replace(path) + "?" + q.Encode()
}

// uriPath escapes what a file: URI would otherwise read as its query, its
// fragment or an escape, so a path holding "?", "#" or "%" opens that file.
var uriPath = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// Open connects to dsn (a SQLite file path or a postgres:// URL). It does
// not migrate; call Migrate.
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	s := &Store{now: opt.Now, coupons: opt.Coupons, points: opt.Points, faults: opt.Faults, log: opt.Logger,
		uncheckedAfter: opt.ReconUncheckedAfter, manualSLA: opt.ManualSLA,
		approval: newApprovalPolicy(opt.ApprovalThreshold, opt.ApprovalTypes), lookupHost: opt.LookupHost}
	if s.lookupHost == nil {
		s.lookupHost = net.DefaultResolver.LookupHost
	}
	if opt.CloseGroup < 0 {
		return nil, fmt.Errorf("%w: close group %d, want 1 or more (0: the default)", ErrInvalid, opt.CloseGroup)
	}
	if opt.Writers < 0 {
		return nil, fmt.Errorf("%w: writers %d, want 1 or more (0: the default)", ErrInvalid, opt.Writers)
	}
	writers := opt.Writers
	if writers == 0 {
		writers = DefaultWriters
	}
	if s.uncheckedAfter <= 0 {
		s.uncheckedAfter = DefaultUncheckedAfter
	}
	if s.manualSLA <= 0 {
		s.manualSLA = DefaultManualSLA
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.coupons.Expiry == "" {
		s.coupons = DefaultCouponPolicy
	}
	if s.points.Expiry == "" {
		s.points = DefaultCouponPolicy
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	busy := opt.BusyTimeout
	if busy <= 0 {
		busy = DefaultBusyTimeout
	}
	s.busy = busy
	// No PrepareStmt: gorm prepares anew in every transaction, where
	// nearly all writes run. SQLite's connections keep their compiled
	// statements themselves (openSQLite), and pgx already caches prepared
	// statements per connection (measured with PrepareStmt on a close:
	// +50% CPU on PostgreSQL).
	cfg := &gorm.Config{
		Logger:                 logger.Default.LogMode(logger.Silent),
		SkipDefaultTransaction: true,
		NowFunc:                s.Now,
	}
	// SQLite's background checkpoint, started once Open refuses nothing.
	var ckptDB *sql.DB
	var ckptWrote *atomic.Bool
	if IsPostgres(dsn) {
		s.Dialect = Postgres
		// A write waiting for a row lock holds its turn, and the writes
		// behind it wait too: a lock held by another instance's stuck
		// transaction would stop every write of this one. Like SQLite's
		// busy timeout, lock_timeout ends such a wait with 55P03 (IsBusy).
		lockTimeout := stdlib.OptionAfterConnect(func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", busy.Milliseconds()))
			return err
		})
		r, err := gorm.Open(postgres.New(postgres.Config{DSN: dsn, OptionOpenDB: []stdlib.OptionOpenDB{lockTimeout}}), cfg)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		sqlDB, err := r.DB()
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		// Reads keep pgReadConns connections beside the write turns', so
		// they never wait for a write to end. As many idle as open: a
		// connection closed after a burst and opened again costs the
		// server a process (tens of ms of CPU).
		sqlDB.SetMaxOpenConns(pgReadConns + writers)
		sqlDB.SetMaxIdleConns(pgReadConns + writers)
		w, err := gorm.Open(postgres.New(postgres.Config{Conn: newWriteGate(sqlDB, busy, writers)}), cfg)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		s.W, s.R = w, r
	} else {
		s.Dialect = SQLite
		path := strings.TrimPrefix(dsn, "file:")
		s.path = path
		wdb, err := openSQLite(SQLiteDSN(path, false, busy))
		if err != nil {
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		wdb.SetMaxOpenConns(1)
		gate := newWriteGate(wdb, busy, 1)
		w, err := gorm.Open(&sqlite.Dialector{Conn: gate}, cfg)
		if err != nil {
			_ = wdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		// WAL mode must exist before the read-only pool opens the file.
		if err := wdb.PingContext(ctx); err != nil {
			_ = wdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		rdb, err := openSQLite(SQLiteDSN(path, true, busy))
		if err != nil {
			_ = wdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		r, err := gorm.Open(&sqlite.Dialector{Conn: rdb}, cfg)
		if err != nil {
			_ = wdb.Close()
			_ = rdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		n := opt.ReadConns
		if n <= 0 {
			n = 4
		}
		// Keep them all open: database/sql keeps 2 idle by default, and
		// under a burst of API requests (each reads its token) the others
		// were closed and opened again, each open reading the schema anew.
		rdb.SetMaxOpenConns(n)
		rdb.SetMaxIdleConns(n)
		cdb, err := openSQLite(SQLiteDSN(path, false, busy))
		if err != nil {
			_ = wdb.Close()
			_ = rdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", path, err)
		}
		cdb.SetMaxOpenConns(1)
		s.W, s.R = w, r
		ckptDB, ckptWrote = cdb, &gate.wrote
	}
	if opt.CloseGroup != 1 {
		s.closes = newCloseGroups(opt.CloseGroup)
		if s.Dialect == SQLite {
			s.shared = newWriteGroups(opt.CloseGroup)
		}
	}
	if err := s.configure(opt); err != nil {
		// Nothing of a refused store stays open to hold the file.
		_ = s.Close()
		if ckptDB != nil {
			_ = ckptDB.Close()
		}
		return nil, err
	}
	if ckptDB != nil {
		s.ckpt = startCheckpointer(ckptDB, ckptWrote, s.log)
	}
	return s, nil
}

// configure sets up what Open does past its connections: the resource
// types and the retry policies.
func (s *Store) configure(opt Options) error {
	reg, types, err := newRegistry(s, opt.Declared, opt.Remote)
	if err != nil {
		return err
	}
	s.resources, s.types = reg, types
	if s.retry, err = newRetryPolicies(opt.RetryDefault, opt.Retry); err != nil {
		return err
	}
	for t := range s.retry {
		if _, ok := reg[t]; t != "" && !ok {
			return fmt.Errorf("%w: retry policy names type %s, which is not registered", ErrInvalid, t)
		}
	}
	return nil
}

// Now is the store's clock, in UTC and to the microsecond, as both engines keep it.
func (s *Store) Now() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Close closes both pools (one, on PostgreSQL).
func (s *Store) Close() error {
	w, err := s.W.DB()
	if err != nil {
		return err
	}
	if s.ckpt != nil {
		err = s.ckpt.stop()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	r, rerr := s.R.DB()
	if rerr != nil {
		return rerr
	}
	if r != w {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Migrations are the schema migrations of one engine, in the files goose
// reads them from. Tests hash them to tell a migrated template database
// made from these files from one made from older ones.
func Migrations(d Dialect) (fs.FS, error) {
	return fs.Sub(migrations, "migrations/"+string(d))
}

func (s *Store) migrationProvider() (*goose.Provider, error) {
	sub, err := Migrations(s.Dialect)
	if err != nil {
		return nil, err
	}
	sqlDB, err := s.W.DB()
	if err != nil {
		return nil, err
	}
	d := goose.DialectSQLite3
	if s.Dialect == Postgres {
		d = goose.DialectPostgres
	}
	return goose.NewProvider(d, sqlDB, sub)
}

// Migrate applies every pending schema migration and returns how many ran.
// It refuses a database whose schema is newer than this binary's
// (ErrSchemaNewer) and changes nothing then.
func (s *Store) Migrate(ctx context.Context) (int, error) {
	db, binary, err := s.schemaVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	if db > binary {
		return 0, fmt.Errorf("migrate: %w", schemaNewer(db, binary))
	}
	p, err := s.migrationProvider()
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	res, err := p.Up(ctx)
	if err != nil {
		return len(res), fmt.Errorf("migrate: %w", err)
	}
	return len(res), nil
}

// Ready reports whether the database answers and every migration is applied.
func (s *Store) Ready(ctx context.Context) error {
	p, err := s.migrationProvider()
	if err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	if pending {
		return fmt.Errorf("ready: migrations pending")
	}
	return nil
}

// forUpdate is the row-lock suffix for a read that a write will follow; on
// SQLite the immediate write transaction already excludes other writers.
func (s *Store) forUpdate() string {
	if s.Dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// readSnapshot runs fn in one read-only transaction, so all its statements
// see the database as of one moment and a release committed between two of
// them shows in neither. PostgreSQL needs REPEATABLE READ for that (READ
// COMMITTED takes a new snapshot per statement). SQLite in WAL mode keeps a
// read transaction's snapshot from its first read to its end; its driver
// refuses any TxOptions, and the read pool is query_only anyway.
func (s *Store) readSnapshot(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.Dialect == Postgres {
		return s.R.WithContext(ctx).Transaction(fn, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	}
	return s.R.WithContext(ctx).Transaction(fn)
}

// betweenReads is the FaultBetweenReads point; without faults it costs a
// nil check.
func (s *Store) betweenReads() error {
	if s.faults == nil {
		return nil
	}
	return s.faults(FaultBetweenReads, nil)
}

// write runs fn in one write transaction. The attempts fn writes are
// rolled up (see rollup) by the transaction's last statements, so a run of
// fn that rolls back, or is run again, adds nothing.
func (s *Store) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	return s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		r := newRollup()
		if err := fn(tx.WithContext(context.WithValue(tx.Statement.Context, rollupCtxKey{}, r))); err != nil {
			return err
		}
		return r.flush(tx)
	})
}

// errWriteQueueTimeout is a write that waited for its turn (writeGate)
// longer than the busy timeout. IsBusy reports it, so a request
// is answered 503 BUSY and a release retries, as when another process holds
// the write lock that long.
var errWriteQueueTimeout = errors.New("waited too long for a write turn")

// writeGate is the write pool as gorm sees it: it lets turns writers at a
// time use db, and hands a freed turn to the waiting writers in arrival
// order. On SQLite there is one turn, as there is one write connection;
// database/sql gives a freed connection to a random waiter, so under a
// burst of API writes the worker, one waiter among many, could wait many
// turns in a row; here each waits its turn in line. On PostgreSQL there
// are Options.Writers turns: the server runs as many transactions at once
// as it is sent, and twenty busy ones share its cores with the worker's
// in no order of ours. The release worker's transactions (ctx marked by
// ReleasePriority) wait in a line of their own, and turns go in rounds,
// each to one line, the worker's at least every other round: with 64
// requests queued, a worker behind all of them would get one turn in 65
// and fall behind the closes; this way it gets half the rounds while it
// has work, each of its batches takes every task due, and on PostgreSQL
// it never shares the server with requests' writes, which take the turns
// between its rounds (placements several at once). A waiter that gives up
// (its ctx ends, or the busy timeout passes) leaves its line.
type writeGate struct {
	db    *sql.DB
	wait  time.Duration
	turns int

	mu       sync.Mutex
	held     int             // turns writers hold, all of one line
	prioHeld bool            // the turns held are the priority line's
	lastPrio bool            // the last round of turns was the priority line's
	lines    [2][]chan error // waiting writers: [0] requests, [1] the worker

	wrote atomic.Bool // a turn ended since the checkpointer last looked
}

func newWriteGate(db *sql.DB, wait time.Duration, turns int) *writeGate {
	return &writeGate{db: db, wait: wait, turns: turns}
}

type releasePriorityKey struct{}

type gateDeadlineKey struct{}

// withGateDeadline ends ctx's wait for the write turn at d if that comes
// before the busy timeout: a close retried alone after waiting in its
// group waits what is left of its own time, not all of it again.
func withGateDeadline(ctx context.Context, d time.Time) context.Context {
	return context.WithValue(ctx, gateDeadlineKey{}, d)
}

// ReleasePriority marks ctx as the release worker's: its write transactions
// wait in the priority line (see writeGate).
func ReleasePriority(ctx context.Context) context.Context {
	return context.WithValue(ctx, releasePriorityKey{}, true)
}

func (g *writeGate) enter(ctx context.Context) error {
	prio := ctx.Value(releasePriorityKey{}) != nil
	line := 0
	if prio {
		line = 1
	}
	g.mu.Lock()
	if len(g.lines[0]) == 0 && len(g.lines[1]) == 0 && (g.held == 0 || g.prioHeld == prio && g.held < g.turns) {
		g.held++
		g.prioHeld, g.lastPrio = prio, prio
		g.mu.Unlock()
		return nil
	}
	turn := make(chan error, 1)
	g.lines[line] = append(g.lines[line], turn)
	g.mu.Unlock()
	wait := g.wait
	if d, ok := ctx.Value(gateDeadlineKey{}).(time.Time); ok {
		wait = min(wait, time.Until(d))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var gaveUp error
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		gaveUp = ctx.Err()
	case <-t.C:
		gaveUp = errWriteQueueTimeout
	}
	g.mu.Lock()
	for i, w := range g.lines[line] {
		if w == turn {
			g.lines[line] = append(g.lines[line][:i], g.lines[line][i+1:]...)
			// The other line may have waited for this one.
			g.dispatch()
			g.mu.Unlock()
			return gaveUp
		}
	}
	g.mu.Unlock()
	// The turn came as it gave up: pass it on.
	<-turn
	g.leave()
	return gaveUp
}

// leave gives a turn back and hands out what is free.
func (g *writeGate) leave() {
	g.wrote.Store(true)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held--
	g.dispatch()
}

// dispatch hands free turns to waiting writers, first come first served
// within each line; g.mu is held. Turns go in rounds, each round to one
// line: a round takes up to every turn, and while the other line waits no
// one joins it, so it ends once its writers leave. The next round is the
// priority line's unless the last one was and a request waits.
func (g *writeGate) dispatch() {
	if g.held == 0 {
		switch {
		case len(g.lines[1]) > 0 && (!g.lastPrio || len(g.lines[0]) == 0):
			g.prioHeld = true
		case len(g.lines[0]) > 0:
			g.prioHeld = false
		default:
			return
		}
		g.lastPrio = g.prioHeld
	}
	line, other := 0, 1
	if g.prioHeld {
		line, other = 1, 0
	}
	if g.held > 0 && len(g.lines[other]) > 0 {
		return
	}
	for g.held < g.turns && len(g.lines[line]) > 0 {
		next := g.lines[line][0]
		g.lines[line] = g.lines[line][1:]
		g.held++
		next <- nil
	}
}

// GetDBConn is how gorm's DB() finds the pool (to close it, to migrate).
func (g *writeGate) GetDBConn() (*sql.DB, error) { return g.db, nil }

func (g *writeGate) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	defer g.leave()
	return g.db.PrepareContext(ctx, query)
}

func (g *writeGate) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	defer g.leave()
	return g.db.ExecContext(ctx, query, args...)
}

// QueryContext gives the turn back once the query has started: the rows
// keep the connection until closed, and the next in line then waits for it
// alone, so the order still holds.
func (g *writeGate) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	defer g.leave()
	return g.db.QueryContext(ctx, query, args...)
}

// QueryRowContext cannot hand back an error of its own (a *sql.Row carries
// only the driver's), so without a turn it queries anyway: it then waits in
// database/sql's pool, or fails there on its ctx, as before the gate.
func (g *writeGate) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if err := g.enter(ctx); err != nil {
		return g.db.QueryRowContext(ctx, query, args...)
	}
	defer g.leave()
	return g.db.QueryRowContext(ctx, query, args...)
}

// BeginTx holds the turn for the whole transaction.
func (g *writeGate) BeginTx(ctx context.Context, opts *sql.TxOptions) (gorm.ConnPool, error) {
	if err := g.enter(ctx); err != nil {
		return nil, err
	}
	tx, err := g.db.BeginTx(ctx, opts)
	if err != nil {
		g.leave()
		return nil, err
	}
	return &gatedTx{Tx: tx, g: g}, nil
}

// gatedTx is a write transaction holding the turn; its end, by commit or
// rollback (gorm may roll back after a failed commit), gives it back once.
type gatedTx struct {
	*sql.Tx
	g    *writeGate
	once sync.Once
}

func (t *gatedTx) GetDBConn() (*sql.DB, error) { return t.g.db, nil }

func (t *gatedTx) Commit() error {
	defer t.once.Do(t.g.leave)
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.once.Do(t.g.leave)
	return t.Tx.Rollback()
}
