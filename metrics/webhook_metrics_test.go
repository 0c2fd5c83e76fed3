package metrics_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
)

// TestWebhookMetrics: each subscription's backlog, oldest waiting
// delivery and pause are read from the database; the deliveries counter
// has its three results from the start and counts what is observed, a
// lost lease not at all.
func TestWebhookMetrics(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now})
		ctx := context.Background()
		m := metrics.New(s, modelstest.QuietLog())
		wantValues(t, gather(t, m.Registry()), map[string]float64{
			`unhold_webhook_deliveries_total{result="delivered"}`: 0,
			`unhold_webhook_deliveries_total{result="retry"}`:     0,
			`unhold_webhook_deliveries_total{result="failed"}`:    0,
		})
		busy, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: "http://127.0.0.1:9/a"}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		idle, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: "http://127.0.0.1:9/b", Types: []models.EventType{models.EventTaskManual}}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		for _, no := range []string{"o-1", "o-2"} {
			if err := s.W.Exec("INSERT INTO events (type, order_no, occurred_at, data) VALUES ('order.closed', ?, ?, '{}')", no, s.Now()).Error; err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.FanOutWebhooks(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PauseWebhook(ctx, idle.ID, "admin"); err != nil {
			t.Fatal(err)
		}
		clock.Advance(90 * time.Second)
		m.ObserveWebhook(models.DeliveryOutcomeRetry)
		m.ObserveWebhook(models.DeliveryOutcomeLost)
		b, i := `{subscription="`+strconv.FormatInt(busy.ID, 10)+`"}`, `{subscription="`+strconv.FormatInt(idle.ID, 10)+`"}`
		wantValues(t, gather(t, m.Registry()), map[string]float64{
			"unhold_webhook_backlog" + b:                      2,
			"unhold_webhook_oldest_age_seconds" + b:           90,
			"unhold_webhook_paused" + b:                       0,
			"unhold_webhook_backlog" + i:                      0,
			"unhold_webhook_oldest_age_seconds" + i:           0,
			"unhold_webhook_paused" + i:                       1,
			`unhold_webhook_deliveries_total{result="retry"}`: 1,
			`unhold_db_up{}`:                                  1,
		})
	})
}
