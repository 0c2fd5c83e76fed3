package models_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// ReleaseHealth counts due tasks, failures by type and class per window,
// and buckets releases by minute, on both engines alike.
func TestReleaseHealth(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			opt := models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.OrderNo == "o-002" && tk.ResourceType == models.ResQuota {
					return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
				}
				return nil
			}}
			b := setup(t, d, opt)
			// The clock starts on the hour plus 30 s, so minute buckets are exact.
			b.clock.Advance(30 * time.Second)
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
			must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
			h, err := b.s.ReleaseHealth(b.ctx, models.RangeDay)
			if err != nil {
				t.Fatal(err)
			}
			if h.DueBacklog != 0 || !h.OldestDue.IsZero() || h.LastDay.Success+h.LastDay.Failures != 0 || len(h.Buckets) != models.RangeDay.Buckets() {
				t.Fatalf("empty shop health = %+v", h)
			}
			if _, ok := h.LastDay.SuccessRate(); ok {
				t.Fatal("a success rate without attempts")
			}
			// Two hours ago: o-000 (inventory + quota) released.
			b.closedOrders(t, 0, 1)
			b.drain(t, "w1")
			b.clock.Advance(2 * time.Hour)
			// Now: o-001 inventory DONE, o-002 inventory DONE and quota RETRY
			// (DB_BUSY, due again a second later), o-003 left due.
			b.closedOrders(t, 1, 2)
			b.drain(t, "w1")
			closedAt := b.clock.Now()
			b.closedOrders(t, 3, 1)
			b.clock.Advance(11 * time.Minute)

			h, err = b.s.ReleaseHealth(b.ctx, models.RangeDay)
			if err != nil {
				t.Fatal(err)
			}
			if h.DueBacklog != 2 || !h.OldestDue.Equal(closedAt) || h.OldestDueAge() != 11*time.Minute {
				t.Errorf("due = %d, oldest %s (%s); want 2, %s", h.DueBacklog, h.OldestDue, h.OldestDueAge(), closedAt)
			}
			if h.Retry != 1 || h.Manual != 0 {
				t.Errorf("retry %d, manual %d; want 1, 0", h.Retry, h.Manual)
			}
			if h.LastHour.Success != 2 || h.LastHour.Failures != 1 || h.LastDay.Success != 4 || h.LastDay.Failures != 1 {
				t.Errorf("hour %d/%d, day %d/%d; want 2/1, 4/1", h.LastHour.Success, h.LastHour.Failures, h.LastDay.Success, h.LastDay.Failures)
			}
			if rate, ok := h.LastDay.SuccessRate(); !ok || rate != 0.8 {
				t.Errorf("day success rate = %v, %v; want 0.8", rate, ok)
			}
			inv, quota := h.LastHour.ByType[0], h.LastHour.ByType[4]
			if inv.Type != models.ResInventory || inv.Success != 2 || inv.Failures != 0 ||
				quota.Type != models.ResQuota || quota.Success != 0 || quota.Failures != 1 {
				t.Errorf("hour by type = %+v", h.LastHour.ByType)
			}
			if len(h.LastHour.ByClass) != 1 || h.LastHour.ByClass[0] != (models.ClassStats{Class: models.ClassDBBusy, Failures: 1}) {
				t.Errorf("hour by class = %+v", h.LastHour.ByClass)
			}
			// The day's chart, in ten minutes: now is 2:11:30 past the start,
			// so two releases and one failure (at 2:00:30) are in the column
			// before the last; the releases of two hours ago 13 columns back.
			last := len(h.Buckets) - 1
			if !h.Buckets[last].At.Equal(b.clock.Now().Truncate(10 * time.Minute)) {
				t.Fatalf("last bucket at %s, now %s", h.Buckets[last].At, b.clock.Now())
			}
			for i, m := range h.Buckets {
				want := models.MinuteCount{At: m.At}
				switch last - i {
				case 1:
					want.Released, want.Failed = 2, 1
				case 13:
					want.Released = 2
				}
				if m != want {
					t.Errorf("column %d (%s) = %+v, want %+v", i, m.At, m, want)
				}
			}
			// A day later everything has left both windows.
			b.clock.Advance(24 * time.Hour)
			h, _ = b.s.ReleaseHealth(b.ctx, models.RangeDay)
			if h.LastDay.Success+h.LastDay.Failures != 0 {
				t.Errorf("a day later: %+v", h.LastDay)
			}
		})
	}
}

// plantAttempts writes n attempt rows of one task directly (order
// o-attempts, the task's is o-bench), finished over
// the last span before now, a tenth of them failures, in batches, and rolls
// them up as insertAttempts would have.
func plantAttempts(tb testing.TB, s *models.Store, now time.Time, n int, span time.Duration) {
	tb.Helper()
	plantTasks(tb, s, now, "o-bench", []doneTask{{Latency: ms(100)}})
	var task int64
	if err := s.R.Raw("SELECT id FROM release_tasks WHERE order_no = 'o-bench'").Scan(&task).Error; err != nil {
		tb.Fatal(err)
	}
	const batch = 500
	for from := 0; from < n; from += batch {
		var vals []string
		var args []any
		for i := from; i < min(from+batch, n); i++ {
			outcome, class := models.OutcomeDone, ""
			if i%10 == 0 {
				outcome, class = models.OutcomeRetry, string(models.ClassDBBusy)
			}
			at := now.Add(-span + time.Duration(i)*span/time.Duration(n))
			vals = append(vals, "(?, 'o-attempts', 'inventory', 'bench', ?, ?, '', ?, ?)")
			args = append(args, task, outcome, class, at, at)
		}
		err := s.W.Exec(`INSERT INTO task_attempts (task_id, order_no, resource_type, worker, outcome, error_class, error,
			started_at, finished_at) VALUES `+strings.Join(vals, ","), args...).Error
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.RollUpPlanted(context.Background(), "o-attempts"); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReleaseHealth reads the overview's numbers over 100,000
// attempts finished in the last hour: the read costs the window's
// minutes, not its attempts.
func BenchmarkReleaseHealth(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			clock := modelstest.NewClock()
			s := modelstest.Open(b, d, models.Options{Now: clock.Now})
			plantAttempts(b, s, clock.Now(), 100_000, time.Hour)
			if d == models.Postgres {
				if err := s.W.Exec("VACUUM ANALYZE").Error; err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				h, err := s.ReleaseHealth(context.Background(), models.RangeHour)
				if err != nil {
					b.Fatal(err)
				}
				if h.LastHour.Success+h.LastHour.Failures < 99_000 {
					b.Fatalf("last hour %+v, want about 100000 attempts", h.LastHour)
				}
			}
		})
	}
}
