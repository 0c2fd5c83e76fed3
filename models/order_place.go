package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"time"

	"gorm.io/gorm"

	"unhold/remote"
)

// PlaceRequest is what an order asks to hold.
type PlaceRequest struct {
	OrderNo    string
	UserID     string
	Items      []Item
	CouponIDs  []int64
	Freeze     []Freeze
	ActivityID string
	SlotID     string
	// Holds names holds of any type in the registry; Items, CouponIDs,
	// Freeze, ActivityID and SlotID are shorthands for the built-in types.
	Holds      []HoldRequest
	PayTimeout time.Duration
}

// HoldRequest is one hold an order asks for: Qty of key of a type. A type
// held one at a time (a coupon, a slot) takes qty 1, or 0 for 1.
type HoldRequest struct {
	Type ResourceType
	Key  string
	Qty  int64
}

// Item is one SKU line.
type Item struct {
	SkuID string
	Qty   int64
}

// Freeze is an amount of balance or points to freeze.
type Freeze struct {
	Asset  Asset
	Amount int64
}

// Limits on what one order may ask for.
const (
	MaxItems          = 100
	MaxHolds          = 200 // holds of one order, whatever their type
	MaxQty            = 1_000_000
	MaxAmount         = 1_000_000_000_000
	DefaultPayTimeout = 30 * time.Minute
	MaxPayTimeout     = 7 * 24 * time.Hour
)

var (
	orderNoPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	keyPattern     = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
)

// ValidKey tells whether s may name a SKU, user, activity or slot.
func ValidKey(s string) bool { return keyPattern.MatchString(s) }

// ValidOrderNo tells whether s may be an order number.
func ValidOrderNo(s string) bool { return orderNoPattern.MatchString(s) }

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, a...)...)
}

// holds validates the request and lists what it holds, sorted so that every
// transaction takes row locks in one order; reg is the registry the types
// must be in.
func (r PlaceRequest) holds(reg map[ResourceType]Resource) ([]Hold, error) {
	if r.OrderNo != "" && !ValidOrderNo(r.OrderNo) {
		return nil, invalid("order_no must be 1-40 letters, digits, '-' or '_'")
	}
	if !ValidKey(r.UserID) {
		return nil, invalid("user_id must be 1-64 letters, digits or -_.:")
	}
	if len(r.Items) > MaxItems {
		return nil, invalid("items must have 1 to %d lines", MaxItems)
	}
	if len(r.Items) == 0 && len(r.Holds) == 0 {
		return nil, invalid("an order must hold something: items or holds")
	}
	if r.PayTimeout < 0 || r.PayTimeout > MaxPayTimeout {
		return nil, invalid("pay_timeout_s must be from 1 to %d", int(MaxPayTimeout/time.Second))
	}
	var hs []Hold
	seen := map[string]bool{}
	add := func(t ResourceType, key string, qty int64, what string) error {
		id := string(t) + "/" + key
		if seen[id] {
			return invalid("%s %s appears twice", what, key)
		}
		seen[id] = true
		hs = append(hs, Hold{ResourceType: t, BizKey: key, Qty: qty})
		return nil
	}
	for _, it := range r.Items {
		if !ValidKey(it.SkuID) {
			return nil, invalid("sku_id must be 1-64 letters, digits or -_.:")
		}
		if it.Qty <= 0 || it.Qty > MaxQty {
			return nil, invalid("qty of %s must be from 1 to %d", it.SkuID, MaxQty)
		}
		if err := add(ResInventory, it.SkuID, it.Qty, "sku"); err != nil {
			return nil, err
		}
	}
	for _, id := range r.CouponIDs {
		if id <= 0 {
			return nil, invalid("coupon ids must be positive")
		}
		if err := add(ResCoupon, strconv.FormatInt(id, 10), 1, "coupon"); err != nil {
			return nil, err
		}
	}
	for _, f := range r.Freeze {
		if f.Amount <= 0 || f.Amount > MaxAmount {
			return nil, invalid("freeze amount of %s must be from 1 to %d", f.Asset, int64(MaxAmount))
		}
		if _, err := ParseAsset(string(f.Asset)); err != nil {
			return nil, invalid("freeze asset must be BALANCE or POINTS")
		}
		if err := add(assetResource(f.Asset), r.UserID, f.Amount, "freeze of "+string(f.Asset)+" for user"); err != nil {
			return nil, err
		}
	}
	if r.ActivityID != "" {
		if !ValidKey(r.ActivityID) {
			return nil, invalid("activity_id must be 1-64 letters, digits or -_.:")
		}
		hs = append(hs, Hold{ResourceType: ResQuota, BizKey: r.ActivityID, Qty: 1})
	}
	if r.SlotID != "" {
		if !ValidKey(r.SlotID) {
			return nil, invalid("slot_id must be 1-64 letters, digits or -_.:")
		}
		hs = append(hs, Hold{ResourceType: ResSlot, BizKey: r.SlotID, Qty: 1})
	}
	for i, h := range r.Holds {
		res, ok := reg[h.Type]
		if !ok {
			return nil, invalid("holds[%d]: unknown resource type %q", i, h.Type)
		}
		if !ValidKey(h.Key) {
			return nil, invalid("holds[%d]: key must be 1-64 letters, digits or -_.:", i)
		}
		if res.UserKeyed() && h.Key != r.UserID {
			return nil, invalid("holds[%d]: %s is kept by user; an order of %s holds only its own, not %s's", i, h.Type, r.UserID, h.Key)
		}
		qty, most := h.Qty, res.MaxQty()
		if qty == 0 && most == 1 {
			qty = 1
		}
		if qty <= 0 || qty > most {
			return nil, invalid("holds[%d]: qty of %s %s must be from 1 to %d", i, h.Type, h.Key, most)
		}
		if err := add(h.Type, h.Key, qty, string(h.Type)); err != nil {
			return nil, err
		}
	}
	if len(hs) > MaxHolds {
		return nil, invalid("an order may hold at most %d things, asks %d", MaxHolds, len(hs))
	}
	sortHolds(hs)
	return hs, nil
}

// Every transaction that locks several resource rows locks them in this
// order, (type, key) by bytes — in Go, never by SQL ORDER BY, whose order
// depends on the database's collation.
func resourceLess(at, bt ResourceType, ak, bk string) bool {
	if at != bt {
		return at < bt
	}
	return ak < bk
}

func sortHolds(hs []Hold) {
	sort.Slice(hs, func(i, j int) bool {
		return resourceLess(hs[i].ResourceType, hs[j].ResourceType, hs[i].BizKey, hs[j].BizKey)
	})
}

func sortTasks(ts []ReleaseTask) {
	sort.Slice(ts, func(i, j int) bool {
		return resourceLess(ts[i].ResourceType, ts[j].ResourceType, ts[i].BizKey, ts[j].BizKey)
	})
}

// NewOrderNo makes an order number from the time and 6 random bytes.
func NewOrderNo(now time.Time) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "U" + now.UTC().Format("20060102150405") + hex.EncodeToString(b)
}

// PlaceOrder creates a PENDING order and takes every hold it asks for in one
// transaction: any shortfall rolls all of it back and returns the business
// error (ErrInsufficientStock, ErrCouponUnavailable, ...). Holds of a remote
// type are then locked at their services (lockRemote).
func (s *Store) PlaceOrder(ctx context.Context, r PlaceRequest) (*Order, []Hold, error) {
	hs, err := r.holds(s.resources)
	if err != nil {
		return nil, nil, err
	}
	now := s.Now()
	name := r.OrderNo
	if r.OrderNo == "" {
		r.OrderNo = NewOrderNo(now)
		name = "(new)"
	}
	timeout := r.PayTimeout
	if timeout == 0 {
		timeout = DefaultPayTimeout
	}
	order := Order{OrderNo: r.OrderNo, UserID: r.UserID, Status: OrderPending,
		PayDeadline: now.Add(timeout), CreatedAt: now, UpdatedAt: now}
	var o *Order
	var held []Hold
	err = s.writeShared(ctx, func(tx *gorm.DB) error {
		// From the request each time: a placement of a group that could
		// not commit runs again alone (writeShared), and a run's creates
		// and markAtPayment change the rows they are given.
		o, held = nil, nil
		ord, hs := order, slices.Clone(hs)
		atPayment, err := s.preparePlacement(tx, ord.UserID, hs, now)
		if err != nil {
			return err
		}
		if err := tx.Create(&ord).Error; err != nil {
			if IsUniqueViolation(err) {
				return fmt.Errorf("%w: %s", ErrOrderExists, ord.OrderNo)
			}
			return err
		}
		for i := range hs {
			hs[i].OrderNo = ord.OrderNo
			if err := tx.Create(&hs[i]).Error; err != nil {
				return err
			}
			if atPayment[hs[i].BizKey] && hs[i].ResourceType == ResInventory {
				if err := markAtPayment(tx, &hs[i]); err != nil {
					return err
				}
				continue // the payment takes it (takeLine)
			}
			op := Op{Kind: FlowLock, OrderNo: ord.OrderNo, UserID: ord.UserID, Key: hs[i].BizKey, Qty: hs[i].Qty,
				Trigger: TriggerPlace, Actor: "user:" + ord.UserID, Now: now}
			if err := s.apply(tx, hs[i].ResourceType, op); err != nil {
				return err
			}
		}
		o, held = &ord, hs
		return nil
	})
	if err == nil {
		err = s.lockRemote(ctx, o, held)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("place order %s: %w", name, err)
	}
	return o, held, nil
}

// lockRemote sends the lock of each of the order's holds of a remote type,
// remoteCalls at a time, once the order committed with them: their LOCK
// rows already say the service may hold them, and the order's number is
// its own. When a lock is refused or not answered, the order is closed
// PLACE_ABORTED, and the outbox releases every hold it took: a lock that
// reached the service, and one that never did (the service answers that
// release as an empty rollback); so is a lock whose answer did not prove
// itself (REMOTE_PROTOCOL), which whatever answered may have applied. The
// error is then ErrRemoteRejected, ErrRemoteProtocol or
// ErrRemoteUnavailable, by the first failed lock, with the service's
// answer. Should the process die
// before the locks are sent or the order closed, the order is closed at
// its pay deadline like any unpaid one, and released the same way. Once
// every lock was answered done, the order records it (locks_answered_at):
// a payment before that is refused (deductAll), so no order is paid for a
// hold its service may never take.
func (s *Store) lockRemote(ctx context.Context, o *Order, hs []Hold) error {
	var calls []Hold
	for _, h := range hs {
		if _, ok := s.remotes[h.ResourceType]; ok {
			calls = append(calls, h)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	errs := make([]error, len(calls))
	each(len(calls), func(i int) {
		h := calls[i]
		_, errs[i] = s.remotes[h.ResourceType].call(ctx, Op{Kind: FlowLock, OrderNo: o.OrderNo, UserID: o.UserID, Key: h.BizKey,
			Qty: h.Qty, Trigger: TriggerPlace})
	})
	cause := errors.Join(errs...)
	if cause == nil {
		now := s.Now()
		err := s.write(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
			return tx.Exec("UPDATE orders SET locks_answered_at = ? WHERE order_no = ?", now, o.OrderNo).Error
		})
		if err != nil {
			return fmt.Errorf("record that the locks were answered: %w (the order cannot be paid; its pay deadline closes it)", err)
		}
		o.LocksAnsweredAt = &now
		return nil
	}
	note := clip("placement aborted: "+cause.Error(), 500)
	err := s.write(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
		// An order closed meanwhile (by a caller that chose its number and
		// did not wait) is released already; one cannot have been paid,
		// its locks unanswered (deductAll).
		won, _, err := s.closeOrders(tx, []string{o.OrderNo}, TriggerPlaceAborted)
		if err != nil || len(won) == 0 {
			return err
		}
		return tx.Exec("UPDATE orders SET note = ? WHERE order_no = ?", note, o.OrderNo).Error
	})
	if err != nil {
		s.log.Error("abort placement: the order stays PENDING until its pay deadline closes it",
			slog.String("order_no", o.OrderNo), slog.Any("err", err), slog.Any("cause", cause))
	}
	kind := ErrRemoteUnavailable
	var re *remote.Error
	switch {
	case !errors.As(cause, &re):
	case !re.Retryable():
		kind = ErrRemoteRejected
	case re.Class == remote.ClassProtocol:
		kind = ErrRemoteProtocol
	}
	return fmt.Errorf("%w: %w", kind, cause)
}
