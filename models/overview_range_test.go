package models_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// The overview's ranges: a week's window and hourly chart read minute
// rollups six days and more old, which the cleanup keeps for
// RollupRetention (eight days) and deletes after.
func TestReleaseHealthWeekAndRetention(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.clock.Advance(30 * time.Second)
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 1000, "test"); return err })
		released := b.clock.Now()
		b.closedOrders(t, 0, 1) // o-000: inventory and quota
		if st := b.drain(t, "w1"); st[models.OutcomeDone] != 2 {
			t.Fatalf("drain = %v, want two DONE", st)
		}
		b.clock.Advance(6*24*time.Hour + 23*time.Hour)
		// The cleanup as the job runs it keeps the week.
		if _, err := b.s.DeleteOldRollups(b.ctx, b.clock.Now().Add(-models.RollupRetention)); err != nil {
			t.Fatal(err)
		}
		h, err := b.s.ReleaseHealth(b.ctx, models.RangeWeek)
		if err != nil {
			t.Fatal(err)
		}
		if h.LastWeek.Success != 2 || h.LastDay.Success != 0 || h.LastHour.Success != 0 {
			t.Fatalf("week %d, day %d, hour %d successes; want 2, 0, 0", h.LastWeek.Success, h.LastDay.Success, h.LastHour.Success)
		}
		if len(h.Buckets) != 168 || !h.Buckets[167].At.Equal(b.clock.Now().Truncate(time.Hour)) {
			t.Fatalf("week chart: %d buckets, last at %s; want 168, the current hour", len(h.Buckets), h.Buckets[len(h.Buckets)-1].At)
		}
		var sum int64
		for _, c := range h.Buckets {
			if c.Released > 0 && (released.Before(c.At) || !released.Before(c.At.Add(time.Hour))) {
				t.Errorf("releases of %s in the hour of %s", released, c.At)
			}
			sum += c.Released
		}
		if sum != 2 {
			t.Errorf("week chart released %d, want 2", sum)
		}
		// Nothing but a week reads that far: a day's range has no week.
		if h, err := b.s.ReleaseHealth(b.ctx, models.RangeDay); err != nil || h.LastWeek.Success != 0 || len(h.Buckets) != 144 {
			t.Errorf("day range: week %+v, %d buckets, %v", h.LastWeek, len(h.Buckets), err)
		}
		// Past eight days the cleanup deletes them.
		b.clock.Advance(2 * 24 * time.Hour)
		if n, err := b.s.DeleteOldRollups(b.ctx, b.clock.Now().Add(-models.RollupRetention)); err != nil || n == 0 {
			t.Fatalf("cleanup after eight days deleted %d rows, %v", n, err)
		}
	})
}

func TestParseOverviewRange(t *testing.T) {
	for in, want := range map[string]models.OverviewRange{"": models.RangeDay, "1h": models.RangeHour, "24h": models.RangeDay, "7d": models.RangeWeek} {
		if got, err := models.ParseOverviewRange(in); err != nil || got != want {
			t.Errorf("ParseOverviewRange(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"1d", "7D", "30d", "hour"} {
		if _, err := models.ParseOverviewRange(in); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("ParseOverviewRange(%q) = %v, want ErrInvalid", in, err)
		}
	}
}

// BenchmarkReleaseHealthWeek reads the 7-day overview of a shop with a
// full week of rollups: every minute of the week has releases of six types
// and failures of two classes (ten rows a minute, 100,800 rows).
func BenchmarkReleaseHealthWeek(b *testing.B) {
	for _, d := range modelstest.Engines {
		b.Run(string(d), func(b *testing.B) {
			clock := modelstest.NewClock()
			s := modelstest.Open(b, d, models.Options{Now: clock.Now})
			start := clock.Now().Add(-7 * 24 * time.Hour).Truncate(time.Minute)
			types := []string{"inventory", "coupon", "balance", "points", "quota", "slot"}
			for from := 0; from < 7*24*60; from += 500 {
				var vals []string
				var args []any
				for m := from; m < min(from+500, 7*24*60); m++ {
					minute := start.Add(time.Duration(m) * time.Minute).Unix()
					for _, typ := range types {
						vals = append(vals, "(?, 'DONE', ?, '', ?)")
						args = append(args, minute, typ, 10+m%7)
					}
					vals = append(vals, "(?, 'RETRY', 'inventory', 'TIMEOUT', 1)", "(?, 'RETRY', 'coupon', 'DB_BUSY', 1)",
						"(?, 'MANUAL', 'inventory', 'LOCKED_SHORT', 1)", "(?, 'DUPLICATE', 'quota', '', 1)")
					args = append(args, minute, minute, minute, minute)
				}
				err := s.W.Exec("INSERT INTO attempt_minutes (minute, outcome, resource_type, error_class, n) VALUES "+strings.Join(vals, ","), args...).Error
				if err != nil {
					b.Fatal(err)
				}
			}
			if d == models.Postgres {
				if err := s.W.Exec("VACUUM ANALYZE").Error; err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				h, err := s.ReleaseHealth(context.Background(), models.RangeWeek)
				if err != nil {
					b.Fatal(err)
				}
				if h.LastWeek.Failures < 3*7*24*60-3*60 {
					b.Fatal(fmt.Sprintf("week failures %d, want about %d", h.LastWeek.Failures, 3*7*24*60))
				}
			}
		})
	}
}
