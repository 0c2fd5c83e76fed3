package models

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The ledger pages' reads: SKUs with their reconciliation, one SKU's
// ledger, the coupon ledger, account ledgers and one day of every ledger.
// Each list is a keyset page read through an index; nothing here scans a
// whole ledger.

// ParseCouponStatus accepts a coupon status as stored.
func ParseCouponStatus(s string) (CouponStatus, error) {
	switch st := CouponStatus(s); st {
	case CouponUnused, CouponLocked, CouponUsed, CouponExpired:
		return st, nil
	}
	return "", fmt.Errorf("%w: coupon status must be UNUSED, LOCKED, USED or EXPIRED, not %q", ErrInvalid, s)
}

// SKUStatus is one SKU with what its numbers should be: locked should equal
// what PENDING orders still hold plus what unfinished release tasks will
// give back, and available + locked + sold should equal the stock ever
// added (the ledger's ADJUST rows).
type SKUStatus struct {
	SKU
	PendingHeld int64 // still held by PENDING orders
	TaskHeld    int64 // to be given back by unfinished (PENDING, RETRY, MANUAL) release tasks
	Adjusted    int64 // sum of the SKU's ADJUST ledger rows
}

// ExpectedLocked is what locked should be.
func (s SKUStatus) ExpectedLocked() int64 { return s.PendingHeld + s.TaskHeld }

// LockedOK tells whether locked reconciles.
func (s SKUStatus) LockedOK() bool { return s.Locked == s.ExpectedLocked() }

// Total is available + locked + sold.
func (s SKUStatus) Total() int64 { return s.Available + s.Locked + s.Sold }

// TotalOK tells whether the SKU's stock is conserved.
func (s SKUStatus) TotalOK() bool { return s.Total() == s.Adjusted }

// SKUQuery is one page of the SKU list: SKUs whose id starts with Prefix,
// in id order, after the id After.
type SKUQuery struct {
	Prefix, After string
	Limit         int
	// Count asks for Total: the SKUs the prefix selects, counted up to
	// Count (OrderCountCap on the pages); 0 counts nothing.
	Count int
}

// SKUPage is one page of SKUs; Next is the After of the next page, "" on
// the last one. Total counts the SKUs the prefix selects when the query
// asked; when there are more than its Count, Total is Count and Over is set.
type SKUPage struct {
	SKUs  []SKUStatus
	Next  string
	Total int64
	Over  bool
}

// ListSKUs reads one page of SKUs by the primary key and reconciles just
// those SKUs, and with q.Count counts the SKUs the prefix selects.
func (s *Store) ListSKUs(ctx context.Context, q SKUQuery) (SKUPage, error) {
	limit := pageLimit(q.Limit)
	db := s.R.WithContext(ctx).Model(&SKU{})
	if q.Prefix != "" {
		cond, args := prefixCond(s.Dialect, "sku_id", q.Prefix)
		db = db.Where(cond, args...)
	}
	var page SKUPage
	if q.Count > 0 {
		// The primary key's range, read up to Count+1 entries.
		sub := db.Session(&gorm.Session{}).Select("1").Limit(q.Count + 1)
		if err := s.R.WithContext(ctx).Raw("SELECT COUNT(*) FROM (?) n", sub).Scan(&page.Total).Error; err != nil {
			return SKUPage{}, fmt.Errorf("count skus: %w", err)
		}
		if page.Total > int64(q.Count) {
			page.Total, page.Over = int64(q.Count), true
		}
	}
	if q.After != "" {
		db = db.Where("sku_id > ?", q.After)
	}
	var skus []SKU
	if err := db.Order("sku_id").Limit(limit + 1).Find(&skus).Error; err != nil {
		return SKUPage{}, fmt.Errorf("list skus: %w", err)
	}
	if len(skus) > limit {
		skus = skus[:limit]
		page.Next = skus[limit-1].SkuID
	}
	st, err := s.skuStatuses(s.R.WithContext(ctx), skus)
	if err != nil {
		return SKUPage{}, err
	}
	page.SKUs = st
	return page, nil
}

// SKUStatusOf reads one SKU and reconciles it.
func (s *Store) SKUStatusOf(ctx context.Context, skuID string) (*SKUStatus, error) {
	sku, err := s.GetSKU(ctx, skuID)
	if err != nil {
		return nil, err
	}
	st, err := s.skuStatuses(s.R.WithContext(ctx), []SKU{*sku})
	if err != nil {
		return nil, err
	}
	return &st[0], nil
}

// skuStatuses reconciles the given SKUs: expectedHeld starts from PENDING
// orders and unfinished tasks (both few), never from a popular SKU's whole
// hold history; the ADJUST sum reads the ledger's unique key
// (order_no, sku_id, type, epoch), where adjustments are the rows with no
// order, so it never reads the SKU's order rows.
func (s *Store) skuStatuses(db *gorm.DB, skus []SKU) ([]SKUStatus, error) {
	out := make([]SKUStatus, len(skus))
	if len(skus) == 0 {
		return out, nil
	}
	ids := make([]string, len(skus))
	for i, k := range skus {
		ids[i] = k.SkuID
	}
	pending, tasks, err := s.expectedHeld(db, []ResourceType{ResInventory}, ids)
	if err != nil {
		return nil, err
	}
	var sums []struct {
		K string
		Q int64
	}
	err = db.Raw(`SELECT sku_id AS k, SUM(qty) AS q FROM inventory_flows
		WHERE order_no IS NULL AND sku_id IN ? AND type = 'ADJUST' GROUP BY sku_id`, ids).Scan(&sums).Error
	if err != nil {
		return nil, fmt.Errorf("sku adjustments: %w", err)
	}
	adjusted := map[string]int64{}
	for _, r := range sums {
		adjusted[r.K] = r.Q
	}
	for i, k := range skus {
		key := ResourceKey{ResInventory, k.SkuID}
		out[i] = SKUStatus{SKU: k, PendingHeld: pending[key].Q, TaskHeld: tasks[key].Q, Adjusted: adjusted[k.SkuID]}
	}
	return out, nil
}

// prefixCond is the condition that column (a name in our code, never user
// text) starts with p. SQLite compares text byte by byte, so there it is a
// range of an index on the column, and exact where SQLite's LIKE would
// ignore ASCII case. PostgreSQL's order depends on the collation, where a
// range is not a prefix; its LIKE is exact.
func prefixCond(d Dialect, column, p string) (string, []any) {
	if d != SQLite {
		return column + ` LIKE ? ESCAPE '\'`, []any{likePrefix(p)}
	}
	if hi, ok := prefixEnd(p); ok {
		return column + " >= ? AND " + column + " < ?", []any{p, hi}
	}
	return column + " >= ?", []any{p}
}

// prefixEnd is the smallest string above every string that starts with p,
// in byte order; ok is false when there is none (p is all 0xff bytes).
func prefixEnd(p string) (string, bool) {
	b := []byte(p)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// likePrefix is a LIKE pattern matching strings that start with p.
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

func pageLimit(n int) int {
	if n <= 0 || n > 500 {
		return DefaultPageSize
	}
	return n
}

// FlowPage is one page of ledger rows, newest first; Next is the id the
// next page starts below, 0 on the last page.
type FlowPage struct {
	Flows []Flow
	Next  int64
}

// counterFlowCols are a counter ledger's columns as Flow reads them.
const counterFlowCols = `id, order_no, type, epoch, trigger_type AS trigger, qty,
	avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at`

// SKUFlows reads one page of a SKU's ledger below the id before (0: from
// the newest), through the index (sku_id, id).
func (s *Store) SKUFlows(ctx context.Context, skuID string, before int64, limit int) (FlowPage, error) {
	db := s.R.WithContext(ctx).Raw(`SELECT sku_id AS biz_key, `+counterFlowCols+` FROM inventory_flows
		WHERE sku_id = ? AND id < ? ORDER BY id DESC LIMIT ?`, skuID, below(before), pageLimit(limit)+1)
	page, err := flowPage(db, pageLimit(limit), ResInventory)
	if err != nil {
		return FlowPage{}, fmt.Errorf("ledger of sku %s: %w", skuID, err)
	}
	return page, nil
}

// below turns "no cursor" into an id above every row.
func below(id int64) int64 {
	if id <= 0 {
		return 1<<63 - 1
	}
	return id
}

func flowPage(db *gorm.DB, limit int, t ResourceType) (FlowPage, error) {
	var flows []Flow
	if err := db.Scan(&flows).Error; err != nil {
		return FlowPage{}, err
	}
	var page FlowPage
	if len(flows) > limit {
		flows = flows[:limit]
		page.Next = flows[limit-1].ID
	}
	for i := range flows {
		flows[i].ResourceType = t
	}
	page.Flows = flows
	return page, nil
}

// AccountAssets reads every asset of one account; an unknown user has none.
func (s *Store) AccountAssets(ctx context.Context, uid string) ([]AccountAsset, error) {
	var rows []AccountAsset
	if err := s.R.WithContext(ctx).Where("uid = ?", uid).Order("asset").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read account %s: %w", uid, err)
	}
	return rows, nil
}

// AccountFlows reads one page of a user's account ledger below the id
// before, for one asset or ("") both, with the points' expiry around each row. Each asset is read newest first
// through the index (uid, asset, id) and the two are merged, so a user with
// a long history costs what a new one does. Each row's ResourceType says
// its asset (balance or points).
func (s *Store) AccountFlows(ctx context.Context, uid string, asset Asset, before int64, limit int) (FlowPage, error) {
	limit = pageLimit(limit)
	assets := []Asset{AssetBalance, AssetPoints}
	if asset != "" {
		assets = []Asset{asset}
	}
	var all []Flow
	for _, a := range assets {
		db := s.R.WithContext(ctx).Raw(`SELECT uid AS biz_key, `+counterFlowCols+`, expire_before, expire_after FROM account_flows
			WHERE uid = ? AND asset = ? AND id < ? ORDER BY id DESC LIMIT ?`, uid, a, below(before), limit+1)
		page, err := flowPage(db, limit+1, assetResource(a))
		if err != nil {
			return FlowPage{}, fmt.Errorf("ledger of account %s %s: %w", uid, a, err)
		}
		all = append(all, page.Flows...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	var page FlowPage
	if len(all) > limit {
		all = all[:limit]
		page.Next = all[limit-1].ID
	}
	page.Flows = all
	return page, nil
}

// recentFlowWindow is how many of the newest account ledger rows the list
// of recently changed accounts looks at.
const recentFlowWindow = 500

// RecentAccounts lists the accounts whose ledger moved last, newest first:
// every change of an account writes a ledger row, so the newest rows of
// account_flows (its created_at index) name them without an index on
// accounts that every release would have to update.
func (s *Store) RecentAccounts(ctx context.Context, limit int) ([]AccountAsset, error) {
	limit = pageLimit(limit)
	db := s.R.WithContext(ctx)
	var recent []struct {
		UID   string `gorm:"column:uid"`
		Asset Asset
		Last  int64
	}
	err := db.Raw(`SELECT uid, asset, MAX(id) AS last FROM
		(SELECT id, uid, asset FROM account_flows ORDER BY created_at DESC, id DESC LIMIT ?) f
		GROUP BY uid, asset ORDER BY last DESC LIMIT ?`, recentFlowWindow, limit).Scan(&recent).Error
	if err != nil {
		return nil, fmt.Errorf("recent accounts: %w", err)
	}
	if len(recent) == 0 {
		return nil, nil
	}
	uids := make([]string, 0, len(recent))
	for _, r := range recent {
		uids = append(uids, r.UID)
	}
	var rows []AccountAsset
	if err := db.Where("uid IN ?", uids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("recent accounts: %w", err)
	}
	byKey := map[[2]string]AccountAsset{}
	for _, r := range rows {
		byKey[[2]string{r.UID, string(r.Asset)}] = r
	}
	out := make([]AccountAsset, 0, len(recent))
	for _, r := range recent {
		if a, ok := byKey[[2]string{r.UID, string(r.Asset)}]; ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// CouponQuery selects coupon ledger rows. A zero field does not filter.
// UserID, CouponID and OrderNo are read through indexes (the user's
// coupons, coupon_flows by coupon and by order); Status (the coupon's status
// now) and Owner are checked on the rows read.
type CouponQuery struct {
	UserID   string
	OrderNo  string
	CouponID int64
	Status   CouponStatus
	Owner    CouponOwner
	// From and To bound created_at to [From, To); a zero time leaves that side open.
	From, To time.Time
	After    Cursor
	Limit    int
	// Window is how many rows one page reads at most when Owner, or Status
	// without a user, filter; 0 means couponScanWindow.
	Window int
}

// Narrow tells whether the query names a user, a coupon or an order, so
// its rows are few whatever the date range.
func (q CouponQuery) Narrow() bool { return q.UserID != "" || q.OrderNo != "" || q.CouponID != 0 }

// CouponFlow is one coupon ledger row with the coupon's status now.
type CouponFlow struct {
	ID           int64
	OrderNo      *string
	CouponID     int64
	UserID       string
	Owner        CouponOwner
	Type         FlowType
	Trigger      Trigger `gorm:"column:trigger_type"`
	StatusBefore string
	StatusAfter  string
	ExpireBefore *time.Time
	ExpireAfter  time.Time
	Actor        string
	CreatedAt    time.Time
	StatusNow    string
}

// CouponPage is one page of coupon ledger rows, newest first. When Owner
// or Status filter rows that no index selects, one page reads at most
// couponScanWindow rows: Partial says the page stopped there with fewer
// than a page of matches, and Next continues below the last row read.
type CouponPage struct {
	Flows   []CouponFlow
	Next    Cursor
	Scanned int
	Partial bool
}

// couponScanWindow bounds the rows one coupon page reads when filters
// apply that no index serves.
const couponScanWindow = 1000

// where is the indexed part of a coupon query, over coupon_flows f; with a
// user, the status filter goes into the list of that user's coupons.
func (q CouponQuery) where() (string, []any) {
	var conds []string
	var args []any
	if q.UserID != "" {
		sub := "SELECT id FROM user_coupons WHERE user_id = ?"
		args = append(args, q.UserID)
		if q.Status != "" {
			sub += " AND status = ?"
			args = append(args, q.Status)
		}
		conds = append(conds, "f.coupon_id IN ("+sub+")")
	}
	if q.CouponID != 0 {
		conds = append(conds, "f.coupon_id = ?")
		args = append(args, q.CouponID)
	}
	if q.OrderNo != "" {
		conds = append(conds, "f.order_no = ?")
		args = append(args, q.OrderNo)
	}
	if !q.From.IsZero() {
		conds = append(conds, "f.created_at >= ?")
		args = append(args, q.From.UTC())
	}
	if !q.To.IsZero() {
		conds = append(conds, "f.created_at < ?")
		args = append(args, q.To.UTC())
	}
	if len(conds) == 0 {
		return "1 = 1", args
	}
	return strings.Join(conds, " AND "), args
}

// ListCouponFlows reads one page of the coupon ledger, newest first by
// (created_at, id).
func (s *Store) ListCouponFlows(ctx context.Context, q CouponQuery) (CouponPage, error) {
	limit := pageLimit(q.Limit)
	where, args := q.where()
	if q.After.ID != 0 {
		at := q.After.At.UTC()
		where += " AND f.created_at <= ? AND (f.created_at < ? OR f.id < ?)"
		args = append(args, at, at, q.After.ID)
	}
	// Owner, and Status without a user, are checked in Go over a bounded
	// window of rows, so a rare status never turns into a scan of the ledger.
	residual := q.Owner != "" || (q.Status != "" && q.UserID == "")
	window := limit + 1
	if residual {
		window = couponScanWindow
		if q.Window > limit {
			window = q.Window
		}
	}
	var rows []CouponFlow
	err := s.R.WithContext(ctx).Raw(`SELECT f.id, f.order_no, f.coupon_id, f.user_id, f.owner, f.type, f.trigger_type,
		f.status_before, f.status_after, f.expire_before, f.expire_after, f.actor, f.created_at,
		COALESCE(c.status, '') AS status_now
		FROM (SELECT * FROM coupon_flows f WHERE `+where+` ORDER BY f.created_at DESC, f.id DESC LIMIT ?) f
		LEFT JOIN user_coupons c ON c.id = f.coupon_id
		ORDER BY f.created_at DESC, f.id DESC`, append(args, window)...).Scan(&rows).Error
	if err != nil {
		return CouponPage{}, fmt.Errorf("coupon ledger: %w", err)
	}
	page := CouponPage{Scanned: len(rows)}
	matched := rows[:0:0]
	for _, r := range rows {
		if q.Owner != "" && r.Owner != q.Owner {
			continue
		}
		if q.Status != "" && r.StatusNow != string(q.Status) {
			continue
		}
		matched = append(matched, r)
	}
	switch {
	case len(matched) > limit:
		matched = matched[:limit]
		last := matched[limit-1]
		page.Next = Cursor{At: last.CreatedAt, ID: last.ID}
	case residual && len(rows) == window:
		last := rows[len(rows)-1]
		page.Next = Cursor{At: last.CreatedAt, ID: last.ID}
		page.Partial = true
	}
	page.Flows = matched
	return page, nil
}

// CouponTotal is how many coupon ledger rows of one owner and type a query selects.
type CouponTotal struct {
	Owner CouponOwner
	Type  FlowType
	N     int64
}

// CouponTotals counts the rows a coupon query selects (all of them, not
// one page) by owner and type. The caller bounds the query: a user, a
// coupon, an order, or a short date range.
func (s *Store) CouponTotals(ctx context.Context, q CouponQuery) ([]CouponTotal, error) {
	where, args := q.where()
	join := ""
	if q.Status != "" && q.UserID == "" {
		join = " JOIN user_coupons c ON c.id = f.coupon_id"
		where += " AND c.status = ?"
		args = append(args, q.Status)
	}
	if q.Owner != "" {
		where += " AND f.owner = ?"
		args = append(args, q.Owner)
	}
	var out []CouponTotal
	err := s.R.WithContext(ctx).Raw(`SELECT f.owner, f.type, COUNT(*) AS n FROM coupon_flows f`+join+
		` WHERE `+where+` GROUP BY f.owner, f.type`, args...).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("coupon totals: %w", err)
	}
	return out, nil
}

// UserCoupons reads a user's coupons, newest first, through the index
// (user_id, status); more says there are more than limit.
func (s *Store) UserCoupons(ctx context.Context, uid string, limit int) (coupons []Coupon, more bool, err error) {
	limit = pageLimit(limit)
	if err := s.R.WithContext(ctx).Where("user_id = ?", uid).Order("id DESC").Limit(limit + 1).Find(&coupons).Error; err != nil {
		return nil, false, fmt.Errorf("coupons of %s: %w", uid, err)
	}
	if len(coupons) > limit {
		return coupons[:limit], true, nil
	}
	return coupons, false, nil
}

// LedgerTotal is how many ledger rows of one resource (and, for coupons,
// one cost bearer) and one type were written in a time range, and the sum of
// their quantities (coupon and slot rows count 1 each).
type LedgerTotal struct {
	Resource ResourceType
	Owner    CouponOwner
	Type     FlowType
	Rows     int64 `gorm:"column:n"`
	Qty      int64
}

// flowColumns are the columns of a Flow after its id, order_no, type,
// trigger_type, actor and created_at, read from the ledger rows of type t
// (alias f) as l describes them; the first is the type, bound.
func flowColumns(l LedgerSpec) string {
	cols := "CAST(? AS TEXT) AS resource, " + ownerColumn(l) + " AS owner, " + l.Key + " AS biz_key, " + l.Qty + " AS qty, "
	if l.Counter != nil {
		return cols + `f.avail_before, f.avail_after, f.held_before, f.held_after, f.spent_before, f.spent_after,
			'' AS status_before, '' AS status_after`
	}
	status := l.Status
	if status == "" {
		status = "f.status_before, f.status_after"
	}
	return cols + `0 AS avail_before, 0 AS avail_after, 0 AS held_before, 0 AS held_after, 0 AS spent_before, 0 AS spent_after, ` + status
}

func ownerColumn(l LedgerSpec) string {
	if l.Owner == "" {
		return "''"
	}
	return l.Owner
}

// LedgerTotals counts and sums every ledger's rows written in [from, to)
// by resource, cost bearer and type.
func (s *Store) LedgerTotals(ctx context.Context, from, to time.Time) ([]LedgerTotal, error) {
	db := s.R.WithContext(ctx)
	var out []LedgerTotal
	for _, t := range s.types {
		l := s.resources[t].Ledger()
		group := "f.type"
		if l.Owner != "" {
			group = l.Owner + ", f.type"
		}
		// Every column read is in the ledger's created_at index, so a day
		// is summed from the index alone.
		q := `SELECT CAST(? AS TEXT) AS resource, ` + ownerColumn(l) + ` AS owner, f.type, COUNT(*) AS n,
			COALESCE(SUM(` + l.Qty + `), 0) AS qty
			FROM ` + l.Table + ` f WHERE f.created_at >= ? AND f.created_at < ?` + l.Where + ` GROUP BY ` + group
		var rows []LedgerTotal
		if err := db.Raw(q, t, from.UTC(), to.UTC()).Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("ledger totals of %s: %w", t, err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// EachLedgerRow calls fn with every ledger row written in [from, to),
// type by type, in time order within each, reading row by row so a
// day of a big shop never sits in memory. Coupon rows carry their owner.
func (s *Store) EachLedgerRow(ctx context.Context, from, to time.Time, fn func(*Flow) error) error {
	db := s.R.WithContext(ctx)
	for _, t := range s.types {
		if err := eachFlow(db, t, s.resources[t].Ledger(), from.UTC(), to.UTC(), fn); err != nil {
			return fmt.Errorf("rows of %s: %w", t, err)
		}
	}
	return nil
}

func eachFlow(db *gorm.DB, t ResourceType, l LedgerSpec, from, to time.Time, fn func(*Flow) error) error {
	rows, err := db.Raw(`SELECT f.id, f.order_no, f.type, f.trigger_type, f.actor, f.created_at, `+flowColumns(l)+`
		FROM `+l.Table+` f WHERE f.created_at >= ? AND f.created_at < ?`+l.Where+` ORDER BY f.created_at, f.id`,
		t, from, to).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	var f Flow
	var orderNo sql.NullString
	for rows.Next() {
		f = Flow{}
		err := rows.Scan(&f.ID, &orderNo, &f.Type, &f.Trigger, &f.Actor, &f.CreatedAt, &f.ResourceType, &f.Owner, &f.BizKey, &f.Qty,
			&f.AvailBefore, &f.AvailAfter, &f.HeldBefore, &f.HeldAfter, &f.SpentBefore, &f.SpentAfter, &f.StatusBefore, &f.StatusAfter)
		if err != nil {
			return err
		}
		if orderNo.Valid {
			no := orderNo.String
			f.OrderNo = &no
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	return rows.Err()
}
