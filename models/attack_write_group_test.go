package models_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/remote"
)

// A placement with a remote hold whose caller gives up while its group
// commits (its write made, the commit to come) must not commit without
// anyone sending its locks: alone, a placement either rolls back with its
// caller, or commits and has its locks sent (a caller gone fails them, and
// the order is closed PLACE_ABORTED). Breaks if the member left its group
// and the group, kept by another member, committed the order for nobody:
// PENDING, its gift card LOCK recorded as sent and never sent, its stock
// held until the pay deadline.
func TestAttackWriteGroupMemberLeavesAfterItsWrite(t *testing.T) {
	t.Parallel()
	var (
		armed, formed atomic.Bool
		cancel        context.CancelFunc
		s             *models.Store
		placed        = make(chan struct{})
	)
	e := newRemoteEnv(t, models.SQLite, remoteOpts{faults: func(point string, _ *models.ReleaseTask) error {
		switch {
		case point == models.FaultWriteGroup && armed.Load() && !formed.Swap(true):
			for deadline := time.Now().Add(30 * time.Second); s.WriteGroupForming() < 2; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					return errors.New("the group never had both placements")
				}
			}
		case point == models.FaultWriteGroupCommit && armed.Swap(false):
			// Both writes are made; o-gone's caller hangs up before the
			// commit and is given, at most a second, to leave.
			cancel()
			select {
			case <-placed:
			case <-time.After(time.Second):
			}
		}
		return nil
	}})
	s = e.s
	ctx, c := context.WithCancel(e.ctx)
	cancel = c
	place := func(ctx context.Context, no, card string) error {
		_, _, err := e.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, Holds: []models.HoldRequest{{Type: giftCard, Key: card, Qty: 2}}})
		return err
	}
	armed.Store(true)
	var gone, stay error
	var wg sync.WaitGroup
	wg.Go(func() { gone = place(ctx, "o-gone", "card-1"); close(placed) })
	wg.Go(func() { stay = place(e.ctx, "o-stay", "card-2") })
	wg.Wait()
	if stay != nil {
		t.Fatalf("placement of o-stay = %v", stay)
	}
	if gone == nil {
		t.Fatal("placement whose caller hung up = nil, want an error")
	}
	if groups, _ := e.s.WriteGroupStats(); groups != 1 {
		t.Fatalf("%d write groups committed, want the one of both placements", groups)
	}
	var orders []models.Order
	must(t, func() error { return e.s.R.Where("order_no = ?", "o-gone").Find(&orders).Error })
	if len(orders) == 1 && orders[0].Status == models.OrderPending {
		t.Fatalf("placement answered %v, and its order committed PENDING with its locks never sent (answered at %v); the service saw %d locks",
			gone, orders[0].LocksAnsweredAt, e.svc.Calls(remote.IdempotencyKey("o-gone", string(giftCard), "card-1", remote.OpLock, 0)))
	}
	if len(orders) == 1 {
		wantAborted(t, e, "o-gone")
		if !errors.Is(gone, models.ErrRemoteUnavailable) {
			t.Fatalf("placement = %v, want REMOTE_UNAVAILABLE: its lock could not be sent", gone)
		}
	}
}
