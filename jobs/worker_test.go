package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func eachEngine(t *testing.T, fn func(t *testing.T, d models.Dialect)) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, d)
		})
	}
}

func placeAndClose(t *testing.T, s *models.Store, no string, qty int64) {
	t.Helper()
	ctx := context.Background()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: qty}}}
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
}

// 7. The worker panics after the ledger insert, mid-transaction: the
// transaction rolls back, the crash is recorded as a CRASHED failure, and
// the task is retried on the usual schedule.
func TestScenarioCrashAfterLedgerInsert(t *testing.T) {
	eachEngine(t, func(t *testing.T, d models.Dialect) {
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
		placeAndClose(t, s, "o-1", 3)
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, quietLog())
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
		other := jobs.NewWorker(s, "w2", 10, 30*time.Second, quietLog())
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
	eachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, quietLog())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		placeAndClose(t, s, "o-1", 2)
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
