package models_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
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

// Writes of one group that contend for what one user holds see each
// other as writes one after the other do: of two placements of a user
// limited to one order of a SKU, two of one coupon, and two freezing more
// balance than the user has for both, one of each is refused;
// and of two payments of one order by two channel transactions, one. Breaks if a member read the state from before the group's
// earlier writes.
func TestAttackWriteGroupMembersContend(t *testing.T) {
	b, h := heldWrites(t)
	cp := b.shop(t)
	must(t, func() error {
		_, err := b.s.SetSKU(b.ctx, "sku-lim", 10, models.SKUSettings{Limit: models.UserLimit{PerUserOrders: 1, WindowS: 3600}}, "test")
		return err
	})
	b.placeN(t, "o-pay")
	item := []models.Item{{SkuID: "sku-2", Qty: 1}}
	got := together(h,
		b.placing(models.PlaceRequest{OrderNo: "o-lim1", UserID: "u1", Items: []models.Item{{SkuID: "sku-lim", Qty: 1}}}),
		b.placing(models.PlaceRequest{OrderNo: "o-lim2", UserID: "u1", Items: []models.Item{{SkuID: "sku-lim", Qty: 1}}}),
		b.placing(models.PlaceRequest{OrderNo: "o-cp1", UserID: "u1", Items: item, CouponIDs: []int64{cp}}),
		b.placing(models.PlaceRequest{OrderNo: "o-cp2", UserID: "u1", Items: item, CouponIDs: []int64{cp}}),
		b.placing(models.PlaceRequest{OrderNo: "o-bal1", UserID: "u1", Items: item, Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 700}}}),
		b.placing(models.PlaceRequest{OrderNo: "o-bal2", UserID: "u1", Items: item, Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 700}}}),
		b.pay("o-pay", "txn-1"), b.pay("o-pay", "txn-2"))
	for i, want := range []error{models.ErrUserLimit, models.ErrCouponUnavailable, models.ErrInsufficientFunds, models.ErrOrderNotPayable} {
		a, c := got[2*i], got[2*i+1]
		if (a != nil || !errors.Is(c, want)) && (c != nil || !errors.Is(a, want)) {
			t.Fatalf("pair %d = %v, %v; want one nil, the other %v", i, a, c, want)
		}
	}
	modelstest.CheckInvariants(t, b.s)
}

// A placement of a group that fills the database (SQLITE_FULL, here
// max_page_count) may take the whole transaction down with it, not only
// its savepoint: the group then fails, and each write is made alone, the
// small one committed, the large one refused on its own. Breaks if the
// others were answered as committed while SQLite had rolled them back, or
// wrote outside any transaction after it.
func TestAttackWriteGroupDatabaseFull(t *testing.T) {
	b, h := heldWrites(t)
	var items []models.Item
	for i := range models.MaxItems {
		sku := fmt.Sprintf("sku-big-%03d", i)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 10, 0, "test"); return err })
		items = append(items, models.Item{SkuID: sku, Qty: 1})
	}
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	var pages int64
	must(t, func() error { return b.s.W.Raw("PRAGMA page_count").Scan(&pages).Error })
	must(t, func() error { return b.s.W.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+4)).Error })
	got := together(h, b.place("o-small", "sku-1"), b.placing(models.PlaceRequest{OrderNo: "o-big", UserID: "u1", Items: items}))
	groups, _ := b.s.WriteGroupStats()
	t.Logf("small = %v, big = %v; %d groups committed", got[0], got[1], groups)
	if got[1] == nil {
		t.Skip("the large placement fit: nothing was full")
	}
	for _, no := range []string{"o-small", "o-big"} {
		_, err := b.s.OrderChain(b.ctx, no)
		if (err == nil) != (no == "o-small" && got[0] == nil) {
			t.Fatalf("%s answered %v, and reads %v", no, got, err)
		}
	}
	must(t, func() error { return b.s.W.Exec("PRAGMA max_page_count = 1073741823").Error })
	modelstest.CheckInvariants(t, b.s)
}
