package models

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"gorm.io/gorm"
)

// This file is the SKU's stock model (deduct at order or at payment) and
// the per-user limits of SKUs and activities (docs/stock-models.md).

// skuPolicy is what placement reads of one SKU: its stock model, what is
// available now, and its per-user limit.
type skuPolicy struct {
	SkuID         string
	DeductAt      DeductAt
	Available     int64
	PerUserOrders int64
	WindowS       int64 `gorm:"column:window_s"`
}

// preparePlacement runs inside a placement's transaction before anything is
// written: it refuses the order when it passes a per-user limit of one of
// its SKUs or its activity (ErrUserLimit), and returns the SKUs of its lines
// deducted at payment, which hold nothing. Such a line is still refused when
// the SKU has not that much available now, as a lock would be, though
// nothing is taken. The rows are read with SELECT *: the migration tests
// place orders on schemas older than these columns, which then read as
// deducted at placement, no limit.
func (s *Store) preparePlacement(tx *gorm.DB, userID string, hs []Hold, now time.Time) (map[string]bool, error) {
	var skus []string
	for _, h := range hs {
		if h.ResourceType == ResInventory {
			skus = append(skus, h.BizKey)
		}
	}
	pol := map[string]skuPolicy{}
	if len(skus) > 0 {
		var rows []skuPolicy
		if err := tx.Raw("SELECT * FROM inventory WHERE sku_id IN ?", skus).Scan(&rows).Error; err != nil {
			return nil, err
		}
		for _, r := range rows {
			pol[r.SkuID] = r
		}
	}
	// hs is sorted by (type, key), so every placement takes the limits'
	// locks in one order.
	atPayment := map[string]bool{}
	for _, h := range hs {
		var lim UserLimit
		switch h.ResourceType {
		case ResInventory:
			p, ok := pol[h.BizKey]
			if !ok {
				continue // the lock answers RESOURCE_NOT_FOUND
			}
			if p.DeductAt == DeductAtPayment {
				if p.Available < h.Qty {
					return nil, fmt.Errorf("%w: inventory %s has %d, asks %d (deducted at payment: nothing is held)",
						ErrInsufficientStock, h.BizKey, p.Available, h.Qty)
				}
				atPayment[h.BizKey] = true
			}
			lim = UserLimit{PerUserOrders: p.PerUserOrders, WindowS: p.WindowS}
		case ResQuota:
			var rows []UserLimit
			if err := tx.Raw("SELECT * FROM activity_quotas WHERE activity_id = ?", h.BizKey).Scan(&rows).Error; err != nil {
				return nil, err
			}
			if len(rows) == 1 {
				lim = rows[0]
			}
		}
		if lim.PerUserOrders > 0 {
			if err := s.checkUserLimit(tx, userID, h.ResourceType, h.BizKey, lim, now); err != nil {
				return nil, err
			}
		}
	}
	return atPayment, nil
}

// markAtPayment makes a line just written deducted at payment: it holds
// nothing (qty 0) and remembers what it ordered for the payment to take.
func markAtPayment(tx *gorm.DB, h *Hold) error {
	err := tx.Exec("UPDATE order_holds SET deduct_at = ?, ordered = qty, qty = 0 WHERE id = ?", DeductAtPayment, h.ID).Error
	if err != nil {
		return err
	}
	h.DeductAt, h.Ordered, h.Qty = DeductAtPayment, h.Qty, 0
	return nil
}

// checkUserLimit refuses a placement when the user has placed lim's number
// of orders of key within its window, whatever became of them: counting
// only open orders would let a scalper cancel and place again at will. Two
// placements of one user at once would both count the same orders, so on
// PostgreSQL each takes a transaction-scoped advisory lock on (user, type,
// key) first and the second counts after the first commits; SQLite runs
// one write at a time. The count reads orders by (user_id, created_at) and
// each one's hold by its unique key.
func (s *Store) checkUserLimit(tx *gorm.DB, userID string, t ResourceType, key string, lim UserLimit, now time.Time) error {
	if s.Dialect == Postgres {
		if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", limitLockID(userID, t, key)).Error; err != nil {
			return err
		}
	}
	window := time.Duration(lim.WindowS) * time.Second
	var placed []time.Time
	err := tx.Raw(`SELECT o.created_at FROM orders o
		JOIN order_holds h ON h.order_no = o.order_no AND h.resource_type = ? AND h.biz_key = ?
		WHERE o.user_id = ? AND o.created_at > ? ORDER BY o.created_at`, t, key, userID, now.Add(-window)).
		Scan(&placed).Error
	if err != nil {
		return err
	}
	n := int64(len(placed))
	if n < lim.PerUserOrders {
		return nil
	}
	// The user may place again once enough of these are older than the window.
	frees := placed[n-lim.PerUserOrders].Add(window)
	return fmt.Errorf("%w: user %s placed %d orders of %s %s in the last %ds, the limit is %d; the next is allowed from %s",
		ErrUserLimit, userID, n, t, key, lim.WindowS, lim.PerUserOrders, stamp(frees))
}

// limitLockID is the advisory lock of one user's limit on one key: a hash,
// so two keys may share a lock, which only serialises them needlessly.
func limitLockID(userID string, t ResourceType, key string) int64 {
	h := fnv.New64a()
	for _, p := range []string{"user_limit", userID, string(t), key} {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// errStockGone is a payment that found the stock of a line deducted at
// payment gone.
var errStockGone = errors.New("stock deducted at payment is gone")

// awaitingPayment reads the lines of an order deducted at payment that
// its payment has not taken and that still order something, sorted as
// placement locks them.
func (s *Store) awaitingPayment(tx *gorm.DB, orderNo string) ([]Hold, error) {
	var hs []Hold
	// Every hold, filtered here: a schema older than deduct_at reads none.
	if err := tx.Where("order_no = ?", orderNo).Find(&hs).Error; err != nil {
		return nil, err
	}
	sortHolds(hs)
	return slices.DeleteFunc(hs, func(h Hold) bool { return !h.takesAtPayment() }), nil
}

// takeLine takes the stock of one line deducted at payment, in the
// payment's transaction: the line's qty becomes what it ordered, then a
// LOCK and a DEDUCT row under the payment's trigger move it available →
// locked → sold, so nothing was ever held while the order was unpaid, and
// the ledger's sums and every check of held stock stay as they are. When
// the SKU has not that much available, it fails with errStockGone (and
// ErrInsufficientStock).
func (s *Store) takeLine(tx *gorm.DB, h Hold, userID string, trig Trigger, epoch int) error {
	res := tx.Exec("UPDATE order_holds SET qty = ordered WHERE id = ? AND deduct_at = ? AND qty = 0", h.ID, DeductAtPayment)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("%w: order %s line %s was taken meanwhile", errStateMismatch, h.OrderNo, h.BizKey)
	}
	op := Op{Kind: FlowLock, OrderNo: h.OrderNo, UserID: userID, Key: h.BizKey, Qty: h.Ordered,
		Trigger: trig, Epoch: epoch, Actor: "channel", Now: s.Now()}
	// The lock goes to the counter alone: apply reads a LOCK of a late
	// payment (epoch 1) as taking back a release, and this line released
	// nothing.
	if err := s.resources[ResInventory].Apply(tx, op); err != nil {
		if isBusinessRefusal(err) {
			return fmt.Errorf("%w: %w", errStockGone, err)
		}
		return err
	}
	op.Kind = FlowDeduct
	return s.apply(tx, ResInventory, op)
}

// payStockGone settles a PENDING order whose payment found the stock of a
// line deducted at payment gone (cause): the payment's deductions were
// rolled back, and the order takes the refund branch of a late payment that
// could not take its holds back: CLOSED, its other holds released through
// the outbox, then REFUND_PENDING with a note, nothing deducted. The order's
// row is the payment's since its PAID update, so no close or other payment
// sees the steps between; PENDING again is only the way into closeOrders.
func (s *Store) payStockGone(tx *gorm.DB, orderNo string, cause error) (PayResult, error) {
	now := s.Now()
	res := tx.Exec("UPDATE orders SET status = 'PENDING' WHERE order_no = ? AND status = 'PAID'", orderNo)
	if res.Error != nil {
		return PayResult{}, res.Error
	}
	won, _, err := s.closeOrders(tx, []string{orderNo}, TriggerStockGone)
	if err != nil {
		return PayResult{}, err
	}
	if res.RowsAffected != 1 || len(won) != 1 {
		return PayResult{}, fmt.Errorf("%w: order %s changed under its payment", errStateMismatch, orderNo)
	}
	note := clip("payment found the stock gone, nothing was deducted; refund the payment: "+cause.Error(), 500)
	err = tx.Exec(`UPDATE orders SET status = 'REFUND_PENDING', note = ?, updated_at = ? WHERE order_no = ? AND status = 'CLOSED'`,
		note, now, orderNo).Error
	if err != nil {
		return PayResult{}, err
	}
	return PayResult{Status: OrderRefundPending, Note: note}, nil
}
