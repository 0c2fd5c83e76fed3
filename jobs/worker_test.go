package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
)

// 7. The worker panics after the ledger insert, mid-transaction: the
// transaction rolls back, the crash is recorded as a CRASHED failure, and
// the task is retried on the usual schedule.
func TestScenarioCrashAfterLedgerInsert(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		var crashes atomic.Int32
		crashes.Store(1)
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && crashes.Add(-1) >= 0 {
				panic("worker killed")
			}
			return nil
		}})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		modelstest.PlaceAndClose(t, s, "o-1", 3)
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		if st := w.Drain(ctx); st["CRASHED"] != 1 {
			t.Fatalf("first drain = %v, want one crash", st)
		}
		c, _ := s.OrderChain(ctx, "o-1")
		task := c.Tasks[0]
		if len(c.Flows) != 1 || task.Status != models.TaskRetry || task.Failures != 1 || task.ErrorClass != models.ClassCrashed ||
			len(task.AttemptLog) != 1 || task.AttemptLog[0].ErrorClass != models.ClassCrashed || task.AttemptLog[0].Worker != "w1" {
			t.Fatalf("after the crash: %d flows, task %+v; want only the LOCK row and a RETRY task with one CRASHED attempt",
				len(c.Flows), task)
		}
		if sku, _ := s.GetSKU(ctx, "sku-1"); sku.Locked != 3 {
			t.Fatalf("the crashed release changed stock: %+v", sku)
		}
		other := jobs.NewWorker(s, "w2", 10, 30*time.Second, modelstest.QuietLog())
		if st := other.Drain(ctx); len(st) != 0 {
			t.Fatalf("a task was released before its retry was due: %v", st)
		}
		clock.Advance(models.RetryDelay(1))
		if st := other.Drain(ctx); st[models.OutcomeDone] != 1 {
			t.Fatalf("after the retry delay: %v, want 1 DONE", st)
		}
		modelstest.CheckInvariants(t, s)
	})
}

// A close wakes the worker: the Run loop drains without waiting for cron.
func TestWakeDrains(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		modelstest.PlaceAndClose(t, s, "o-1", 2)
		w.Wake()
		deadline := time.Now().Add(10 * time.Second)
		for {
			sku, _ := s.GetSKU(ctx, "sku-1")
			if sku.Available == 10 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("woken worker did not release: %+v", sku)
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
		<-done
	})
}

// A release that panics every time is a CRASHED failure each time, on the
// usual retry schedule, and goes MANUAL (RETRY_EXHAUSTED, last class
// CRASHED) at the 8th: it is not claimed for ever.
func TestPanickingReleaseEndsManual(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if point == models.FaultAfterLedger {
				panic("nil map in the stock client")
			}
			return nil
		}})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		modelstest.PlaceAndClose(t, s, "o-1", 3)
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		for i := 1; i <= models.MaxFailures; i++ {
			if st := w.Drain(ctx); st[metrics.OutcomeCrashed] != 1 {
				t.Fatalf("try %d: drain = %v, want one crash", i, st)
			}
			clock.Advance(models.RetryDelay(i))
		}
		clock.Advance(time.Hour)
		if st := w.Drain(ctx); len(st) != 0 {
			t.Fatalf("after %d crashes: drain = %v, want nothing claimed", models.MaxFailures, st)
		}
		c, _ := s.OrderChain(ctx, "o-1")
		tk := c.Tasks[0]
		if tk.Status != models.TaskManual || tk.Failures != models.MaxFailures || tk.ErrorClass != models.ClassRetryExhausted ||
			tk.LastErrorClass != models.ClassCrashed || tk.LastError != "CRASHED: panic: nil map in the stock client" {
			t.Fatalf("task = %+v, want MANUAL, RETRY_EXHAUSTED after CRASHED", tk)
		}
		if len(tk.AttemptLog) != models.MaxFailures {
			t.Fatalf("%d attempts, want %d", len(tk.AttemptLog), models.MaxFailures)
		}
		for _, a := range tk.AttemptLog {
			if a.ErrorClass != models.ClassCrashed || a.Worker != "w1" {
				t.Fatalf("attempt = %+v, want CRASHED by w1", a)
			}
		}
		if sku, _ := s.GetSKU(ctx, "sku-1"); sku.Locked != 3 {
			t.Fatalf("crashed releases changed stock: %+v", sku)
		}
	})
}

// A batch that does not commit in time is tried again task by task; a
// task whose lease is too short by then is handed back untried: released
// by the next claim and never counted as a crash.
func TestLeaseShortIsNoCrash(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const lease = 2 * time.Second
		clock := modelstest.NewClock()
		var slow atomic.Bool
		slow.Store(true)
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			// The first try of the batch takes the whole lease, and long
			// enough for real that the batch's timeout (a quarter of the
			// lease) ends it uncommitted.
			if point == models.FaultAfterLedger && slow.Swap(false) {
				clock.Advance(lease)
				time.Sleep(lease/4 + 200*time.Millisecond)
			}
			return nil
		}})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		modelstest.PlaceAndClose(t, s, "o-1", 1)
		modelstest.PlaceAndClose(t, s, "o-2", 1)
		w := jobs.NewWorker(s, "w1", 10, lease, modelstest.QuietLog())
		st := w.Drain(ctx)
		if st[metrics.OutcomeLeaseShort] != 2 || st[models.OutcomeDone] != 2 || len(st) != 2 {
			t.Fatalf("drain = %v, want two LEASE_SHORT and both DONE", st)
		}
		for _, no := range []string{"o-1", "o-2"} {
			c, _ := s.OrderChain(ctx, no)
			tk := c.Tasks[0]
			if tk.Status != models.TaskDone || tk.Failures != 0 || tk.Attempts != 1 || len(tk.AttemptLog) != 1 {
				t.Fatalf("%s: task %+v with %d attempt rows; want DONE at the first try, no failure", no, tk, len(tk.AttemptLog))
			}
		}
		if sku, _ := s.GetSKU(ctx, "sku-1"); sku.Locked != 0 || sku.Available != 10 {
			t.Fatalf("stock = %+v, want both released once", sku)
		}
	})
}
