package models_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"
	"unhold/models"
	"unhold/models/modelstest"
)

// releasedOnce checks that the order's inventory task is DONE with exactly
// one RELEASE ledger row.
func releasedOnce(t *testing.T, s *models.Store, orderNo string) {
	t.Helper()
	c, err := s.OrderChain(context.Background(), orderNo)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range c.Flows {
		if f.Type == models.FlowRelease && f.ResourceType == models.ResInventory {
			n++
		}
	}
	if len(c.Tasks) != 1 || c.Tasks[0].Status != models.TaskDone || n != 1 {
		t.Fatalf("%s: tasks %+v with %d RELEASE rows, want one DONE task released once", orderNo, c.Tasks, n)
	}
}

// A task given twice in one batch is one try: released once, one attempt
// row, one outcome counted; the other copy finds it no longer its lease's,
// as a second try of it alone (ReleaseTask) would.
func TestAttackBatchTaskTwice(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		batchShop(t, b, []models.PlaceRequest{
			{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		})
		tasks := claimAll(t, b, "w1")
		results, err := b.s.ReleaseBatch(b.ctx, []models.ReleaseTask{tasks[0], tasks[0]}, "w1")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, r := range results {
			got[r.Outcome]++
		}
		if got[models.OutcomeDone] != 1 || got[models.OutcomeLeaseLost] != 1 {
			t.Errorf("results = %+v, want one DONE and one LEASE_LOST", results)
		}
		if n := attemptsOf(t, b); n[tasks[0].ID] != 1 {
			t.Errorf("attempt rows = %v, want exactly 1", n)
		}
		releasedOnce(t, b.s, "o-1")
	})
}

// A task whose RELEASE is already in the ledger (released, then its row
// edited back to PENDING) is DONE and DUPLICATE, counted once and released
// no further, beside a neighbour that releases; on PostgreSQL the
// conflicting insert must not abort the fast path's transaction.
func TestAttackBatchDuplicateLedger(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		batchShop(t, b, []models.PlaceRequest{
			{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		})
		first := claimAll(t, b, "w1")
		if _, err := b.s.ReleaseBatch(b.ctx, first, "w1"); err != nil {
			t.Fatal(err)
		}
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = 'PENDING', done_at = NULL WHERE id = ?", first[0].ID).Error
		})
		batchShop(t, b, []models.PlaceRequest{
			{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		})
		tasks := claimAll(t, b, "w1")
		if len(tasks) != 2 {
			t.Fatalf("claimed %d tasks, want 2", len(tasks))
		}
		results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
		if err != nil {
			t.Fatal(err)
		}
		for i, tk := range tasks {
			want := models.OutcomeDone
			if tk.ID == first[0].ID {
				want = models.OutcomeDuplicate
			}
			if results[i].Outcome != want {
				t.Errorf("%s: %+v, want %s", tk.OrderNo, results[i], want)
			}
		}
		if n := attemptsOf(t, b); n[first[0].ID] != 2 || n[tasks[0].ID]+n[tasks[1].ID] != 3 {
			t.Errorf("attempt rows = %v, want 2 for o-1 (its release, its duplicate), 1 for o-2", n)
		}
		releasedOnce(t, b.s, "o-1")
		releasedOnce(t, b.s, "o-2")
		if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 0 || sku.Available != 10 {
			t.Fatalf("sku = %+v, want both units back once", sku)
		}
	})
}

// A fault on the fast path (an error, a panic, panic(nil)) is counted once,
// as its own task's failure, with one attempt row, and not tried again in
// the same batch; its neighbours release once each.
func TestAttackBatchFastPathFaultCountedOnce(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		for _, kind := range []string{"error", "panic", "panic-nil"} {
			t.Run(string(d)+"/"+kind, func(t *testing.T) {
				t.Parallel()
				var calls atomic.Int64
				b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
					if point != models.FaultAfterLedger || tk.OrderNo != "o-2" || calls.Add(1) > 1 {
						return nil
					}
					switch kind {
					case "panic":
						panic("fast path only")
					case "panic-nil":
						panic(nil)
					}
					return errors.New("fast path only")
				}})
				must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
				batchShop(t, b, []models.PlaceRequest{
					{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
					{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
					{OrderNo: "o-3", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				})
				tasks := claimAll(t, b, "w1")
				results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
				if err != nil {
					t.Fatal(err)
				}
				n := attemptsOf(t, b)
				for i, tk := range tasks {
					want := models.OutcomeDone
					if tk.OrderNo == "o-2" {
						want = models.OutcomeRetry
					} else {
						releasedOnce(t, b.s, tk.OrderNo)
					}
					if results[i].Outcome != want || n[tk.ID] != 1 {
						t.Errorf("%s: %+v with %d attempt rows, want %s with 1", tk.OrderNo, results[i], n[tk.ID], want)
					}
				}
				if calls.Load() != 1 {
					t.Errorf("o-2 tried %d times in one batch, want once", calls.Load())
				}
				c, err := b.s.OrderChain(b.ctx, "o-2")
				if err != nil {
					t.Fatal(err)
				}
				if task := c.Tasks[0]; task.Failures != 1 || len(c.Flows) != 1 {
					t.Fatalf("o-2: %+v with flows %+v, want one failure and only its LOCK", task.ReleaseTask, c.Flows)
				}
			})
		}
	}
}

// A fault on every try, panic(nil) included, is recorded once as its own
// task's CRASHED failure; its neighbours release.
func TestAttackBatchPanicNilEveryTry(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.OrderNo == "o-2" {
					panic(nil)
				}
				return nil
			}})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			batchShop(t, b, []models.PlaceRequest{
				{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			})
			tasks := claimAll(t, b, "w1")
			results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
			if err != nil {
				t.Fatal(err)
			}
			n := attemptsOf(t, b)
			for i, tk := range tasks {
				want := models.OutcomeDone
				if tk.OrderNo == "o-2" {
					want = models.OutcomeRetry
				}
				if results[i].Outcome != want || n[tk.ID] != 1 {
					t.Errorf("%s: %+v with %d attempt rows, want %s with 1", tk.OrderNo, results[i], n[tk.ID], want)
				}
			}
			c, err := b.s.OrderChain(b.ctx, "o-2")
			if err != nil {
				t.Fatal(err)
			}
			if task := c.Tasks[0]; task.Failures != 1 || task.ErrorClass != models.ClassCrashed || task.LeaseToken != "" {
				t.Fatalf("o-2: %+v, want one CRASHED failure and no lease", task.ReleaseTask)
			}
		})
	}
}

// twoStores opens two stores (two instances) on one fresh database, the
// first with faults, on one clock.
func twoStores(t *testing.T, d models.Dialect, faults models.FaultFunc) (s1, s2 *models.Store, clock *modelstest.Clock) {
	t.Helper()
	dsn := modelstest.MigratedDSN(t, d)
	clock = modelstest.NewClock()
	open := func(faults models.FaultFunc) *models.Store {
		s, err := models.Open(context.Background(), dsn, models.Options{Now: clock.Now, Faults: faults, BusyTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s1 = open(faults)
	return s1, open(nil), clock
}

// blockedBatch opens two stores (see twoStores); the first's batch stops
// after o-1's ledger insert until release is closed.
func blockedBatch(t *testing.T, d models.Dialect) (s1, s2 *models.Store, clock *modelstest.Clock, inside chan struct{}, release chan struct{}) {
	t.Helper()
	inside, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	s1, s2, clock = twoStores(t, d, func(point string, tk *models.ReleaseTask) error {
		if point == models.FaultAfterLedger && tk.OrderNo == "o-1" {
			once.Do(func() { close(inside) })
			<-release
		}
		return nil
	})
	return s1, s2, clock, inside, release
}

// Another instance counting expired leases, or claiming, while a batch
// holds them neither counts a crash nor takes a task: each task is
// released exactly once, with one attempt row and no failure.
func TestAttackBatchRacesRescue(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s1, s2, clock, inside, release := blockedBatch(t, d)
			b := bundle{s: s1, clock: clock, ctx: context.Background()}
			must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			batchShop(t, b, []models.PlaceRequest{
				{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			})
			tasks, err := s1.ClaimTasks(b.ctx, "w1", 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Minute) // the lease has run out, uncounted
			done := make(chan error, 1)
			go func() {
				_, err := s1.ReleaseBatch(b.ctx, tasks, "w1")
				done <- err
			}()
			<-inside
			var rescued, claimed atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				n, err := s2.RescueLeases(b.ctx)
				if err != nil {
					t.Error(err)
				}
				rescued.Store(n)
				got, err := s2.ClaimTasks(b.ctx, "w2", 10, time.Minute)
				if err != nil {
					t.Error(err)
				}
				claimed.Store(int64(len(got)))
			})
			time.Sleep(200 * time.Millisecond)
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if rescued.Load() != 0 || claimed.Load() != 0 {
				t.Errorf("the other instance counted %d lost tries and claimed %d tasks the batch held", rescued.Load(), claimed.Load())
			}
			n := attemptsOf(t, b)
			for _, tk := range tasks {
				releasedOnce(t, s1, tk.OrderNo)
				if n[tk.ID] != 1 {
					t.Errorf("%s: %d attempt rows, want 1", tk.OrderNo, n[tk.ID])
				}
			}
		})
	}
}

// A late payment of an order whose task a batch is releasing waits for the
// batch, then takes the hold back: the order ends PAID with its unit
// deducted once, and the books balance.
func TestAttackBatchRacesLatePayment(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s1, s2, clock, inside, release := blockedBatch(t, d)
			b := bundle{s: s1, clock: clock, ctx: context.Background()}
			must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			batchShop(t, b, []models.PlaceRequest{
				{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			})
			tasks, err := s1.ClaimTasks(b.ctx, "w1", 10, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := s1.ReleaseBatch(b.ctx, tasks, "w1")
				done <- err
			}()
			<-inside
			paid := make(chan error, 1)
			var res models.PayResult
			go func() {
				var err error
				res, err = s2.PayOrder(b.ctx, "o-1", "txn-1")
				paid <- err
			}()
			time.Sleep(200 * time.Millisecond)
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if err := <-paid; err != nil {
				t.Fatal(err)
			}
			if res.Status != models.OrderPaid || !res.Late {
				t.Fatalf("pay = %+v, want PAID late", res)
			}
			if sku, _ := s1.GetSKU(b.ctx, "sku-1"); sku.Locked != 0 || sku.Available != 9 {
				t.Fatalf("sku = %+v, want o-1's unit sold and o-2's back", sku)
			}
			modelstest.CheckInvariants(t, s1)
		})
	}
}

// A late payment locks its order's tasks by id; a batch's fence must lock
// them in that order too, whatever order the rows lie in on disk, or the
// two wait on each other and PostgreSQL aborts one (the payment, which
// waited first). Here a third transaction holds the order's second task
// while the batch fences and the payment locks, and the first task's row
// was rewritten last, so it lies after the second on disk.
func TestAttackBatchFenceLockOrderVsLatePayment(t *testing.T) {
	t.Parallel()
	s1, s2, clock, _, release := blockedBatch(t, models.Postgres)
	close(release)
	b := bundle{s: s1, clock: clock, ctx: context.Background()}
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-2", 10, 0, "test"); return err })
	batchShop(t, b, []models.PlaceRequest{
		{OrderNo: "o-9", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}}},
	})
	tasks, err := s1.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	if err != nil || len(tasks) != 2 {
		t.Fatalf("claimed %d tasks (%v), want 2", len(tasks), err)
	}
	lo, hi := min(tasks[0].ID, tasks[1].ID), max(tasks[0].ID, tasks[1].ID)
	must(t, func() error { return s1.W.Exec("UPDATE release_tasks SET status = 'RETRY' WHERE id = ?", lo).Error })
	blocker := s2.W.Begin()
	must(t, func() error { return blocker.Exec("SELECT id FROM release_tasks WHERE id = ? FOR UPDATE", hi).Error })
	batched := make(chan error, 1)
	go func() {
		_, err := s1.ReleaseBatch(b.ctx, tasks, "w1")
		batched <- err
	}()
	time.Sleep(300 * time.Millisecond)
	paid := make(chan error, 1)
	go func() {
		_, err := s2.PayOrder(b.ctx, "o-9", "txn-9")
		paid <- err
	}()
	time.Sleep(300 * time.Millisecond)
	must(t, func() error { return blocker.Commit().Error })
	if err := <-batched; err != nil {
		t.Errorf("batch: %v", err)
	}
	if err := <-paid; err != nil {
		t.Errorf("late payment: %v", err)
	}
	modelstest.CheckInvariants(t, s1)
}

// Handing back a stopping worker's leases locks the tasks by id, as a late
// payment does, whatever order they were claimed in (by next_at: a
// task's release delay can put a later id first); otherwise the two wait
// on each other and PostgreSQL aborts one. A third transaction holds the
// later task while the hand-back starts and the payment locks.
func TestAttackReturnLeasesLockOrderVsLatePayment(t *testing.T) {
	t.Parallel()
	s1, s2, clock, _, release := blockedBatch(t, models.Postgres)
	close(release)
	b := bundle{s: s1, clock: clock, ctx: context.Background()}
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-2", 10, 0, "test"); return err })
	batchShop(t, b, []models.PlaceRequest{
		{OrderNo: "o-9", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}}},
	})
	tasks, err := s1.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	if err != nil || len(tasks) != 2 {
		t.Fatalf("claimed %d tasks (%v), want 2", len(tasks), err)
	}
	if tasks[0].ID < tasks[1].ID {
		tasks[0], tasks[1] = tasks[1], tasks[0]
	}
	blocker := s2.W.Begin()
	must(t, func() error {
		return blocker.Exec("SELECT id FROM release_tasks WHERE id = ? FOR UPDATE", tasks[0].ID).Error
	})
	returned := make(chan error, 1)
	go func() { returned <- s1.ReturnLeases(b.ctx, tasks) }()
	time.Sleep(300 * time.Millisecond)
	paid := make(chan error, 1)
	go func() {
		_, err := s2.PayOrder(b.ctx, "o-9", "txn-9")
		paid <- err
	}()
	time.Sleep(300 * time.Millisecond)
	must(t, func() error { return blocker.Commit().Error })
	if err := <-returned; err != nil {
		t.Errorf("return leases: %v", err)
	}
	if err := <-paid; err != nil {
		t.Errorf("late payment: %v", err)
	}
	modelstest.CheckInvariants(t, s1)
}

// A batch that falls back to savepoints tries its tasks in resource order,
// which across orders is not id order; a bulk rerun locks RETRY tasks by
// id. The batch must lock its tasks by id before trying them, or the two
// wait on each other and PostgreSQL aborts one.
func TestAttackBatchSavepointLockOrderVsBulkRerun(t *testing.T) {
	t.Parallel()
	inside, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int64
	s1, s2, clock := twoStores(t, models.Postgres, func(point string, tk *models.ReleaseTask) error {
		switch {
		case point != models.FaultAfterLedger:
		case tk.OrderNo == "o-c":
			return errors.New("o-c fails") // the batch goes to savepoints
		case tk.OrderNo == "o-b" && calls.Add(1) == 2: // o-b's try with a savepoint
			close(inside)
			<-release
		}
		return nil
	})
	b := bundle{s: s1, clock: clock, ctx: context.Background()}
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-2", 10, 0, "test"); return err })
	must(t, func() error { _, err := s1.SetStock(b.ctx, "sku-3", 10, 0, "test"); return err })
	// o-a's task has the lower id, o-b's the lower resource key; o-c's
	// comes last in resource order and fails.
	batchShop(t, b, []models.PlaceRequest{
		{OrderNo: "o-a", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 1}}},
		{OrderNo: "o-b", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		{OrderNo: "o-c", UserID: "u1", Items: []models.Item{{SkuID: "sku-3", Qty: 1}}},
	})
	tasks, err := s1.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	if err != nil || len(tasks) != 3 {
		t.Fatalf("claimed %d tasks (%v), want 3", len(tasks), err)
	}
	// All are retries, as a claim of failed tasks finds them.
	must(t, func() error { return s1.W.Exec("UPDATE release_tasks SET status = 'RETRY'").Error })
	batched := make(chan error, 1)
	go func() {
		_, err := s1.ReleaseBatch(b.ctx, tasks, "w1")
		batched <- err
	}()
	<-inside
	rerun := make(chan error, 1)
	go func() {
		ids := []int64{tasks[0].ID, tasks[1].ID, tasks[2].ID}
		_, err := s2.RerunTasks(b.ctx, models.TaskFilter{Type: models.ResInventory}, ids, "admin", "retry them")
		rerun <- err
	}()
	time.Sleep(300 * time.Millisecond)
	close(release)
	if err := <-batched; err != nil {
		t.Errorf("batch: %v", err)
	}
	if err := <-rerun; err != nil && !errors.Is(err, models.ErrNothingToRerun) {
		t.Errorf("bulk rerun: %v", err)
	}
	modelstest.CheckInvariants(t, s1)
}

// SQLite's write turn comes back however a write transaction ends: by a
// panic inside it, or by its context ending while it holds the turn (the
// driver rolls back on its own, and the transaction's function may still
// return nil). The next writer then gets in at once, not after the busy
// timeout.
func TestAttackWriteGateTurnComesBack(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"panic", "cancel"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			s := modelstest.Open(t, models.SQLite, models.Options{BusyTimeout: 5 * time.Second})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			func() {
				defer func() { _ = recover() }()
				_ = s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
					if err := tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error; err != nil {
						return err
					}
					if end == "panic" {
						panic("writer bug")
					}
					cancel()
					time.Sleep(50 * time.Millisecond) // the driver's rollback on the ended context
					return nil
				})
			}()
			start := time.Now()
			err := s.W.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
				return tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
			})
			if err != nil || time.Since(start) > time.Second {
				t.Fatalf("next write: %v after %v, want it in at once", err, time.Since(start))
			}
		})
	}
}

// Writers whose contexts end at any moment (queued, granted the turn,
// beginning, mid-statement) never keep the turn: a writer after them gets
// in at once.
func TestAttackWriteGateCancelledAnywhere(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{BusyTimeout: 5 * time.Second})
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*250*time.Microsecond)
			defer cancel()
			_ = s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				return tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
			})
			_ = s.W.WithContext(ctx).Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
		})
	}
	wg.Wait()
	start := time.Now()
	err := s.W.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
		return tx.Exec(`UPDATE orders SET version = version + 1 WHERE order_no = ''`).Error
	})
	if err != nil || time.Since(start) > time.Second {
		t.Fatalf("next write: %v after %v, want it in at once", err, time.Since(start))
	}
}

// Hostile rows in a batch (a task naming a key that does not exist, one
// asking back more than its order holds) go MANUAL, once each, and release
// nothing; their neighbour releases.
func TestAttackBatchHostileRows(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		batchShop(t, b, []models.PlaceRequest{
			{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			{OrderNo: "o-3", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		})
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET biz_key = 'nope' WHERE order_no = 'o-1'").Error
		})
		must(t, func() error { return b.s.W.Exec("UPDATE release_tasks SET qty = 5 WHERE order_no = 'o-2'").Error })
		tasks := claimAll(t, b, "w1")
		results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
		if err != nil {
			t.Fatal(err)
		}
		n := attemptsOf(t, b)
		for i, tk := range tasks {
			want := models.OutcomeManual
			if tk.OrderNo == "o-3" {
				want = models.OutcomeDone
			}
			if results[i].Outcome != want || n[tk.ID] != 1 {
				t.Errorf("%s: %+v with %d attempt rows, want %s with 1", tk.OrderNo, results[i], n[tk.ID], want)
			}
		}
		if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 2 || sku.Available != 8 {
			t.Fatalf("sku = %+v, want only o-3's unit back", sku)
		}
	})
}

// A rerun committed between a claim and its batch (the task RETRY and
// leased) is what the batch releases under: the ledger row's trigger is
// RERUN and the attempt carries the rerun's note, on both paths.
func TestAttackRerunBetweenClaimAndBatch(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		for _, path := range []string{"fast", "savepoints"} {
			t.Run(string(d)+"/"+path, func(t *testing.T) {
				t.Parallel()
				var calls atomic.Int64
				b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
					if point == models.FaultAfterLedger && tk.OrderNo == "o-2" && path == "savepoints" && calls.Add(1) == 1 {
						return errors.New("fast path fails")
					}
					return nil
				}})
				must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
				batchShop(t, b, []models.PlaceRequest{
					{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
					{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				})
				must(t, func() error {
					return b.s.W.Exec("UPDATE release_tasks SET status = 'RETRY', failures = 3 WHERE order_no = 'o-1'").Error
				})
				tasks := claimAll(t, b, "w1")
				if _, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "admin", "stock is back"); err != nil {
					t.Fatal(err)
				}
				results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
				if err != nil {
					t.Fatal(err)
				}
				for i, tk := range tasks {
					if tk.OrderNo == "o-1" && results[i].Outcome != models.OutcomeDone {
						t.Errorf("%s: %+v, want DONE", tk.OrderNo, results[i])
					}
				}
				c, err := b.s.OrderChain(b.ctx, "o-1")
				if err != nil {
					t.Fatal(err)
				}
				var trig models.Trigger
				for _, f := range c.Flows {
					if f.Type == models.FlowRelease {
						trig = f.Trigger
					}
				}
				var notes []string
				must(t, func() error {
					return b.s.R.Raw("SELECT note FROM task_attempts WHERE order_no = 'o-1'").Scan(&notes).Error
				})
				if trig != models.TriggerRerun || len(notes) != 1 || notes[0] != "rerun by admin: stock is back" {
					t.Fatalf("o-1 released with trigger %q, attempt notes %q; want RERUN and the rerun's note", trig, notes)
				}
				releasedOnce(t, b.s, "o-1")
			})
		}
	}
}
