package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// Two instances drain one database with two workers each while a third
// loop counts expired leases and moves the clock past them, and every
// task's first try fails (on the fast path, so its batch falls back to
// savepoints): in the end each task is released exactly once, with one
// DONE attempt and no DUPLICATE, and the books balance.
func TestAttackBatchExactlyOnceUnderRaces(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		dsn := modelstest.MigratedDSN(t, d)
		clock := modelstest.NewClock()
		var mu sync.Mutex
		tried := map[int64]bool{}
		faults := func(point string, tk *models.ReleaseTask) error {
			if point != models.FaultAfterLedger {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if tried[tk.ID] {
				return nil
			}
			tried[tk.ID] = true
			return &models.TransientError{Class: models.ClassConnection, Err: errors.New("first try fails")}
		}
		open := func() *models.Store {
			s, err := models.Open(context.Background(), dsn, models.Options{Now: clock.Now, Faults: faults, BusyTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		s1 := open()
		s2 := open()
		ctx := context.Background()
		const orders = 40
		if _, err := s1.SetStock(ctx, "sku-1", orders, 0, "test"); err != nil {
			t.Fatal(err)
		}
		for i := range orders {
			modelstest.PlaceAndClose(t, s1, fmt.Sprintf("o-%02d", i), 1)
		}
		workers := []*jobs.Worker{
			jobs.NewWorker(s1, "a1", 7, 30*time.Second, modelstest.QuietLog()),
			jobs.NewWorker(s1, "a2", 7, 30*time.Second, modelstest.QuietLog()),
			jobs.NewWorker(s2, "b1", 7, 30*time.Second, modelstest.QuietLog()),
			jobs.NewWorker(s2, "b2", 7, 30*time.Second, modelstest.QuietLog()),
		}
		for round := 0; round < 40; round++ {
			var wg sync.WaitGroup
			for _, w := range workers {
				wg.Go(func() { w.Drain(ctx) })
			}
			wg.Go(func() {
				for range 3 {
					if _, err := s2.RescueLeases(ctx); err != nil {
						t.Error(err)
					}
					clock.Advance(20 * time.Second)
				}
			})
			wg.Wait()
			var open int64
			if err := s1.R.Raw("SELECT COUNT(*) FROM release_tasks WHERE status <> 'DONE'").Scan(&open).Error; err != nil {
				t.Fatal(err)
			}
			if open == 0 {
				break
			}
			clock.Advance(time.Hour)
		}
		var rows []struct {
			TaskID  int64
			Outcome string
			N       int
		}
		if err := s1.R.Raw(`SELECT task_id, outcome, COUNT(*) AS n FROM task_attempts
			WHERE outcome IN ('DONE','DUPLICATE') GROUP BY task_id, outcome`).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		done := 0
		for _, r := range rows {
			if r.Outcome != models.OutcomeDone || r.N != 1 {
				t.Errorf("task %d: %d %s attempts, want one DONE", r.TaskID, r.N, r.Outcome)
			}
			done++
		}
		var statuses []string
		if err := s1.R.Raw("SELECT status FROM release_tasks").Scan(&statuses).Error; err != nil {
			t.Fatal(err)
		}
		for _, st := range statuses {
			if st != string(models.TaskDone) {
				t.Errorf("a task is %s, want every task DONE", st)
			}
		}
		if done != orders || len(statuses) != orders {
			t.Errorf("%d tasks, %d released, want %d of each", len(statuses), done, orders)
		}
		if sku, _ := s1.GetSKU(ctx, "sku-1"); sku.Locked != 0 || sku.Available != orders {
			t.Errorf("sku = %+v, want every unit back once", sku)
		}
		modelstest.CheckInvariants(t, s1)
	})
}

// A batch cut off by its timeout mid-try (a slow first try of o-2) commits
// nothing; the worker then releases each task alone, each exactly once,
// with no failure counted and one attempt row each.
func TestAttackBatchTimeoutFallsBackToEach(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		var slow sync.Once
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, tk *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && tk.OrderNo == "o-2" {
				slow.Do(func() { time.Sleep(time.Second) })
			}
			return nil
		}})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		for _, no := range []string{"o-1", "o-2", "o-3"} {
			modelstest.PlaceAndClose(t, s, no, 1)
		}
		// A lease of 2s gives each try 500ms.
		w := jobs.NewWorker(s, "w1", 10, 2*time.Second, modelstest.QuietLog())
		st := w.Drain(ctx)
		if st[models.OutcomeDone] != 3 || len(st) != 1 {
			t.Fatalf("drain = %v, want 3 DONE and nothing else", st)
		}
		var rows []struct {
			Outcome string
			N       int
		}
		if err := s.R.Raw("SELECT outcome, COUNT(*) AS n FROM task_attempts GROUP BY outcome").Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Outcome != models.OutcomeDone || rows[0].N != 3 {
			t.Fatalf("attempts = %+v, want 3 DONE", rows)
		}
		var failures int64
		if err := s.R.Raw("SELECT COALESCE(SUM(failures), 0) FROM release_tasks").Scan(&failures).Error; err != nil {
			t.Fatal(err)
		}
		if sku, _ := s.GetSKU(ctx, "sku-1"); failures != 0 || sku.Locked != 0 {
			t.Fatalf("failures %d, sku %+v; want none and every unit back", failures, sku)
		}
	})
}
