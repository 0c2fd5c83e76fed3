package models_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// doneTask is a released task planted as a row: its close (created_at) is
// at done − Latency − Delay − Retried, its due time (next_at) at
// done − Latency − Retried (a retry moves it to the last retry's), and it
// was released Ago before now.
type doneTask struct {
	Latency, Delay, Retried, Ago time.Duration
	Rerun, NotDone               bool
}

// plantTasks writes the tasks of one closed order directly, in batches, so
// a test can shape latencies to the millisecond and a benchmark can plant
// a busy hour quickly, and rolls them up as their releases would have.
func plantTasks(tb testing.TB, s *models.Store, now time.Time, order string, tasks []doneTask) {
	tb.Helper()
	ctx := context.Background()
	err := s.W.WithContext(ctx).Exec(`INSERT INTO orders (order_no, user_id, status, pay_deadline, created_at, updated_at)
		VALUES (?, 'u1', 'CLOSED', ?, ?, ?)`, order, now, now, now).Error
	if err != nil {
		tb.Fatal(err)
	}
	const batch = 500
	for from := 0; from < len(tasks); from += batch {
		var vals []string
		var args []any
		for i, t := range tasks[from:min(from+batch, len(tasks))] {
			done := now.Add(-t.Ago)
			due := done.Add(-t.Latency - t.Retried)
			created := due.Add(-t.Delay)
			next := due
			failures, status, trigger := 0, "DONE", "USER_CANCEL"
			if t.Retried > 0 {
				next, failures = done.Add(-t.Latency), 2
			}
			if t.Rerun {
				trigger = "RERUN"
			}
			var doneAt any = done
			if t.NotDone {
				status, doneAt = "RETRY", nil
			}
			vals = append(vals, "(?, 'inventory', ?, 1, ?, ?, 1, ?, ?, ?, ?, ?)")
			args = append(args, order, fmt.Sprintf("sku-%d", from+i), status, trigger, failures, next, created, created, doneAt)
		}
		err := s.W.WithContext(ctx).Exec(`INSERT INTO release_tasks (order_no, resource_type, biz_key, qty, status, trigger_type,
			attempts, failures, next_at, created_at, updated_at, done_at) VALUES `+strings.Join(vals, ","), args...).Error
		if err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.RollUpPlanted(ctx, order); err != nil {
		tb.Fatal(err)
	}
}

func repeat(n int, t doneTask) []doneTask { return slices.Repeat([]doneTask{t}, n) }

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ReleaseLatency counts the right tasks and estimates the quantiles from
// its buckets, on both engines alike.
func TestReleaseLatency(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		tasks              []doneTask
		count, over        int64
		p50, p95, p99, max time.Duration
	}{
		{name: "empty"},
		{name: "all in one bucket", tasks: repeat(10, doneTask{Latency: ms(300)}),
			count: 10, p50: ms(300), p95: ms(300), p99: ms(300), max: ms(300)},
		{name: "interpolated inside a bucket",
			tasks: []doneTask{{Latency: ms(1200)}, {Latency: ms(1400)}, {Latency: ms(1600)}, {Latency: ms(1800)}},
			count: 4, p50: ms(1500), p95: ms(1770), p99: ms(1794), max: ms(1800)},
		{name: "spread",
			tasks: slices.Concat(repeat(50, doneTask{Latency: ms(100)}), repeat(45, doneTask{Latency: time.Second}),
				repeat(4, doneTask{Latency: 3 * time.Second}), repeat(1, doneTask{Latency: 20 * time.Second})),
			count: 100, over: 5, p50: ms(100), p95: time.Second, p99: 3 * time.Second, max: 20 * time.Second},
		{name: "the 2 s edge is within the target", tasks: repeat(3, doneTask{Latency: 2 * time.Second}),
			count: 3, p50: 2 * time.Second, p95: 2 * time.Second, p99: 2 * time.Second, max: 2 * time.Second},
		{name: "a millisecond past it is not",
			tasks: slices.Concat(repeat(99, doneTask{Latency: ms(10)}), repeat(1, doneTask{Latency: ms(2001)})),
			count: 100, over: 1, p50: ms(10), p95: ms(10), p99: ms(10), max: ms(2001)},
		{name: "past the last bound", tasks: repeat(2, doneTask{Latency: 2 * time.Hour}),
			count: 2, over: 2, p50: 2 * time.Hour, p95: 2 * time.Hour, p99: 2 * time.Hour, max: 2 * time.Hour},
		{name: "what counts",
			tasks: []doneTask{
				// A release delay is the shop's: 80 ms from the due time.
				{Latency: ms(80), Delay: time.Minute},
				// Retries are latency: 6.2 s from the close.
				{Latency: ms(200), Retried: 6 * time.Second},
				// Clocks apart: below zero is zero.
				{Latency: -ms(40)},
				// Not counted: a rerun, one released an hour and a second
				// ago, one not released.
				{Latency: time.Hour, Rerun: true},
				{Latency: ms(1), Ago: time.Hour + time.Second},
				{Latency: ms(1), NotDone: true},
			},
			count: 3, over: 1, p50: ms(80), p95: ms(6200), p99: ms(6200), max: ms(6200)},
	}
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					b := setup(t, d, models.Options{})
					plantTasks(t, b.s, b.clock.Now(), "o-1", c.tasks)
					l, err := b.s.ReleaseLatency(b.ctx)
					if err != nil {
						t.Fatal(err)
					}
					if !l.Since.Equal(b.clock.Now().Add(-time.Hour)) || len(l.Buckets) != len(models.LatencyBuckets)+1 {
						t.Errorf("since %s, %d buckets", l.Since, len(l.Buckets))
					}
					got := []time.Duration{l.Quantile(0.5), l.Quantile(0.95), l.Quantile(0.99), l.Max}
					if want := []time.Duration{c.p50, c.p95, c.p99, c.max}; l.Count != c.count || l.OverTarget != c.over || !slices.Equal(got, want) {
						t.Errorf("count %d, over %d, p50/p95/p99/max %v; want %d, %d, %v", l.Count, l.OverTarget, got, c.count, c.over, want)
					}
				})
			}
		})
	}
}

// The quantile's ends: q 0 is the least latency, q 1 the greatest, and q
// out of range is clamped.
func TestLatencyQuantileEnds(t *testing.T) {
	t.Parallel()
	l := models.LatencyStats{Max: ms(900), Buckets: []models.LatencyBucket{
		{}, {Count: 2, Min: ms(6), Max: ms(8)}, {}, {Count: 2, Min: ms(700), Max: ms(900)},
	}}
	for q, want := range map[float64]time.Duration{0: ms(6), -1: ms(6), 0.25: ms(7), 0.5: ms(8), 0.75: ms(800), 1: ms(900), 2: ms(900)} {
		if got := l.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got := (models.LatencyStats{}).Quantile(0.5); got != 0 {
		t.Errorf("no latencies: %v, want 0", got)
	}
}

// The target is a bucket bound, so a bucket is all within it or all past
// it, and the bounds rise.
func TestLatencyBuckets(t *testing.T) {
	t.Parallel()
	if !slices.Contains(models.LatencyBuckets, models.LatencyTarget) {
		t.Errorf("the target %s is not a bucket bound", models.LatencyTarget)
	}
	bs := models.LatencyBuckets
	if !slices.IsSorted(bs) || len(slices.Compact(slices.Clone(bs))) != len(bs) || bs[len(bs)-1] != time.Hour {
		t.Errorf("bounds are not rising to an hour: %v", models.LatencyBuckets)
	}
}

// Real closes and releases: a task released on its first try counts from
// its close, or from its due time when the SKU delays it; a retried one
// from its close; a rerun's does not count. The task's own LatencyStart
// says the same as the query.
func TestReleaseLatencyOfReleases(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var failed atomic.Bool
			b := setup(t, d, models.Options{Faults: func(point string, tk *models.ReleaseTask) error {
				if point == models.FaultAfterLedger && tk.OrderNo == "o-retry" && !failed.Swap(true) {
					return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
				}
				return nil
			}})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-late", 10, 30, "test"); return err })
			closeOne := func(no, sku string) {
				t.Helper()
				req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}
				must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
				must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); return err })
			}
			stock := func(delta int) {
				t.Helper()
				must(t, func() error {
					return b.s.W.Exec("UPDATE inventory SET locked = locked + ?, available = available - ? WHERE sku_id = 'sku-1'", delta, delta).Error
				})
			}
			closeOne("o-now", "sku-1")
			closeOne("o-late", "sku-late")
			closeOne("o-retry", "sku-1")
			// o-now released after 1.5 s; o-retry fails once.
			b.clock.Advance(ms(1500))
			if st := b.drain(t, "w1"); st[models.OutcomeDone] != 1 || st[models.OutcomeRetry] != 1 {
				t.Fatalf("first drain = %v", st)
			}
			// o-late 1.5 s after its due time, o-retry 31.5 s after its close.
			b.clock.Advance(30 * time.Second)
			if st := b.drain(t, "w1"); st[models.OutcomeDone] != 2 {
				t.Fatalf("second drain = %v", st)
			}
			// o-manual's stock was taken from under the lock: MANUAL, then
			// rerun 10 s later and released.
			closeOne("o-manual", "sku-1")
			stock(-1)
			b.drain(t, "w1")
			b.clock.Advance(10 * time.Second)
			stock(1)
			must(t, func() error {
				_, err := b.s.Rerun(b.ctx, "o-manual", models.ResInventory, "ops", "stock fixed")
				return err
			})
			if st := b.drain(t, "w1"); st[models.OutcomeDone] != 1 {
				t.Fatalf("drain after the rerun = %v", st)
			}

			l, err := b.s.ReleaseLatency(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l.Count != 3 || l.Quantile(0) != ms(1500) || l.Quantile(0.5) != ms(1500) || l.Max != ms(31500) || l.OverTarget != 1 {
				t.Errorf("count %d, min %v, p50 %v, max %v, over %d; want 3, 1.5s, 1.5s, 31.5s, 1",
					l.Count, l.Quantile(0), l.Quantile(0.5), l.Max, l.OverTarget)
			}
			var tasks []models.ReleaseTask
			must(t, func() error { return b.s.R.Order("order_no").Find(&tasks).Error })
			for _, tk := range tasks {
				start, counts := tk.LatencyStart()
				want := map[string]time.Time{"o-now": tk.CreatedAt, "o-late": tk.CreatedAt.Add(30 * time.Second), "o-retry": tk.CreatedAt}[tk.OrderNo]
				if counts != (tk.OrderNo != "o-manual") || !start.Equal(want) {
					t.Errorf("%s: LatencyStart = %s, %v; want %s", tk.OrderNo, start, counts, want)
				}
			}
		})
	}
}

// BenchmarkReleaseLatency reads the latency of a busy hour, 100,000
// releases in the last hour and 100,000 before it, from the rollup. It
// reports the process's CPU per read (on PostgreSQL the server's CPU is
// not in it: read ns/op there).
func BenchmarkReleaseLatency(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			clock := modelstest.NewClock()
			s := modelstest.Open(b, d, models.Options{Now: clock.Now})
			tasks := make([]doneTask, 200_000)
			for i := range tasks {
				tasks[i] = doneTask{Latency: ms(i % 3000), Ago: time.Duration(i)*36*time.Millisecond + ms(18)}
				if i%100 == 0 {
					tasks[i].Retried = 5 * time.Second
				}
			}
			plantTasks(b, s, clock.Now(), "o-1", tasks)
			clock.Advance(30 * time.Second)
			b.ResetTimer()
			cpu := startCPU(b)
			for range b.N {
				l, err := s.ReleaseLatency(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				// The window starts on the minute after an hour ago:
				// 59.5 minutes of releases, half a minute past a minute.
				if l.Count < 98_000 {
					b.Fatalf("count %d, want about 99000", l.Count)
				}
			}
			cpu.report()
		})
	}
}
