package web_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"unhold/auth"
	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// scrape GETs /metrics through the router and parses the text format into
// one value per series, keyed name{label="value",...} with labels in name
// order; a histogram gives name_count, name_sum and name_bucket{le=...}.
func scrape(t *testing.T, e *echo.Echo) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.RemoteAddr = "127.0.0.1:40000" // Prometheus on the same host
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get(echo.HeaderContentType); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type = %q, want the Prometheus text format", ct)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := func(name string, extra ...string) string {
				ls := slices.Sorted(slices.Values(append(slices.Clone(labels), extra...)))
				return name + "{" + strings.Join(ls, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key(name)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key(name)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[key(name+"_count")] = float64(h.GetSampleCount())
				out[key(name+"_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[key(name+"_bucket", fmt.Sprintf("le=%q", model.FloatString(b.GetUpperBound()).String()))] = float64(b.GetCumulativeCount())
				}
			default:
				out[key(name)] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// wantSeries fails for every series in want that is missing or differs.
func wantSeries(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: %s is missing", what, k)
		case v != want[k]:
			t.Errorf("%s: %s = %v, want %v", what, k, v, want[k])
		}
	}
}

// metricsRig is a store with a fault switch, the metrics, a router serving
// them and a worker recording into them.
type metricsRig struct {
	s        *models.Store
	clock    *modelstest.Clock
	failNext *atomic.Bool
	m        *metrics.Metrics
	e        *echo.Echo
	w        *jobs.Worker
	ctx      context.Context
	as       *identity // who the rig's page and API requests are sent as
}

func newMetricsRig(t *testing.T, d models.Dialect) metricsRig {
	t.Helper()
	r := metricsRig{clock: modelstest.NewClock(), failNext: &atomic.Bool{}, ctx: context.Background()}
	r.s = modelstest.Open(t, d, models.Options{Now: r.clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
		if point == models.FaultAfterLedger && r.failNext.Swap(false) {
			return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
		}
		return nil
	}})
	r.m = metrics.New(r.s, nil)
	r.e = web.New(web.Deps{Store: r.s, Metrics: r.m, Sessions: testSessions})
	r.as = bundle{e: r.e, s: r.s, clock: r.clock}.mustSignIn("root", auth.RoleAdmin)
	r.w = jobs.NewWorker(r.s, "w1", 10, 30*time.Second, slog.New(slog.DiscardHandler)).WithMetrics(r.m)
	return r
}

func (r metricsRig) placeAndClose(t *testing.T, no, sku string, qty int64) {
	t.Helper()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: qty}}}
	if _, _, err := r.s.PlaceOrder(r.ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.CloseOrder(r.ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
}

func (r metricsRig) drain(t *testing.T, want string) {
	t.Helper()
	if st := r.w.Drain(r.ctx); len(st) != 1 || st[want] != 1 {
		t.Fatalf("drain = %v, want one %s", st, want)
	}
}

func (r metricsRig) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if err := r.s.W.WithContext(r.ctx).Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// /metrics follows real releases: a DONE, a RETRY, a MANUAL and a
// DUPLICATE move their counters, the close-to-release histogram counts
// only releases, the outbox gauges and open diffs are read from the
// database (also by a freshly started Metrics), on both engines.
func TestMetricsFollowReleases(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			r := newMetricsRig(t, d)
			for _, sku := range []string{"sku-1", "sku-2"} {
				if _, err := r.s.SetStock(r.ctx, sku, 10, 0, "test"); err != nil {
					t.Fatal(err)
				}
			}
			const (
				done      = `unhold_release_total{outcome="DONE",resource="inventory"}`
				retry     = `unhold_release_total{outcome="RETRY",resource="inventory"}`
				manual    = `unhold_release_total{outcome="MANUAL",resource="inventory"}`
				duplicate = `unhold_release_total{outcome="DUPLICATE",resource="inventory"}`
				dupTotal  = `unhold_release_duplicates_total{resource="inventory"}`
				busy      = `unhold_release_failures_total{class="DB_BUSY",resource="inventory"}`
				short     = `unhold_release_failures_total{class="LOCKED_SHORT",resource="inventory"}`
				latN      = `unhold_close_to_release_seconds_count{resource="inventory"}`
				latSum    = `unhold_close_to_release_seconds_sum{resource="inventory"}`
				backlog   = `unhold_release_backlog{}`
				oldest    = `unhold_release_oldest_due_seconds{}`
				retryN    = `unhold_release_retry_tasks{}`
				manualN   = `unhold_release_manual_tasks{}`
				diffs     = `unhold_recon_open_diffs{resource="inventory"}`
				up        = `unhold_db_up{}`
			)
			wantSeries(t, "at start", scrape(t, r.e), map[string]float64{
				done: 0, retry: 0, manual: 0, duplicate: 0, dupTotal: 0, latN: 0,
				backlog: 0, oldest: 0, retryN: 0, manualN: 0, diffs: 0, up: 1,
				`unhold_recon_open_diffs{resource="slot"}`: 0,
			})

			// A close makes a task due; 2 s later it is still waiting.
			r.placeAndClose(t, "o-done", "sku-1", 2)
			r.clock.Advance(2 * time.Second)
			wantSeries(t, "closed", scrape(t, r.e), map[string]float64{backlog: 1, oldest: 2, done: 0})
			r.drain(t, models.OutcomeDone)
			wantSeries(t, "released", scrape(t, r.e), map[string]float64{
				done: 1, latN: 1, latSum: 2, backlog: 0, oldest: 0,
				`unhold_close_to_release_seconds_bucket{le="1",resource="inventory"}`:    0,
				`unhold_close_to_release_seconds_bucket{le="2.5",resource="inventory"}`:  1,
				`unhold_close_to_release_seconds_bucket{le="+Inf",resource="inventory"}`: 1,
			})

			// A transient failure: RETRY, its class counted, next try in 1 s.
			r.placeAndClose(t, "o-retry", "sku-1", 1)
			r.failNext.Store(true)
			r.drain(t, models.OutcomeRetry)
			wantSeries(t, "retry", scrape(t, r.e), map[string]float64{
				retry: 1, busy: 1, retryN: 1, backlog: 0, done: 1, latN: 1,
			})

			// Stock whose locked amount was zeroed by hand cannot be released.
			r.placeAndClose(t, "o-manual", "sku-2", 1)
			r.exec(t, "UPDATE inventory SET locked = 0 WHERE sku_id = ?", "sku-2")
			r.drain(t, models.OutcomeManual)
			wantSeries(t, "manual", scrape(t, r.e), map[string]float64{
				manual: 1, short: 1, manualN: 1, retryN: 1, busy: 1, done: 1,
			})

			// A released task made due again is stopped by the ledger.
			r.exec(t, "UPDATE release_tasks SET status = 'PENDING', done_at = NULL, lease_until = NULL WHERE order_no = ?", "o-done")
			r.drain(t, models.OutcomeDuplicate)
			wantSeries(t, "duplicate", scrape(t, r.e), map[string]float64{
				duplicate: 1, dupTotal: 1, done: 1, latN: 1, latSum: 2, backlog: 0,
			})

			// Reconciliation sees the hand edit: the open-diff gauge reads it.
			if _, err := r.s.RunReconciliation(r.ctx, models.ReconByOps, "test"); err != nil {
				t.Fatal(err)
			}
			var open int64
			if err := r.s.R.WithContext(r.ctx).Raw(`SELECT COUNT(*) FROM recon_diffs WHERE resource_type = 'inventory' AND status IN ('OPEN','ACKED')`).
				Scan(&open).Error; err != nil {
				t.Fatal(err)
			}
			if open == 0 {
				t.Fatal("reconciliation found no inventory diff after locked was zeroed")
			}
			wantSeries(t, "reconciled", scrape(t, r.e), map[string]float64{diffs: float64(open), `unhold_recon_open_diffs{resource="coupon"}`: 0})

			// No worker for 5 s: the RETRY task is due since 4 s. A process
			// started now reads the same gauges, and counts from zero.
			r.clock.Advance(5 * time.Second)
			restarted := metrics.New(r.s, nil)
			for name, e := range map[string]*echo.Echo{"running": r.e, "restarted": web.New(web.Deps{Store: r.s, Metrics: restarted})} {
				wantSeries(t, name, scrape(t, e), map[string]float64{
					backlog: 1, oldest: 4, retryN: 1, manualN: 1, diffs: float64(open),
				})
			}
			wantSeries(t, "restarted counters", scrape(t, web.New(web.Deps{Store: r.s, Metrics: restarted})), map[string]float64{
				done: 0, retry: 0, manual: 0, duplicate: 0, dupTotal: 0, latN: 0,
			})

			// The retry succeeds: o-retry closed at +2 s and is released at
			// +7 s, so the histogram gets 5 s.
			r.drain(t, models.OutcomeDone)
			wantSeries(t, "retried", scrape(t, r.e), map[string]float64{
				done: 2, latN: 2, latSum: 2 + 5, retry: 1, retryN: 0, backlog: 0, oldest: 0, manualN: 1,
				`unhold_close_to_release_seconds_bucket{le="5",resource="inventory"}`: 2,
			})
		})
	}
}

// HTTP requests are counted by the route template, never the raw path, and
// by the status the client got, business errors and unmatched paths
// included; every scrape counts the scrapes before it.
func TestHTTPMetricsUseRouteTemplate(t *testing.T) {
	t.Parallel()
	r := newMetricsRig(t, models.SQLite)
	if _, err := r.s.SetStock(r.ctx, "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	r.placeAndClose(t, "o-1", "sku-1", 1)
	for _, c := range []struct {
		method, path, body string
		status             int
	}{
		{http.MethodGet, "/orders/o-1", "", http.StatusOK},
		{http.MethodGet, "/orders/o-404", "", http.StatusNotFound},
		{http.MethodGet, "/api/v1/orders/o-1", "", http.StatusOK},
		{http.MethodGet, "/api/v1/orders/o-2", "", http.StatusNotFound},
		{http.MethodPost, "/api/v1/orders/o-1/resources/inventory/rerun", `{"reason":"test"}`, http.StatusConflict},
		{http.MethodGet, "/no/such/page", "", http.StatusNotFound},
		{http.MethodGet, "/wp-login.php", "", http.StatusNotFound},
		{http.MethodDelete, "/metrics", "", http.StatusMethodNotAllowed},
		{"BREW", "/", "", http.StatusMethodNotAllowed},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		}
		rec := bundle{e: r.e, s: r.s, a: auth.New(r.s, auth.Options{}), clock: r.clock, who: r.as}.serve(req)
		if rec.Code != c.status {
			t.Fatalf("%s %s = %d %s, want %d", c.method, c.path, rec.Code, rec.Body, c.status)
		}
	}
	scrape(t, r.e)
	got := scrape(t, r.e)
	wantSeries(t, "http", got, map[string]float64{
		`unhold_http_requests_total{code="200",method="GET",route="/orders/:order_no"}`:                               1,
		`unhold_http_requests_total{code="404",method="GET",route="/orders/:order_no"}`:                               1,
		`unhold_http_requests_total{code="200",method="GET",route="/api/v1/orders/:order_no"}`:                        1,
		`unhold_http_requests_total{code="404",method="GET",route="/api/v1/orders/:order_no"}`:                        1,
		`unhold_http_requests_total{code="409",method="POST",route="/api/v1/orders/:order_no/resources/:type/rerun"}`: 1,
		`unhold_http_requests_total{code="404",method="GET",route="unmatched"}`:                                       2,
		`unhold_http_requests_total{code="405",method="DELETE",route="/metrics"}`:                                     1,
		`unhold_http_requests_total{code="405",method="OTHER",route="/"}`:                                             1,
		`unhold_http_requests_total{code="200",method="GET",route="/metrics"}`:                                        1,
		`unhold_http_request_duration_seconds_count{method="GET",route="/orders/:order_no"}`:                          2,
		`unhold_http_request_duration_seconds_count{method="GET",route="unmatched"}`:                                  2,
		`unhold_http_request_duration_seconds_count{method="GET",route="/metrics"}`:                                   1,
	})
	for k := range got {
		if strings.HasPrefix(k, "unhold_http_") && (strings.Contains(k, "o-1") || strings.Contains(k, "o-404") ||
			strings.Contains(k, "wp-login") || strings.Contains(k, "/no/such") || strings.Contains(k, "BREW")) {
			t.Errorf("a raw path or method became a label: %s", k)
		}
	}
	wantSeries(t, "next scrape", scrape(t, r.e), map[string]float64{
		`unhold_http_requests_total{code="200",method="GET",route="/metrics"}`: 2,
	})
}

// A server built without metrics answers /metrics with a JSON 404.
func TestMetricsOff(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	e := web.New(web.Deps{Store: s})
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	e.ServeHTTP(rec, req)
	wantError(t, rec, http.StatusNotFound, "NOT_FOUND")
}
