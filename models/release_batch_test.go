package models_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"unhold/models"
	"unhold/models/modelstest"
)

// batchShop places and closes one order per request.
func batchShop(t *testing.T, b bundle, reqs []models.PlaceRequest) {
	t.Helper()
	for _, r := range reqs {
		if _, _, err := b.s.PlaceOrder(b.ctx, r); err != nil {
			t.Fatalf("place %s: %v", r.OrderNo, err)
		}
		if _, err := b.s.CloseOrder(b.ctx, r.OrderNo, models.TriggerUserCancel, "u1"); err != nil {
			t.Fatalf("close %s: %v", r.OrderNo, err)
		}
	}
}

// claimAll claims every due task (up to 100) for worker.
func claimAll(t *testing.T, b bundle, worker string) []models.ReleaseTask {
	t.Helper()
	tasks, err := b.s.ClaimTasks(b.ctx, worker, 100, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// attemptsOf counts each task's attempt rows.
func attemptsOf(t *testing.T, b bundle) map[int64]int {
	t.Helper()
	var rows []struct {
		TaskID int64
		N      int
	}
	must(t, func() error {
		return b.s.R.Raw("SELECT task_id, COUNT(*) AS n FROM task_attempts GROUP BY task_id").Scan(&rows).Error
	})
	out := map[int64]int{}
	for _, r := range rows {
		out[r.TaskID] = r.N
	}
	return out
}

// One batch holds tasks that release, one short of stock, one whose coupon
// another order holds, and one whose resource code panics: the good ones
// commit, each failure is recorded once as its own task's, and nothing of a
// failed try is left behind (its ledger row rolled back with it).
func TestBatchIsolatesFailures(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var panicOrder string
			b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.OrderNo == panicOrder {
					panic("resource code bug")
				}
				return nil
			}})
			cp := b.shop(t)
			batchShop(t, b, []models.PlaceRequest{
				{OrderNo: "ok-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				{OrderNo: "short", UserID: "u1", Items: []models.Item{{SkuID: "sku-2", Qty: 2}}},
				{OrderNo: "coupon", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, CouponIDs: []int64{cp}},
				{OrderNo: "panics", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 2}}},
				{OrderNo: "ok-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
					Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 100}}},
			})
			// Hand edits behind the ledger's back: sku-2 has less locked
			// than the order gives back; the coupon now names another order.
			must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 1 WHERE sku_id = 'sku-2'").Error })
			must(t, func() error { return b.s.W.Exec("UPDATE user_coupons SET order_no = 'other' WHERE id = ?", cp).Error })
			panicOrder = "panics"

			tasks := claimAll(t, b, "w1")
			if len(tasks) != 7 {
				t.Fatalf("claimed %d tasks, want 7", len(tasks))
			}
			results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]struct {
				outcome string
				class   models.ErrorClass
			}{
				"ok-1/inventory":   {models.OutcomeDone, ""},
				"ok-2/inventory":   {models.OutcomeDone, ""},
				"ok-2/balance":     {models.OutcomeDone, ""},
				"short/inventory":  {models.OutcomeManual, models.ClassLockedShort},
				"coupon/inventory": {models.OutcomeDone, ""},
				"coupon/coupon":    {models.OutcomeManual, models.ClassStateMismatch},
				"panics/inventory": {models.OutcomeRetry, models.ClassCrashed},
			}
			key := func(tk models.ReleaseTask) string { return tk.OrderNo + "/" + string(tk.ResourceType) }
			for i, tk := range tasks {
				w, ok := want[key(tk)]
				if !ok {
					t.Fatalf("unexpected task %s", key(tk))
				}
				if results[i].Outcome != w.outcome || results[i].Class != w.class {
					t.Errorf("%s: result %+v, want %s %s", tk.OrderNo, results[i], w.outcome, w.class)
				}
			}
			attempts := attemptsOf(t, b)
			for _, tk := range tasks {
				if attempts[tk.ID] != 1 {
					t.Errorf("%s: %d attempt rows, want exactly 1", key(tk), attempts[tk.ID])
				}
				c, err := b.s.OrderChain(b.ctx, tk.OrderNo)
				if err != nil {
					t.Fatal(err)
				}
				var task models.ChainTask
				for _, ct := range c.Tasks {
					if ct.ID == tk.ID {
						task = ct
					}
				}
				released := 0
				for _, f := range c.Flows {
					if f.Type == models.FlowRelease && f.ResourceType == tk.ResourceType {
						released++
					}
				}
				switch w := want[key(tk)]; w.outcome {
				case models.OutcomeDone:
					if task.Status != models.TaskDone || released != 1 {
						t.Errorf("%s: %s with %d RELEASE rows, want DONE with 1", key(tk), task.Status, released)
					}
				default:
					if task.Failures != 1 || task.ErrorClass != w.class || released != 0 || task.LeaseToken != "" {
						t.Errorf("%s: task %+v with %d RELEASE rows, want one %s failure, no release, no lease",
							key(tk), task.ReleaseTask, released, w.class)
					}
				}
			}
			sku1, _ := b.s.GetSKU(b.ctx, "sku-1")
			if sku1.Locked != 2 || sku1.Available != 8 {
				t.Errorf("sku-1 = %+v, want 3 units back and panics' 2 still locked", sku1)
			}

			// The crash was only this try's: the retry releases it.
			panicOrder = ""
			b.clock.Advance(time.Minute)
			if got := b.drain(t, "w2"); got[models.OutcomeDone] != 1 || len(got) != 1 {
				t.Fatalf("retry = %v, want the crashed task DONE", got)
			}
			if sku1, _ = b.s.GetSKU(b.ctx, "sku-1"); sku1.Locked != 0 || sku1.Available != 10 {
				t.Errorf("sku-1 after the retry = %+v, want all back", sku1)
			}
		})
	}
}

// A task in the batch whose lease went to someone else is not released by
// it; its neighbours are.
func TestBatchFencesEachTask(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		batchShop(t, b, []models.PlaceRequest{
			{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
			{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
		})
		tasks := claimAll(t, b, "w1")
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET lease_token = 'taken' WHERE id = ?", tasks[0].ID).Error
		})
		results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
		if err != nil {
			t.Fatal(err)
		}
		if results[0].Outcome != models.OutcomeLeaseLost || results[1].Outcome != models.OutcomeDone {
			t.Fatalf("results = %+v, want LEASE_LOST then DONE", results)
		}
		if n := attemptsOf(t, b); n[tasks[0].ID] != 0 || n[tasks[1].ID] != 1 {
			t.Fatalf("attempt rows = %v, want none for the lost task, one for the other", n)
		}
		if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 1 {
			t.Fatalf("sku = %+v, want only o-2's unit back", sku)
		}
	})
}

// A batch that cannot commit in time records nothing and says so; one
// cancelled because the process stops hands every lease back, uncounted.
func TestBatchThatDoesNotCommit(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		for _, stop := range []bool{false, true} {
			name := string(d) + "/timeout"
			if stop {
				name = string(d) + "/stopping"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				// Made after the shop is set up: the fault reads them then.
				var ctx context.Context
				var cancel context.CancelFunc
				b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
					// The second task's try outlasts the batch's context.
					if point == models.FaultAfterLedger && tk.OrderNo == "o-2" {
						if stop {
							cancel()
						}
						<-ctx.Done()
					}
					return nil
				}})
				must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
				batchShop(t, b, []models.PlaceRequest{
					{OrderNo: "o-1", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
					{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
					{OrderNo: "o-3", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}},
				})
				tasks := claimAll(t, b, "w1")
				ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				_, err := b.s.ReleaseBatch(ctx, tasks, "w1")
				if err == nil {
					t.Fatal("the batch committed past its context")
				}
				if got := errors.Is(err, models.ErrBatchNotCommitted); got == stop {
					t.Fatalf("err = %v; ErrBatchNotCommitted %v, want %v", err, got, !stop)
				}
				if n := attemptsOf(t, b); len(n) != 0 {
					t.Fatalf("attempt rows %v after a batch that did not commit", n)
				}
				if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 3 {
					t.Fatalf("sku = %+v, want nothing released", sku)
				}
				for _, tk := range tasks {
					c, _ := b.s.OrderChain(b.ctx, tk.OrderNo)
					task := c.Tasks[0]
					leased := task.LeaseToken == tk.LeaseToken && task.LeaseUntil != nil
					switch {
					case task.Status != models.TaskPending || task.Failures != 0:
						t.Fatalf("%s: task %+v, want PENDING without a failure", tk.OrderNo, task.ReleaseTask)
					case stop && (leased || task.Attempts != 0):
						t.Fatalf("%s: task %+v, want its lease handed back and the claim uncounted", tk.OrderNo, task.ReleaseTask)
					case !stop && !leased:
						t.Fatalf("%s: task %+v, want it still leased to w1 to try alone", tk.OrderNo, task.ReleaseTask)
					}
				}
			})
		}
	}
}

// A batch releases a counter's tasks together: however many tasks share
// however few keys, it takes a handful of statements, not three per task,
// and every task still gets its own ledger row whose before and after
// chain with its key's other rows (CheckInvariants), as if each had been
// applied alone in turn.
func TestBatchReleasesCountersTogether(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := setup(t, d, models.Options{})
			users := []string{"u1", "u2", "u3"}
			for _, u := range users {
				must(t, func() error { _, err := b.s.Credit(b.ctx, u, models.AssetBalance, 10000, "test"); return err })
				must(t, func() error { _, err := b.s.Credit(b.ctx, u, models.AssetPoints, 5000, "test"); return err })
			}
			for _, sku := range []string{"sku-a", "sku-b", "sku-c"} {
				must(t, func() error { _, err := b.s.SetStock(b.ctx, sku, 100, 0, "test"); return err })
			}
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-x", 100, "test"); return err })
			const orders = 60
			var reqs []models.PlaceRequest
			for i := range orders {
				reqs = append(reqs, models.PlaceRequest{
					OrderNo: fmt.Sprintf("o-%02d", i), UserID: users[i%3],
					Items:      []models.Item{{SkuID: []string{"sku-c", "sku-a", "sku-b"}[i%3], Qty: int64(1 + i%2)}},
					Freeze:     []models.Freeze{{Asset: models.AssetBalance, Amount: 10}, {Asset: models.AssetPoints, Amount: 5}},
					ActivityID: "act-x",
				})
			}
			batchShop(t, b, reqs)
			tasks, err := b.s.ClaimTasks(b.ctx, "w1", 1000, time.Minute)
			if err != nil || len(tasks) != 4*orders {
				t.Fatalf("claimed %d tasks (%v), want %d", len(tasks), err, 4*orders)
			}
			var statements atomic.Int64
			count := func(*gorm.DB) { statements.Add(1) }
			must(t, func() error { return b.s.W.Callback().Raw().Before("gorm:raw").Register("test:count", count) })
			must(t, func() error { return b.s.W.Callback().Row().Before("gorm:row").Register("test:count", count) })
			results, err := b.s.ReleaseBatch(b.ctx, tasks, "w1")
			if err != nil {
				t.Fatal(err)
			}
			n := statements.Load()
			for i, r := range results {
				if r.Outcome != models.OutcomeDone {
					t.Errorf("task %d (%s %s of %s): %+v, want DONE", tasks[i].ID, tasks[i].ResourceType, tasks[i].BizKey, tasks[i].OrderNo, r)
				}
			}
			// The fence and the task locks, per resource type (four here) a
			// locking read, a ledger insert and a guarded update, the hold
			// rows, the attempt rows in inserts of 100, and their rollups
			// (a read of the released tasks, two upserts), and the
			// batch's hold.released events in one insert.
			if want := int64(2 + 4*3 + 1 + 3 + 3 + 1); n > want {
				t.Errorf("the batch of %d tasks took %d statements, want at most %d", len(tasks), n, want)
			}
			var flows int64
			must(t, func() error {
				return b.s.R.Raw(`SELECT (SELECT COUNT(*) FROM inventory_flows WHERE type = 'RELEASE')
					+ (SELECT COUNT(*) FROM account_flows WHERE type = 'RELEASE')
					+ (SELECT COUNT(*) FROM quota_flows WHERE type = 'RELEASE')`).Scan(&flows).Error
			})
			if flows != 4*orders {
				t.Errorf("%d RELEASE ledger rows, want %d", flows, 4*orders)
			}
			modelstest.CheckInvariants(t, b.s)
		})
	}
}

// On SQLite a claim reads the claimable tasks from their own index, in
// claim order, and stops at the batch: no sort of every due task, no look
// at every due task's lease in the table (a backlog of 100,000 cost
// 100,000 rows a claim); and it finds expired leases among the leased
// tasks alone, not among every PENDING one.
func TestClaimPlanReadsOnlyItsBatch(t *testing.T) {
	t.Parallel()
	b := setup(t, models.SQLite, models.Options{})
	claim, expired, err := b.s.ClaimPlans(200)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SEARCH release_tasks USING INDEX release_tasks_claimable (next_at<?)"}; !reflect.DeepEqual(claim, want) {
		t.Errorf("claim plan %q, want %q", claim, want)
	}
	if len(expired) == 0 || !strings.HasPrefix(expired[0], "SEARCH release_tasks USING INDEX release_tasks_leased (") {
		t.Errorf("expired leases plan %q, want a search of release_tasks_leased first", expired)
	}
}
