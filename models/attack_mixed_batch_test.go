package models_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// mixedStore is conformanceStore with a fault function.
func mixedStore(t *testing.T, d models.Dialect, faults models.FaultFunc) bundle {
	clock := modelstest.NewClock()
	svc := remotetest.New(remotetest.Options{})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: faults,
		Remote: []models.RemoteType{{Type: giftCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
	return bundle{s: s, clock: clock, ctx: t.Context(), svc: svc}
}

// One claim of remote and local tasks where one remote call fails and the
// batch's transaction then does not commit; the worker's fallback tries
// each task alone. Every result is its own task's, every local task is
// released once, the failed remote task is neither released nor called
// again by the fallback, the answered ones are not called again; after
// the retry is due everything is back and reconciliation is clean.
func TestAttackMixedBatchFallback(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		for _, commit := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/commit=%v", d, commit), func(t *testing.T) {
				t.Parallel()
				var armed atomic.Bool
				var bctx context.Context
				b := mixedStore(t, d, func(point string, tk *models.ReleaseTask) error {
					if !armed.Load() {
						return nil
					}
					switch {
					case point == models.FaultAfterCall && tk.OrderNo == "o-r2":
						return errors.New("injected: lost after the call")
					case point == models.FaultAfterLedger && tk.OrderNo == "o-l2" && !commit:
						<-bctx.Done()
					}
					return nil
				})
				must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
				var reqs []models.PlaceRequest
				for i := 1; i <= 3; i++ {
					key := fmt.Sprintf("GC-%d", i)
					b.svc.SetAvailable(key, 5)
					reqs = append(reqs,
						models.PlaceRequest{OrderNo: fmt.Sprintf("o-r%d", i), UserID: "u1", Holds: []models.HoldRequest{{Type: giftCard, Key: key, Qty: 2}}},
						models.PlaceRequest{OrderNo: fmt.Sprintf("o-l%d", i), UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
				}
				batchShop(t, b, reqs)
				tasks := claimAll(t, b, "w1")
				if len(tasks) != 6 {
					t.Fatalf("claimed %d tasks, want 6", len(tasks))
				}
				armed.Store(true)
				var cancel context.CancelFunc
				bctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				res, err := b.s.ReleaseBatch(bctx, tasks, "w1")
				switch {
				case commit && err != nil:
					t.Fatal(err)
				case !commit && !errors.Is(err, models.ErrBatchNotCommitted):
					t.Fatalf("batch = %v, %v; want ErrBatchNotCommitted", res, err)
				case !commit:
					armed.Store(false)
					res = nil
					for _, tk := range tasks {
						r, err := b.s.ReleaseTask(b.ctx, tk, "w1")
						if err != nil {
							t.Fatal(err)
						}
						res = append(res, r)
					}
				}
				armed.Store(false)
				for i, tk := range tasks {
					want := models.OutcomeDone
					if tk.OrderNo == "o-r2" {
						want = models.OutcomeRetry
						if !commit {
							want = models.OutcomeLeaseLost
						}
					}
					if res[i].Outcome != want {
						t.Errorf("result %d (%s) = %+v, want %s", i, tk.OrderNo, res[i], want)
					}
				}
				for i := 1; i <= 3; i++ {
					k := remote.IdempotencyKey(fmt.Sprintf("o-r%d", i), string(giftCard), fmt.Sprintf("GC-%d", i), remote.OpRelease, 0)
					if n := b.svc.Calls(k); n != 1 {
						t.Errorf("release of o-r%d called %d times before its retry, want 1", i, n)
					}
				}
				if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 0 || sku.Available != 10 {
					t.Errorf("sku-1 = %+v, want every local hold released once", sku)
				}
				b.clock.Advance(time.Hour)
				got := b.drain(t, "w2")
				if got[models.OutcomeDuplicate] != 1 || len(got) != 1 {
					t.Errorf("retry of o-r2 = %v, want one DUPLICATE (the service had done it)", got)
				}
				for i := 1; i <= 3; i++ {
					if st := b.svc.Stock(fmt.Sprintf("GC-%d", i)); st.Held != 0 || st.Available != 5 {
						t.Errorf("GC-%d = %+v, want all back", i, st)
					}
				}
				reconcileClean(t, b)
			})
		}
	}
}
