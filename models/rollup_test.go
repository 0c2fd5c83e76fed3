package models_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"unhold/models"
	"unhold/models/modelstest"
)

type attemptMinute struct {
	Minute       int64
	Outcome      string
	ResourceType string
	ErrorClass   string
}

type latencyMinute struct {
	Minute int64
	Bucket int
}

type latencyAgg struct{ N, MinMs, MaxMs int64 }

// rollups reads the rollup tables whole.
func rollups(t *testing.T, s *models.Store) (map[attemptMinute]int64, map[latencyMinute]latencyAgg) {
	t.Helper()
	var as []struct {
		Minute                            int64
		Outcome, ResourceType, ErrorClass string
		N                                 int64
	}
	must(t, func() error {
		return s.R.Raw("SELECT minute, outcome, resource_type, error_class, n FROM attempt_minutes").Scan(&as).Error
	})
	var ls []struct {
		Minute          int64
		Bucket          int
		N, MinMs, MaxMs int64
	}
	must(t, func() error {
		return s.R.Raw("SELECT minute, bucket, n, min_ms, max_ms FROM latency_minutes").Scan(&ls).Error
	})
	am, lm := map[attemptMinute]int64{}, map[latencyMinute]latencyAgg{}
	for _, a := range as {
		am[attemptMinute{a.Minute, a.Outcome, a.ResourceType, a.ErrorClass}] = a.N
	}
	for _, l := range ls {
		lm[latencyMinute{l.Minute, l.Bucket}] = latencyAgg{l.N, l.MinMs, l.MaxMs}
	}
	return am, lm
}

// fromRows computes what the rollups must hold from task_attempts and
// release_tasks, as the overview's queries did before the rollups: the
// attempts by the minute they finished, and the latency of each released
// task that counts (not a rerun's; from next_at when it never failed,
// else from created_at), in the database's whole milliseconds, by the
// minute of its done_at.
func fromRows(t *testing.T, s *models.Store) (map[attemptMinute]int64, map[latencyMinute]latencyAgg) {
	t.Helper()
	var as []models.TaskAttempt
	must(t, func() error { return s.R.Find(&as).Error })
	am := map[attemptMinute]int64{}
	for _, a := range as {
		am[attemptMinute{a.FinishedAt.Truncate(time.Minute).Unix(), a.Outcome, string(a.ResourceType), string(a.ErrorClass)}]++
	}
	ms := `CAST(round((julianday(done_at) - julianday(CASE WHEN failures = 0 THEN next_at ELSE created_at END)) * 86400000) AS INTEGER)`
	if s.Dialect == models.Postgres {
		ms = `CAST(round(EXTRACT(EPOCH FROM done_at - CASE WHEN failures = 0 THEN next_at ELSE created_at END) * 1000) AS BIGINT)`
	}
	var released []struct {
		DoneAt time.Time
		Ms     int64
	}
	must(t, func() error {
		return s.R.Raw(`SELECT done_at, ` + ms + ` AS ms FROM release_tasks WHERE done_at IS NOT NULL AND trigger_type <> 'RERUN'`).
			Scan(&released).Error
	})
	lm := map[latencyMinute]latencyAgg{}
	for _, r := range released {
		b := len(models.LatencyBuckets)
		for i, le := range models.LatencyBuckets {
			if r.Ms <= le.Milliseconds() {
				b = i
				break
			}
		}
		k := latencyMinute{r.DoneAt.Truncate(time.Minute).Unix(), b}
		v, seen := lm[k]
		ms := max(r.Ms, 0)
		if !seen {
			v = latencyAgg{MinMs: ms, MaxMs: ms}
		}
		lm[k] = latencyAgg{N: v.N + 1, MinMs: min(v.MinMs, ms), MaxMs: max(v.MaxMs, ms)}
	}
	return am, lm
}

func checkRollups(t *testing.T, s *models.Store, what string) (map[attemptMinute]int64, map[latencyMinute]latencyAgg) {
	t.Helper()
	am, lm := rollups(t, s)
	wam, wlm := fromRows(t, s)
	if !maps.Equal(am, wam) {
		t.Errorf("%s: attempt rollup\n%v\nwant\n%v", what, am, wam)
	}
	if !maps.Equal(lm, wlm) {
		t.Errorf("%s: latency rollup\n%v\nwant\n%v", what, lm, wlm)
	}
	return am, lm
}

// The rollups hold what the rows say, on both engines, after releases
// alone and in batches (the fast path and the savepoint path), DONE,
// RETRY, MANUAL, a delayed release, a rerun's release, a crashed try, across minute and hour
// edges; a redelivered task's DUPLICATE counts as an attempt, and its
// latency stays that of its first release.
func TestRollupsMatchRows(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var failQuota atomic.Bool
			b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.ResourceType == models.ResQuota && failQuota.Load() {
					return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
				}
				return nil
			}})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
			// 10:59:59.7: the releases below straddle the hour.
			b.clock.Advance(59*time.Minute + 59*time.Second + ms(700))
			b.closedOrders(t, 0, 4)
			b.clock.Advance(ms(200))
			b.drain(t, "w1")
			b.clock.Advance(ms(200))
			failQuota.Store(true)
			b.closedOrders(t, 4, 4)
			b.drain(t, "w1")
			failQuota.Store(false)
			checkRollups(t, b.s, "released alone")

			// A batch with a failing task: the fast path rolls back, the
			// savepoint path records it.
			b.clock.Advance(40 * time.Second)
			failQuota.Store(true)
			b.closedOrders(t, 8, 6)
			tasks, err := b.s.ClaimTasks(b.ctx, "w2", 100, time.Minute)
			must(t, func() error { return err })
			b.clock.Advance(ms(300))
			_, err = b.s.ReleaseBatch(b.ctx, tasks, "w2")
			must(t, func() error { return err })
			failQuota.Store(false)
			// The retries, a minute later, in one batch on the fast path.
			b.clock.Advance(time.Minute)
			tasks, err = b.s.ClaimTasks(b.ctx, "w2", 100, time.Minute)
			must(t, func() error { return err })
			if len(tasks) == 0 {
				t.Fatal("no retries due")
			}
			_, err = b.s.ReleaseBatch(b.ctx, tasks, "w2")
			must(t, func() error { return err })
			checkRollups(t, b.s, "batches")

			// A SKU that delays its release 30 s: the latency counts from
			// the due time.
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-late", 10, 30, "test"); return err })
			late := models.PlaceRequest{OrderNo: "o-late", UserID: "u1", Items: []models.Item{{SkuID: "sku-late", Qty: 1}}}
			must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, late); return err })
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, "o-late", models.TriggerUserCancel, "u1"); return err })
			b.clock.Advance(30*time.Second + ms(700))
			if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
				t.Fatalf("the delayed release = %v, want 1 DONE", got)
			}
			checkRollups(t, b.s, "a delayed release")

			// MANUAL (the stock taken from under the lock), then a rerun's
			// release; a try whose worker died (CRASHED, counted by the
			// next claim).
			b.closedOrders(t, 14, 1)
			must(t, func() error {
				return b.s.W.Exec("UPDATE inventory SET locked = locked - 1, available = available + 1 WHERE sku_id = 'sku-1'").Error
			})
			b.drain(t, "w1")
			must(t, func() error {
				return b.s.W.Exec("UPDATE inventory SET locked = locked + 1, available = available - 1 WHERE sku_id = 'sku-1'").Error
			})
			b.clock.Advance(10 * time.Second)
			must(t, func() error {
				_, err := b.s.Rerun(b.ctx, "o-014", models.ResInventory, "ops", "stock fixed")
				return err
			})
			b.drain(t, "w1")
			b.closedOrders(t, 15, 1)
			_, err = b.s.ClaimTasks(b.ctx, "dead", 100, time.Second)
			must(t, func() error { return err })
			b.clock.Advance(2 * time.Second)
			b.drain(t, "w1")
			before, lbefore := checkRollups(t, b.s, "manual, rerun, crash")
			for _, o := range []string{models.OutcomeDone, models.OutcomeRetry, models.OutcomeManual} {
				n := int64(0)
				for k, v := range before {
					if k.Outcome == o {
						n += v
					}
				}
				if n == 0 {
					t.Errorf("no %s attempt in the mix", o)
				}
			}

			// A redelivery of a released task: DUPLICATE, one attempt more,
			// the latency as it was.
			b.clock.Advance(time.Minute)
			must(t, func() error {
				return b.s.W.Exec("UPDATE release_tasks SET status = 'PENDING', lease_until = NULL WHERE order_no = 'o-000'").Error
			})
			if got := b.drain(t, "w3"); got[models.OutcomeDuplicate] != 2 {
				t.Fatalf("redelivery = %v, want 2 DUPLICATE", got)
			}
			am, lm := rollups(t, b.s)
			wam, _ := fromRows(t, b.s)
			if !maps.Equal(am, wam) || !maps.Equal(lm, lbefore) {
				t.Errorf("after the redelivery: attempts %v (want %v), latency %v (want %v)", am, wam, lm, lbefore)
			}
		})
	}
}

// Two instances on one PostgreSQL release batches at once, every one in
// the same minute: no deadlock (a batch that failed would come back as
// ErrBatchNotCommitted), and the rollups count every attempt once.
func TestRollupConcurrentBatches(t *testing.T) {
	t.Parallel()
	clock := modelstest.NewClock()
	dsn := modelstest.MigratedDSN(t, models.Postgres)
	var stores []*models.Store
	for range 2 {
		s, err := models.Open(context.Background(), dsn, models.Options{Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	b := bundle{s: stores[0], clock: clock, ctx: context.Background()}
	// Each order holds its own SKU and its own user's balance, so the
	// batches share no counter row: only the rollups' rows, which every
	// batch of the minute adds to (two attempt keys, one latency key).
	const orders = 100 // 200 tasks: ten batches of 20 across four workers, all in one minute
	for i := range orders {
		sku, user := fmt.Sprintf("sku-%03d", i), fmt.Sprintf("u-%03d", i)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 1, 0, "test"); return err })
		must(t, func() error { _, err := b.s.Credit(b.ctx, user, models.AssetBalance, 1, "test"); return err })
		req := models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: user, Items: []models.Item{{SkuID: sku, Qty: 1}},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}}
		must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, req.OrderNo, models.TriggerUserCancel, user); return err })
	}
	clock.Advance(ms(500))
	var wg sync.WaitGroup
	var released atomic.Int64
	for w, s := range []*models.Store{stores[0], stores[1], stores[0], stores[1]} {
		wg.Go(func() {
			for {
				tasks, err := s.ClaimTasks(b.ctx, fmt.Sprintf("w%d", w), 20, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(tasks) == 0 {
					return
				}
				res, err := s.ReleaseBatch(b.ctx, tasks, fmt.Sprintf("w%d", w))
				if err != nil {
					t.Error(err)
					return
				}
				for _, r := range res {
					if r.Outcome == models.OutcomeDone {
						released.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	if want := int64(orders * 2); released.Load() != want {
		t.Errorf("%d released, want %d", released.Load(), want)
	}
	am, lm := checkRollups(t, b.s, "two instances")
	var n, l int64
	for _, v := range am {
		n += v
	}
	for _, v := range lm {
		l += v.N
	}
	if n != orders*2 || l != orders*2 || len(lm) == 0 {
		t.Errorf("rollups count %d attempts, %d latencies; want %d each", n, l, orders*2)
	}
}

// Migration 00019 back-fills the rollups from the 26 hours of rows up to
// the newest: after it goes down and up again, they hold what the
// releases wrote as they went, less what is older.
func TestMigration19Backfill(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var failQuota atomic.Bool
			b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.ResourceType == models.ResQuota && failQuota.Load() {
					return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
				}
				return nil
			}})
			advance := b.clock.Advance
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
			place := func(from, n int) {
				for i := from; i < from+n; i++ {
					req := models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: "u1", ActivityID: "act-1",
						Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
					must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
					must(t, func() error { _, err := b.s.CloseOrder(b.ctx, req.OrderNo, models.TriggerUserCancel, "u1"); return err })
				}
			}
			// Too old to back-fill.
			place(0, 2)
			advance(ms(400))
			b.drain(t, "w1")
			old := b.clock.Now().Add(time.Hour).Unix()
			// 27 hours later: DONE, RETRY, and the retries' releases a few
			// minutes later, the newest rows.
			advance(27 * time.Hour)
			place(2, 3)
			failQuota.Store(true)
			advance(ms(1500))
			b.drain(t, "w1")
			failQuota.Store(false)
			advance(5 * time.Minute)
			b.drain(t, "w1")
			live, llive := checkRollups(t, b.s, "live")
			maps.DeleteFunc(live, func(k attemptMinute, _ int64) bool { return k.Minute < old })
			maps.DeleteFunc(llive, func(k latencyMinute, _ latencyAgg) bool { return k.Minute < old })
			if len(live) == 0 || len(llive) == 0 {
				t.Fatal("nothing released in the last day")
			}

			sqlDB, err := b.s.W.DB()
			must(t, func() error { return err })
			gd := goose.DialectSQLite3
			if d == models.Postgres {
				gd = goose.DialectPostgres
			}
			p, err := goose.NewProvider(gd, sqlDB, os.DirFS("migrations/"+string(d)))
			must(t, func() error { return err })
			must(t, func() error { _, err := p.DownTo(b.ctx, 17); return err })
			if err := b.s.R.Exec("SELECT 1 FROM attempt_minutes").Error; err == nil {
				t.Error("attempt_minutes is still there after the down")
			}
			must(t, func() error { _, err := p.Up(b.ctx); return err })
			am, lm := rollups(t, b.s)
			if !maps.Equal(am, live) || !maps.Equal(lm, llive) {
				t.Errorf("back-filled\n%v\n%v\nwant\n%v\n%v", am, lm, live, llive)
			}
		})
	}
}
