package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

func lines(kv ...any) []models.LineQty {
	var out []models.LineQty
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, models.LineQty{SkuID: kv[i].(string), Qty: int64(kv[i+1].(int))})
	}
	return out
}

func inbound(sku string, qty int, restock bool) models.LineQty {
	return models.LineQty{SkuID: sku, Qty: int64(qty), Restock: &restock}
}

// stockOf is a SKU's available, locked and sold.
func (b bundle) stockOf(t *testing.T, sku string) [3]int64 {
	t.Helper()
	s, err := b.s.GetSKU(b.ctx, sku)
	if err != nil {
		t.Fatal(err)
	}
	return [3]int64{s.Available, s.Locked, s.Sold}
}

// paidOrder places fullOrder as no and pays it.
func (b bundle) paidOrder(t *testing.T, no string, cp int64) {
	t.Helper()
	if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder(no, cp)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
		t.Fatal(err)
	}
}

func ledgerRows(t *testing.T, b bundle) int64 {
	t.Helper()
	var n int64
	must(t, func() error {
		return b.s.R.Raw(`SELECT (SELECT COUNT(*) FROM inventory_flows) + (SELECT COUNT(*) FROM coupon_flows)
			+ (SELECT COUNT(*) FROM account_flows) + (SELECT COUNT(*) FROM quota_flows) + (SELECT COUNT(*) FROM slot_flows)
			+ (SELECT COUNT(*) FROM order_ops)`).Scan(&n).Error
	})
	return n
}

// A paid order's life, line by line: ship part, refund the unshipped
// rest, ship the other line, return some, take it in. Each step's stock
// and status are checked, each step sent again is answered the same and
// changes nothing, and an id used again with another body is refused.
// Breaks if a refund misses the stock, if shipped goods could be
// refunded, or if a repeat applied twice.
func TestOrderLifeAfterPayment(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-life", cp)
		if got := b.stockOf(t, "sku-1"); got != [3]int64{8, 0, 2} {
			t.Fatalf("sku-1 after payment = %v", got)
		}
		steps := []struct {
			name   string
			do     func() (models.LifeResult, error)
			status models.OrderStatus
			sku1   [3]int64
		}{
			{"ship one of sku-1", func() (models.LifeResult, error) {
				return b.s.Ship(b.ctx, "o-life", "ship-1", lines("sku-1", 1), "wms")
			}, models.OrderPartShipped, [3]int64{8, 0, 2}},
			{"refund the unshipped sku-1", func() (models.LifeResult, error) {
				return b.s.Refund(b.ctx, "o-life", "rf-1", lines("sku-1", 1), "changed mind", "cs:ann")
			}, models.OrderPartShipped, [3]int64{9, 0, 1}},
			{"ship sku-2", func() (models.LifeResult, error) {
				return b.s.Ship(b.ctx, "o-life", "ship-2", lines("sku-2", 1), "wms")
			}, models.OrderShipped, [3]int64{9, 0, 1}},
			{"return sku-1", func() (models.LifeResult, error) {
				return b.s.Return(b.ctx, "o-life", "ret-1", lines("sku-1", 1), "broken", "cs:ann")
			}, models.OrderReturning, [3]int64{9, 0, 1}},
			{"take it in, restocked", func() (models.LifeResult, error) {
				return b.s.Inbound(b.ctx, "ret-1", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
			}, models.OrderShipped, [3]int64{10, 0, 0}},
			{"return sku-2, refused at the door", func() (models.LifeResult, error) {
				return b.s.Return(b.ctx, "o-life", "ret-2", lines("sku-2", 1), "refused delivery", "courier")
			}, models.OrderReturning, [3]int64{10, 0, 0}},
			{"sku-2 written off", func() (models.LifeResult, error) {
				return b.s.Inbound(b.ctx, "ret-2", []models.LineQty{inbound("sku-2", 1, false)}, "wms")
			}, models.OrderReturned, [3]int64{10, 0, 0}},
		}
		for _, st := range steps {
			res, err := st.do()
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if res.Status != st.status || res.Repeat {
				t.Fatalf("%s: status %s repeat %v, want %s", st.name, res.Status, res.Repeat, st.status)
			}
			if got := b.stockOf(t, "sku-1"); got != st.sku1 {
				t.Fatalf("%s: sku-1 = %v, want %v", st.name, got, st.sku1)
			}
			rows := ledgerRows(t, b)
			again, err := st.do()
			if err != nil || !again.Repeat || again.Status != st.status || again.Epoch != res.Epoch {
				t.Fatalf("%s sent again: %+v, %v; want the same answer as a repeat", st.name, again, err)
			}
			if ledgerRows(t, b) != rows {
				t.Fatalf("%s sent again wrote rows", st.name)
			}
		}
		// sku-2 was written off: it stays sold.
		if got := b.stockOf(t, "sku-2"); got != [3]int64{4, 0, 1} {
			t.Fatalf("sku-2 = %v, want 4 available, 1 sold (written off)", got)
		}
		_, err := b.s.Refund(b.ctx, "o-life", "rf-1", lines("sku-1", 2), "changed mind", "cs:ann")
		if !errors.Is(err, models.ErrOpIDReused) {
			t.Fatalf("refund id reused with another body: %v, want ID_REUSED", err)
		}
		var flows []struct {
			Type  string
			Epoch int
		}
		must(t, func() error {
			return b.s.R.Raw("SELECT type, epoch FROM inventory_flows WHERE order_no = 'o-life' ORDER BY id").Scan(&flows).Error
		})
		want := "[{LOCK 0} {LOCK 0} {DEDUCT 0} {DEDUCT 0} {REFUND 3} {RESTOCK 6} {WRITE_OFF 8}]"
		if got := fmt.Sprint(flows); got != want {
			t.Fatalf("inventory ledger of o-life = %s, want %s", got, want)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// Refunding the whole order gives back its other holds too, each once:
// the coupon UNUSED again, balance and points spent → available, the
// quota and the seat free. Breaks if a non-stock hold stays spent.
func TestOrderLifeWholeRefund(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-rf", cp)
		res, err := b.s.Refund(b.ctx, "o-rf", "rf-all", nil, "out of stock at the supplier", "cs:bo")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != models.OrderRefunded {
			t.Fatalf("whole refund: %s, want REFUNDED", res.Status)
		}
		c, err := b.s.GetCoupon(b.ctx, cp)
		if err != nil || c.Status != models.CouponUnused || c.OrderNo != nil {
			t.Fatalf("coupon after the refund: %+v, %v", c, err)
		}
		acc, err := b.s.GetAccount(b.ctx, "u1")
		if err != nil {
			t.Fatal(err)
		}
		if bal, pts := acc[models.AssetBalance], acc[models.AssetPoints]; bal.Available != 1000 || bal.Spent != 0 || pts.Available != 500 || pts.Spent != 0 {
			t.Fatalf("account after the refund: %+v", acc)
		}
		act, err := b.s.GetActivity(b.ctx, "act-1")
		if err != nil || act.Available != 3 || act.Used != 0 {
			t.Fatalf("activity after the refund: %+v, %v", act, err)
		}
		sl, err := b.s.GetSlot(b.ctx, "seat-1")
		if err != nil || sl.Status != models.SlotFree {
			t.Fatalf("seat after the refund: %+v, %v", sl, err)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{10, 0, 0} {
			t.Fatalf("sku-1 after the refund: %v", got)
		}
		if _, err := b.s.Refund(b.ctx, "o-rf", "rf-again", nil, "", "cs:bo"); !errors.Is(err, models.ErrOrderStatus) {
			t.Fatalf("second refund of a REFUNDED order: %v, want ORDER_STATUS", err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A line cancel gives back part of a PENDING order's line at once; the
// order stays PENDING while a line holds stock and closes when none does,
// its other holds going back through the outbox. A cancel naming the
// version it saw is answered the same when sent again. Breaks if a
// cancel released more than held, or an emptied order stayed PENDING.
func TestOrderLifeLineCancel(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-lc", cp)); err != nil {
			t.Fatal(err)
		}
		res, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, 0, "", "one is enough", "user:u1")
		if err != nil || res.Status != models.OrderPending {
			t.Fatalf("cancel 1 of sku-1: %+v, %v", res, err)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 1, 0} {
			t.Fatalf("sku-1 after the cancel = %v", got)
		}
		again, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, 0, "", "one is enough", "user:u1")
		if err != nil || !again.Repeat {
			t.Fatalf("the same cancel at version 0 again: %+v, %v; want a repeat", again, err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, 0, "", "other", "user:u1"); !errors.Is(err, models.ErrOpIDReused) {
			t.Fatalf("another cancel at version 0: %v, want refused", err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 2, -1, "c-1", "", "user:u1"); !errors.Is(err, models.ErrQtyExceeded) {
			t.Fatalf("cancel of 2 when 1 is held: %v, want QTY_EXCEEDED", err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, 5, "", "", "user:u1"); !errors.Is(err, models.ErrVersionMoved) {
			t.Fatalf("cancel at a version the line is not at: %v, want VERSION_CONFLICT", err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-9", 1, -1, "c-2", "", "user:u1"); !errors.Is(err, models.ErrLineNotFound) {
			t.Fatalf("cancel of a line the order lacks: %v, want LINE_NOT_FOUND", err)
		}
		if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, -1, "c-3", "", "user:u1"); err != nil {
			t.Fatal(err)
		}
		last, err := b.s.CancelLine(b.ctx, "o-lc", "sku-2", 1, -1, "c-4", "", "user:u1")
		if err != nil || last.Status != models.OrderClosed {
			t.Fatalf("cancel of the last line: %+v, %v; want the order CLOSED", last, err)
		}
		var tasks []models.ReleaseTask
		must(t, func() error { return b.s.R.Where("order_no = 'o-lc'").Find(&tasks).Error })
		for _, tk := range tasks {
			if tk.ResourceType == models.ResInventory || tk.Trigger != models.TriggerLineCancel {
				t.Fatalf("task of the emptied order: %+v; want only its other holds, by LINE_CANCEL", tk)
			}
		}
		if len(tasks) != 5 {
			t.Fatalf("%d tasks, want 5 (coupon, balance, points, quota, seat)", len(tasks))
		}
		b.drain(t, "w1")
		if got := b.stockOf(t, "sku-1"); got != [3]int64{10, 0, 0} {
			t.Fatalf("sku-1 at the end = %v", got)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// Every move the transition table does not list is refused, and each
// operation refuses the statuses it does not start from, changing
// nothing. Breaks if an operation skipped the table.
func TestOrderTransitionsRefused(t *testing.T) {
	t.Parallel()
	allowed := map[[2]models.OrderStatus]bool{}
	for _, p := range [][2]models.OrderStatus{
		{models.OrderPending, models.OrderPending}, {models.OrderPending, models.OrderPaid}, {models.OrderPending, models.OrderClosed},
		{models.OrderClosed, models.OrderPaid}, {models.OrderClosed, models.OrderRefundPending},
		{models.OrderRefundPending, models.OrderRefunded},
		{models.OrderPaid, models.OrderPartShipped}, {models.OrderPaid, models.OrderShipped},
		{models.OrderPaid, models.OrderPartRefunded}, {models.OrderPaid, models.OrderRefunded},
		{models.OrderPartRefunded, models.OrderPartRefunded}, {models.OrderPartRefunded, models.OrderPartShipped},
		{models.OrderPartRefunded, models.OrderShipped}, {models.OrderPartRefunded, models.OrderRefunded},
		{models.OrderPartShipped, models.OrderPartShipped}, {models.OrderPartShipped, models.OrderShipped},
		{models.OrderPartShipped, models.OrderReturning}, {models.OrderPartShipped, models.OrderReturned},
		{models.OrderShipped, models.OrderReturning},
		{models.OrderReturning, models.OrderReturning}, {models.OrderReturning, models.OrderPartShipped},
		{models.OrderReturning, models.OrderShipped}, {models.OrderReturning, models.OrderReturned},
	} {
		allowed[p] = true
	}
	for _, from := range models.OrderStatuses {
		for _, to := range models.OrderStatuses {
			err := models.CheckTransition(from, to)
			if allowed[[2]models.OrderStatus{from, to}] != (err == nil) {
				t.Errorf("%s → %s: %v, allowed %v", from, to, err, allowed[[2]models.OrderStatus{from, to}])
			}
			if err != nil && !errors.Is(err, models.ErrOrderStatus) {
				t.Errorf("%s → %s refused with %v, want ORDER_STATUS", from, to, err)
			}
		}
	}
}

// Each operation from a status it does not start from is refused with
// ORDER_STATUS and writes nothing; closing a shipped order is refused.
func TestOrderLifeWrongStatus(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-p", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		b.paidOrder(t, "o-s", cp)
		if _, err := b.s.Ship(b.ctx, "o-s", "ship-s", lines("sku-1", 2, "sku-2", 1), "wms"); err != nil {
			t.Fatal(err)
		}
		rows := ledgerRows(t, b)
		for name, call := range map[string]func() error{
			"ship a PENDING order": func() error {
				_, err := b.s.Ship(b.ctx, "o-p", "x1", lines("sku-1", 1), "wms")
				return err
			},
			"refund a PENDING order": func() error { _, err := b.s.Refund(b.ctx, "o-p", "x2", nil, "", "cs"); return err },
			"return a PENDING order": func() error {
				_, err := b.s.Return(b.ctx, "o-p", "x3", lines("sku-1", 1), "", "cs")
				return err
			},
			"cancel a line of a SHIPPED order": func() error {
				_, err := b.s.CancelLine(b.ctx, "o-s", "sku-1", 1, -1, "c-5", "", "cs")
				return err
			},
			"inbound before any return": func() error {
				_, err := b.s.Inbound(b.ctx, "x4", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
				return err
			},
		} {
			if err := call(); err == nil || !errors.Is(err, models.ErrOrderStatus) && !errors.Is(err, models.ErrNotFound) {
				t.Errorf("%s: %v, want refused", name, err)
			}
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-s", models.TriggerUserCancel, "user:u1"); !errors.Is(err, models.ErrOrderNotClosable) {
			t.Errorf("close a SHIPPED order: %v, want ORDER_NOT_CLOSABLE", err)
		}
		if _, err := b.s.Refund(b.ctx, "o-s", "rf-s", lines("sku-1", 1), "", "cs"); !errors.Is(err, models.ErrQtyExceeded) {
			t.Errorf("refund of shipped goods: %v, want QTY_EXCEEDED", err)
		}
		if _, err := b.s.Return(b.ctx, "o-s", "ret-s", lines("sku-1", 3), "", "cs"); !errors.Is(err, models.ErrQtyExceeded) {
			t.Errorf("return of more than was shipped: %v, want QTY_EXCEEDED", err)
		}
		if _, err := b.s.Return(b.ctx, "o-s", "ret-s2", lines("sku-1", 1), "", "cs"); err != nil {
			t.Fatal(err)
		}
		rows++
		if _, err := b.s.Inbound(b.ctx, "ret-s2", []models.LineQty{inbound("sku-1", 2, true)}, "wms"); !errors.Is(err, models.ErrInboundUneven) {
			t.Errorf("inbound of more than was returned: %v, want INBOUND_MISMATCH", err)
		}
		if got := ledgerRows(t, b); got != rows {
			t.Errorf("refusals wrote %d rows", got-rows)
		}
		for _, bad := range []struct {
			name string
			call func() error
		}{
			{"no lines", func() error { _, err := b.s.Ship(b.ctx, "o-s", "y1", nil, "wms"); return err }},
			{"qty 0", func() error { _, err := b.s.Ship(b.ctx, "o-s", "y2", lines("sku-1", 0), "wms"); return err }},
			{"bad id", func() error { _, err := b.s.Ship(b.ctx, "o-s", "a b", lines("sku-1", 1), "wms"); return err }},
			{"sku twice", func() error { _, err := b.s.Ship(b.ctx, "o-s", "y3", lines("sku-1", 1, "sku-1", 1), "wms"); return err }},
			{"restock on a ship", func() error {
				_, err := b.s.Ship(b.ctx, "o-s", "y4", []models.LineQty{inbound("sku-1", 1, true)}, "wms")
				return err
			}},
			{"inbound without restock", func() error { _, err := b.s.Inbound(b.ctx, "ret-s2", lines("sku-1", 1), "wms"); return err }},
		} {
			if err := bad.call(); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%s: %v, want INVALID_INPUT", bad.name, err)
			}
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A late payment the order could not take back (REFUND_PENDING) is
// resolved by a refund that names no lines: the order ends REFUNDED.
func TestOrderLifeRefundPending(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		req := models.PlaceRequest{OrderNo: "o-late", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 5}}}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-late", models.TriggerTimeout, "timeout"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w1")
		req.OrderNo = "o-other"
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if r, err := b.s.PayOrder(b.ctx, "o-late", "txn-late"); err != nil || r.Status != models.OrderRefundPending {
			t.Fatalf("late payment: %+v, %v; want REFUND_PENDING", r, err)
		}
		if _, err := b.s.Refund(b.ctx, "o-late", "rf-late", lines("sku-2", 1), "", "cs"); !errors.Is(err, models.ErrQtyExceeded) {
			t.Fatalf("refund with lines of a REFUND_PENDING order: %v", err)
		}
		res, err := b.s.Refund(b.ctx, "o-late", "rf-late", nil, "money back", "cs")
		if err != nil || res.Status != models.OrderRefunded {
			t.Fatalf("refund of a REFUND_PENDING order: %+v, %v", res, err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// race runs the calls at once and returns their errors.
func race(calls ...func() error) []error {
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, c := range calls {
		wg.Go(func() {
			<-start
			errs[i] = c()
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func countOK(errs []error) (ok int, others []error) {
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			others = append(others, err)
		}
	}
	return ok, others
}

// The races of an order's life, each many times: a refund racing the
// shipment of the same unit, two refunds of one line, one refund id sent
// twice at once, an inbound confirmed twice, a line cancel racing the
// close and the payment. One wins where only one may; the loser is told
// why; the books add up after every round.
func TestOrderLifeRaces(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		one := func(no string) {
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 6 {
			no := fmt.Sprintf("o-r%d", i)
			one(no)
			if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
				t.Fatal(err)
			}
			// Refund racing shipment of the one unit.
			ok, lost := countOK(race(
				func() error { _, err := b.s.Ship(b.ctx, no, "sh-"+no, lines("sku-1", 1), "wms"); return err },
				func() error { _, err := b.s.Refund(b.ctx, no, "rf-"+no, lines("sku-1", 1), "", "cs"); return err },
			))
			if ok != 1 || !errors.Is(lost[0], models.ErrQtyExceeded) && !errors.Is(lost[0], models.ErrOrderStatus) {
				t.Fatalf("%s ship vs refund: %d won, lost %v", no, ok, lost)
			}
		}
		for i := range 6 {
			no := fmt.Sprintf("o-2r%d", i)
			one(no)
			if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
				t.Fatal(err)
			}
			// Two refunds of the one unit, and one refund id twice.
			ok, lost := countOK(race(
				func() error { _, err := b.s.Refund(b.ctx, no, "rfa-"+no, lines("sku-1", 1), "", "cs"); return err },
				func() error { _, err := b.s.Refund(b.ctx, no, "rfb-"+no, lines("sku-1", 1), "", "cs"); return err },
			))
			if ok != 1 || !errors.Is(lost[0], models.ErrQtyExceeded) && !errors.Is(lost[0], models.ErrOrderStatus) {
				t.Fatalf("%s two refunds: %d won, lost %v", no, ok, lost)
			}
		}
		for i := range 6 {
			no := fmt.Sprintf("o-id%d", i)
			one(no)
			if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			repeats := 0
			call := func() error {
				r, err := b.s.Refund(b.ctx, no, "rf-same-"+no, lines("sku-1", 1), "", "cs")
				mu.Lock()
				defer mu.Unlock()
				if r.Repeat {
					repeats++
				}
				return err
			}
			if ok, lost := countOK(race(call, call)); ok != 2 || repeats != 1 {
				t.Fatalf("%s one refund id twice: %d answered (%d repeats), lost %v", no, ok, repeats, lost)
			}
		}
		for i := range 6 {
			no := fmt.Sprintf("o-in%d", i)
			one(no)
			if _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Ship(b.ctx, no, "sh-"+no, lines("sku-1", 1), "wms"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.s.Return(b.ctx, no, "ret-"+no, lines("sku-1", 1), "", "cs"); err != nil {
				t.Fatal(err)
			}
			in := func(restock bool) func() error {
				return func() error {
					_, err := b.s.Inbound(b.ctx, "ret-"+no, []models.LineQty{inbound("sku-1", 1, restock)}, "wms")
					return err
				}
			}
			// The same confirmation twice is one; a second, different
			// one is refused.
			if ok, lost := countOK(race(in(true), in(true))); ok != 2 {
				t.Fatalf("%s inbound twice: %d answered, lost %v", no, ok, lost)
			}
			if err := in(false)(); !errors.Is(err, models.ErrOpIDReused) {
				t.Fatalf("%s a second, different inbound: %v", no, err)
			}
		}
		for i := range 6 {
			no := fmt.Sprintf("o-lc%d", i)
			if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}); err != nil {
				t.Fatal(err)
			}
			// A line cancel of one unit racing the close and the payment:
			// the order ends CLOSED (whatever released the rest) or PAID
			// for what the cancel left.
			errs := race(
				func() error { _, err := b.s.CancelLine(b.ctx, no, "sku-1", 1, -1, "c-"+no, "", "user"); return err },
				func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "user"); return err },
				func() error { _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); return err },
			)
			for _, err := range errs {
				if err != nil && !errors.Is(err, models.ErrOrderStatus) && !errors.Is(err, models.ErrOrderNotClosable) &&
					!errors.Is(err, models.ErrOrderNotPayable) {
					t.Fatalf("%s cancel/close/pay: %v", no, err)
				}
			}
		}
		b.drain(t, "w1")
		modelstest.CheckInvariants(t, b.s)
		sku, err := b.s.GetSKU(b.ctx, "sku-1")
		if err != nil {
			t.Fatal(err)
		}
		if sku.Available+sku.Locked+sku.Sold != 1000 {
			t.Fatalf("sku-1 adds up to %d, want 1000", sku.Available+sku.Locked+sku.Sold)
		}
	})
}

// A hand edit of a line shows in reconciliation: a PENDING line whose
// released was raised by hand (LINE_HELD, its ledger still says it holds
// it), a refunded line whose refund was wiped (LINE_AFTER_SALE). Breaks if
// reconciliation reads the hold rows without their ledger.
func TestReconcileFindsLineEdits(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-paid", cp)
		if _, err := b.s.Refund(b.ctx, "o-paid", "rf-1", lines("sku-1", 1), "", "cs"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-pend", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 2}}}); err != nil {
			t.Fatal(err)
		}
		modelstest.CheckInvariants(t, b.s)
		must(t, func() error {
			return b.s.W.Exec("UPDATE order_holds SET released = 1 WHERE order_no = 'o-pend' AND biz_key = 'sku-2'").Error
		})
		must(t, func() error {
			return b.s.W.Exec("UPDATE order_holds SET refunded = 0 WHERE order_no = 'o-paid' AND biz_key = 'sku-1'").Error
		})
		diffs, err := b.s.Reconcile(b.ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]models.Diff{}
		for _, d := range diffs {
			found[d.Check+" "+d.Key] = d
		}
		if d, ok := found[models.CheckLineHeld+" sku-2"]; !ok || d.Expected != 2 || d.Actual != 1 {
			t.Errorf("LINE_HELD of sku-2 = %+v (found %v), want expected 2, actual 1", d, ok)
		}
		if d, ok := found[models.CheckLineAfterSale+" sku-1"]; !ok || d.Expected != 1 || d.Actual != 0 {
			t.Errorf("LINE_AFTER_SALE of sku-1 = %+v (found %v), want expected 1, actual 0", d, ok)
		}
	})
}
