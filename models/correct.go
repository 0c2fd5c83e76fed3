package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// Corrections: what an operator does from the dashboard when a key's row
// was changed outside unhold (a hand edit, a script) and a release stopped
// on it. The ledger is the truth of every change unhold made, so a
// correction brings the row back to what the ledger says, and records what
// it found as an ADJUST row (trigger CORRECTION) with the reason in the
// audit log:
//
//   - A counter's held and spent amounts go back to its ledger's. Nothing
//     else may set them: a hold that no LOCK row took would be released as
//     if an order had taken it.
//   - Its available amount is set to what the operator counted. The ADJUST
//     row's qty is that amount less the ledger's, so a stock the warehouse
//     really has (added by hand, say) is kept and recorded, and the ledger
//     sums to the row again.
//   - A coupon goes back to the state its last ledger row left it in, held
//     by the order that row names when it is LOCKED or USED; LOCKED only
//     for an order that still holds it, since one that let it go (its
//     release abandoned after a hand edit) would hold it for good.
//
// So after a correction the key's ledger checks reconcile; whether its
// holds do is left to reconciliation, which a correction cannot talk round.

// TriggerCorrection marks the ADJUST row of an operator's correction.
const TriggerCorrection Trigger = "CORRECTION"

// CounterLedger is a counter key's row beside what its ledger sums to,
// and what PENDING orders and unfinished release tasks hold of it.
type CounterLedger struct {
	Row      CounterState `json:"row"`
	Ledger   CounterState `json:"ledger"`
	Expected int64        `json:"expected_held"`
}

// ShortCause is where a key stands for a release that found too little
// held (LOCKED_SHORT).
type ShortCause string

// Short causes.
const (
	// ShortChanged: the key's held amount is not its ledger's: it was
	// changed outside unhold, and a correction puts it back.
	ShortChanged ShortCause = "row"
	// ShortGone: the row agrees with its ledger and holds what PENDING
	// orders and unfinished tasks need: a rerun releases without taking
	// another order's hold.
	ShortGone ShortCause = "gone"
	// ShortElsewhere: the row agrees with its ledger, but together they
	// hold less than orders and tasks need: what the task would give back
	// came back another way, and no rerun can give it back again.
	ShortElsewhere ShortCause = "ledger"
)

// Short says where the key stands for a release that found too little
// held. Holding at least the task's qty is not enough: the rest may be
// other orders' holds, which a release would then take.
func (c CounterLedger) Short() ShortCause {
	switch {
	case c.Row.Locked != c.Ledger.Locked:
		return ShortChanged
	case c.Row.Locked >= c.Expected:
		return ShortGone
	}
	return ShortElsewhere
}

// Correction is what a correction did: the row before and after, and the
// qty of its ADJUST row (what the ledger records as added or taken).
type Correction struct {
	Before, After CounterState
	Recorded      int64
}

// CounterLedgerOf reads one counter key's row and its ledger's sums, from
// one snapshot.
func (s *Store) CounterLedgerOf(ctx context.Context, t ResourceType, key string) (CounterLedger, error) {
	if _, err := s.counterOf(t); err != nil {
		return CounterLedger{}, err
	}
	if !ValidKey(key) {
		return CounterLedger{}, invalid("key must be 1-64 letters, digits or -_.:")
	}
	k := ResourceKey{t, key}
	ls, err := s.CounterLedgersOf(ctx, []ResourceKey{k})
	if err != nil {
		return CounterLedger{}, err
	}
	l, ok := ls[k]
	if !ok {
		return CounterLedger{}, fmt.Errorf("%w: %s %s", ErrNotFound, t, key)
	}
	return l, nil
}

// CounterLedgersOf is CounterLedgerOf for many keys, from one snapshot and
// in a few statements per type, not a transaction per key: a page of
// stopped tasks reads all its keys at once. Keys of a type that is not a
// counter, invalid keys and keys without a row are left out.
func (s *Store) CounterLedgersOf(ctx context.Context, keys []ResourceKey) (map[ResourceKey]CounterLedger, error) {
	byType := map[ResourceType][]string{}
	var types []ResourceType
	var all []string
	for _, k := range slices.Compact(slices.SortedFunc(slices.Values(keys), compareKeys)) {
		if _, err := s.counterOf(k.Type); err != nil || !ValidKey(k.Key) {
			continue
		}
		if _, seen := byType[k.Type]; !seen {
			types = append(types, k.Type)
		}
		byType[k.Type] = append(byType[k.Type], k.Key)
		all = append(all, k.Key)
	}
	out := map[ResourceKey]CounterLedger{}
	if len(types) == 0 {
		return out, nil
	}
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		for _, t := range types {
			c, _ := s.counterOf(t)
			rows, err := c.rowsOf(tx, byType[t])
			if err != nil {
				return err
			}
			sums, err := c.keySums(tx, byType[t])
			if err != nil {
				return err
			}
			for key, r := range rows {
				out[ResourceKey{t, key}] = CounterLedger{Row: r.state(), Ledger: sums[key].state()}
			}
		}
		pending, tasks, err := s.expectedHeld(tx, types, all)
		if err != nil {
			return err
		}
		for k, l := range out {
			l.Expected = pending[k].Q + tasks[k].Q
			out[k] = l
		}
		return nil
	})
	return out, err
}

func compareKeys(a, b ResourceKey) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Key, b.Key))
}

func (r counterRow) state() CounterState {
	return CounterState{Available: r.Avail, Locked: r.Held, Spent: r.Spent}
}

// keySum is what one key's columns must be if every change wrote its
// ledger row: ledgerSums for one key. A key without ledger rows sums to
// zeros.
func (c *counter) keySum(db *gorm.DB, key string) (counterRow, error) {
	sums, err := c.keySums(db, []string{key})
	return sums[key], err
}

// keySums is keySum for some keys of the counter, in one statement that
// reads the ledger's key index alone (it carries type and qty: migration
// 00036).
func (c *counter) keySums(db *gorm.DB, keys []string) (map[string]counterRow, error) {
	var rows []struct {
		K                  string
		Avail, Held, Spent int64
	}
	if err := db.Raw(c.keySumsSQL(), c.keysArgs(keys)...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("%s ledger sums: %w", c.typ, err)
	}
	out := make(map[string]counterRow, len(rows))
	for _, r := range rows {
		out[r.K] = counterRow{Avail: r.Avail, Held: r.Held, Spent: r.Spent}
	}
	return out, nil
}

func (c *counter) keySumsSQL() string {
	return fmt.Sprintf(`SELECT %[1]s AS k, %[2]s FROM %[3]s WHERE %[1]s IN ?%[4]s GROUP BY %[1]s`,
		c.key, ledgerSumCols, c.ledger, c.fixedCond())
}

// rowsOf reads some keys' rows without locking them; a key without a row
// is not in the map.
func (c *counter) rowsOf(db *gorm.DB, keys []string) (map[string]counterRow, error) {
	var rows []struct {
		K                  string
		Avail, Held, Spent int64
	}
	q := fmt.Sprintf("SELECT %[1]s AS k, %[2]s AS avail, %[3]s AS held, %[4]s AS spent FROM %[5]s WHERE %[1]s IN ?%[6]s",
		c.key, c.avail, c.held, c.spent, c.table, c.fixedCond())
	if err := db.Raw(q, c.keysArgs(keys)...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("%s rows: %w", c.typ, err)
	}
	out := make(map[string]counterRow, len(rows))
	for _, r := range rows {
		out[r.K] = counterRow{Avail: r.Avail, Held: r.Held, Spent: r.Spent}
	}
	return out, nil
}

// CounterFix is what an operator asks of a counter key's correction.
type CounterFix struct {
	// Available is what was counted.
	Available int64
	// Reason is kept in the audit log.
	Reason string
	// ForOrder, when not "", is the order whose stopped release the
	// correction is for: the audit entry is then also written under that
	// order, so its chain shows it.
	ForOrder string
	// Seen, when set, is the row as the operator saw it: a row that
	// changed since (an order locked or a release gave back meanwhile) is
	// refused with ErrChangedSince, so a count typed from a stale page
	// never overwrites what happened after it.
	Seen *CounterState
}

// CorrectCounter corrects one key of a counter type (stock, balance,
// points, quota, a declared type): its held and spent amounts go back to
// its ledger's, its available amount becomes fix.Available, in one
// transaction with an ADJUST row (trigger CORRECTION, qty available less
// the ledger's) and an audit entry that keeps the reason.
func (s *Store) CorrectCounter(ctx context.Context, t ResourceType, key string, fix CounterFix, actor string) (Correction, error) {
	available, reason, forOrder := fix.Available, fix.Reason, fix.ForOrder
	c, err := s.counterOf(t)
	if err != nil {
		return Correction{}, err
	}
	if !ValidKey(key) {
		return Correction{}, invalid("key must be 1-64 letters, digits or -_.:")
	}
	if most := c.mostAvailable(); available < 0 || available > most {
		return Correction{}, invalid("available must be from 0 to %d", most)
	}
	if reason, err = RerunReason(reason); err != nil {
		return Correction{}, err
	}
	if forOrder != "" && !ValidOrderNo(forOrder) {
		return Correction{}, invalid("order number %q: use 1-40 letters, digits, '-' or '_'", forOrder)
	}
	var out Correction
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		before, found, err := c.lock(tx, key)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: %s %s", ErrNotFound, t, key)
		}
		if seen := fix.Seen; seen != nil && *seen != before.state() {
			return fmt.Errorf("%w: %s %s has available %d, held %d, spent %d now, not the %d, %d, %d seen; read it again",
				ErrChangedSince, t, key, before.Avail, before.Held, before.Spent, seen.Available, seen.Locked, seen.Spent)
		}
		if err := checkFor(tx, forOrder, t, key); err != nil {
			return err
		}
		sum, err := c.keySum(tx, key)
		if err != nil {
			return err
		}
		if sum.Held < 0 || sum.Spent < 0 {
			return fmt.Errorf("%w: the ledger of %s %s sums to held %d, spent %d: it cannot be corrected to that; reconcile and ask an admin",
				ErrInvalid, t, key, sum.Held, sum.Spent)
		}
		after := counterRow{Avail: available, Held: sum.Held, Spent: sum.Spent, Expire: before.Expire}
		recorded := available - sum.Avail
		if after.state() == before.state() && recorded == 0 {
			return ErrNothingToCorrect
		}
		if total := after.Avail + after.Held + after.Spent; c.maxTotal > 0 && total > c.maxTotal {
			return fmt.Errorf("%w: %s %s would hold %d in all, more than %d", c.overflow, t, key, total, c.maxTotal)
		}
		op := Op{Kind: FlowAdjust, Key: key, Qty: recorded, Trigger: TriggerCorrection, Actor: actor, Now: now}
		if err := c.insertFlow(tx, op, before, after); err != nil {
			return err
		}
		// Guarded on what was read: the row is locked, so this only
		// catches a writer that did not take the lock.
		set, args := "", []any{after.Avail, after.Held, after.Spent}
		if c.typ == ResQuota {
			// An activity's total is what it holds in all, as its PUT sets it.
			set, args = ", total = ?", append(args, after.Avail+after.Held+after.Spent)
		}
		q := fmt.Sprintf("UPDATE %s SET %s = ?, %s = ?, %s = ?%s, updated_at = ? WHERE %s AND %s = ? AND %s = ? AND %s = ?",
			c.table, c.avail, c.held, c.spent, set, c.where(), c.avail, c.held, c.spent)
		args = append(append(args, now), c.keyArgs(key)...)
		res := tx.Exec(q, append(args, before.Avail, before.Held, before.Spent)...)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("%s %s changed under the correction", t, key)
		}
		detail := fmt.Sprintf("%s %s corrected: %s; ledger %s; recorded %+d; reason: %s",
			t, key, c.change(before, after), c.amounts(sum), recorded, reason)
		out = Correction{Before: before.state(), After: after.state(), Recorded: recorded}
		return s.auditCorrection(tx, c.target(key), forOrder, t, detail, actor, now)
	})
	if err != nil {
		return Correction{}, fmt.Errorf("correct %s %s: %w", t, key, err)
	}
	return out, nil
}

// CorrectMax is the most available amount a correction of a key of type t
// takes: see mostAvailable. 0 for a type that is not counted.
func (s *Store) CorrectMax(t ResourceType) int64 {
	c, err := s.counterOf(t)
	if err != nil {
		return 0
	}
	return c.mostAvailable()
}

// mostAvailable bounds what a correction sets available to. A counter
// with a bound on its total (an account: MaxBalance, which credits add up
// to) may hold that much; any other is set up to MaxAmount at a time, as
// its own set route takes.
func (c *counter) mostAvailable() int64 {
	if c.maxTotal > 0 {
		return c.maxTotal
	}
	return MaxAmount
}

// target is the audit target of one key: "sku:…" for stock (as set_stock
// writes), "type:key" otherwise.
func (c *counter) target(key string) string {
	if c.typ == ResInventory {
		return "sku:" + key
	}
	return string(c.typ) + ":" + key
}

// change says a row's change column by column, in the counter's own words.
func (c *counter) change(before, after counterRow) string {
	return fmt.Sprintf("%s %d → %d, %s %d → %d, %s %d → %d", c.avail, before.Avail, after.Avail,
		c.held, before.Held, after.Held, c.spent, before.Spent, after.Spent)
}

func (c *counter) amounts(r counterRow) string {
	return fmt.Sprintf("%s %d, %s %d, %s %d", c.avail, r.Avail, c.held, r.Held, c.spent, r.Spent)
}

// checkFor refuses a correction for an order (forOrder, "" for none) that
// never held the key: the entry written under it would put another key's
// change in that order's chain, and the page would offer its rerun.
func checkFor(tx *gorm.DB, forOrder string, t ResourceType, key string) error {
	if forOrder == "" {
		return nil
	}
	var n int64
	err := tx.Raw("SELECT COUNT(*) FROM order_holds WHERE order_no = ? AND resource_type = ? AND biz_key = ?", forOrder, t, key).
		Scan(&n).Error
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%w: order %s did not hold %s %s: the correction cannot be for it", ErrInvalid, forOrder, t, key)
	}
	return nil
}

// auditCorrection writes a correction's audit entry under its key and,
// for an order, under the order's type too.
func (s *Store) auditCorrection(tx *gorm.DB, target, forOrder string, t ResourceType, detail, actor string, now time.Time) error {
	if err := auditIn(tx, &AuditEntry{Actor: actor, Action: "correct", Target: target, Outcome: "ok", Detail: detail}, now); err != nil {
		return err
	}
	if forOrder == "" {
		return nil
	}
	return auditIn(tx, &AuditEntry{Actor: actor, Action: "correct", Target: "order:" + forOrder + "/" + string(t),
		Outcome: "ok", Detail: detail}, now)
}

// CouponLedger is a coupon's row beside the state its last ledger row left
// it in.
type CouponLedger struct {
	Coupon Coupon `json:"coupon"`
	// Status, OrderNo and ExpireAt are what the ledger says: the last
	// row's status and expiry, and, when that status holds the coupon
	// (LOCKED or USED), the order of the last row that names one.
	Status   CouponStatus `json:"ledger_status"`
	OrderNo  *string      `json:"ledger_order_no"`
	ExpireAt time.Time    `json:"ledger_expire_at"`
}

// Agrees tells whether the coupon is what its ledger says.
func (l CouponLedger) Agrees() bool {
	return l.Coupon.Status == l.Status && strOr(l.Coupon.OrderNo, "") == strOr(l.OrderNo, "") &&
		l.Coupon.ExpireAt.Equal(l.ExpireAt)
}

// CouponLedgerOf reads a coupon and its ledger's last word, from one
// snapshot.
func (s *Store) CouponLedgerOf(ctx context.Context, id int64) (CouponLedger, error) {
	var out CouponLedger
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = couponLedger(tx, id, "")
		return err
	})
	return out, err
}

// couponLedger reads coupon id (with lock, for a writer) and its ledger.
func couponLedger(tx *gorm.DB, id int64, lock string) (CouponLedger, error) {
	var rows []Coupon
	if err := tx.Raw("SELECT * FROM user_coupons WHERE id = ?"+lock, id).Scan(&rows).Error; err != nil {
		return CouponLedger{}, err
	}
	if len(rows) == 0 {
		return CouponLedger{}, fmt.Errorf("%w: coupon %d", ErrNotFound, id)
	}
	out := CouponLedger{Coupon: rows[0]}
	var last []struct {
		StatusAfter CouponStatus
		ExpireAfter *time.Time
	}
	err := tx.Raw(`SELECT status_after, expire_after FROM coupon_flows WHERE coupon_id = ? ORDER BY id DESC LIMIT 1`, id).
		Scan(&last).Error
	if err != nil {
		return CouponLedger{}, err
	}
	if len(last) == 0 || last[0].ExpireAfter == nil {
		return CouponLedger{}, fmt.Errorf("%w: coupon %d has no ledger row to go back to", ErrInvalid, id)
	}
	out.Status, out.ExpireAt = last[0].StatusAfter, *last[0].ExpireAfter
	if out.Status == CouponLocked || out.Status == CouponUsed {
		var holder []string
		err := tx.Raw(`SELECT order_no FROM coupon_flows WHERE coupon_id = ? AND order_no IS NOT NULL ORDER BY id DESC LIMIT 1`, id).
			Scan(&holder).Error
		if err != nil {
			return CouponLedger{}, err
		}
		if len(holder) == 0 {
			return CouponLedger{}, fmt.Errorf("%w: coupon %d's ledger says %s but names no order", ErrInvalid, id, out.Status)
		}
		out.OrderNo = &holder[0]
	}
	return out, nil
}

// CorrectCoupon puts a coupon back in the state its ledger left it in
// (status, holder and expiry), with an ADJUST row (trigger CORRECTION) and
// an audit entry that keeps reason; forOrder as CorrectCounter's. A ledger
// that says LOCKED by an order that holds the coupon no longer is
// ErrInvalid (see orderHoldsCoupon).
func (s *Store) CorrectCoupon(ctx context.Context, key, reason, forOrder, actor string) (CouponLedger, error) {
	id, err := strconv.ParseInt(key, 10, 64)
	if err != nil || id <= 0 {
		return CouponLedger{}, invalid("coupon id %q: use the coupon's number", key)
	}
	if reason, err = RerunReason(reason); err != nil {
		return CouponLedger{}, err
	}
	if forOrder != "" && !ValidOrderNo(forOrder) {
		return CouponLedger{}, invalid("order number %q: use 1-40 letters, digits, '-' or '_'", forOrder)
	}
	var out CouponLedger
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		l, err := couponLedger(tx, id, s.forUpdate())
		if err != nil {
			return err
		}
		if err := checkFor(tx, forOrder, ResCoupon, strconv.FormatInt(id, 10)); err != nil {
			return err
		}
		if l.Agrees() {
			return ErrNothingToCorrect
		}
		if l.Status == CouponLocked {
			holds, err := orderHoldsCoupon(tx, *l.OrderNo, id)
			if err != nil {
				return err
			}
			if !holds {
				return fmt.Errorf("%w: coupon %d's ledger says %s by %s, but %s holds it no longer (it is not PENDING, and no release of the coupon is unfinished): "+
					"put back, the coupon would be held for nothing that will ever release it; resolve the reconciliation ticket instead",
					ErrInvalid, id, l.Status, *l.OrderNo, *l.OrderNo)
			}
		}
		cp := l.Coupon
		err = tx.Exec(`INSERT INTO coupon_flows (order_no, coupon_id, user_id, owner, type, epoch, trigger_type,
			status_before, status_after, expire_before, expire_after, actor, created_at)
			VALUES (NULL, ?, ?, ?, 'ADJUST', 0, ?, ?, ?, ?, ?, ?, ?)`,
			cp.ID, cp.UserID, cp.Owner, TriggerCorrection, cp.Status, l.Status, cp.ExpireAt, l.ExpireAt, actor, now).Error
		if err != nil {
			return err
		}
		res := tx.Exec(`UPDATE user_coupons SET status = ?, order_no = ?, expire_at = ?, updated_at = ?
			WHERE id = ? AND status = ? AND `+nullableEq("order_no", cp.OrderNo),
			append([]any{l.Status, l.OrderNo, l.ExpireAt, now, cp.ID, cp.Status}, nullableArg(cp.OrderNo)...)...)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("coupon %d changed under the correction", id)
		}
		detail := fmt.Sprintf("coupon %d corrected: %s → %s; reason: %s", id, couponState(cp.Status, cp.OrderNo),
			couponState(l.Status, l.OrderNo), reason)
		out = l
		out.Coupon.Status, out.Coupon.OrderNo, out.Coupon.ExpireAt, out.Coupon.UpdatedAt = l.Status, l.OrderNo, l.ExpireAt, now
		return s.auditCorrection(tx, fmt.Sprintf("coupon:%d", id), forOrder, ResCoupon, detail, actor, now)
	})
	if err != nil {
		return CouponLedger{}, fmt.Errorf("correct coupon %s: %w", key, err)
	}
	return out, nil
}

// orderHoldsCoupon tells whether order no still holds coupon id as
// reconciliation expects a LOCKED coupon to be held: the order PENDING with
// its hold, or a release of the coupon unfinished. A coupon LOCKED by an
// order that holds it no longer (closed, its release finished or
// abandoned) is a release missed for good.
func orderHoldsCoupon(tx *gorm.DB, no string, id int64) (bool, error) {
	key := strconv.FormatInt(id, 10)
	var n int64
	err := tx.Raw(`SELECT (SELECT COUNT(*) FROM order_holds h JOIN orders o ON o.order_no = h.order_no
			WHERE h.order_no = ? AND h.resource_type = ? AND h.biz_key = ? AND o.status = 'PENDING')
		+ (SELECT COUNT(*) FROM release_tasks WHERE order_no = ? AND resource_type = ? AND biz_key = ?
			AND status IN ('PENDING','RETRY','MANUAL'))`, no, ResCoupon, key, no, ResCoupon, key).Scan(&n).Error
	return n > 0, err
}

func couponState(st CouponStatus, order *string) string {
	if order == nil {
		return string(st)
	}
	return string(st) + " by " + *order
}

// nullableEq is "col = ?" or "col IS NULL", for a guard on a value that
// may be NULL; nullableArg its argument.
func nullableEq(col string, v *string) string {
	if v == nil {
		return col + " IS NULL"
	}
	return col + " = ?"
}

func nullableArg(v *string) []any {
	if v == nil {
		return nil
	}
	return []any{*v}
}
