package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// giftCard is the remote type of the metrics' tests.
const giftCard models.ResourceType = "giftcard"

// giftCardStore opens a store on d with the remote type giftcard kept by
// svc.
func giftCardStore(t *testing.T, d models.Dialect, clock *modelstest.Clock, svc *remotetest.Service) *models.Store {
	t.Helper()
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	opt := models.Options{Logger: modelstest.QuietLog(),
		Remote: []models.RemoteType{{Type: giftCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}}
	if clock != nil {
		opt.Now = clock.Now
	}
	return modelstest.Open(t, d, opt)
}

// A run whose gift-card service did not answer leaves its key unchecked:
// the scrape says so by reason, and since when the key has gone
// unchecked (the run's start), which a later run that compares it sets
// back to 0. Breaks if the gauges were not read from the last run and
// the streaks, or a compared key still counted.
func TestMetricsReconUnchecked(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		svc := remotetest.New(remotetest.Options{})
		s := giftCardStore(t, d, clock, svc)
		ctx := context.Background()
		svc.SetAvailable("GC-1", 5)
		_, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "o-1", UserID: "u1",
			Holds: []models.HoldRequest{{Type: giftCard, Key: "GC-1", Qty: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		m := metrics.New(s, modelstest.QuietLog())
		wantValues(t, gather(t, m.Registry()), map[string]float64{
			`unhold_recon_skipped_keys{reason="NO_ANSWER",resource="giftcard"}`:   0,
			`unhold_recon_unchecked_since_timestamp_seconds{resource="giftcard"}`: 0,
		})
		svc.Next(1, remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY"}`})
		first, err := s.RunReconciliation(ctx, models.ReconByCLI, "test")
		if err != nil || first.Status != models.ReconPartial {
			t.Fatalf("run = %+v, %v; want PARTIAL", first, err)
		}
		clock.Advance(time.Hour)
		svc.Next(1, remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY"}`})
		if _, err := s.RunReconciliation(ctx, models.ReconByCLI, "test"); err != nil {
			t.Fatal(err)
		}
		wantValues(t, gather(t, m.Registry()), map[string]float64{
			`unhold_recon_skipped_keys{reason="NO_ANSWER",resource="giftcard"}`:   1,
			`unhold_recon_skipped_keys{reason="OTHER_KEY",resource="giftcard"}`:   0,
			`unhold_recon_unchecked_since_timestamp_seconds{resource="giftcard"}`: float64(first.StartedAt.Unix()),
			`unhold_db_up{}`: 1,
		})
		if run, err := s.RunReconciliation(ctx, models.ReconByCLI, "test"); err != nil || run.Status != models.ReconDone {
			t.Fatalf("run with the service answering = %+v, %v; want DONE", run, err)
		}
		wantValues(t, gather(t, m.Registry()), map[string]float64{
			`unhold_recon_skipped_keys{reason="NO_ANSWER",resource="giftcard"}`:   0,
			`unhold_recon_unchecked_since_timestamp_seconds{resource="giftcard"}`: 0,
		})
	})
}
