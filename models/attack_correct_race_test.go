package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// Corrections of one key race everything else that moves it: the worker's
// releases by the batch path (ReleaseBatch, counter.releaseMany) and one
// by one (ReleaseTask), placements' LOCKs, and another operator's
// corrections, each setting a count of its own. Each correction reads the
// ledger after it holds the key, so whatever order they land in, the held
// amount it writes is the ledger's and the store reconciles with every
// chain intact. (No hand edit comes first: the row unhold writes next after
// one starts from the edited values, a jump in the chain that a later
// correction records but does not remove.)
func TestAttackCorrectionRacesWork(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-r", 200, 0, "test"); return err })
		must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 10_000, "test"); return err })
		place := func(no string) error {
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
				Items:  []models.Item{{SkuID: "sku-r", Qty: 1}},
				Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 10}}})
			return err
		}
		const closed = 40
		for i := range closed {
			must(t, func() error { return place(fmt.Sprintf("c-%d", i)) })
		}
		for i := range closed {
			must(t, func() error {
				_, err := b.s.CloseOrder(b.ctx, fmt.Sprintf("c-%d", i), models.TriggerUserCancel, "u1")
				return err
			})
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		run := func(name string, fn func() error) {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
				}
			})
		}
		run("batch worker", func() error {
			for range 20 {
				tasks, err := b.s.ClaimTasks(b.ctx, "wb", 7, time.Minute)
				if err != nil {
					return err
				}
				if len(tasks) > 0 {
					if _, err := b.s.ReleaseBatch(b.ctx, tasks, "wb"); err != nil {
						return err
					}
				}
			}
			return nil
		})
		run("single worker", func() error {
			for range 20 {
				tasks, err := b.s.ClaimTasks(b.ctx, "ws", 3, time.Minute)
				if err != nil {
					return err
				}
				for _, tk := range tasks {
					if _, err := b.s.ReleaseTask(b.ctx, tk, "ws"); err != nil {
						return err
					}
				}
			}
			return nil
		})
		run("placer", func() error {
			for i := range 20 {
				if err := place(fmt.Sprintf("p-%d", i)); err != nil {
					return err
				}
			}
			return nil
		})
		for op := range 2 {
			run(fmt.Sprintf("corrector %d", op), func() error {
				for i := range 15 {
					for _, typ := range []struct {
						t   models.ResourceType
						key string
					}{{models.ResInventory, "sku-r"}, {models.ResBalance, "u1"}} {
						_, err := b.s.CorrectCounter(b.ctx, typ.t, typ.key,
							models.CounterFix{Available: int64(150 + 10*op + i), Reason: "counted"}, fmt.Sprintf("ops%d", op))
						if err != nil && !errors.Is(err, models.ErrNothingToCorrect) {
							return err
						}
					}
				}
				return nil
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			return
		}
		b.drain(t, "w1")
		for i := range 20 {
			must(t, func() error {
				_, err := b.s.CloseOrder(b.ctx, fmt.Sprintf("p-%d", i), models.TriggerUserCancel, "u1")
				return err
			})
		}
		b.drain(t, "w1")
		modelstest.CheckInvariants(t, b.s)
		for _, k := range []struct {
			t   models.ResourceType
			key string
		}{{models.ResInventory, "sku-r"}, {models.ResBalance, "u1"}} {
			l, err := b.s.CounterLedgerOf(b.ctx, k.t, k.key)
			if err != nil {
				t.Fatal(err)
			}
			if l.Row != l.Ledger || l.Row.Locked != 0 {
				t.Errorf("%s %s after the race: %+v, want the row agreeing with its ledger and nothing held", k.t, k.key, l)
			}
		}
	})
}

// A coupon's correction races its order's late payment, which takes the
// coupon back: whichever lands first, the other sees it, and the coupon
// ends LOCKED by the order with its ledger agreeing.
func TestAttackCouponCorrectionRacesLatePayment(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 100, 0, "test"); return err })
		for i := range 6 {
			cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
			if err != nil {
				t.Fatal(err)
			}
			no := fmt.Sprintf("o-%d", i)
			must(t, func() error {
				_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
					Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{cp.ID}})
				return err
			})
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); return err })
			b.drain(t, "w1")
			// A hand edit the correction puts right: the expiry.
			must(t, func() error {
				return b.s.W.Exec("UPDATE user_coupons SET expire_at = ? WHERE id = ?", b.clock.Now().Add(time.Hour), cp.ID).Error
			})
			var wg sync.WaitGroup
			var payErr, fixErr error
			wg.Go(func() { _, payErr = b.s.PayOrder(b.ctx, no, "txn-"+no) })
			wg.Go(func() {
				_, fixErr = b.s.CorrectCoupon(b.ctx, fmt.Sprint(cp.ID), "expiry edited by hand", no, "ops")
				if errors.Is(fixErr, models.ErrNothingToCorrect) {
					fixErr = nil
				}
			})
			wg.Wait()
			if payErr != nil || fixErr != nil {
				t.Fatalf("%s: late payment %v, correction %v", no, payErr, fixErr)
			}
			l, err := b.s.CouponLedgerOf(b.ctx, cp.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !l.Agrees() || l.Coupon.Status != models.CouponUsed && l.Coupon.Status != models.CouponLocked {
				t.Fatalf("%s: coupon after the race %+v, want it held by the order, agreeing with its ledger", no, l)
			}
		}
		b.drain(t, "w1")
		modelstest.CheckInvariants(t, b.s)
	})
}
