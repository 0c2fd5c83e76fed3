package models_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"unhold/models"
)

// account is u1's balance and points as (available, spent).
func (b bundle) account(t *testing.T) (bal, pts [2]int64) {
	t.Helper()
	acc, err := b.s.GetAccount(b.ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	return [2]int64{acc[models.AssetBalance].Available, acc[models.AssetBalance].Spent},
		[2]int64{acc[models.AssetPoints].Available, acc[models.AssetPoints].Spent}
}

// Two inbounds of two returns that together bring the order back whole,
// at once, many times: both are taken in, exactly one of them (the
// second to take the order's row) gives back the other holds, and they
// come back once: balance 1000 and points 500 again, never more, five
// REFUND rows. Breaks if both inbounds thought they were the last (holds
// back twice: a ledger's unique key or a balance above 1000) or neither
// did (holds never back).
func TestAttackLife2TwoLastInbounds(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		for i := range 4 {
			no := fmt.Sprintf("o-in%d", i)
			cp := b.newCoupon(t)
			b.paidOrder(t, no, cp)
			if _, err := b.s.Ship(b.ctx, no, "s-"+no, lines("sku-1", 2, "sku-2", 1), "wms"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Return(b.ctx, no, "ra-"+no, lines("sku-1", 2), "", "cs"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Return(b.ctx, no, "rb-"+no, lines("sku-2", 1), "", "cs"); err != nil {
				t.Fatal(err)
			}
			var sts [2]models.OrderStatus
			errs := race(func() error {
				res, err := b.s.Inbound(b.ctx, "ra-"+no, []models.LineQty{inbound("sku-1", 2, true)}, "wms")
				sts[0] = res.Status
				return err
			}, func() error {
				res, err := b.s.Inbound(b.ctx, "rb-"+no, []models.LineQty{inbound("sku-2", 1, true)}, "wms")
				sts[1] = res.Status
				return err
			})
			if ok, others := countOK(errs); ok != 2 {
				t.Fatalf("round %d: inbounds failed: %v", i, others)
			}
			returned := 0
			for _, st := range sts {
				if st == models.OrderReturned {
					returned++
				}
			}
			if returned != 1 {
				t.Fatalf("round %d: inbounds answered %v, want exactly one RETURNED", i, sts)
			}
			b.othersBack(t, cp, true)
			if n := refundRows(t, b, no); n != 5 {
				t.Fatalf("round %d: %d REFUND rows of other holds, want 5", i, n)
			}
		}
		b.reconcileQuiet(t, "after the racing inbounds")
	})
}

// The inbound of the last return racing the refund of the last unshipped
// unit, many times: both pass (a refund is allowed while RETURNING), and
// whichever runs second gives back the other holds, once.
func TestAttackLife2LastInboundRacesRefund(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		for i := range 4 {
			no := fmt.Sprintf("o-ir%d", i)
			cp := b.newCoupon(t)
			b.paidOrder(t, no, cp)
			if _, err := b.s.Ship(b.ctx, no, "s-"+no, lines("sku-1", 2), "wms"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Return(b.ctx, no, "r-"+no, lines("sku-1", 2), "", "cs"); err != nil {
				t.Fatal(err)
			}
			var sts [2]models.OrderStatus
			errs := race(func() error {
				res, err := b.s.Inbound(b.ctx, "r-"+no, []models.LineQty{inbound("sku-1", 2, true)}, "wms")
				sts[0] = res.Status
				return err
			}, func() error {
				res, err := b.s.Refund(b.ctx, no, "rf-"+no, nil, "", "cs")
				sts[1] = res.Status
				return err
			})
			if ok, others := countOK(errs); ok != 2 {
				t.Fatalf("round %d: %v", i, others)
			}
			if sts[0] != models.OrderReturned && sts[1] != models.OrderReturned {
				t.Fatalf("round %d: answered %v, want one RETURNED", i, sts)
			}
			b.othersBack(t, cp, true)
			if n := refundRows(t, b, no); n != 5 {
				t.Fatalf("round %d: %d REFUND rows of other holds, want 5", i, n)
			}
		}
		b.reconcileQuiet(t, "after inbounds racing refunds")
	})
}

// A cancel of a whole line deducted at payment racing the payment and a
// timeout close (by hand, or by the sweep of expired orders), many times:
// whatever wins, the stock of the line is sold only if the payment came
// first, and the books add up. A second cancel of the same line under
// another id racing the first: only what is ordered can be cancelled (one
// passes, one is told QTY_EXCEEDED or ORDER_STATUS); the same id sent
// twice at once is cancelled once.
func TestAttackLife2PaymentLineCancelRaces(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 100)
		sold := int64(0)
		for i := range 6 {
			no := fmt.Sprintf("o-pc%d", i)
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
				Items: []models.Item{{SkuID: "sku-p", Qty: 2}}}); err != nil {
				t.Fatal(err)
			}
			calls := []func() error{
				func() error {
					_, err := b.s.CancelLine(b.ctx, no, "sku-p", 2, -1, "ca", "", "user:u1")
					return err
				},
				func() error {
					_, err := b.s.CancelLine(b.ctx, no, "sku-p", 2, -1, "cb", "", "user:u1")
					return err
				},
				func() error {
					_, err := b.s.CancelLine(b.ctx, no, "sku-p", 2, -1, "ca", "", "user:u1")
					return err
				},
				func() error { _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); return err },
			}
			if i%2 == 1 {
				calls = append(calls, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system"); return err })
			} else {
				// The sweep of expired orders instead of a close by hand.
				b.clock.Advance(24 * time.Hour)
				calls = append(calls, func() error { _, err := b.s.CloseExpired(b.ctx, 10); return err })
			}
			errs := race(calls...)
			for j, err := range errs {
				if err != nil && !errors.Is(err, models.ErrQtyExceeded) && !errors.Is(err, models.ErrOrderStatus) &&
					!errors.Is(err, models.ErrOrderNotClosable) {
					t.Fatalf("round %d call %d: %v", i, j, err)
				}
			}
			c, err := b.s.OrderChain(b.ctx, no)
			if err != nil {
				t.Fatal(err)
			}
			var cancels int
			for _, op := range c.Ops {
				if op.Kind == models.OpLineCancel {
					cancels++
				}
			}
			h := c.Holds[0]
			switch c.Order.Status {
			case models.OrderPaid:
				if cancels != 0 || h.Qty != 2 || h.Deducted != 2 {
					t.Fatalf("round %d: PAID with %d cancels and line %+v", i, cancels, h)
				}
				sold += 2
			case models.OrderClosed, models.OrderRefundPending:
				if cancels > 1 || h.Deducted != 0 {
					t.Fatalf("round %d: %s with %d cancels and line %+v", i, c.Order.Status, cancels, h)
				}
			default:
				t.Fatalf("round %d: order is %s", i, c.Order.Status)
			}
			if got := b.stockOf(t, "sku-p"); got != [3]int64{100 - sold, 0, sold} {
				t.Fatalf("round %d: sku-p = %v, want %d sold", i, got, sold)
			}
		}
		b.drain(t, "w")
		b.reconcileQuiet(t, "after payment-line cancel races")
	})
}

// A late payment of an order with a line deducted at payment (closed by
// its timeout, its other holds released by the worker) racing a placement
// and a payment of other orders of the same user on the same resources,
// many times: none fails for the database's sake (a deadlock, a
// serialization failure); the late payment ends PAID (nothing is short),
// the placement and the payment pass. The payment takes the same line
// deducted at payment and the same points: a late payment taking its lines
// after its tasks (points before sku-p) would lock the two the other way
// round.
func TestAttackLife2LatePaymentRacesPlacement(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 100)
		req := func(no string) models.PlaceRequest {
			return models.PlaceRequest{OrderNo: no, UserID: "u1",
				Items:  []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-p", Qty: 1}, {SkuID: "sku-2", Qty: 1}},
				Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 10}, {Asset: models.AssetPoints, Amount: 10}}}
		}
		for i := range 5 {
			late, next, paid := fmt.Sprintf("o-late%d", i), fmt.Sprintf("o-next%d", i), fmt.Sprintf("o-paid%d", i)
			for _, no := range []string{late, paid} {
				if _, _, err := b.s.PlaceOrder(b.ctx, req(no)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := b.s.CloseOrder(b.ctx, late, models.TriggerTimeout, "system"); err != nil {
				t.Fatal(err)
			}
			b.drain(t, "w")
			var pay models.PayResult
			errs := race(func() error {
				var err error
				pay, err = b.s.PayOrder(b.ctx, late, "txn-"+late)
				return err
			}, func() error {
				_, _, err := b.s.PlaceOrder(b.ctx, req(next))
				return err
			}, func() error {
				_, err := b.s.PayOrder(b.ctx, paid, "txn-"+paid)
				return err
			})
			if ok, others := countOK(errs); ok != 3 {
				t.Fatalf("round %d: %v", i, others)
			}
			if pay.Status != models.OrderPaid {
				t.Fatalf("round %d: late payment %+v, want PAID", i, pay)
			}
			if res, err := b.s.Refund(b.ctx, paid, "rf-"+paid, nil, "", "cs"); err != nil || res.Status != models.OrderRefunded {
				t.Fatalf("round %d: whole refund of the paid order: %+v, %v", i, res, err)
			}
			// The next round's placement and refunds: give back what was
			// taken, so the shop does not run dry.
			if _, err := b.s.CloseOrder(b.ctx, next, models.TriggerTimeout, "system"); err != nil {
				t.Fatal(err)
			}
			if res, err := b.s.Refund(b.ctx, late, "rf-"+late, nil, "", "cs"); err != nil || res.Status != models.OrderRefunded {
				t.Fatalf("round %d: whole refund of the late-paid order: %+v, %v", i, res, err)
			}
			b.drain(t, "w")
		}
		if bal, pts := b.account(t); bal != [2]int64{1000, 0} || pts != [2]int64{500, 0} {
			t.Fatalf("balance %v, points %v, want all back", bal, pts)
		}
		b.reconcileQuiet(t, "after late payments racing placements")
	})
}

// A late payment and a payment of another order of the same user, both
// taking sku-p (deducted at payment) and points, on PostgreSQL, ordered by
// a third transaction that holds the points row: the late payment queues
// for points first, then the payment. Taking locks as placement does
// (sku-p before points) the late payment already holds sku-p, the payment
// waits behind it, and both pass once the points are free. Breaks if the
// late payment took its lines after its tasks (points before sku-p): the
// payment would take sku-p and wait for points, the late payment get the
// points and wait for sku-p, and PostgreSQL would abort one as a
// deadlock.
func TestAttackLife2LatePaymentLockOrderPG(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		if b.s.Dialect != models.Postgres {
			t.Skip("SQLite runs one write at a time")
		}
		b.shop(t)
		payModelSKU(t, b, "sku-p", 100)
		place := func(no string, items ...models.Item) {
			t.Helper()
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: items,
				Freeze: []models.Freeze{{Asset: models.AssetPoints, Amount: 10}}}); err != nil {
				t.Fatal(err)
			}
		}
		place("o-l", models.Item{SkuID: "sku-1", Qty: 1}, models.Item{SkuID: "sku-p", Qty: 1})
		if _, err := b.s.CloseOrder(b.ctx, "o-l", models.TriggerTimeout, "system"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w")
		place("o-p", models.Item{SkuID: "sku-p", Qty: 1})

		blocker := b.s.W.Begin()
		must(t, func() error {
			return blocker.Exec("SELECT uid FROM accounts WHERE uid = 'u1' AND asset = 'POINTS' FOR UPDATE").Error
		})
		errL, errP := make(chan error, 1), make(chan error, 1)
		var late models.PayResult
		go func() {
			var err error
			late, err = b.s.PayOrder(b.ctx, "o-l", "txn-l")
			errL <- err
		}()
		time.Sleep(500 * time.Millisecond)
		go func() {
			_, err := b.s.PayOrder(b.ctx, "o-p", "txn-p")
			errP <- err
		}()
		time.Sleep(500 * time.Millisecond)
		must(t, func() error { return blocker.Commit().Error })
		if err := <-errL; err != nil || late.Status != models.OrderPaid {
			t.Errorf("late payment: %+v, %v; want PAID", late, err)
		}
		if err := <-errP; err != nil {
			t.Errorf("payment: %v", err)
		}
		b.reconcileQuiet(t, "after the late payment and the payment")
	})
}
