package models_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

func payModelSKU(t *testing.T, b bundle, sku string, avail int64) {
	t.Helper()
	must(t, func() error {
		_, err := b.s.SetSKU(b.ctx, sku, avail, models.SKUSettings{DeductAt: models.DeductAtPayment}, "test")
		return err
	})
}

// A SKU deducted at payment holds nothing while the order is unpaid:
// closing it writes no task for the line, and paying takes the stock.
func TestDeductAtPayment(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 5)
		place := func(no string) {
			t.Helper()
			_, hs, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
				Items: []models.Item{{SkuID: "sku-p", Qty: 2}, {SkuID: "sku-1", Qty: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hs {
				if h.BizKey == "sku-p" && (h.Qty != 0 || h.Ordered != 2 || h.DeductAt != models.DeductAtPayment) {
					t.Fatalf("line %+v, want qty 0, ordered 2, deducted at payment", h)
				}
			}
		}
		place("p-1")
		if got := b.stockOf(t, "sku-p"); got != [3]int64{5, 0, 0} {
			t.Fatalf("after placement sku-p is %v, want nothing held", got)
		}
		modelstest.CheckInvariants(t, b.s)
		res, err := b.s.CloseOrder(b.ctx, "p-1", models.TriggerUserCancel, "user:u1")
		if err != nil || res.Tasks != 1 {
			t.Fatalf("close: %+v %v, want 1 task (sku-1 only)", res, err)
		}
		b.drain(t, "w")
		modelstest.CheckInvariants(t, b.s)

		place("p-2")
		pr, err := b.s.PayOrder(b.ctx, "p-2", "txn-2")
		if err != nil || pr.Status != models.OrderPaid {
			t.Fatalf("pay: %+v %v", pr, err)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{3, 0, 2} {
			t.Fatalf("after payment sku-p is %v, want 3 available, 2 sold", got)
		}
		modelstest.CheckInvariants(t, b.s)

		// Not enough available now: refused at placement, nothing written.
		_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "p-3", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-p", Qty: 4}}})
		if !errors.Is(err, models.ErrInsufficientStock) {
			t.Fatalf("placing 4 of 3: %v, want INSUFFICIENT_STOCK", err)
		}
	})
}

// The stock of a line deducted at payment is sold to others before the
// order pays: the order goes REFUND_PENDING with a note, nothing of it is
// deducted, and its other holds go back through the outbox.
func TestDeductAtPaymentStockGone(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 2)
		for _, no := range []string{"g-1", "g-2"} {
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
				Items: []models.Item{{SkuID: "sku-p", Qty: 2}, {SkuID: "sku-1", Qty: 1}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.s.PayOrder(b.ctx, "g-1", "txn-1"); err != nil {
			t.Fatal(err)
		}
		pr, err := b.s.PayOrder(b.ctx, "g-2", "txn-2")
		if err != nil {
			t.Fatal(err)
		}
		if pr.Status != models.OrderRefundPending || !strings.Contains(pr.Note, "stock gone") {
			t.Fatalf("second payment: %+v, want REFUND_PENDING with a note", pr)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{0, 0, 2} {
			t.Fatalf("sku-p is %v, want only g-1's 2 sold", got)
		}
		if got := b.stockOf(t, "sku-1"); got != [3]int64{8, 1, 1} {
			t.Fatalf("sku-1 is %v before the release, want g-2's 1 still locked", got)
		}
		modelstest.CheckInvariants(t, b.s)
		b.drain(t, "w")
		if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 0, 1} {
			t.Fatalf("sku-1 is %v after the release, want g-2's 1 back", got)
		}
		again, err := b.s.PayOrder(b.ctx, "g-2", "txn-2")
		if err != nil || again != pr {
			t.Fatalf("same payment again: %+v %v, want %+v", again, err, pr)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// A late payment of a closed order takes its lines deducted at payment too.
func TestDeductAtPaymentLate(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		payModelSKU(t, b, "sku-p", 5)
		_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "l-1", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-p", Qty: 2}, {SkuID: "sku-1", Qty: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "l-1", models.TriggerTimeout, "job"); err != nil {
			t.Fatal(err)
		}
		b.drain(t, "w")
		pr, err := b.s.PayOrder(b.ctx, "l-1", "txn-l")
		if err != nil || pr.Status != models.OrderPaid {
			t.Fatalf("late payment: %+v %v", pr, err)
		}
		if got := b.stockOf(t, "sku-p"); got != [3]int64{3, 0, 2} {
			t.Fatalf("sku-p is %v, want 2 sold", got)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

func TestUserLimit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		must(t, func() error {
			_, err := b.s.SetSKU(b.ctx, "sku-l", 100, models.SKUSettings{Limit: models.UserLimit{PerUserOrders: 2, WindowS: 600}}, "test")
			return err
		})
		must(t, func() error {
			_, err := b.s.SetActivityWith(b.ctx, "act-l", 100, models.ActivitySettings{ReleaseDelayS: 30,
				Limit: models.UserLimit{PerUserOrders: 1, WindowS: 60}}, "test")
			return err
		})
		place := func(no, user, sku, act string) error {
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: user,
				Items: []models.Item{{SkuID: sku, Qty: 1}}, ActivityID: act})
			return err
		}
		for _, no := range []string{"a", "b"} {
			if err := place(no, "u1", "sku-l", ""); err != nil {
				t.Fatal(err)
			}
		}
		// A closed order still counts: a scalper cannot cancel and place again.
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "a", models.TriggerUserCancel, "user:u1"); return err })
		err := place("c", "u1", "sku-l", "")
		if !errors.Is(err, models.ErrUserLimit) || !strings.Contains(err.Error(), "the limit is 2") {
			t.Fatalf("third order: %v, want USER_LIMIT naming the limit", err)
		}
		if err := place("c2", "u2", "sku-l", ""); err != nil {
			t.Fatalf("another user: %v", err)
		}
		b.clock.Advance(601 * time.Second)
		if err := place("d", "u1", "sku-l", ""); err != nil {
			t.Fatalf("after the window: %v", err)
		}
		// The activity's own limit, and its release delay on close.
		if err := place("e", "u1", "sku-1", "act-l"); err != nil {
			t.Fatal(err)
		}
		if err := place("f", "u1", "sku-1", "act-l"); !errors.Is(err, models.ErrUserLimit) {
			t.Fatalf("second order of the activity: %v, want USER_LIMIT", err)
		}
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "e", models.TriggerUserCancel, "user:u1"); return err })
		var next []time.Time
		must(t, func() error {
			return b.s.R.Raw("SELECT next_at FROM release_tasks WHERE order_no = 'e' AND resource_type = 'quota'").Scan(&next).Error
		})
		if len(next) != 1 || next[0].Sub(b.clock.Now()) != 30*time.Second {
			t.Fatalf("quota task due %v, want 30 s from now", next)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// Two placements of one user at once under a limit of one: exactly one wins.
func TestUserLimitRace(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error {
			_, err := b.s.SetSKU(b.ctx, "sku-r", 100, models.SKUSettings{Limit: models.UserLimit{PerUserOrders: 1, WindowS: 600}}, "test")
			return err
		})
		for round := range 5 {
			user := "racer" + string(rune('a'+round))
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					_, _, errs[i] = b.s.PlaceOrder(b.ctx, models.PlaceRequest{UserID: user,
						Items: []models.Item{{SkuID: "sku-r", Qty: 1}}})
				})
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, models.ErrUserLimit):
					t.Fatalf("round %d: %v", round, err)
				}
			}
			if won != 1 {
				t.Fatalf("round %d: %d placements won, want 1", round, won)
			}
			modelstest.CheckInvariants(t, b.s)
		}
	})
}

func TestStockSettingsRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, set := range []models.SKUSettings{
			{DeductAt: "later"},
			{Limit: models.UserLimit{PerUserOrders: 1}},
			{Limit: models.UserLimit{WindowS: 10}},
			{Limit: models.UserLimit{PerUserOrders: -1, WindowS: 10}},
		} {
			if _, err := b.s.SetSKU(b.ctx, "sku-x", 1, set, "test"); !errors.Is(err, models.ErrInvalid) {
				t.Fatalf("%+v: %v, want INVALID_INPUT", set, err)
			}
		}
		if _, err := b.s.GetSKU(b.ctx, "sku-x"); !errors.Is(err, models.ErrNotFound) {
			t.Fatalf("a refused SKU exists: %v", err)
		}
	})
}
