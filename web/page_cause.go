package web

import (
	"context"
	"errors"
	"strconv"

	"unhold/models"
	"unhold/views"
)

// taskCause reads, for a MANUAL task stopped by the data (LOCKED_SHORT,
// STATE_MISMATCH, NOT_FOUND), whether its cause is still there: the key's
// held amount or the coupon's state now against what the task needs and
// what the ledger says. nil for any other task: a retry is what it needs.
// back is the page asking, where a correction made from the link returns.
func (s *server) taskCause(ctx context.Context, t models.ReleaseTask, back string) (*views.TaskCause, error) {
	if t.Status != models.TaskManual {
		return nil, nil
	}
	c := &views.TaskCause{Key: t.BizKey, Unit: string(t.ResourceType), Qty: t.Qty,
		FixURL: withFor(s.store.KeyPage(t.ResourceType, t.BizKey), t.OrderNo, back), AbandonURL: views.TaskURL(t.ID)}
	switch t.ErrorClass {
	case models.ClassLockedShort:
		l, err := s.store.CounterLedgerOf(ctx, t.ResourceType, t.BizKey)
		if errors.Is(err, models.ErrNotFound) || errors.Is(err, models.ErrInvalid) {
			c.Kind = "missing"
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		c.Kind = heldCause(c, l)
	case models.ClassStateMismatch:
		if t.ResourceType != models.ResCoupon {
			return nil, nil
		}
		id, err := strconv.ParseInt(t.BizKey, 10, 64)
		if err != nil {
			return nil, nil
		}
		l, err := s.store.CouponLedgerOf(ctx, id)
		if errors.Is(err, models.ErrNotFound) {
			c.Kind = "missing"
			return c, nil
		}
		if errors.Is(err, models.ErrInvalid) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		c.Status, c.LedgerStatus, c.Holder = string(l.Coupon.Status), string(l.Status), derefOr(l.Coupon.OrderNo)
		heldBy := func(st models.CouponStatus, order *string) bool {
			return st == models.CouponLocked && order != nil && *order == t.OrderNo
		}
		switch {
		case heldBy(l.Coupon.Status, l.Coupon.OrderNo):
			c.Kind = "coupon.gone"
		case heldBy(l.Status, l.OrderNo):
			c.Kind = "coupon.row"
		default:
			c.Kind = "coupon.ledger"
		}
	case models.ClassNotFound:
		// Counters only: a coupon's or a slot's row is never deleted.
		l, err := s.store.CounterLedgerOf(ctx, t.ResourceType, t.BizKey)
		switch {
		case errors.Is(err, models.ErrNotFound):
			c.Kind = "missing"
			return c, nil
		case errors.Is(err, models.ErrInvalid):
			return nil, nil
		case err != nil:
			return nil, err
		}
		// The key is there again, but a row made anew (set_stock, a
		// script) holds nothing: what it holds decides, as for a short one.
		if c.Kind = heldCause(c, l); c.Kind == "short.gone" {
			c.Kind = "missing.gone"
		}
	default:
		return nil, nil
	}
	return c, nil
}

// heldCause reads a counter key's hold for a stopped task into c and says
// which cause it is (models.CounterLedger.Short). Holding what the task
// gives back is not enough: a row short of its ledger is short of some
// order's hold, and while another order's hold covers the task, a rerun
// would give back that one and its release would stop next.
func heldCause(c *views.TaskCause, l models.CounterLedger) string {
	c.Held, c.Ledger, c.Expected = l.Row.Locked, l.Ledger.Locked, l.Expected
	return "short." + string(l.Short())
}
