package models_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// othersBack says whether an order's other holds (the shop's coupon,
// balance and points, activity quota and seat) are given back: true
// checks they are all back as before placement, false that all are still
// spent by the order.
func (b bundle) othersBack(t *testing.T, cp int64, back bool) {
	t.Helper()
	c, err := b.s.GetCoupon(b.ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := b.s.GetAccount(b.ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	act, err := b.s.GetActivity(b.ctx, "act-1")
	if err != nil {
		t.Fatal(err)
	}
	sl, err := b.s.GetSlot(b.ctx, "seat-1")
	if err != nil {
		t.Fatal(err)
	}
	bal, pts := acc[models.AssetBalance], acc[models.AssetPoints]
	gotBack := c.Status == models.CouponUnused && bal.Available == 1000 && bal.Spent == 0 && pts.Available == 500 &&
		pts.Spent == 0 && act.Available == 3 && sl.Status == models.SlotFree
	stillSpent := c.Status == models.CouponUsed && bal.Spent == 300 && pts.Spent == 100 && act.Used == 1 && sl.Status == models.SlotSold
	if back && !gotBack || !back && !stillSpent {
		t.Fatalf("other holds given back should be %v: coupon %s, balance %+v, points %+v, activity %+v, seat %s",
			back, c.Status, bal, pts, act, sl.Status)
	}
}

// An order given back whole through returns gives back its other holds,
// as a whole refund does, when the last unit comes back: the inbound that
// takes in the last return (RETURNED), or the refund of the last unshipped
// units after every shipped one came back (PARTIALLY_SHIPPED → RETURNED).
// Until then they stay spent. Breaks if a returned order kept the
// customer's coupon, balance or points, or if they came back early.
func TestOrderLifeWholeReturn(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-ret", cp)
		steps := []struct {
			name   string
			do     func() (models.LifeResult, error)
			status models.OrderStatus
			back   bool
		}{
			{"ship everything", func() (models.LifeResult, error) {
				return b.s.Ship(b.ctx, "o-ret", "s-1", lines("sku-1", 2, "sku-2", 1), "wms")
			}, models.OrderShipped, false},
			{"return sku-1", func() (models.LifeResult, error) {
				return b.s.Return(b.ctx, "o-ret", "r-1", lines("sku-1", 2), "too small", "cs")
			}, models.OrderReturning, false},
			{"sku-1 in", func() (models.LifeResult, error) {
				return b.s.Inbound(b.ctx, "r-1", []models.LineQty{inbound("sku-1", 1, true), inbound("sku-1", 1, false)}, "wms")
			}, models.OrderShipped, false},
			{"refuse sku-2 at the door", func() (models.LifeResult, error) {
				return b.s.Return(b.ctx, "o-ret", "r-2", lines("sku-2", 1), "refused", "courier")
			}, models.OrderReturning, false},
			{"sku-2 in: the last unit", func() (models.LifeResult, error) {
				return b.s.Inbound(b.ctx, "r-2", []models.LineQty{inbound("sku-2", 1, true)}, "wms")
			}, models.OrderReturned, true},
		}
		for _, st := range steps {
			res, err := st.do()
			if err != nil || res.Status != st.status {
				t.Fatalf("%s: %+v, %v; want %s", st.name, res, err, st.status)
			}
			b.othersBack(t, cp, st.back)
			rows := ledgerRows(t, b)
			if again, err := st.do(); err != nil || !again.Repeat {
				t.Fatalf("%s sent again: %+v, %v", st.name, again, err)
			}
			if ledgerRows(t, b) != rows {
				t.Fatalf("%s sent again wrote rows", st.name)
			}
		}
		modelstest.CheckInvariants(t, b.s)

		// The other way in: one unit shipped and back, then the rest
		// refunded unshipped.
		cp2, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		if err != nil {
			t.Fatal(err)
		}
		b.paidOrder(t, "o-mix", cp2.ID)
		for _, st := range []struct {
			name   string
			do     func() (models.LifeResult, error)
			status models.OrderStatus
		}{
			{"ship one", func() (models.LifeResult, error) {
				return b.s.Ship(b.ctx, "o-mix", "s-m", lines("sku-1", 1), "wms")
			}, models.OrderPartShipped},
			{"return it", func() (models.LifeResult, error) {
				return b.s.Return(b.ctx, "o-mix", "r-m", lines("sku-1", 1), "", "cs")
			}, models.OrderReturning},
			{"take it in", func() (models.LifeResult, error) {
				return b.s.Inbound(b.ctx, "r-m", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
			}, models.OrderPartShipped},
		} {
			if res, err := st.do(); err != nil || res.Status != st.status {
				t.Fatalf("%s: %+v, %v; want %s", st.name, res, err, st.status)
			}
			b.othersBack(t, cp2.ID, false)
		}
		res, err := b.s.Refund(b.ctx, "o-mix", "rf-m", nil, "the rest", "cs")
		if err != nil || res.Status != models.OrderReturned {
			t.Fatalf("refund of the rest: %+v, %v; want RETURNED", res, err)
		}
		b.othersBack(t, cp2.ID, true)
		// o-ret wrote one unit of sku-1 off; everything else came back.
		if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 0, 1} {
			t.Fatalf("sku-1 = %v, want all but the written-off unit back", got)
		}
		// The whole refund's lines are recorded with it, as it took them.
		var recorded []models.LineQty
		must(t, func() error {
			return b.s.R.Raw(`SELECT l.sku_id, l.qty FROM order_op_lines l JOIN order_ops o ON o.id = l.op_row
				WHERE o.kind = 'REFUND' AND o.op_id = 'rf-m' ORDER BY l.sku_id`).Scan(&recorded).Error
		})
		if len(recorded) != 2 || recorded[0] != (models.LineQty{SkuID: "sku-1", Qty: 1}) || recorded[1] != (models.LineQty{SkuID: "sku-2", Qty: 1}) {
			t.Fatalf("lines recorded with the refund: %+v, want sku-1 1 and sku-2 1", recorded)
		}
		if _, err := b.s.Refund(b.ctx, "o-mix", "rf-m2", nil, "", "cs"); !errors.Is(err, models.ErrOrderStatus) {
			t.Fatalf("refund of a RETURNED order: %v, want ORDER_STATUS", err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A line deducted at payment holds nothing before payment, so its cancel
// lowers what it orders and moves no stock; the order stays PENDING while
// such a line still orders something, even when no line holds stock; a
// line cancelled whole takes nothing at payment; an order whose every
// line is cancelled closes, and its late payment goes to REFUND_PENDING.
// Breaks if the order closed under an ordered line, or the payment took
// what was cancelled.
func TestLineCancelDeductedAtPayment(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 10)
		place := func(no string, items ...models.Item) {
			t.Helper()
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: items}); err != nil {
				t.Fatal(err)
			}
		}
		cancel := func(no, sku string, qty int64, id string, want models.OrderStatus) {
			t.Helper()
			res, err := b.s.CancelLine(b.ctx, no, sku, qty, -1, id, "", "user:u1")
			if err != nil || res.Status != want {
				t.Fatalf("cancel %d of %s %s: %+v, %v; want %s", qty, no, sku, res, err, want)
			}
		}
		place("pc-1", models.Item{SkuID: "sku-1", Qty: 1}, models.Item{SkuID: "sku-p", Qty: 3})
		rows := ledgerRows(t, b)
		cancel("pc-1", "sku-p", 1, "c-1", models.OrderPending)
		if got := ledgerRows(t, b); got != rows+1 {
			t.Fatalf("a cancel of a line held at payment wrote %d rows, want only its record", got-rows)
		}
		if again, err := b.s.CancelLine(b.ctx, "pc-1", "sku-p", 1, -1, "c-1", "", "user:u1"); err != nil || !again.Repeat {
			t.Fatalf("the same cancel again: %+v, %v; want a repeat", again, err)
		}
		if _, err := b.s.CancelLine(b.ctx, "pc-1", "sku-p", 3, -1, "c-big", "", "user:u1"); !errors.Is(err, models.ErrQtyExceeded) {
			t.Fatalf("cancel of 3 when 2 are ordered: %v, want QTY_EXCEEDED", err)
		}
		// No line holds stock now, but sku-p still orders 2.
		cancel("pc-1", "sku-1", 1, "c-2", models.OrderPending)
		if _, err := b.s.PayOrder(b.ctx, "pc-1", "txn-pc-1"); err != nil {
			t.Fatal(err)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{8, 0, 2} {
			t.Fatalf("sku-p after payment = %v, want the 2 left ordered sold", got)
		}

		place("pc-2", models.Item{SkuID: "sku-1", Qty: 1}, models.Item{SkuID: "sku-p", Qty: 1})
		cancel("pc-2", "sku-p", 1, "c-3", models.OrderPending)
		if _, err := b.s.PayOrder(b.ctx, "pc-2", "txn-pc-2"); err != nil {
			t.Fatal(err)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{8, 0, 2} {
			t.Fatalf("sku-p after paying an order whose sku-p line was cancelled = %v, want unchanged", got)
		}

		place("pc-3", models.Item{SkuID: "sku-p", Qty: 2})
		cancel("pc-3", "sku-p", 2, "c-4", models.OrderClosed)
		pr, err := b.s.PayOrder(b.ctx, "pc-3", "txn-pc-3")
		if err != nil || pr.Status != models.OrderRefundPending {
			t.Fatalf("late payment of an order cancelled whole: %+v, %v; want REFUND_PENDING", pr, err)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{8, 0, 2} {
			t.Fatalf("sku-p = %v, want unchanged", got)
		}
		b.drain(t, "w")
		modelstest.CheckInvariants(t, b.s)
	})
}

// A line cancel must say what makes it idempotent, the line's version or
// the caller's cancel id, never both; a bad id is refused. Each refusal
// changes nothing. Breaks if a cancel without either were accepted: sent
// twice, it would cancel twice.
func TestLineCancelNeedsAnIdempotencyKey(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-k", cp)); err != nil {
			t.Fatal(err)
		}
		rows := ledgerRows(t, b)
		for _, c := range []struct {
			name    string
			version int64
			id      string
		}{
			{"neither", -1, ""},
			{"both", 0, "c-1"},
			{"a bad id", -1, "a b"},
			{"a long id", -1, string(make([]byte, 65))},
			{"a negative version", -2, ""},
		} {
			_, err := b.s.CancelLine(b.ctx, "o-k", "sku-1", 1, c.version, c.id, "", "user:u1")
			if !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%s: %v, want INVALID_INPUT", c.name, err)
			}
		}
		if ledgerRows(t, b) != rows {
			t.Fatal("a refused cancel wrote rows")
		}
		if _, err := b.s.CancelLine(b.ctx, "o-k", "sku-1", 1, -1, "c-1", "", "user:u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-k", "sku-1", 1, -1, "c-1", "", "user:u1"); err != nil {
			t.Fatal(err)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 1, 0} {
			t.Fatalf("sku-1 after one cancel sent twice = %v, want one unit back", got)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-k", "sku-1", 1, -1, "c-1", "other reason", "user:u1"); !errors.Is(err, models.ErrOpIDReused) {
			t.Fatalf("cancel id reused with another body: %v, want ID_REUSED", err)
		}
	})
}

// A late payment takes the lines deducted at payment in their place among
// the order's tasks, type then key, the order placement locks resources
// in; taken after every task, a line would lock inventory after points,
// and PostgreSQL would abort it or a placement of the same user holding
// the two the other way round.
func TestLatePaymentLockOrder(t *testing.T) {
	t.Parallel()
	task := func(r models.ResourceType, k string) models.ReleaseTask {
		return models.ReleaseTask{ResourceType: r, BizKey: k}
	}
	line := func(k string) models.Hold { return models.Hold{ResourceType: models.ResInventory, BizKey: k} }
	for _, c := range []struct {
		name  string
		tasks []models.ReleaseTask
		lines []models.Hold
		want  string
	}{
		{"between", []models.ReleaseTask{task(models.ResBalance, "u1"), task(models.ResInventory, "sku-a"), task(models.ResPoints, "u1")},
			[]models.Hold{line("sku-b"), line("sku-c")}, "[balance u1 inventory sku-a inventory sku-b inventory sku-c points u1]"},
		{"first", []models.ReleaseTask{task(models.ResPoints, "u1")}, []models.Hold{line("sku-b")}, "[inventory sku-b points u1]"},
		{"last", []models.ReleaseTask{task(models.ResCoupon, "7")}, []models.Hold{line("sku-b")}, "[coupon 7 inventory sku-b]"},
		{"no tasks", nil, []models.Hold{line("sku-b")}, "[inventory sku-b]"},
		{"no lines", []models.ReleaseTask{task(models.ResCoupon, "7")}, nil, "[coupon 7]"},
	} {
		if got := fmt.Sprint(models.LatePayOrder(c.tasks, c.lines)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// An id another order's operation took is refused naming only the kind of
// operation, never that order or its request.
func TestOpIDOfAnotherOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		for _, no := range []string{"o-a", "o-b"} {
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.s.Refund(b.ctx, "o-a", "rf-1", lines("sku-1", 1), "private note of o-a", "cs:ann"); err != nil {
			t.Fatal(err)
		}
		_, err := b.s.Refund(b.ctx, "o-b", "rf-1", lines("sku-1", 1), "", "cs:bo")
		if !errors.Is(err, models.ErrOpIDReused) {
			t.Fatalf("another order's refund id: %v, want ID_REUSED", err)
		}
		if msg := err.Error(); strings.Contains(msg, "o-a") || strings.Contains(msg, "private") || !strings.Contains(msg, "refund of another order") {
			t.Fatalf("refusal %q: want the kind of operation named, and nothing of o-a", msg)
		}
	})
}
