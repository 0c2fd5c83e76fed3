package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
)

// The manual queue's gauges on a fixed clock, SLA 2h: MANUAL tasks aged
// since they went MANUAL (a task created long before going MANUAL is not
// older for it), unresolved tickets since they were opened (a resolved
// one is not counted), each in its bucket, and the oldest of each queue.
// Breaks if a gauge ages from created_at, counts resolved tickets, or
// reads its buckets off another SLA.
func TestMetricsManualAgeing(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, ManualSLA: 2 * time.Hour})
		ctx := context.Background()
		m := metrics.New(s, modelstest.QuietLog())
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		run := 0
		ticket := func(key, status string) {
			t.Helper()
			now := clock.Now()
			run++
			if err := s.W.Exec("INSERT INTO recon_runs (id, trigger_type, status, started_at) VALUES (?, 'CLI', 'DONE', ?)", run, now).Error; err != nil {
				t.Fatal(err)
			}
			if err := s.W.Exec(`INSERT INTO recon_diffs (resource_type, biz_key, check_name, expected, actual, sign, status,
				first_run_id, last_run_id, created_at, updated_at) VALUES ('inventory', ?, 'LOCKED', 1, 0, -1, ?, ?, ?, ?, ?)`,
				key, status, run, run, now, now).Error; err != nil {
				t.Fatal(err)
			}
		}
		manual := func(no string) {
			t.Helper()
			sku := "sku-" + no
			if _, err := s.SetStock(ctx, sku, 5, 0, "test"); err != nil {
				t.Fatal(err)
			}
			placeAndCloseSKU(t, s, no, sku)
			if err := s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = ?", sku).Error; err != nil {
				t.Fatal(err)
			}
			if st := w.Drain(ctx); st[models.OutcomeManual] != 1 {
				t.Fatalf("drain = %v, want one MANUAL", st)
			}
		}
		// "slow" closes 3 h before the end, but its SKU delays the release
		// by 90 min, when it finds the lock gone: MANUAL 90 min before the end.
		ticket("resolved", models.DiffResolved)
		sku := "sku-slow"
		if _, err := s.SetStock(ctx, sku, 5, int64((90 * time.Minute).Seconds()), "test"); err != nil {
			t.Fatal(err)
		}
		ticket("old", models.DiffAcked) // 3 h at the end: past the SLA
		placeAndCloseSKU(t, s, "slow", sku)
		if err := s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = ?", sku).Error; err != nil {
			t.Fatal(err)
		}
		clock.Advance(30 * time.Minute)
		manual("a") // 2 h 30 min: past the SLA
		clock.Advance(time.Hour)
		if st := w.Drain(ctx); st[models.OutcomeManual] != 1 {
			t.Fatalf("drain = %v, want slow MANUAL", st)
		}
		ticket("mid", models.DiffOpen)
		clock.Advance(50 * time.Minute)
		manual("b") // 40 min
		for i := range 2 {
			ticket(fmt.Sprintf("new-%d", i), models.DiffOpen) // 40 min
		}
		clock.Advance(40 * time.Minute)

		got := gather(t, m.Registry())
		wantValues(t, got, map[string]float64{
			`unhold_manual_items{age="lt_1h",queue="tasks"}`:      1,
			`unhold_manual_items{age="lt_sla",queue="tasks"}`:     1,
			`unhold_manual_items{age="past_sla",queue="tasks"}`:   1,
			`unhold_manual_items{age="lt_1h",queue="tickets"}`:    2,
			`unhold_manual_items{age="lt_sla",queue="tickets"}`:   1,
			`unhold_manual_items{age="past_sla",queue="tickets"}`: 1,
			`unhold_manual_oldest_age_seconds{queue="tasks"}`:     (150 * time.Minute).Seconds(),
			`unhold_manual_oldest_age_seconds{queue="tickets"}`:   (180 * time.Minute).Seconds(),
			`unhold_release_manual_tasks{}`:                       3,
			`unhold_db_up{}`:                                      1,
		})
	})
}

// An empty queue reports every bucket at 0 and an oldest age of 0, so an
// alert on the gauge sees 0, not a missing series.
func TestMetricsManualAgeingEmpty(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	got := gather(t, metrics.New(s, modelstest.QuietLog()).Registry())
	want := map[string]float64{}
	for _, q := range []string{"tasks", "tickets"} {
		for _, a := range models.ManualAges {
			want[fmt.Sprintf("unhold_manual_items{age=%q,queue=%q}", a, q)] = 0
		}
		want[fmt.Sprintf("unhold_manual_oldest_age_seconds{queue=%q}", q)] = 0
	}
	wantValues(t, got, want)
}
