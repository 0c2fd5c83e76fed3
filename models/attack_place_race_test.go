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
// answers) is refused PLACEMENT_PENDING and changes nothing: were it
// taken, the worker would send the DEDUCT at once, it could reach the
// service before the LOCK, be refused NOT_HELD and go MANUAL. Paid again
// once PlaceOrder answered, the order is PAID and its gift card spent
// once, no task MANUAL.
func TestAttackPayWhileLockInFlight(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 5)
			done := placeSlow(t, b, "o-pf")
			if _, err := b.s.PayOrder(b.ctx, "o-pf", "txn-pf"); !errors.Is(err, models.ErrPlacementPending) {
				t.Fatalf("pay during the lock = %v, want PLACEMENT_PENDING", err)
			}
			if perr := <-done; perr != nil {
				t.Fatalf("PlaceOrder = %v", perr)
			}
			if res, err := b.s.PayOrder(b.ctx, "o-pf", "txn-pf"); err != nil || res.Status != models.OrderPaid {
				t.Fatalf("pay after the placement = %+v, %v; want PAID", res, err)
			}
			if got := b.drain(t, "w-pf"); got[models.OutcomeDone] != 1 || len(got) != 1 {
				t.Errorf("drain after paying = %v, want the DEDUCT done", got)
			}
			if st := b.svc.Stock("gc-1"); st.Held != 0 || st.Spent != 1 {
				t.Errorf("gift card = %+v, want 0 held and 1 spent", st)
			}
			reconcileClean(t, b)
		})
	}
}

// A payment that arrives while the order's lock call is on its way, and
// the service then refuses the lock: the payment is refused
// PLACEMENT_PENDING, the placement answers REMOTE_REJECTED and closes the
// order PLACE_ABORTED. The payment tried again is a late one: the order,
// which held a remote type, goes REFUND_PENDING; its release is an empty
// rollback, and no task goes MANUAL.
func TestAttackPayThenLockRefused(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			b.svc.SetAvailable("gc-1", 0)
			done := placeSlow(t, b, "o-pr")
			if _, err := b.s.PayOrder(b.ctx, "o-pr", "txn-pr"); !errors.Is(err, models.ErrPlacementPending) {
				t.Fatalf("pay during the lock = %v, want PLACEMENT_PENDING", err)
			}
			if perr := <-done; !errors.Is(perr, models.ErrRemoteRejected) {
				t.Fatalf("PlaceOrder = %v, want REMOTE_REJECTED (no gift card available)", perr)
			}
			res, err := b.s.PayOrder(b.ctx, "o-pr", "txn-pr")
			if err != nil || res.Status != models.OrderRefundPending || !res.Late {
				t.Fatalf("pay after the abort = %+v, %v; want REFUND_PENDING late", res, err)
			}
			if got := b.drain(t, "w-pr"); got[models.OutcomeManual] != 0 || got[models.OutcomeDone] != 1 {
				t.Errorf("drain = %v, want the release done and nothing MANUAL", got)
			}
			if st := b.svc.Stock("gc-1"); st.Held != 0 || st.Spent != 0 {
				t.Errorf("gift card = %+v, want nothing held or spent", st)
			}
			reconcileClean(t, b)
		})
	}
}
