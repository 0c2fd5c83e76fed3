package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// counter is a resource held by moving amounts between three columns:
// available → held (LOCK), held → spent (DEDUCT), held → available (RELEASE).
// Stock, balance, points and activity quota are counters.
type counter struct {
	s      *Store
	typ    ResourceType
	table  string
	ledger string
	key    string // the key column that a biz_key names
	// fixed narrows rows to one value of a second key column (accounts' asset).
	fixedCol, fixedVal string
	avail, held, spent string
	short, missing     *Error // what a LOCK that cannot be met returns
	delaySeconds       string // column with a per-key release delay, or ""
	// maxTotal, when set, bounds available + held + spent; an adjust that
	// would pass it returns overflow.
	maxTotal int64
	overflow *Error
	// page is the dashboard's page of a key, or nil when there is none.
	page func(key string) string
	// maxQty bounds what one order may hold of one key.
	maxQty int64
	// side is the second key every row carries, as people see it (an
	// account's asset), or "".
	side string
	// userKeyed: a key is a user's id, and an order holds only its own.
	userKeyed bool
	// expires: each row has an expiry (points): the table's expire_at, NULL
	// for never, and the ledger's expire_before and expire_after. A
	// placement's LOCK of a row past its expiry is refused with expired (a
	// late payment's is not); a RELEASE or REFUND
	// moves the expiry as the Store's points policy says (returnedExpiry).
	expires bool
	expired *Error
}

// counterRow is a key's row: its three columns and, on a counter that
// expires, its expiry (nil: never, and always on other counters).
type counterRow struct {
	Avail, Held, Spent int64
	Expire             *time.Time
}

func (c *counter) Type() ResourceType { return c.typ }

func (c *counter) Kind() ResourceKind { return KindCounter }

func (c *counter) MaxQty() int64 { return c.maxQty }

func (c *counter) UserKeyed() bool { return c.userKeyed }

func (c *counter) Side() string { return c.side }

func (c *counter) Page(key string) string {
	if c.page == nil {
		return ""
	}
	return c.page(key)
}

func (c *counter) Ledger() LedgerSpec {
	l := LedgerSpec{Table: c.ledger, Key: "f." + c.key, Qty: "f.qty",
		Counter: &CounterSpec{Table: c.table, Avail: c.avail, Held: c.held, Spent: c.spent}}
	if c.fixedCol != "" {
		l.Where = fmt.Sprintf(" AND f.%s = '%s'", c.fixedCol, c.fixedVal)
	}
	return l
}

func (c *counter) where() string {
	if c.fixedCol != "" {
		return c.key + " = ? AND " + c.fixedCol + " = ?"
	}
	return c.key + " = ?"
}

func (c *counter) keyArgs(key string) []any {
	if c.fixedCol != "" {
		return []any{key, c.fixedVal}
	}
	return []any{key}
}

// fixedCond is the condition on the counter's fixed column (an account's
// asset, a declared type's name) to follow a condition on its keys, or "".
func (c *counter) fixedCond() string {
	if c.fixedCol != "" {
		return " AND " + c.fixedCol + " = ?"
	}
	return ""
}

// keysArgs are the arguments of "key IN ?" followed by fixedCond.
func (c *counter) keysArgs(keys []string) []any {
	if c.fixedCol != "" {
		return []any{keys, c.fixedVal}
	}
	return []any{keys}
}

// lock reads one row for update; found is false when there is no row.
func (c *counter) lock(tx *gorm.DB, key string) (counterRow, bool, error) {
	return c.row(tx, key, c.s.forUpdate())
}

// read reads one row without locking it, for a reader that changes nothing.
func (c *counter) read(db *gorm.DB, key string) (counterRow, bool, error) {
	return c.row(db, key, "")
}

func (c *counter) row(db *gorm.DB, key, lock string) (counterRow, bool, error) {
	var rows []counterRow
	q := fmt.Sprintf("SELECT %s AS avail, %s AS held, %s AS spent%s FROM %s WHERE %s%s",
		c.avail, c.held, c.spent, c.expireCol(), c.table, c.where(), lock)
	if err := db.Raw(q, c.keyArgs(key)...).Scan(&rows).Error; err != nil {
		return counterRow{}, false, err
	}
	if len(rows) == 0 {
		return counterRow{}, false, nil
	}
	return rows[0], true, nil
}

// expireCol is the expiry in a select list of the table, or "".
func (c *counter) expireCol() string {
	if c.expires {
		return ", expire_at AS expire"
	}
	return ""
}

// returnedExpiry is a row's expiry after an op: a RELEASE or a REFUND gives
// the amount back, and under the extend policy the expiry moves to at
// least now + ExtendDays; under keep, and for every other op, it stays. An
// expiry of nil (never) stays nil.
func (c *counter) returnedExpiry(kind FlowType, expire *time.Time, now time.Time) *time.Time {
	floor, extend := c.extendFloor(now)
	if !extend || expire == nil || (kind != FlowRelease && kind != FlowRefund) {
		return expire
	}
	if expire.Before(floor) {
		return &floor
	}
	return expire
}

// extendFloor is, on a counter that expires under the extend policy, the
// least expiry that what comes back at now gets.
func (c *counter) extendFloor(now time.Time) (time.Time, bool) {
	if !c.expires {
		return time.Time{}, false
	}
	return c.s.points.extendFloor(now)
}

func (c *counter) Apply(tx *gorm.DB, op Op) error {
	before, found, err := c.lock(tx, op.Key)
	if err != nil {
		return err
	}
	if !found {
		if op.Kind == FlowLock {
			return fmt.Errorf("%w: %s %s", c.missing, c.typ, op.Key)
		}
		return fmt.Errorf("%w: %s %s", errMissing, c.typ, op.Key)
	}
	after := before
	// The column the conditional update guards, and the amounts it moves.
	var guard string
	var dAvail, dHeld, dSpent int64
	switch op.Kind {
	case FlowLock:
		guard, dAvail, dHeld = c.avail, -op.Qty, op.Qty
	case FlowDeduct:
		guard, dHeld, dSpent = c.held, -op.Qty, op.Qty
	case FlowRelease:
		guard, dHeld, dAvail = c.held, -op.Qty, op.Qty
	case FlowRefund, FlowRestock:
		guard, dSpent, dAvail = c.spent, -op.Qty, op.Qty
	case FlowWriteOff:
		// Nothing moves: what is written off stays counted as spent. The
		// guard still checks that much was spent.
		guard = c.spent
	default:
		return fmt.Errorf("%s: unsupported op %s", c.typ, op.Kind)
	}
	after.Avail += dAvail
	after.Held += dHeld
	after.Spent += dSpent
	after.Expire = c.returnedExpiry(op.Kind, before.Expire, op.Now)
	if err := c.insertFlow(tx, op, before, after); err != nil {
		return err
	}
	// A placement may not freeze expired points; a late payment (epoch 1)
	// takes back what it gave back, expired or not, as it does a coupon:
	// the customer paid with them.
	if op.Kind == FlowLock && op.Epoch == 0 && before.Expire != nil && !before.Expire.After(op.Now) {
		return fmt.Errorf("%w: %s %s expired at %s, order %s asks %d", c.expired, c.typ, op.Key,
			before.Expire.Format(time.RFC3339), op.OrderNo, op.Qty)
	}
	if op.Kind == FlowLock && before.Avail < op.Qty {
		return fmt.Errorf("%w: %s %s has %d, order %s asks %d", c.short, c.typ, op.Key, before.Avail, op.OrderNo, op.Qty)
	}
	if err := c.move(tx, op.Key, guard, op.Qty, dAvail, dHeld, dSpent, after.Expire, op.Now); err != nil {
		return fmt.Errorf("%w: %s %s, order %s, %s %d", err, c.typ, op.Key, op.OrderNo, op.Kind, op.Qty)
	}
	return nil
}

// move is the conditional update: it changes the row only while guard >= need.
// On a counter that expires it sets the expiry too, to expire (the caller
// holds the row's lock and worked it out from what it read).
func (c *counter) move(tx *gorm.DB, key, guard string, need, dAvail, dHeld, dSpent int64, expire *time.Time, now time.Time) error {
	set, args := "", []any{dAvail, dHeld, dSpent}
	if c.expires {
		set, args = ", expire_at = ?", append(args, expire)
	}
	q := fmt.Sprintf("UPDATE %s SET %s = %s + ?, %s = %s + ?, %s = %s + ?%s, updated_at = ? WHERE %s AND %s >= ?",
		c.table, c.avail, c.avail, c.held, c.held, c.spent, c.spent, set, c.where(), guard)
	args = append(append(args, now), c.keyArgs(key)...)
	res := tx.Exec(q, append(args, need)...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return errShort
	}
	return nil
}

func (c *counter) insertFlow(tx *gorm.DB, op Op, before, after counterRow) error {
	n, err := c.insertFlows(tx, []flowRow{{op: op, before: before, after: after}})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: %s %s %s of order %s", errDuplicate, c.typ, op.Key, op.Kind, op.OrderNo)
	}
	return nil
}

// adjust adds delta to available (set-up and corrections) with an ADJUST
// row; the row is created first when missing. It leaves the expiry as it is.
func (c *counter) adjust(tx *gorm.DB, key string, delta int64, actor string, now time.Time) (counterRow, error) {
	return c.adjustUntil(tx, key, delta, nil, actor, now)
}

// adjustUntil is adjust that, on a counter that expires, with a non-nil
// until, moves the expiry to until if that is later (rolling): a row that
// never expires keeps never, unless it holds nothing available or frozen,
// when until simply becomes its expiry.
func (c *counter) adjustUntil(tx *gorm.DB, key string, delta int64, until *time.Time, actor string, now time.Time) (counterRow, error) {
	before, found, err := c.lock(tx, key)
	if err != nil {
		return counterRow{}, err
	}
	if !found {
		return counterRow{}, fmt.Errorf("%w: %s %s", ErrResourceNotFound, c.typ, key)
	}
	if delta == 0 {
		return before, nil
	}
	if before.Avail+delta < 0 {
		return counterRow{}, fmt.Errorf("%w: %s %s has %d available, cannot take %d", ErrStockBelowHeld, c.typ, key, before.Avail, -delta)
	}
	if total := before.Avail + before.Held + before.Spent; c.maxTotal > 0 && total+delta > c.maxTotal {
		return counterRow{}, fmt.Errorf("%w: %s %s holds %d in all; %d more would pass %d", c.overflow, c.typ, key, total, delta, c.maxTotal)
	}
	after := before
	after.Avail += delta
	if c.expires && until != nil {
		if before.Expire == nil && before.Avail+before.Held == 0 || before.Expire != nil && before.Expire.Before(*until) {
			after.Expire = until
		}
	}
	op := Op{Kind: FlowAdjust, Key: key, Qty: delta, Trigger: TriggerSetup, Actor: actor, Now: now}
	if err := c.insertFlow(tx, op, before, after); err != nil {
		return counterRow{}, err
	}
	guard, need := c.avail, int64(0)
	if delta < 0 {
		need = -delta
	}
	if err := c.move(tx, key, guard, need, delta, 0, 0, after.Expire, now); err != nil {
		return counterRow{}, err
	}
	return after, nil
}

func (c *counter) ReleaseDelay(tx *gorm.DB, key string) (time.Duration, error) {
	if c.delaySeconds == "" {
		return 0, nil
	}
	var secs []int64
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s", c.delaySeconds, c.table, c.where())
	if err := tx.Raw(q, c.keyArgs(key)...).Scan(&secs).Error; err != nil {
		return 0, err
	}
	if len(secs) == 0 {
		return 0, nil
	}
	return time.Duration(secs[0]) * time.Second, nil
}

// releaseDelays is ReleaseDelay of many keys in one statement; a key with
// no row has no delay.
func (c *counter) releaseDelays(tx *gorm.DB, keys []string) (map[string]time.Duration, error) {
	out := make(map[string]time.Duration, len(keys))
	if c.delaySeconds == "" {
		return out, nil
	}
	var rows []struct {
		BizKey string
		Secs   int64
	}
	q := fmt.Sprintf("SELECT %s AS biz_key, %s AS secs FROM %s WHERE %s IN ?%s", c.key, c.delaySeconds, c.table, c.key, c.fixedCond())
	args := []any{keys}
	if c.fixedCol != "" {
		args = append(args, c.fixedVal)
	}
	if err := tx.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.BizKey] = time.Duration(r.Secs) * time.Second
	}
	return out, nil
}

func (c *counter) Flows(db *gorm.DB, orderNo string) ([]Flow, error) {
	var flows []Flow
	q := fmt.Sprintf(`SELECT id, order_no, %s AS biz_key, type, epoch, trigger_type AS trigger, qty,
		avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at
		FROM %s WHERE order_no = ?`, c.key, c.ledger)
	args := []any{orderNo}
	if c.fixedCol != "" {
		q += " AND " + c.fixedCol + " = ?"
		args = append(args, c.fixedVal)
	}
	if err := db.Raw(q+" ORDER BY id", args...).Scan(&flows).Error; err != nil {
		return nil, fmt.Errorf("%s flows of %s: %w", c.typ, orderNo, err)
	}
	for i := range flows {
		flows[i].ResourceType = c.typ
	}
	return flows, nil
}

func (c *counter) Reconcile(ctx context.Context, db *gorm.DB) ([]Diff, error) {
	fixed, args := "", []any{}
	if c.fixedCol != "" {
		fixed = " AND r." + c.fixedCol + " = ?"
	}
	type row struct {
		Key                        string
		Held, Expected, Total, Sum int64
		Avail, Spent               int64
		Cur                        counterRow `gorm:"-"`
	}
	var rows []row
	// expected held = PENDING orders' outstanding holds + unfinished release tasks;
	// conservation = available + held + spent against the ledger's ADJUST sum.
	q := fmt.Sprintf(`SELECT r.%[1]s AS key, r.%[2]s AS held, r.%[3]s AS avail, r.%[4]s AS spent,
		COALESCE(p.q, 0) + COALESCE(t.q, 0) AS expected,
		r.%[3]s + r.%[2]s + r.%[4]s AS total, COALESCE(a.q, 0) AS sum
		FROM %[5]s r%[9]s
		LEFT JOIN (SELECT %[1]s AS k, SUM(qty) AS q FROM %[6]s WHERE type = 'ADJUST'%[7]s GROUP BY %[1]s) a ON a.k = r.%[1]s
		WHERE 1 = 1%[8]s`,
		c.key, c.held, c.avail, c.spent, c.table, c.ledger, strings.ReplaceAll(fixed, "r.", ""), fixed, expectedJoins("r."+c.key))
	args = append(args, c.typ, c.typ)
	if c.fixedCol != "" {
		args = append(args, c.fixedVal, c.fixedVal)
	}
	if err := db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", c.typ, err)
	}
	for i := range rows {
		rows[i].Cur = counterRow{Avail: rows[i].Avail, Held: rows[i].Held, Spent: rows[i].Spent}
	}
	if err := c.s.betweenReads(); err != nil {
		return nil, err
	}
	sums, after, err := c.ledgerSums(ctx, db)
	if err != nil {
		return nil, err
	}
	var diffs []Diff
	for _, r := range rows {
		if got, want := r.Cur, sums[r.Key]; got != want {
			for _, f := range []struct {
				check     string
				want, got int64
			}{{CheckLedgerAvail, want.Avail, got.Avail}, {CheckLedgerHeld, want.Held, got.Held}, {CheckLedgerSpent, want.Spent, got.Spent}} {
				if f.want != f.got {
					diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: f.check, Expected: f.want, Actual: f.got})
				}
			}
		}
		if r.Held != r.Expected {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckHeld, Expected: r.Expected, Actual: r.Held})
		}
		if r.Total != r.Sum {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckConservation, Expected: r.Sum, Actual: r.Total})
		}
	}
	lines, err := c.lineDiffs(ctx, db, sums, after)
	if err != nil {
		return nil, err
	}
	return append(diffs, lines...), nil
}

// ledgerSums is what each key's columns must be if every change wrote its
// ledger row: the sum of the ledger, row type by row type. after is, by
// key, what its order lines refunded, restocked and wrote off, for the
// line checks (recon_lines.go).
func (c *counter) ledgerSums(ctx context.Context, db *gorm.DB) (sums map[string]counterRow, after map[string]int64, err error) {
	where, args := "", []any{}
	if c.fixedCol != "" {
		where, args = " WHERE "+c.fixedCol+" = ?", []any{c.fixedVal}
	}
	type row struct {
		Key                       string
		Avail, Held, Spent, After int64
	}
	var rows []row
	q := fmt.Sprintf(`SELECT %s AS key, %s,
		SUM(CASE WHEN type IN ('REFUND','RESTOCK','WRITE_OFF') THEN qty ELSE 0 END) AS after
		FROM %s%s GROUP BY %s`, c.key, ledgerSumCols, c.ledger, where, c.key)
	if err := db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("reconcile %s ledger: %w", c.typ, err)
	}
	sums, after = make(map[string]counterRow, len(rows)), make(map[string]int64, len(rows))
	for _, r := range rows {
		sums[r.Key] = counterRow{Avail: r.Avail, Held: r.Held, Spent: r.Spent}
		after[r.Key] = r.After
	}
	return sums, after, nil
}

// ledgerSumCols are a ledger's sums as the three columns they move, avail,
// held and spent, each row type by what it moves: ledgerSums and keySum
// read the ledger by these rules alone.
const ledgerSumCols = `COALESCE(SUM(CASE type WHEN 'ADJUST' THEN qty WHEN 'LOCK' THEN -qty WHEN 'RELEASE' THEN qty
			WHEN 'REFUND' THEN qty WHEN 'RESTOCK' THEN qty ELSE 0 END), 0) AS avail,
		COALESCE(SUM(CASE type WHEN 'LOCK' THEN qty WHEN 'RELEASE' THEN -qty WHEN 'DEDUCT' THEN -qty ELSE 0 END), 0) AS held,
		COALESCE(SUM(CASE type WHEN 'DEDUCT' THEN qty WHEN 'REFUND' THEN -qty WHEN 'RESTOCK' THEN -qty ELSE 0 END), 0) AS spent`

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// maxFlowRows bounds the rows of one ledger insert (14 values each, 16 on
// a counter that expires).
const maxFlowRows = 500

// releaseMany gives back what ops hold (RELEASEs of this counter, sorted by
// key) in a few statements instead of three per op: one locking read of
// their keys in key order, the ledger rows in one insert, and one guarded
// update that moves each key by the sum of its ops. Each op still gets its
// own ledger row under the same unique key, its before and after those of
// the ops applied one by one in turn; and a key whose held amount covers
// the sum covers each op in turn, so the one guard is every op's guard.
// What these statements cannot settle, a key missing, too little held, a
// ledger row already there, returns errTryEach: the transaction must roll
// back, and each op is tried alone, where its own error says which and why.
//
// On a counter that expires, each op's row states the expiry before and
// after it, chained as one by one: the first of a key's ops states what
// the policy made of the key's expiry, the next ones start from that (and,
// all taken at the batch's one now, leave it as it is); the update sets
// what the last one states. The ops of one batch share its now (ops[0].Now).
func (c *counter) releaseMany(tx *gorm.DB, ops []Op) error {
	keys := make([]string, 0, len(ops))
	for i, op := range ops {
		if i == 0 || op.Key != ops[i-1].Key {
			keys = append(keys, op.Key)
		}
	}
	cur, err := c.lockMany(tx, keys)
	if err != nil {
		return err
	}
	if len(cur) != len(keys) {
		return errTryEach
	}
	sums := make(map[string]int64, len(keys))
	flows := make([]flowRow, len(ops))
	for i, op := range ops {
		before := cur[op.Key]
		if op.Kind != FlowRelease || op.Qty <= 0 || before.Held < op.Qty {
			return errTryEach
		}
		after := before
		after.Held -= op.Qty
		after.Avail += op.Qty
		after.Expire = c.returnedExpiry(op.Kind, before.Expire, ops[0].Now)
		cur[op.Key] = after
		sums[op.Key] += op.Qty
		flows[i] = flowRow{op: op, before: before, after: after}
	}
	for rest := flows; len(rest) > 0; {
		n := min(len(rest), maxFlowRows)
		inserted, err := c.insertFlows(tx, rest[:n])
		if err != nil {
			return err
		}
		if inserted != int64(n) {
			return errTryEach
		}
		rest = rest[n:]
	}
	moved, err := c.releaseSums(tx, keys, sums, ops[0].Now)
	if err != nil {
		return err
	}
	if moved != int64(len(keys)) {
		return errTryEach
	}
	return nil
}

// lockMany reads the rows of keys for update, in key order, and returns
// those it found by key. The order is bytes', as Go compares the keys when
// placement locks them one by one (resourceLess), whatever the database's
// collation: in another order, a batch and a placement could each hold a
// key the other waits for.
func (c *counter) lockMany(tx *gorm.DB, keys []string) (map[string]counterRow, error) {
	var rows []struct {
		Key                string
		Avail, Held, Spent int64
		Expire             *time.Time
	}
	where, args := c.key+" IN ?", []any{keys}
	if c.fixedCol != "" {
		where, args = where+" AND "+c.fixedCol+" = ?", append(args, c.fixedVal)
	}
	q := fmt.Sprintf("SELECT %s AS key, %s AS avail, %s AS held, %s AS spent%s FROM %s WHERE %s ORDER BY %s%s%s",
		c.key, c.avail, c.held, c.spent, c.expireCol(), c.table, where, c.key, c.s.byteOrder(), c.s.forUpdate())
	if err := tx.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make(map[string]counterRow, len(rows))
	for _, r := range rows {
		out[r.Key] = counterRow{Avail: r.Avail, Held: r.Held, Spent: r.Spent, Expire: r.Expire}
	}
	return out, nil
}

// flowRow is one ledger row to write: the op and the row's columns around it.
type flowRow struct {
	op            Op
	before, after counterRow
}

// insertFlows writes ledger rows in one insert that skips a row whose key
// the ledger already has, and returns how many it wrote.
func (c *counter) insertFlows(tx *gorm.DB, rows []flowRow) (int64, error) {
	keyCols := c.key
	if c.fixedCol != "" {
		keyCols += ", " + c.fixedCol
	}
	expCols := ""
	if c.expires {
		expCols = ", expire_before, expire_after"
	}
	var q strings.Builder
	fmt.Fprintf(&q, `INSERT INTO %s (order_no, %s, type, epoch, trigger_type, qty,
		avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at%s) VALUES `,
		c.ledger, keyCols, expCols)
	var args []any
	for i, r := range rows {
		vals := []any{nilIfEmpty(r.op.OrderNo), r.op.Key}
		if c.fixedCol != "" {
			vals = append(vals, c.fixedVal)
		}
		vals = append(vals, r.op.Kind, r.op.Epoch, r.op.Trigger, r.op.Qty, r.before.Avail, r.after.Avail,
			r.before.Held, r.after.Held, r.before.Spent, r.after.Spent, r.op.Actor, r.op.Now)
		if c.expires {
			vals = append(vals, r.before.Expire, r.after.Expire)
		}
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?" + strings.Repeat(", ?", len(vals)-1) + ")")
		args = append(args, vals...)
	}
	fmt.Fprintf(&q, " ON CONFLICT (order_no, %s, type, epoch) DO NOTHING", keyCols)
	res := tx.Exec(q.String(), args...)
	return res.RowsAffected, res.Error
}

// releaseSums moves each key's sum from held to available in one guarded
// update, and returns how many keys it moved: a key whose held amount is
// below its sum is left as it was. On a counter that expires, under the
// extend policy, the update moves each expiry as returnedExpiry does:
// never stays never, an earlier one becomes now + ExtendDays.
func (c *counter) releaseSums(tx *gorm.DB, keys []string, sums map[string]int64, now time.Time) (int64, error) {
	var q strings.Builder
	q.WriteString("WITH v(k, d) AS (VALUES ")
	args := make([]any, 0, 2*len(keys)+2)
	for i, k := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, CAST(? AS BIGINT))")
		args = append(args, k, sums[k])
	}
	expire := ""
	if floor, extend := c.extendFloor(now); extend {
		expire = ", expire_at = CASE WHEN expire_at IS NULL THEN NULL WHEN expire_at < ? THEN ? ELSE expire_at END"
		args = append(args, floor, floor)
	}
	fmt.Fprintf(&q, ") UPDATE %[1]s SET %[2]s = %[2]s - v.d, %[3]s = %[3]s + v.d%[5]s, updated_at = ? FROM v WHERE %[1]s.%[4]s = v.k AND %[1]s.%[2]s >= v.d",
		c.table, c.held, c.avail, c.key, expire)
	args = append(args, now)
	if c.fixedCol != "" {
		fmt.Fprintf(&q, " AND %s.%s = ?", c.table, c.fixedCol)
		args = append(args, c.fixedVal)
	}
	res := tx.Exec(q.String(), args...)
	return res.RowsAffected, res.Error
}
