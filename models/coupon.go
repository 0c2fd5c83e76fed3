package models

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"gorm.io/gorm"
)

// Coupon is one user coupon. A coupon is held by one order at a time.
type Coupon struct {
	ID        int64        `json:"id"`
	UserID    string       `json:"user_id"`
	Owner     CouponOwner  `json:"owner"`
	Status    CouponStatus `json:"status"`
	OrderNo   *string      `json:"order_no"`
	ExpireAt  time.Time    `json:"expire_at"`
	CreatedAt time.Time    `json:"created_at"`
	UpdatedAt time.Time    `json:"updated_at"`
}

// TableName is the coupon table.
func (Coupon) TableName() string { return "user_coupons" }

// couponResource holds coupons: UNUSED → LOCKED → USED; a release returns a
// LOCKED coupon to UNUSED (or EXPIRED) under the configured expiry policy.
// Its ledger keeps the cost bearer on every row so PLATFORM and MERCHANT
// flows can be told apart.
type couponResource struct{ s *Store }

func (c *couponResource) Type() ResourceType { return ResCoupon }

func (c *couponResource) Kind() ResourceKind { return KindSingle }

func (c *couponResource) MaxQty() int64 { return 1 }

// UserKeyed is false: a coupon's key is its id; LOCK checks its owner.
func (c *couponResource) UserKeyed() bool { return false }

func (c *couponResource) Side() string { return "" }

func (c *couponResource) Page(key string) string { return "/coupons?coupon=" + url.QueryEscape(key) }

func (c *couponResource) Ledger() LedgerSpec {
	return LedgerSpec{Table: "coupon_flows", Key: "CAST(f.coupon_id AS TEXT)", Qty: "1", Owner: "f.owner",
		Owners: []string{string(CouponPlatform), string(CouponMerchant)}}
}

func (c *couponResource) ReleaseDelay(*gorm.DB, string) (time.Duration, error) { return 0, nil }

func (c *couponResource) reconcileKeys(db *gorm.DB, keys []string, pending, tasks map[ResourceKey]keyTotals) ([]Diff, error) {
	return reconcileSingleKeys(db, ResCoupon, keys, pending, tasks,
		"SELECT CAST(id AS TEXT) AS k, status FROM user_coupons WHERE id IN ?", string(CouponLocked), couponIDs)
}

func (c *couponResource) lock(tx *gorm.DB, key string) (*Coupon, error) {
	id, err := strconv.ParseInt(key, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: coupon id %q", ErrCouponUnavailable, key)
	}
	var rows []Coupon
	if err := tx.Raw("SELECT * FROM user_coupons WHERE id = ?"+c.s.forUpdate(), id).Scan(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return &rows[0], nil
}

func (c *couponResource) Apply(tx *gorm.DB, op Op) error {
	cp, err := c.lock(tx, op.Key)
	if err != nil {
		return err
	}
	if cp == nil {
		if op.Kind == FlowLock {
			return fmt.Errorf("%w: coupon %s does not exist", ErrCouponUnavailable, op.Key)
		}
		return fmt.Errorf("%w: coupon %s", errMissing, op.Key)
	}
	heldBy := cp.OrderNo != nil && *cp.OrderNo == op.OrderNo
	newStatus, newOrder, newExpire := cp.Status, any(op.OrderNo), cp.ExpireAt
	// refusal is why the data does not allow op; it is returned only after
	// the ledger insert, so a repeat is told as a duplicate first.
	var refusal error
	var cond string
	var condArgs []any
	switch {
	case op.Kind == FlowLock && op.Epoch == 0:
		newStatus = CouponLocked
		if cp.UserID != op.UserID || cp.Status != CouponUnused || !cp.ExpireAt.After(op.Now) {
			refusal = fmt.Errorf("%w: coupon %s is %s, expires %s", ErrCouponUnavailable, op.Key, cp.Status, cp.ExpireAt.Format(time.RFC3339))
		}
		cond, condArgs = "status = 'UNUSED' AND order_no IS NULL AND user_id = ? AND expire_at > ?", []any{op.UserID, op.Now}
	case op.Kind == FlowLock:
		// A late payment takes back a coupon it returned, expired or not:
		// the customer paid with it.
		newStatus = CouponLocked
		if cp.UserID != op.UserID || cp.OrderNo != nil || (cp.Status != CouponUnused && cp.Status != CouponExpired) {
			refusal = fmt.Errorf("%w: coupon %s is %s", ErrCouponUnavailable, op.Key, cp.Status)
		}
		cond, condArgs = "status IN ('UNUSED','EXPIRED') AND order_no IS NULL", nil
	case op.Kind == FlowDeduct || op.Kind == FlowRelease:
		if cp.Status != CouponLocked || !heldBy {
			refusal = fmt.Errorf("%w: coupon %s is %s, held by %v, not by order %s", errStateMismatch, op.Key, cp.Status, strOr(cp.OrderNo, "nobody"), op.OrderNo)
		}
		cond, condArgs = "status = 'LOCKED' AND order_no = ?", []any{op.OrderNo}
		if op.Kind == FlowDeduct {
			newStatus = CouponUsed
		} else {
			newStatus, newOrder, newExpire = c.returned(cp.ExpireAt, op.Now)
		}
	case op.Kind == FlowRefund:
		// The whole order was refunded: the coupon it spent comes back,
		// under the coupon expiry policy, as a released one does.
		if cp.Status != CouponUsed || !heldBy {
			refusal = fmt.Errorf("%w: coupon %s is %s, held by %v, not used by order %s", errStateMismatch, op.Key, cp.Status, strOr(cp.OrderNo, "nobody"), op.OrderNo)
		}
		cond, condArgs = "status = 'USED' AND order_no = ?", []any{op.OrderNo}
		newStatus, newOrder, newExpire = c.returned(cp.ExpireAt, op.Now)
	default:
		return fmt.Errorf("coupon: unsupported op %s", op.Kind)
	}
	res := tx.Exec(`INSERT INTO coupon_flows (order_no, coupon_id, user_id, owner, type, epoch, trigger_type,
		status_before, status_after, expire_before, expire_after, actor, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (coupon_id, order_no, type, epoch) DO NOTHING`,
		op.OrderNo, cp.ID, cp.UserID, cp.Owner, op.Kind, op.Epoch, op.Trigger,
		cp.Status, newStatus, cp.ExpireAt, newExpire, op.Actor, op.Now)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: coupon %s %s of order %s", errDuplicate, op.Key, op.Kind, op.OrderNo)
	}
	if refusal != nil {
		return refusal
	}
	args := append([]any{newStatus, newOrder, newExpire, op.Now, cp.ID}, condArgs...)
	res = tx.Exec("UPDATE user_coupons SET status = ?, order_no = ?, expire_at = ?, updated_at = ? WHERE id = ? AND "+cond, args...)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		if op.Kind == FlowLock {
			return fmt.Errorf("%w: coupon %s", ErrCouponUnavailable, op.Key)
		}
		return fmt.Errorf("%w: coupon %s changed under the release", errStateMismatch, op.Key)
	}
	return nil
}

// returned is what a released coupon becomes under the expiry policy: with
// extend its expiry moves to at least now + N days; with keep a coupon past
// its expiry comes back EXPIRED.
func (c *couponResource) returned(expire, now time.Time) (CouponStatus, any, time.Time) {
	if floor, extend := c.s.coupons.extendFloor(now); extend && expire.Before(floor) {
		expire = floor
	}
	if !expire.After(now) {
		return CouponExpired, nil, expire
	}
	return CouponUnused, nil, expire
}

func (c *couponResource) Flows(db *gorm.DB, orderNo string) ([]Flow, error) {
	var flows []Flow
	err := db.Raw(`SELECT id, order_no, CAST(coupon_id AS TEXT) AS biz_key, type, epoch, trigger_type AS trigger,
		1 AS qty, status_before, status_after, owner, actor, created_at
		FROM coupon_flows WHERE order_no = ? ORDER BY id`, orderNo).Scan(&flows).Error
	if err != nil {
		return nil, fmt.Errorf("coupon flows of %s: %w", orderNo, err)
	}
	for i := range flows {
		flows[i].ResourceType = ResCoupon
	}
	return flows, nil
}

// Reconcile finds coupons LOCKED without a PENDING order or an unfinished
// task behind them (missed release), and coupons that should be held but
// are not (double release or rolled-back state).
func (c *couponResource) Reconcile(ctx context.Context, db *gorm.DB) ([]Diff, error) {
	diffs, err := reconcileSingles(ctx, db, ResCoupon,
		"SELECT CAST(id AS TEXT) AS k FROM user_coupons WHERE status = 'LOCKED'")
	if err != nil {
		return nil, err
	}
	if err := c.s.betweenReads(); err != nil {
		return nil, err
	}
	more, err := reconcileStates(ctx, db, ResCoupon,
		`SELECT CAST(c.id AS TEXT) AS k FROM user_coupons c LEFT JOIN orders o ON o.order_no = c.order_no
			WHERE c.status = 'USED' AND (o.status IS NULL OR o.status NOT IN `+paidStatusesSQL+`)`,
		`SELECT CAST(c.id AS TEXT) AS k, c.status AS now, f.status_after AS ledger FROM user_coupons c
			JOIN coupon_flows f ON f.id = (SELECT MAX(id) FROM coupon_flows WHERE coupon_id = c.id)
			WHERE f.status_after <> c.status`,
		func(st string) bool { return st == string(CouponLocked) || st == string(CouponUsed) })
	return append(diffs, more...), err
}

// reconcileStates runs the status checks of resources held one at a time:
// USED_UNPAID (consumed for an order that is not PAID, as if never
// released), and LEDGER_STATUS (the status is not what the last ledger row
// left: a hand edit). A status diff counts 1 for "held" (held(status)) and 0
// for free; when both sides are held or both free it counts expected 0,
// actual 1.
func reconcileStates(ctx context.Context, db *gorm.DB, t ResourceType, unpaidQuery, ledgerQuery string, held func(string) bool) ([]Diff, error) {
	var unpaid []string
	if err := db.WithContext(ctx).Raw(unpaidQuery).Scan(&unpaid).Error; err != nil {
		return nil, fmt.Errorf("reconcile %s unpaid: %w", t, err)
	}
	var diffs []Diff
	for _, k := range unpaid {
		diffs = append(diffs, Diff{Resource: t, Key: k, Check: CheckUsedUnpaid, Expected: 0, Actual: 1})
	}
	var rows []struct{ K, Now, Ledger string }
	if err := db.WithContext(ctx).Raw(ledgerQuery).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("reconcile %s ledger: %w", t, err)
	}
	count := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	for _, r := range rows {
		want, got := count(held(r.Ledger)), count(held(r.Now))
		if want == got {
			want, got = 0, 1
		}
		diffs = append(diffs, Diff{Resource: t, Key: r.K, Check: CheckLedgerStatus, Expected: want, Actual: got})
	}
	return diffs, nil
}

// reconcileSingles compares keys held one at a time (coupons, slots) with the
// keys that PENDING orders and unfinished release tasks say are held. One
// statement, so both sides come from one snapshot even while work runs.
func reconcileSingles(ctx context.Context, db *gorm.DB, t ResourceType, heldQuery string) ([]Diff, error) {
	type row struct {
		K                string
		Expected, Actual int64
	}
	var rows []row
	err := db.WithContext(ctx).Raw(`SELECT k, SUM(e) AS expected, SUM(a) AS actual FROM (
			SELECT k, 0 AS e, 1 AS a FROM (`+heldQuery+`) held
			UNION ALL
			SELECT h.biz_key, 1, 0 FROM order_holds h JOIN orders o ON o.order_no = h.order_no
				WHERE h.resource_type = ? AND o.status = 'PENDING'
			UNION ALL
			SELECT biz_key, 1, 0 FROM release_tasks WHERE resource_type = ? AND status IN ('PENDING','RETRY','MANUAL')
		) x GROUP BY k HAVING SUM(e) <> SUM(a) ORDER BY k`, t, t).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("reconcile %s: %w", t, err)
	}
	diffs := make([]Diff, 0, len(rows))
	for _, r := range rows {
		diffs = append(diffs, Diff{Resource: t, Key: r.K, Check: CheckHeld, Expected: r.Expected, Actual: r.Actual})
	}
	return diffs, nil
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
