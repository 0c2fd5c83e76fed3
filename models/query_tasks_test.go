package models_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"unhold/models"
)

// closedOrders places and closes n orders o-<from>..., each holding one
// sku-1 and, every other one, a place of act-1, so each close writes one or
// two tasks; three closes share each clock instant, so (created_at, id)
// ties are common.
func (b bundle) closedOrders(t *testing.T, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		req := models.PlaceRequest{OrderNo: fmt.Sprintf("o-%03d", i), UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
		if i%2 == 0 {
			req.ActivityID = "act-1"
		}
		if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, req.OrderNo, models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		if i%3 == 2 {
			b.clock.Advance(time.Second)
		}
	}
}

// allTasks reads every task, for lists to be checked against.
func (b bundle) allTasks(t *testing.T) []models.ReleaseTask {
	t.Helper()
	var all []models.ReleaseTask
	if err := b.s.R.Order("id").Find(&all).Error; err != nil {
		t.Fatal(err)
	}
	return all
}

// pageThrough reads every page of a list and returns the ids in order.
func (b bundle) pageThrough(t *testing.T, f models.TaskFilter, oldestFirst bool) []int64 {
	t.Helper()
	var ids []int64
	var after models.Cursor
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("more than 100 pages: the cursor does not advance")
		}
		p, err := b.s.ListTasks(b.ctx, f, after, oldestFirst, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Tasks) > 7 {
			t.Fatalf("page of %d tasks, want at most 7", len(p.Tasks))
		}
		for _, tk := range p.Tasks {
			ids = append(ids, tk.ID)
		}
		if p.Next.ID == 0 {
			return ids
		}
		if len(p.Tasks) != 7 {
			t.Fatalf("a short page (%d) has a next cursor", len(p.Tasks))
		}
		c, err := models.ParseCursor(p.Next.String())
		if err != nil {
			t.Fatal(err)
		}
		after = c
	}
}

// Every filter pages through exactly the tasks it keeps, in (created_at,
// id) order, with no gap and no repeat, on both engines.
func TestListTasksPagesWithoutGaps(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
		b.closedOrders(t, 0, 30)
		b.drain(t, "w1")
		b.closedOrders(t, 30, 20)
		// Three tasks to MANUAL by hand, so several statuses mix.
		must(t, func() error {
			return b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'LOCKED_SHORT'
				WHERE order_no IN ('o-031', 'o-040', 'o-041') AND resource_type = 'inventory'`).Error
		})
		b.clock.Advance(30 * time.Minute)
		b.closedOrders(t, 50, 6)
		all := b.allTasks(t)
		now := b.clock.Now()
		cases := []struct {
			name string
			f    models.TaskFilter
			keep func(models.ReleaseTask) bool
		}{
			{"all", models.TaskFilter{}, func(models.ReleaseTask) bool { return true }},
			{"pending", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskPending}},
				func(tk models.ReleaseTask) bool { return tk.Status == models.TaskPending }},
			{"pending+done", models.TaskFilter{Statuses: []models.TaskStatus{models.TaskPending, models.TaskDone}},
				func(tk models.ReleaseTask) bool { return tk.Status != models.TaskManual }},
			{"inventory", models.TaskFilter{Type: models.ResInventory},
				func(tk models.ReleaseTask) bool { return tk.ResourceType == models.ResInventory }},
			{"quota pending", models.TaskFilter{Type: models.ResQuota, Statuses: []models.TaskStatus{models.TaskPending}},
				func(tk models.ReleaseTask) bool {
					return tk.ResourceType == models.ResQuota && tk.Status == models.TaskPending
				}},
			{"class", models.TaskFilter{Class: models.ClassLockedShort},
				func(tk models.ReleaseTask) bool { return tk.ErrorClass == models.ClassLockedShort }},
			{"older", models.TaskFilter{OlderMin: 20},
				func(tk models.ReleaseTask) bool { return !tk.CreatedAt.After(now.Add(-20 * time.Minute)) }},
			{"due", models.TaskFilter{Due: true},
				func(tk models.ReleaseTask) bool { return tk.Status == models.TaskPending && !tk.NextAt.After(now) }},
			{"order", models.TaskFilter{OrderNo: "o-040"},
				func(tk models.ReleaseTask) bool { return tk.OrderNo == "o-040" }},
		}
		for _, c := range cases {
			var want []models.ReleaseTask
			for _, tk := range all {
				if c.keep(tk) {
					want = append(want, tk)
				}
			}
			if len(want) == 0 {
				t.Fatalf("%s: the planted state keeps no task", c.name)
			}
			for _, oldestFirst := range []bool{false, true} {
				sort.Slice(want, func(i, j int) bool {
					a, b := want[i], want[j]
					if !a.CreatedAt.Equal(b.CreatedAt) {
						return a.CreatedAt.Before(b.CreatedAt) == oldestFirst
					}
					return (a.ID < b.ID) == oldestFirst
				})
				wantIDs := make([]int64, len(want))
				for i, tk := range want {
					wantIDs[i] = tk.ID
				}
				if got := b.pageThrough(t, c.f, oldestFirst); !slices.Equal(got, wantIDs) {
					t.Errorf("%s (oldest first %v):\n got %v\nwant %v", c.name, oldestFirst, got, wantIDs)
				}
			}
		}
	})
}

// Filters that name nothing real are refused as invalid input.
func TestListTasksRefusesBadFilters(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for _, f := range []models.TaskFilter{
			{Statuses: []models.TaskStatus{"NOPE"}},
			{Type: "gold"},
			{Class: "SOMETIMES"},
			{OlderMin: -1},
			{OlderMin: models.MaxOlderMin + 1},
			{OrderNo: "no spaces"},
		} {
			if _, err := b.s.ListTasks(b.ctx, f, models.Cursor{}, false, 0); !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%+v: err = %v, want ErrInvalid", f, err)
			}
		}
		if _, err := b.s.Task(b.ctx, 999); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("unknown task: err = %v, want ErrNotFound", err)
		}
	})
}

// Only RETRY and MANUAL tasks can be rerun.
func TestRerunnable(t *testing.T) {
	t.Parallel()
	for _, st := range models.TaskStatuses {
		want := st == models.TaskRetry || st == models.TaskManual
		if got := st.Rerunnable(); got != want {
			t.Errorf("%s.Rerunnable() = %v, want %v", st, got, want)
		}
	}
	if models.TaskStatus("").Rerunnable() || models.TaskStatus("retry").Rerunnable() {
		t.Error("an unknown status is rerunnable")
	}
}

// A bulk rerun's audit target names its type, then the rest of its filter.
func TestBulkRerunTarget(t *testing.T) {
	t.Parallel()
	q := models.TaskFilter{Type: models.ResQuota, Class: models.ClassTimeout, OlderMin: 60}
	if got := models.BulkRerunTarget(q); got != "tasks:quota?class=TIMEOUT&older=60" {
		t.Fatalf("target = %q", got)
	}
}

// Task reads one task and its attempts in order.
func TestTaskWithAttempts(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 10, "test"); return err })
		b.closedOrders(t, 0, 1)
		b.drain(t, "w1")
		all := b.allTasks(t)
		tk, err := b.s.Task(b.ctx, all[0].ID)
		if err != nil || tk.Status != models.TaskDone || len(tk.AttemptLog) != 1 || tk.AttemptLog[0].Worker != "w1" {
			t.Fatalf("task = %+v, %v", tk, err)
		}
	})
}
