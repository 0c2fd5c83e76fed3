package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// SKU is one inventory row.
type SKU struct {
	SkuID         string    `json:"sku_id"`
	Available     int64     `json:"available"`
	Locked        int64     `json:"locked"`
	Sold          int64     `json:"sold"`
	ReleaseDelayS int64     `json:"release_delay_s" gorm:"column:release_delay_s"`
	DeductAt      DeductAt  `json:"deduct_at" gorm:"default:order"`
	PerUserOrders int64     `json:"per_user_orders" gorm:"default:0"`
	WindowS       int64     `json:"window_s" gorm:"column:window_s;default:0"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// TableName is the inventory table.
func (SKU) TableName() string { return "inventory" }

// UserLimit is how many orders one user may place of a SKU or an activity
// within a window; the zero value is no limit.
type UserLimit struct {
	PerUserOrders int64 `json:"per_user_orders"`
	WindowS       int64 `json:"window_s"`
}

// MaxLimitWindowS bounds a user limit's window, so that a placement's count
// never reads more than 30 days of one user's orders.
const MaxLimitWindowS = 30 * 86400

func (l UserLimit) validate() error {
	if l == (UserLimit{}) {
		return nil
	}
	if l.PerUserOrders < 1 || l.PerUserOrders > MaxQty {
		return invalid("per_user_orders must be from 1 to %d (or leave the limit out)", MaxQty)
	}
	if l.WindowS < 1 || l.WindowS > MaxLimitWindowS {
		return invalid("window_s must be from 1 to %d", MaxLimitWindowS)
	}
	return nil
}

// SKUSettings are what a SKU's PUT sets beside its stock.
type SKUSettings struct {
	ReleaseDelayS int64
	DeductAt      DeductAt // "" is DeductAtOrder
	Limit         UserLimit
}

// SetStock makes a SKU's available stock equal to available (creating the
// SKU when new) and sets its release delay, leaving its stock model and
// limit as they are.
func (s *Store) SetStock(ctx context.Context, skuID string, available, releaseDelayS int64, actor string) (*SKU, error) {
	return s.setSKU(ctx, skuID, available, SKUSettings{ReleaseDelayS: releaseDelayS}, false, actor)
}

// SetSKU makes a SKU's available stock equal to available (creating the SKU
// when new) and sets all its settings. The stock change is an ADJUST ledger
// row, so the ledger still sums to available + locked + sold. A new stock
// model applies to orders placed from then on: each order's line keeps the
// model it was placed under.
func (s *Store) SetSKU(ctx context.Context, skuID string, available int64, set SKUSettings, actor string) (*SKU, error) {
	return s.setSKU(ctx, skuID, available, set, true, actor)
}

func (s *Store) setSKU(ctx context.Context, skuID string, available int64, set SKUSettings, all bool, actor string) (*SKU, error) {
	if !ValidKey(skuID) {
		return nil, invalid("sku_id must be 1-64 letters, digits or -_.:")
	}
	if available < 0 || available > MaxAmount {
		return nil, invalid("available must be from 0 to %d", int64(MaxAmount))
	}
	if set.ReleaseDelayS < 0 || set.ReleaseDelayS > 86400 {
		return nil, invalid("release_delay_s must be from 0 to 86400")
	}
	if set.DeductAt == "" {
		set.DeductAt = DeductAtOrder
	}
	if _, err := ParseDeductAt(string(set.DeductAt)); err != nil {
		return nil, err
	}
	if err := set.Limit.validate(); err != nil {
		return nil, err
	}
	c := s.resources[ResInventory].(*counter)
	var out SKU
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Only the columns every schema version has: tests of older
		// migrations set stock too.
		err := tx.Exec("INSERT INTO inventory (sku_id, available, locked, sold, release_delay_s, updated_at) VALUES (?, 0, 0, 0, 0, ?) ON CONFLICT DO NOTHING",
			skuID, now).Error
		if err != nil {
			return err
		}
		cur, _, err := c.lock(tx, skuID)
		if err != nil {
			return err
		}
		if _, err := c.adjust(tx, skuID, available-cur.Avail, actor, now); err != nil {
			return err
		}
		cols := map[string]any{"release_delay_s": set.ReleaseDelayS}
		detail := fmt.Sprintf("available %d → %d, release delay %ds", cur.Avail, available, set.ReleaseDelayS)
		if all {
			cols["deduct_at"], cols["per_user_orders"], cols["window_s"] = set.DeductAt, set.Limit.PerUserOrders, set.Limit.WindowS
			detail += fmt.Sprintf(", deducted at %s, limit %s", set.DeductAt, set.Limit)
		}
		if err := tx.Model(&SKU{}).Where("sku_id = ?", skuID).Updates(cols).Error; err != nil {
			return err
		}
		if err := auditIn(tx, &AuditEntry{Actor: actor, Action: "set_stock", Target: "sku:" + skuID, Outcome: "ok",
			Detail: detail}, now); err != nil {
			return err
		}
		return tx.Where("sku_id = ?", skuID).Take(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("set stock %s: %w", skuID, err)
	}
	return &out, nil
}

// String says the limit as people read it.
func (l UserLimit) String() string {
	if l == (UserLimit{}) {
		return "none"
	}
	return fmt.Sprintf("%d orders a user per %ds", l.PerUserOrders, l.WindowS)
}

// GetSKU reads one SKU.
func (s *Store) GetSKU(ctx context.Context, skuID string) (*SKU, error) {
	var out SKU
	return &out, take(s.R.WithContext(ctx).Where("sku_id = ?", skuID), &out, "sku "+skuID)
}

func take(q *gorm.DB, dst any, what string) error {
	err := q.Take(dst).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, what)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// CreateCoupon issues an UNUSED coupon to a user.
func (s *Store) CreateCoupon(ctx context.Context, userID string, owner CouponOwner, expireAt time.Time, actor string) (*Coupon, error) {
	if !ValidKey(userID) {
		return nil, invalid("user_id must be 1-64 letters, digits or -_.:")
	}
	if _, err := ParseCouponOwner(string(owner)); err != nil {
		return nil, err
	}
	now := s.Now()
	if !expireAt.After(now) {
		return nil, invalid("expire_at must be in the future")
	}
	cp := &Coupon{UserID: userID, Owner: owner, Status: CouponUnused, ExpireAt: expireAt.UTC().Truncate(time.Microsecond), CreatedAt: now, UpdatedAt: now}
	err := s.write(ctx, func(tx *gorm.DB) error {
		if err := tx.Create(cp).Error; err != nil {
			return err
		}
		err := tx.Exec(`INSERT INTO coupon_flows (order_no, coupon_id, user_id, owner, type, epoch, trigger_type,
			status_before, status_after, expire_before, expire_after, actor, created_at)
			VALUES (NULL, ?, ?, ?, 'ADJUST', 0, ?, '', 'UNUSED', NULL, ?, ?, ?)`,
			cp.ID, cp.UserID, cp.Owner, TriggerSetup, cp.ExpireAt, actor, now).Error
		if err != nil {
			return err
		}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "coupon_create", Target: fmt.Sprintf("coupon:%d", cp.ID),
			Outcome: "ok", Detail: fmt.Sprintf("%s coupon for %s, expires %s", cp.Owner, cp.UserID, stamp(cp.ExpireAt))}, now)
	})
	if err != nil {
		return nil, fmt.Errorf("create coupon: %w", err)
	}
	return cp, nil
}

// GetCoupon reads one coupon.
func (s *Store) GetCoupon(ctx context.Context, id int64) (*Coupon, error) {
	var out Coupon
	return &out, take(s.R.WithContext(ctx).Where("id = ?", id), &out, fmt.Sprintf("coupon %d", id))
}

// AccountAsset is one asset of one account.
type AccountAsset struct {
	UID       string `json:"-" gorm:"column:uid"`
	Asset     Asset  `json:"-"`
	Available int64  `json:"available"`
	Frozen    int64  `json:"frozen"`
	Spent     int64  `json:"spent"`
	// ExpireAt is when the account's points expire; nil for points that
	// never do, and always for a balance.
	ExpireAt  *time.Time `json:"expire_at,omitempty"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// TableName is the account table.
func (AccountAsset) TableName() string { return "accounts" }

// Credit adds amount of asset to a user's available balance (ADJUST row).
// A points account's expiry stays as it is.
func (s *Store) Credit(ctx context.Context, uid string, asset Asset, amount int64, actor string) (*AccountAsset, error) {
	return s.credit(ctx, uid, asset, amount, nil, actor)
}

// CreditUntil is Credit of points that are valid until until: the
// account's expiry becomes until if that is later (rolling; see
// counter.adjustUntil). A balance never expires, and until must be in the
// future.
func (s *Store) CreditUntil(ctx context.Context, uid string, asset Asset, amount int64, until time.Time, actor string) (*AccountAsset, error) {
	if asset != AssetPoints {
		return nil, invalid("expire_at is for POINTS only: a %s never expires", asset)
	}
	until = until.UTC().Truncate(time.Microsecond)
	if now := s.Now(); !until.After(now) {
		return nil, invalid("expire_at must be in the future, not %s (now is %s)", until.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	return s.credit(ctx, uid, asset, amount, &until, actor)
}

func (s *Store) credit(ctx context.Context, uid string, asset Asset, amount int64, until *time.Time, actor string) (*AccountAsset, error) {
	if !ValidKey(uid) {
		return nil, invalid("uid must be 1-64 letters, digits or -_.:")
	}
	if _, err := ParseAsset(string(asset)); err != nil {
		return nil, err
	}
	if amount <= 0 || amount > MaxAmount {
		return nil, invalid("amount must be from 1 to %d", int64(MaxAmount))
	}
	t := assetResource(asset)
	var out AccountAsset
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&AccountAsset{UID: uid, Asset: asset, UpdatedAt: now}).Error; err != nil {
			return err
		}
		if _, err := s.resources[t].(*counter).adjustUntil(tx, uid, amount, until, actor, now); err != nil {
			return err
		}
		detail := fmt.Sprintf("%s +%d", asset, amount)
		if until != nil {
			detail += ", valid until " + until.Format(time.RFC3339)
		}
		if err := auditIn(tx, &AuditEntry{Actor: actor, Action: "credit", Target: "account:" + uid, Outcome: "ok",
			Detail: detail}, now); err != nil {
			return err
		}
		return tx.Where("uid = ? AND asset = ?", uid, asset).Take(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("credit %s %s: %w", uid, asset, err)
	}
	return &out, nil
}

// GetAccount reads every asset of one account.
func (s *Store) GetAccount(ctx context.Context, uid string) (map[Asset]AccountAsset, error) {
	var rows []AccountAsset
	if err := s.R.WithContext(ctx).Where("uid = ?", uid).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read account %s: %w", uid, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: account %s", ErrNotFound, uid)
	}
	out := map[Asset]AccountAsset{}
	for _, r := range rows {
		out[r.Asset] = r
	}
	return out, nil
}

// Activity is one activity's quota.
type Activity struct {
	ActivityID    string    `json:"activity_id"`
	Total         int64     `json:"total"`
	Available     int64     `json:"available"`
	Locked        int64     `json:"locked"`
	Used          int64     `json:"used"`
	PerUserOrders int64     `json:"per_user_orders" gorm:"default:0"`
	WindowS       int64     `json:"window_s" gorm:"column:window_s;default:0"`
	ReleaseDelayS int64     `json:"release_delay_s" gorm:"column:release_delay_s;default:0"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// TableName is the quota table.
func (Activity) TableName() string { return "activity_quotas" }

// ActivitySettings are what an activity's PUT sets beside its total.
type ActivitySettings struct {
	ReleaseDelayS int64
	Limit         UserLimit
}

// SetActivity makes an activity's total quota equal to total (creating it
// when new), leaving its limit and release delay as they are.
func (s *Store) SetActivity(ctx context.Context, id string, total int64, actor string) (*Activity, error) {
	return s.setActivity(ctx, id, total, ActivitySettings{}, false, actor)
}

// SetActivityWith makes an activity's total quota equal to total (creating
// it when new) and sets its per-user limit and release delay. The total
// cannot drop below what is locked and used.
func (s *Store) SetActivityWith(ctx context.Context, id string, total int64, set ActivitySettings, actor string) (*Activity, error) {
	return s.setActivity(ctx, id, total, set, true, actor)
}

func (s *Store) setActivity(ctx context.Context, id string, total int64, set ActivitySettings, all bool, actor string) (*Activity, error) {
	if !ValidKey(id) {
		return nil, invalid("activity id must be 1-64 letters, digits or -_.:")
	}
	if total < 0 || total > MaxAmount {
		return nil, invalid("total must be from 0 to %d", int64(MaxAmount))
	}
	if set.ReleaseDelayS < 0 || set.ReleaseDelayS > 86400 {
		return nil, invalid("release_delay_s must be from 0 to 86400")
	}
	if err := set.Limit.validate(); err != nil {
		return nil, err
	}
	c := s.resources[ResQuota].(*counter)
	var out Activity
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		err := tx.Exec("INSERT INTO activity_quotas (activity_id, total, available, locked, used, updated_at) VALUES (?, 0, 0, 0, 0, ?) ON CONFLICT DO NOTHING",
			id, now).Error
		if err != nil {
			return err
		}
		cur, _, err := c.lock(tx, id)
		if err != nil {
			return err
		}
		if total < cur.Held+cur.Spent {
			return fmt.Errorf("%w: activity %s has %d locked and %d used", ErrStockBelowHeld, id, cur.Held, cur.Spent)
		}
		if _, err := c.adjust(tx, id, total-cur.Held-cur.Spent-cur.Avail, actor, now); err != nil {
			return err
		}
		cols := map[string]any{"total": total}
		detail := fmt.Sprintf("total %d", total)
		if all {
			cols["per_user_orders"], cols["window_s"], cols["release_delay_s"] = set.Limit.PerUserOrders, set.Limit.WindowS, set.ReleaseDelayS
			detail += fmt.Sprintf(", release delay %ds, limit %s", set.ReleaseDelayS, set.Limit)
		}
		if err := tx.Model(&Activity{}).Where("activity_id = ?", id).Updates(cols).Error; err != nil {
			return err
		}
		if err := auditIn(tx, &AuditEntry{Actor: actor, Action: "activity_set", Target: "activity:" + id, Outcome: "ok",
			Detail: detail}, now); err != nil {
			return err
		}
		return tx.Where("activity_id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, fmt.Errorf("set activity %s: %w", id, err)
	}
	return &out, nil
}

// GetActivity reads one activity.
func (s *Store) GetActivity(ctx context.Context, id string) (*Activity, error) {
	var out Activity
	return &out, take(s.R.WithContext(ctx).Where("activity_id = ?", id), &out, "activity "+id)
}

// PutSlot creates a FREE slot; an existing slot is returned as it is.
func (s *Store) PutSlot(ctx context.Context, id, actor string) (*Slot, bool, error) {
	if !ValidKey(id) {
		return nil, false, invalid("slot id must be 1-64 letters, digits or -_.:")
	}
	var out Slot
	created := false
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		res := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&Slot{SlotID: id, Status: SlotFree, UpdatedAt: now})
		if res.Error != nil {
			return res.Error
		}
		detail := "exists already"
		if res.RowsAffected == 1 {
			created, detail = true, "created FREE"
			err := tx.Exec(`INSERT INTO slot_flows (order_no, slot_id, type, epoch, trigger_type, status_before, status_after, actor, created_at)
				VALUES (NULL, ?, 'ADJUST', 0, ?, '', 'FREE', ?, ?)`, id, TriggerSetup, actor, now).Error
			if err != nil {
				return err
			}
		}
		if err := auditIn(tx, &AuditEntry{Actor: actor, Action: "slot_put", Target: "slot:" + id, Outcome: "ok",
			Detail: detail}, now); err != nil {
			return err
		}
		return tx.Where("slot_id = ?", id).Take(&out).Error
	})
	if err != nil {
		return nil, false, fmt.Errorf("put slot %s: %w", id, err)
	}
	return &out, created, nil
}

// GetSlot reads one slot.
func (s *Store) GetSlot(ctx context.Context, id string) (*Slot, error) {
	var out Slot
	return &out, take(s.R.WithContext(ctx).Where("slot_id = ?", id), &out, "slot "+id)
}
