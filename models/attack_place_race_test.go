package models_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// waitCall waits until the service has seen a request with idempotency key k.
func waitCall(t *testing.T, svc *remotetest.Service, k string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); svc.Calls(k) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no call with key %s", k)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// placeSlow places order no holding one gc-1 while every call is slow,
// and returns once the order committed and its lock reached the service
// (not yet applied), with the channel PlaceOrder's error comes on.
func placeSlow(t *testing.T, b bundle, no string) <-chan error {
	t.Helper()
	b.svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: time.Second})
	done := make(chan error, 1)
	go func() {
		_, _, err := b.s.PlaceOrder(context.Background(), models.PlaceRequest{OrderNo: no, UserID: "u1",
			Holds: []models.HoldRequest{{Type: giftCard, Key: "gc-1", Qty: 1}}})
		done <- err
	}()
	waitCall(t, b.svc, remote.IdempotencyKey(no, string(giftCard), "gc-1", remote.OpLock, 0))
	b.svc.SetFaults(remotetest.Faults{})
	return done
}

// A payment that arrives while the order's lock call is still on its way
// (the client chose the order number, so it can pay before PlaceOrder
// answers): the worker sends the DEDUCT at once, it reaches the service
// before the LOCK, and then the LOCK lands. Every remote hold must end
// deducted once, with no task left MANUAL and PlaceOrder's answer true to
// the order's state.
func TestAttackPayWhileLockInFlight(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 5)
			done := placeSlow(t, b, "o-pf")
			if _, err := b.s.PayOrder(b.ctx, "o-pf", "txn-pf"); err != nil {
				t.Fatal(err)
			}
			got := b.drain(t, "w-pf")
			perr := <-done
			if perr != nil {
				t.Errorf("PlaceOrder = %v for an order that was paid and locked", perr)
			}
			if got[models.OutcomeManual] != 0 {
				t.Errorf("drain after paying during the lock = %v: the DEDUCT went MANUAL", got)
			}
			b.drain(t, "w-pf")
			if st := b.svc.Stock("gc-1"); st.Held != 0 || st.Spent != 1 {
				t.Errorf("gift card after paying during the lock = %+v, want 0 held and 1 spent", st)
			}
		})
	}
}

// A payment that arrives while the order's lock call is on its way, and
// the service then refuses the lock: PlaceOrder tells the client the
// order was refused, yet it stays PAID, its money taken, its DEDUCT task
// MANUAL for a lock the service never made.
func TestAttackPayThenLockRefused(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 0)
			done := placeSlow(t, b, "o-pr")
			if _, err := b.s.PayOrder(b.ctx, "o-pr", "txn-pr"); err != nil {
				t.Fatal(err)
			}
			perr := <-done
			if !errors.Is(perr, models.ErrRemoteRejected) {
				t.Fatalf("PlaceOrder = %v, want REMOTE_REJECTED (no gift card available)", perr)
			}
			var o models.Order
			must(t, func() error { return b.s.W.Where("order_no = 'o-pr'").Take(&o).Error })
			if o.Status == models.OrderPaid {
				t.Errorf("PlaceOrder answered REMOTE_REJECTED, yet order o-pr is PAID (note %q): "+
					"the customer paid for a hold the service refused", o.Note)
			}
			got := b.drain(t, "w-pr")
			if got[models.OutcomeManual] != 0 {
				t.Errorf("drain = %v: a task went MANUAL", got)
			}
		})
	}
}
