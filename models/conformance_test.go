package models_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// fixture makes one key of a resource type that an order can hold, and
// edits it behind the ledger's back the way a person would.
type fixture struct {
	// make creates a key with enough for two orders' holds of qty; each n
	// makes a key of its own, so a single held for good (a coupon used)
	// leaves the next order another.
	make func(t *testing.T, b bundle, n int) (key string, qty int64)
	// steal makes the hold impossible to give back (a counter's held
	// amount gone, a single held for another order, a service refusing
	// the release); unsteal undoes it.
	steal, unsteal edit
	// edit changes the key, which an order holds, so that reconciliation
	// must notice.
	edit edit
	// payTasks is how many tasks a payment leaves for the worker: a
	// remote type's deduction is one.
	payTasks int
	// latePaid is what a payment after the close makes of the order: a
	// remote type's hold is not taken back, so it is REFUND_PENDING.
	latePaid models.OrderStatus
}

// edit changes a key behind the ledger's back.
type edit func(t *testing.T, b bundle, key string)

// sqlEdit is an edit by one statement whose one argument is the key.
func sqlEdit(q string) edit {
	return func(t *testing.T, b bundle, key string) {
		must(t, func() error { return b.s.W.Exec(q, key).Error })
	}
}

// giftWrap is the declared counter type of the conformance suite.
const giftWrap models.ResourceType = "gift_wrap"

// fixtures covers every type the conformance suite's store registers: a
// type without a fixture fails the suite, so a new type cannot skip it.
var fixtures = map[models.ResourceType]fixture{
	models.ResInventory: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-c"+strconv.Itoa(n), 10, 0, "test"); return err })
			return "sku-c" + strconv.Itoa(n), 2
		},
		steal:   sqlEdit("UPDATE inventory SET locked = 0 WHERE sku_id = ?"),
		unsteal: sqlEdit("UPDATE inventory SET locked = 2 WHERE sku_id = ?"),
		edit:    sqlEdit("UPDATE inventory SET available = available + 1 WHERE sku_id = ?"),
	},
	models.ResBalance: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error {
				_, err := b.s.Credit(b.ctx, "u-c"+strconv.Itoa(n), models.AssetBalance, 1000, "test")
				return err
			})
			return "u-c" + strconv.Itoa(n), 300
		},
		steal:   sqlEdit("UPDATE accounts SET frozen = 0 WHERE uid = ? AND asset = 'BALANCE'"),
		unsteal: sqlEdit("UPDATE accounts SET frozen = 300 WHERE uid = ? AND asset = 'BALANCE'"),
		edit:    sqlEdit("UPDATE accounts SET available = available + 1 WHERE uid = ? AND asset = 'BALANCE'"),
	},
	models.ResPoints: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error {
				_, err := b.s.Credit(b.ctx, "u-c"+strconv.Itoa(n), models.AssetPoints, 500, "test")
				return err
			})
			return "u-c" + strconv.Itoa(n), 100
		},
		steal:   sqlEdit("UPDATE accounts SET frozen = 0 WHERE uid = ? AND asset = 'POINTS'"),
		unsteal: sqlEdit("UPDATE accounts SET frozen = 100 WHERE uid = ? AND asset = 'POINTS'"),
		edit:    sqlEdit("UPDATE accounts SET spent = spent + 1 WHERE uid = ? AND asset = 'POINTS'"),
	},
	models.ResQuota: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-c"+strconv.Itoa(n), 5, "test"); return err })
			return "act-c" + strconv.Itoa(n), 1
		},
		steal:   sqlEdit("UPDATE activity_quotas SET locked = 0 WHERE activity_id = ?"),
		unsteal: sqlEdit("UPDATE activity_quotas SET locked = 1 WHERE activity_id = ?"),
		edit:    sqlEdit("UPDATE activity_quotas SET available = available + 1 WHERE activity_id = ?"),
	},
	models.ResCoupon: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			cp, err := b.s.CreateCoupon(b.ctx, "u-c"+strconv.Itoa(n), models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
			if err != nil {
				t.Fatal(err)
			}
			return strconv.FormatInt(cp.ID, 10), 1
		},
		steal:   sqlEdit("UPDATE user_coupons SET order_no = 'another' WHERE CAST(id AS TEXT) = ?"),
		unsteal: sqlEdit("UPDATE user_coupons SET order_no = 'o-c' WHERE CAST(id AS TEXT) = ?"),
		edit:    sqlEdit("UPDATE user_coupons SET status = 'USED' WHERE CAST(id AS TEXT) = ?"),
	},
	models.ResSlot: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error { _, _, err := b.s.PutSlot(b.ctx, "seat-c"+strconv.Itoa(n), "test"); return err })
			return "seat-c" + strconv.Itoa(n), 1
		},
		steal:   sqlEdit("UPDATE slot_holds SET order_no = 'another' WHERE slot_id = ?"),
		unsteal: sqlEdit("UPDATE slot_holds SET order_no = 'o-c' WHERE slot_id = ?"),
		edit:    sqlEdit("UPDATE slot_holds SET status = 'SOLD' WHERE slot_id = ?"),
	},
	giftWrap: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			must(t, func() error {
				_, err := b.s.SetDeclared(b.ctx, giftWrap, "box-c"+strconv.Itoa(n), 5, "test")
				return err
			})
			return "box-c" + strconv.Itoa(n), 2
		},
		steal:   sqlEdit("UPDATE declared_counters SET locked = 0 WHERE biz_key = ? AND resource_type = 'gift_wrap'"),
		unsteal: sqlEdit("UPDATE declared_counters SET locked = 2 WHERE biz_key = ? AND resource_type = 'gift_wrap'"),
		edit:    sqlEdit("UPDATE declared_counters SET available = available + 1 WHERE biz_key = ? AND resource_type = 'gift_wrap'"),
	},
	giftCard: {
		make: func(t *testing.T, b bundle, n int) (string, int64) {
			b.svc.SetAvailable("card-c"+strconv.Itoa(n), 6)
			return "card-c" + strconv.Itoa(n), 3
		},
		steal: func(t *testing.T, b bundle, key string) {
			b.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"NOT_HELD","message":"not held"}`})
		},
		unsteal:  func(*testing.T, bundle, string) {},
		edit:     func(t *testing.T, b bundle, key string) { b.svc.SetHeld(key, 0) },
		payTasks: 1,
		latePaid: models.OrderRefundPending,
	},
}

// giftCard is the remote type of the conformance suite, kept by a fake
// service over real HTTP.
const giftCard models.ResourceType = "giftcard"

// conformanceStore is a store with a declared counter type and a remote
// type beside the built-in ones.
func conformanceStore(t *testing.T, d models.Dialect) bundle {
	clock := modelstest.NewClock()
	svc := remotetest.New(remotetest.Options{})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	s := modelstest.Open(t, d, models.Options{Now: clock.Now,
		Declared: []models.DeclaredType{{Type: giftWrap, Label: models.Label{Zh: "礼品包装", En: "Gift wrap"}}},
		Remote:   []models.RemoteType{{Type: giftCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}},
	})
	return bundle{s: s, clock: clock, ctx: t.Context(), svc: svc}
}

// Every resource type in the registry, built-in, declared or remote,
// keeps the same promises through the same generic paths: an order holds
// it through the generic holds list; a close gives it back exactly once,
// by a batch and again by a single release (a redelivered task is a
// DUPLICATE that changes nothing); a payment deducts it, and a late
// payment takes it back from its release (a remote type's order goes to
// REFUND_PENDING and its release goes on); a hold that cannot be given
// back goes MANUAL with a permanent class and, once fixed by hand, a rerun
// releases it; a hand edit of a held key is found by reconciliation. The
// invariants hold after each. A type's promises are checked in turn on one
// store, each on keys and orders of its own (n numbers the keys and their
// users), the hand edit last: a store per promise cost a database each.
func TestResourceConformance(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			types := conformanceStore(t, d).s.Types()
			if len(types) != len(fixtures) {
				t.Fatalf("the registry has %v; the suite has a fixture for each of %d types", types, len(fixtures))
			}
			for _, typ := range types {
				fx, ok := fixtures[typ]
				if !ok {
					t.Fatalf("resource type %s has no conformance fixture", typ)
				}
				t.Run(string(typ), func(t *testing.T) {
					t.Parallel()
					b := conformanceStore(t, d)
					for n, path := range []string{"batch", "single"} {
						t.Run("close and release/"+path, func(t *testing.T) { conformRelease(t, b, typ, fx, path, n+1) })
					}
					t.Run("pay and late pay", func(t *testing.T) { conformPay(t, b, typ, fx, 3) })
					t.Run("manual then rerun", func(t *testing.T) { conformRerun(t, b, typ, fx, 5) })
					t.Run("hand edit reconciled", func(t *testing.T) { conformEdit(t, b, typ, fx, 6) })
				})
			}
		})
	}
}

// placeOne places order no of user holding qty of key of typ through the
// generic list, and closes it when close is set.
func placeOne(t *testing.T, b bundle, no, user string, typ models.ResourceType, key string, qty int64, close bool) {
	t.Helper()
	if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: user,
		Holds: []models.HoldRequest{{Type: typ, Key: key, Qty: qty}}}); err != nil {
		t.Fatalf("place %s: %v", no, err)
	}
	if close {
		if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, user); err != nil {
			t.Fatalf("close %s: %v", no, err)
		}
	}
}

// releaseAll claims every due task and releases it by path, counting
// outcomes.
func releaseAll(t *testing.T, b bundle, path string) map[string]int {
	t.Helper()
	if path == "single" {
		return b.drain(t, "w-c")
	}
	out := map[string]int{}
	tasks := claimAll(t, b, "w-c")
	res, err := b.s.ReleaseBatch(b.ctx, tasks, "w-c")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		out[r.Outcome]++
	}
	return out
}

// reconcileClean asserts that reconciliation finds nothing and the
// invariants hold: they compare every key's held amount with the orders
// and tasks, and every ledger with its resource, so they say whether a
// hold came back.
func reconcileClean(t *testing.T, b bundle) {
	t.Helper()
	diffs, err := b.s.Reconcile(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Fatalf("reconciliation found %+v", diffs)
	}
	modelstest.CheckInvariants(t, b.s)
}

func conformRelease(t *testing.T, b bundle, typ models.ResourceType, fx fixture, path string, n int) {
	no, user := "o-"+path, "u-c"+strconv.Itoa(n)
	key, qty := fx.make(t, b, n)
	placeOne(t, b, no, user, typ, key, qty, true)
	if got := releaseAll(t, b, path); got[models.OutcomeDone] != 1 || len(got) != 1 {
		t.Fatalf("release = %v, want one DONE", got)
	}
	reconcileClean(t, b)
	// A redelivery: only the ledger's unique key stands in the way.
	must(t, func() error {
		return b.s.W.Exec("UPDATE release_tasks SET status = 'PENDING', lease_until = NULL WHERE order_no = ?", no).Error
	})
	if got := releaseAll(t, b, path); got[models.OutcomeDuplicate] != 1 || len(got) != 1 {
		t.Fatalf("redelivered release = %v, want one DUPLICATE", got)
	}
	reconcileClean(t, b)
	// Given back, the key holds a second order again.
	placeOne(t, b, no+"-2", user, typ, key, qty, false)
}

func conformPay(t *testing.T, b bundle, typ models.ResourceType, fx fixture, n int) {
	key, qty := fx.make(t, b, n)
	placeOne(t, b, "o-paid", "u-c"+strconv.Itoa(n), typ, key, qty, false)
	if res, err := b.s.PayOrder(b.ctx, "o-paid", "txn-1"); err != nil || res.Status != models.OrderPaid {
		t.Fatalf("pay = %+v, %v", res, err)
	}
	reconcileClean(t, b)
	if got := releaseAll(t, b, "batch"); got[models.OutcomeDone] != fx.payTasks || len(got) > 1 {
		t.Fatalf("after the payment the worker did %v, want %d DONE", got, fx.payTasks)
	}
	reconcileClean(t, b)
	// Closed, not yet released, then paid: the payment takes the hold
	// back from its release task, or leaves it to release.
	key, qty = fx.make(t, b, n+1)
	placeOne(t, b, "o-late", "u-c"+strconv.Itoa(n+1), typ, key, qty, true)
	want, released := fx.latePaid, 1
	if want == "" {
		want, released = models.OrderPaid, 0
	}
	res, err := b.s.PayOrder(b.ctx, "o-late", "txn-2")
	if err != nil || res.Status != want || !res.Late {
		t.Fatalf("late pay = %+v, %v; want %s late", res, err, want)
	}
	if got := releaseAll(t, b, "batch"); got[models.OutcomeDone] != released || len(got) > 1 {
		t.Fatalf("after a late payment the worker did %v, want %d DONE", got, released)
	}
	reconcileClean(t, b)
}

func conformRerun(t *testing.T, b bundle, typ models.ResourceType, fx fixture, n int) {
	key, qty := fx.make(t, b, n)
	placeOne(t, b, "o-c", "u-c"+strconv.Itoa(n), typ, key, qty, true)
	fx.steal(t, b, key)
	if got := releaseAll(t, b, "batch"); got[models.OutcomeManual] != 1 {
		t.Fatalf("release of a stolen hold = %v, want MANUAL", got)
	}
	fx.unsteal(t, b, key)
	_, err := b.s.Rerun(b.ctx, "o-c", typ, "ops", "fixed the hold by hand")
	if errors.Is(err, models.ErrNeedsApproval) {
		// A type that moves money: the rerun is a request another person approves.
		task := b.task(t, "o-c")
		var r *models.ApprovalRequest
		if r, err = b.s.RequestApproval(b.ctx, task.ID, models.ApprovalRerun, alice, "fixed the hold by hand"); err == nil {
			_, err = b.s.ApproveRequest(b.ctx, r.ID, bob, "checked")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := releaseAll(t, b, "batch"); got[models.OutcomeDone] != 1 {
		t.Fatalf("rerun = %v, want DONE", got)
	}
	reconcileClean(t, b)
}

func conformEdit(t *testing.T, b bundle, typ models.ResourceType, fx fixture, n int) {
	key, qty := fx.make(t, b, n)
	placeOne(t, b, "o-e", "u-c"+strconv.Itoa(n), typ, key, qty, false)
	// Past the time a placement's calls may still be on their way: a
	// remote key is compared with its service only then.
	b.clock.Advance(time.Minute)
	reconcileClean(t, b)
	fx.edit(t, b, key)
	diffs, err := b.s.Reconcile(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, df := range diffs {
		if df.Resource == typ && df.Key == key {
			return
		}
	}
	t.Fatalf("a hand edit of %s %s: reconciliation found %+v", typ, key, diffs)
}
