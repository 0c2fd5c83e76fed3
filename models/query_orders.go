package models

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// OrderQuery is one search of the orders list. Each filter is backed by an
// index: order_no (unique), (user_id, created_at), (status, created_at, id)
// and (created_at); the page is a keyset after After in (created_at, id).
// A release state is read through the orders' own tasks and holds (see
// releaseStateSQL); MANUAL, RETRY and RELEASING start from the tasks of
// that status (index (status, created_at, id)), which are few. A held
// key is looked up by (resource_type, biz_key) in order_holds, a held
// type per order by the unique (order_no, resource_type, biz_key), and
// closed orders in the partial index of their closed_at (00031), or from
// where the close range ends in created_at.
type OrderQuery struct {
	OrderNo string
	UserID  string
	Status  OrderStatus
	Release ReleaseState
	// From and To bound created_at to [From, To); a zero time leaves that side open.
	From, To time.Time
	// HeldType keeps the orders that held something of a registered
	// resource type, and HeldKey with it those that held that key of it:
	// a key means nothing without its type.
	HeldType ResourceType
	HeldKey  string
	// ClosedFrom and ClosedTo bound closed_at to [ClosedFrom, ClosedTo);
	// a zero time leaves that side open, and either keeps closed orders only.
	ClosedFrom, ClosedTo time.Time
	// Oldest lists the oldest first; the newest come first otherwise.
	Oldest bool
	After  Cursor
	Limit  int
	// Count asks for Total: how many orders the filters select, counted
	// up to Count (OrderCountCap on the pages); 0 counts nothing.
	Count int
}

// OrderCountCap is the most orders a page counts: past it the page says
// "more than OrderCountCap" instead of reading every order.
const OrderCountCap = 10_000

// OrderPage is one page of orders and where the next one starts; Next is
// the zero Cursor on the last page. Release is each order's release state,
// and Holds what it held, by order number. Total is how many orders the
// filters select when the query asked for it, the query's Count and Over
// when there are more.
type OrderPage struct {
	Orders  []Order
	Release map[string]ReleaseState
	Holds   map[string][]HeldKey
	Next    Cursor
	Total   int64
	Over    bool
}

// DefaultPageSize is how many rows a dashboard list shows at once.
const DefaultPageSize = 50

// orderFilters applies q's filters, the cursor aside, to a read of orders.
func orderFilters(db *gorm.DB, q OrderQuery) *gorm.DB {
	if q.OrderNo != "" {
		db = db.Where("orders.order_no = ?", q.OrderNo)
	}
	if q.UserID != "" {
		db = db.Where("orders.user_id = ?", q.UserID)
	}
	if q.Status != "" {
		db = db.Where("orders.status = ?", q.Status)
	}
	if !q.From.IsZero() {
		db = db.Where("orders.created_at >= ?", q.From.UTC())
	}
	if !q.To.IsZero() {
		db = db.Where("orders.created_at < ?", q.To.UTC())
	}
	if q.Release != "" {
		if st := q.Release.taskStatus(); st != "" {
			db = db.Where("orders.order_no IN (SELECT order_no FROM release_tasks WHERE status = ?)", st)
		}
		db = db.Where(releaseStateSQL("orders.order_no")+" = ?", q.Release)
	}
	switch {
	case q.HeldKey != "":
		// The orders that held one key are few next to all: read them
		// from the key's holds.
		db = db.Where("orders.order_no IN (SELECT hk.order_no FROM order_holds hk WHERE hk.resource_type = ? AND hk.biz_key = ?)",
			q.HeldType, q.HeldKey)
	case q.HeldType != "":
		// Most orders may hold a type (every order holds stock): ask each
		// listed order for its own holds of it instead.
		db = db.Where("EXISTS (SELECT 1 FROM order_holds ht WHERE ht.order_no = orders.order_no AND ht.resource_type = ?)", q.HeldType)
	}
	if !q.ClosedFrom.IsZero() {
		db = db.Where("orders.closed_at >= ?", q.ClosedFrom.UTC())
	}
	if !q.ClosedTo.IsZero() {
		// An order is closed after it was placed, so one closed before
		// ClosedTo was placed before it too (give or take the clocks of
		// two instances): the newest first page then starts in the
		// created_at index where the range ends, not at the newest order.
		db = db.Where("orders.closed_at < ? AND orders.created_at < ?", q.ClosedTo.UTC(), q.ClosedTo.Add(clockSkew).UTC())
	}
	return db
}

// clockSkew is how far apart two instances' clocks may be: an order placed
// by one and closed by another may have closed_at that much before its
// created_at.
const clockSkew = time.Minute

// checkOrderQuery refuses a search no list could mean: an unknown release
// state or resource type, a held key without its type or longer than any
// key, a close range that ends before it starts.
func (s *Store) checkOrderQuery(q OrderQuery) error {
	if q.Release != "" {
		if _, err := ParseReleaseState(string(q.Release)); err != nil {
			return err
		}
	}
	if q.HeldKey != "" && q.HeldType == "" {
		return fmt.Errorf("%w: a held key needs the resource type the key belongs to (held_type)", ErrInvalid)
	}
	if q.HeldType != "" {
		if _, err := s.ParseType(string(q.HeldType)); err != nil {
			return err
		}
	}
	if len(q.HeldKey) > MaxTaskKeyLen || !utf8.ValidString(q.HeldKey) {
		return fmt.Errorf("%w: a held key is at most %d bytes of UTF-8", ErrInvalid, MaxTaskKeyLen)
	}
	if !q.ClosedFrom.IsZero() && !q.ClosedTo.IsZero() && !q.ClosedFrom.Before(q.ClosedTo) {
		return fmt.Errorf("%w: closed from (%s) must be before closed to (%s)", ErrInvalid,
			q.ClosedFrom.UTC().Format(time.RFC3339), q.ClosedTo.UTC().Format(time.RFC3339))
	}
	return nil
}

// orderCount counts, up to most, the orders q's filters select.
func orderCount(db *gorm.DB, q OrderQuery, most int) *gorm.DB {
	return db.Raw("SELECT COUNT(*) FROM (?) n", orderFilters(db.Table("orders").Select("1"), q).Limit(most))
}

// ordersPage reads, from orders filtered by db, the page after q.After:
// limit+1 orders with their release states.
func ordersPage(db *gorm.DB, q OrderQuery, limit int) *gorm.DB {
	dir := "DESC"
	if q.Oldest {
		dir = "ASC"
	}
	if q.After.ID != 0 {
		at := q.After.At.UTC()
		if q.Oldest {
			db = db.Where("orders.created_at >= ? AND (orders.created_at > ? OR orders.id > ?)", at, at, q.After.ID)
		} else {
			db = db.Where("orders.created_at <= ? AND (orders.created_at < ? OR orders.id < ?)", at, at, q.After.ID)
		}
	}
	return db.Select("orders.*, " + releaseStateSQL("orders.order_no") + " AS release_state").
		Order("orders.created_at " + dir + ", orders.id " + dir).Limit(limit + 1)
}

// ListOrders reads one page of orders with their release states and what
// each held, and with q.Count how many the filters select, in one
// snapshot. The keyset condition is written as a range on created_at plus
// a tie-break on id, so both engines seek into the created_at index
// instead of scanning to the cursor.
func (s *Store) ListOrders(ctx context.Context, q OrderQuery) (OrderPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 500 {
		limit = DefaultPageSize
	}
	if err := s.checkOrderQuery(q); err != nil {
		return OrderPage{}, err
	}
	type row struct {
		Order        `gorm:"embedded"`
		ReleaseState ReleaseState
	}
	var rows []row
	var page OrderPage
	more := false
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		if q.Count > 0 {
			if err := orderCount(tx, q, q.Count+1).Scan(&page.Total).Error; err != nil {
				return fmt.Errorf("count: %w", err)
			}
		}
		if err := ordersPage(orderFilters(tx.Table("orders"), q), q, limit).Scan(&rows).Error; err != nil {
			return err
		}
		if more = len(rows) > limit; more {
			rows = rows[:limit]
		}
		if err := s.betweenReads(); err != nil {
			return err
		}
		nos := make([]string, len(rows))
		for i, r := range rows {
			nos[i] = r.OrderNo
		}
		var err error
		page.Holds, err = s.heldKeys(tx, nos)
		return err
	})
	if err != nil {
		return OrderPage{}, fmt.Errorf("list orders: %w", err)
	}
	if q.Count > 0 && page.Total > int64(q.Count) {
		page.Total, page.Over = int64(q.Count), true
	}
	if more {
		last := rows[limit-1]
		page.Next = Cursor{At: last.CreatedAt, ID: last.ID}
	}
	page.Orders = make([]Order, len(rows))
	page.Release = make(map[string]ReleaseState, len(rows))
	for i, r := range rows {
		page.Orders[i] = r.Order
		page.Release[r.OrderNo] = r.ReleaseState
	}
	return page, nil
}

// FindOrder reads one order by its number.
func (s *Store) FindOrder(ctx context.Context, orderNo string) (*Order, error) {
	var o Order
	err := s.R.WithContext(ctx).Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return nil, fmt.Errorf("%w: order %s", ErrNotFound, orderNo)
	}
	if err != nil {
		return nil, fmt.Errorf("read order %s: %w", orderNo, err)
	}
	return &o, nil
}

// ResourceKey names one resource: a SKU, a coupon, a user's balance or
// points, an activity, a slot.
type ResourceKey struct {
	Type ResourceType
	Key  string
}

// keyTotals is what PENDING orders or unfinished tasks say one key holds:
// the outstanding quantity, and the number of rows behind it.
type keyTotals struct {
	Q, N int64
}

// ReconcileKeys is Reconcile's live checks — HELD and CONSERVATION — for
// just the given keys, reading only those keys' rows, so the order chain can
// ask whether each resource it held reconciles now without reconciling a
// whole big shop. The checks that read a key's whole ledger (LEDGER_*,
// LEDGER_STATUS, USED_UNPAID) are left to the reconciliation runs, whose
// tickets say what they found. Diffs come sorted by resource, key and check.
// Holds, tasks and resource rows are read in one snapshot, so a release
// committed meanwhile is never taken for a diff.
func (s *Store) ReconcileKeys(ctx context.Context, keys []ResourceKey) ([]Diff, error) {
	var diffs []Diff
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		diffs, err = s.reconcileKeys(tx, keys)
		return err
	})
	if err != nil {
		return nil, err
	}
	return diffs, nil
}

// reconcileKeys is ReconcileKeys inside db, one snapshot read.
func (s *Store) reconcileKeys(db *gorm.DB, keys []ResourceKey) ([]Diff, error) {
	byType := map[ResourceType][]string{}
	seen := map[ResourceKey]bool{}
	for _, k := range keys {
		if _, ok := s.resources[k.Type]; !ok || seen[k] {
			continue
		}
		seen[k] = true
		byType[k.Type] = append(byType[k.Type], k.Key)
	}
	if len(byType) == 0 {
		return nil, nil
	}
	types := make([]ResourceType, 0, len(byType))
	var all []string
	for t, ks := range byType {
		types = append(types, t)
		all = append(all, ks...)
	}
	pending, tasks, err := s.expectedHeld(db, types, all)
	if err != nil {
		return nil, err
	}
	if err := s.betweenReads(); err != nil {
		return nil, err
	}
	var diffs []Diff
	for _, t := range types {
		r, ok := s.resources[t]
		if !ok {
			return nil, fmt.Errorf("reconcile %s: %w: unknown resource type", t, ErrInvalid)
		}
		d, err := r.reconcileKeys(db, byType[t], pending, tasks)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, d...)
	}
	sortDiffs(diffs)
	return diffs, nil
}

// pendingHeldSQL sums, by resource type and key, what PENDING orders
// still hold (see expectedHeld); its arguments are the types and the keys.
// It reads the open holds of the keys (index order_holds_open: a popular
// key's released and paid history is not in it), then each one's order
// status (index orders_no_status), neither visiting a table. On SQLite a
// CROSS JOIN keeps that order. In a flash sale of 100,000 PENDING orders on
// 100 SKUs, a page of 50 SKUs reads 37 ms and one SKU 0.9 ms; starting from
// the orders instead, it was 62 ms whatever the keys, and 750 ms when the
// key list took part in each order's hold lookup.
func (s *Store) pendingHeldSQL() string {
	join := "JOIN"
	if s.Dialect == SQLite {
		join = "CROSS JOIN"
	}
	return `SELECT h.resource_type, h.biz_key, SUM(h.qty - h.released - h.deducted) AS q, COUNT(*) AS n
		FROM order_holds h ` + join + ` orders o ON o.order_no = h.order_no
		WHERE qty > released + deducted AND h.resource_type IN ? AND h.biz_key IN ? AND o.status = 'PENDING'
		GROUP BY h.resource_type, h.biz_key`
}

// expectedJoins joins, to the rows whose key is the SQL expression key, p.q
// and t.q: what PENDING orders still hold of the key and what its
// unfinished tasks will give back (arguments: the type, twice), the two
// halves of what a whole-type reconciliation expects held.
func expectedJoins(key string) string {
	return `
		LEFT JOIN (SELECT h.biz_key AS k, SUM(h.qty - h.released - h.deducted) AS q
			FROM order_holds h JOIN orders o ON o.order_no = h.order_no
			WHERE h.resource_type = ? AND o.status = 'PENDING' GROUP BY h.biz_key) p ON p.k = ` + key + `
		LEFT JOIN (SELECT biz_key AS k, SUM(qty) AS q FROM release_tasks
			WHERE resource_type = ? AND status IN ('PENDING','RETRY','MANUAL') GROUP BY biz_key) t ON t.k = ` + key
}

// expectedHeld reads, for the given keys, what PENDING orders hold
// (pendingHeldSQL) and what unfinished release tasks will give back, read
// from release_tasks by (resource_type, biz_key, status).
func (s *Store) expectedHeld(db *gorm.DB, types []ResourceType, keys []string) (pending, tasks map[ResourceKey]keyTotals, err error) {
	type row struct {
		ResourceType ResourceType
		BizKey       string
		Q, N         int64
	}
	var prow, trow []row
	err = db.Raw(s.pendingHeldSQL(), types, keys).Scan(&prow).Error
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile keys: pending holds: %w", err)
	}
	if err := s.betweenReads(); err != nil {
		return nil, nil, err
	}
	err = db.Raw(`SELECT resource_type, biz_key, SUM(qty) AS q, COUNT(*) AS n FROM release_tasks
		WHERE resource_type IN ? AND biz_key IN ? AND status IN ('PENDING','RETRY','MANUAL')
		GROUP BY resource_type, biz_key`, types, keys).Scan(&trow).Error
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile keys: unfinished tasks: %w", err)
	}
	pending, tasks = map[ResourceKey]keyTotals{}, map[ResourceKey]keyTotals{}
	for _, r := range prow {
		pending[ResourceKey{r.ResourceType, r.BizKey}] = keyTotals{r.Q, r.N}
	}
	for _, r := range trow {
		tasks[ResourceKey{r.ResourceType, r.BizKey}] = keyTotals{r.Q, r.N}
	}
	return pending, tasks, nil
}

// reconcileKeys is counter.Reconcile for some keys. A key without a row
// has no diff, as in Reconcile. The ADJUST sum reads the ledger's unique
// key (order_no, key, type, ...): adjustments never name an order, so
// "order_no IS NULL" finds them without reading the key's order rows.
func (c *counter) reconcileKeys(db *gorm.DB, keys []string, pending, tasks map[ResourceKey]keyTotals) ([]Diff, error) {
	type row struct {
		K           string
		Held, Total int64
	}
	fixed, args := c.fixedCond(), c.keysArgs(keys)
	var rows []row
	err := db.Raw(fmt.Sprintf("SELECT %[1]s AS k, %[2]s AS held, %[3]s + %[2]s + %[4]s AS total FROM %[5]s WHERE %[1]s IN ?%[6]s",
		c.key, c.held, c.avail, c.spent, c.table, fixed), args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("reconcile %s keys: %w", c.typ, err)
	}
	var sums []struct {
		K string
		Q int64
	}
	err = db.Raw(fmt.Sprintf("SELECT %[1]s AS k, SUM(qty) AS q FROM %[2]s WHERE order_no IS NULL AND %[1]s IN ?%[3]s AND type = 'ADJUST' GROUP BY %[1]s",
		c.key, c.ledger, fixed), args...).Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("reconcile %s keys: ledger: %w", c.typ, err)
	}
	adjusted := map[string]int64{}
	for _, s := range sums {
		adjusted[s.K] = s.Q
	}
	var diffs []Diff
	for _, r := range rows {
		k := ResourceKey{c.typ, r.K}
		if want := pending[k].Q + tasks[k].Q; r.Held != want {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.K, Check: CheckHeld, Expected: want, Actual: r.Held})
		}
		if r.Total != adjusted[r.K] {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.K, Check: CheckConservation, Expected: adjusted[r.K], Actual: r.Total})
		}
	}
	return diffs, nil
}

// reconcileSingleKeys is reconcileSingles for some keys: a key is held
// (1) when its row is in heldStatus, and should be held as many times as
// PENDING orders and unfinished tasks name it.
func reconcileSingleKeys(db *gorm.DB, t ResourceType, keys []string, pending, tasks map[ResourceKey]keyTotals,
	query, heldStatus string, arg func([]string) []any) ([]Diff, error) {
	var rows []struct {
		K      string
		Status string
	}
	if ids := arg(keys); len(ids) > 0 {
		if err := db.Raw(query, ids).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("reconcile %s keys: %w", t, err)
		}
	}
	held := map[string]int64{}
	for _, r := range rows {
		if r.Status == heldStatus {
			held[r.K] = 1
		}
	}
	var diffs []Diff
	for _, key := range keys {
		k := ResourceKey{t, key}
		if want := pending[k].N + tasks[k].N; held[key] != want {
			diffs = append(diffs, Diff{Resource: t, Key: key, Check: CheckHeld, Expected: want, Actual: held[key]})
		}
	}
	return diffs, nil
}

// couponIDs turns coupon keys into ids; a key that is not a number names
// no coupon.
func couponIDs(keys []string) []any {
	var ids []any
	for _, k := range keys {
		if id, err := strconv.ParseInt(k, 10, 64); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

func asAny(keys []string) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out
}
