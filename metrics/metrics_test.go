package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// gather flattens what g exposes into one value per series, keyed
// name{label="value",...} with labels in name order; a histogram gives
// name_count, name_sum and one name_bucket per bound.
func gather(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	return flatten(fams)
}

func flatten(fams []*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := func(name string, extra ...string) string {
				ls := slices.Sorted(slices.Values(append(slices.Clone(labels), extra...)))
				return name + "{" + strings.Join(ls, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key(f.GetName())] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key(f.GetName())] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				out[key(f.GetName()+"_count")] = float64(h.GetSampleCount())
				out[key(f.GetName()+"_sum")] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					out[key(f.GetName()+"_bucket", fmt.Sprintf("le=%q", fmt.Sprint(b.GetUpperBound())))] = float64(b.GetCumulativeCount())
				}
				// The text format shows the +Inf bucket; a gathered histogram
				// leaves it implicit in the count.
				out[key(f.GetName()+"_bucket", `le="+Inf"`)] = float64(h.GetSampleCount())
			case m.Untyped != nil:
				out[key(f.GetName())] = m.GetUntyped().GetValue()
			}
		}
	}
	return out
}

// wantAbsent fails for every series in keys that exists.
func wantAbsent(t *testing.T, got map[string]float64, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %v, want no such series", k, v)
		}
	}
}

// wantValues fails for every series in want whose value differs or that
// is missing.
func wantValues(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s is missing", k)
		case v != want[k]:
			t.Errorf("%s = %v, want %v", k, v, want[k])
		}
	}
}

// The worker records each way a claimed task's turn can end, a crash
// included, with the failure's class.
func TestWorkerRecordsReleases(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		var failNext, crashNext atomic.Bool
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if point != models.FaultAfterLedger {
				return nil
			}
			if crashNext.Swap(false) {
				panic("worker killed")
			}
			if failNext.Swap(false) {
				return &models.TransientError{Class: models.ClassConnection, Err: errors.New("connection reset")}
			}
			return nil
		}})
		ctx := context.Background()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		m := metrics.New(s, modelstest.QuietLog())
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog()).WithMetrics(m)

		modelstest.PlaceAndClose(t, s, "o-done", 2)
		clock.Advance(1500 * time.Millisecond)
		if st := w.Drain(ctx); st[models.OutcomeDone] != 1 {
			t.Fatalf("drain = %v, want 1 DONE", st)
		}
		modelstest.PlaceAndClose(t, s, "o-retry", 1)
		failNext.Store(true)
		if st := w.Drain(ctx); st[models.OutcomeRetry] != 1 {
			t.Fatalf("drain = %v, want 1 RETRY", st)
		}
		modelstest.PlaceAndClose(t, s, "o-crash", 1)
		crashNext.Store(true)
		if st := w.Drain(ctx); st[metrics.OutcomeCrashed] != 1 {
			t.Fatalf("drain = %v, want 1 CRASHED", st)
		}
		got := gather(t, m.Registry())
		wantValues(t, got, map[string]float64{
			`unhold_release_total{outcome="DONE",resource="inventory"}`:              1,
			`unhold_release_total{outcome="RETRY",resource="inventory"}`:             1,
			`unhold_release_total{outcome="CRASHED",resource="inventory"}`:           1,
			`unhold_release_total{outcome="MANUAL",resource="inventory"}`:            0,
			`unhold_release_total{outcome="DUPLICATE",resource="inventory"}`:         0,
			`unhold_release_total{outcome="DONE",resource="coupon"}`:                 0,
			`unhold_release_failures_total{class="CONNECTION",resource="inventory"}`: 1,
			`unhold_release_failures_total{class="CRASHED",resource="inventory"}`:    1,
			`unhold_release_duplicates_total{resource="inventory"}`:                  0,
			`unhold_close_to_release_seconds_count{resource="inventory"}`:            1,
			`unhold_close_to_release_seconds_sum{resource="inventory"}`:              1.5,
			`unhold_close_to_release_seconds_bucket{le="1",resource="inventory"}`:    0,
			`unhold_close_to_release_seconds_bucket{le="2",resource="inventory"}`:    1,
			`unhold_close_to_release_seconds_bucket{le="+Inf",resource="inventory"}`: 1,
			`unhold_close_to_release_seconds_count{resource="coupon"}`:               0,
			// The crash is a failure like the other: both tasks are RETRY
			// and wait for their next try in 1 s.
			`unhold_release_backlog{}`:                      0,
			`unhold_release_oldest_due_seconds{}`:           0,
			`unhold_release_retry_tasks{}`:                  2,
			`unhold_release_manual_tasks{}`:                 0,
			`unhold_recon_open_diffs{resource="inventory"}`: 0,
			`unhold_db_up{}`:                                1,
			// PostgreSQL: 20 for reads beside the write turns.
			`go_sql_max_open_connections{db_name="write"}`: map[models.Dialect]float64{models.SQLite: 1, models.Postgres: 20 + models.DefaultWriters}[d],
		})
		wantAbsent(t, got,
			`unhold_release_total{outcome="LEASE_SHORT",resource="inventory"}`,
			`unhold_release_total{outcome="LEASE_LOST",resource="inventory"}`,
			`unhold_release_total{outcome="ERROR",resource="inventory"}`,
			`unhold_release_failures_total{class="LOCKED_SHORT",resource="inventory"}`)
	})
}

// Before anything happens, every resource, a declared one too, has its
// release, duplicate, latency and open-diff series at 0, so rate() and
// alerts see a 0 rather than nothing; failures and HTTP series come with
// their first event.
func TestMetricsStartAtZero(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{Declared: []models.DeclaredType{{Type: "gift_wrap"}}})
	got := gather(t, metrics.New(s, modelstest.QuietLog()).Registry())
	types := s.Types()
	if !slices.Contains(types, "gift_wrap") {
		t.Fatalf("types %v lack the declared gift_wrap", types)
	}
	for _, rt := range types {
		want := map[string]float64{}
		for _, k := range []string{
			`unhold_release_total{outcome="DONE",resource="%s"}`,
			`unhold_release_total{outcome="DUPLICATE",resource="%s"}`,
			`unhold_release_total{outcome="RETRY",resource="%s"}`,
			`unhold_release_total{outcome="MANUAL",resource="%s"}`,
			`unhold_release_duplicates_total{resource="%s"}`,
			`unhold_close_to_release_seconds_count{resource="%s"}`,
			`unhold_recon_open_diffs{resource="%s"}`,
		} {
			want[fmt.Sprintf(k, rt)] = 0
		}
		wantValues(t, got, want)
	}
	for k := range got {
		if strings.HasPrefix(k, "unhold_release_failures_total") || strings.HasPrefix(k, "unhold_http_") {
			t.Errorf("%s exists before anything happened", k)
		}
	}
}

func placeAndCloseSKU(t *testing.T, s *models.Store, no, sku string) {
	t.Helper()
	ctx := context.Background()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
}

// The outbox gauges come from the database: a new Metrics on the same
// database (a restarted process) reports the same backlog, oldest age,
// RETRY and MANUAL counts at once, while its counters start at zero.
func TestMetricsGaugesSurviveRestart(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		var failNext atomic.Bool
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && failNext.Swap(false) {
				return &models.TransientError{Class: models.ClassDBBusy, Err: errors.New("database is locked")}
			}
			return nil
		}})
		ctx := context.Background()
		for sku, delay := range map[string]int64{"sku-1": 0, "sku-short": 0, "sku-late": 60} {
			if _, err := s.SetStock(ctx, sku, 10, delay, "test"); err != nil {
				t.Fatal(err)
			}
		}
		before := metrics.New(s, modelstest.QuietLog())
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog()).WithMetrics(before)

		placeAndCloseSKU(t, s, "o-manual", "sku-short")
		if err := s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-short'").Error; err != nil {
			t.Fatal(err)
		}
		placeAndCloseSKU(t, s, "o-retry", "sku-1")
		failNext.Store(true)
		if st := w.Drain(ctx); st[models.OutcomeManual] != 1 || st[models.OutcomeRetry] != 1 {
			t.Fatalf("drain = %v, want 1 MANUAL and 1 RETRY", st)
		}
		// No worker runs for 11 minutes; then one order closes, and one
		// whose SKU delays its release by a minute, so it is not due yet.
		clock.Advance(11 * time.Minute)
		placeAndCloseSKU(t, s, "o-new", "sku-1")
		placeAndCloseSKU(t, s, "o-delayed", "sku-late")

		gauges := map[string]float64{
			`unhold_release_backlog{}`:            2,
			`unhold_release_oldest_due_seconds{}`: (11*time.Minute - time.Second).Seconds(),
			`unhold_release_retry_tasks{}`:        1,
			`unhold_release_manual_tasks{}`:       1,
			`unhold_db_up{}`:                      1,
		}
		old := gather(t, before.Registry())
		wantValues(t, old, gauges)
		wantValues(t, old, map[string]float64{
			`unhold_release_total{outcome="MANUAL",resource="inventory"}`:              1,
			`unhold_release_failures_total{class="LOCKED_SHORT",resource="inventory"}`: 1,
			`unhold_release_failures_total{class="DB_BUSY",resource="inventory"}`:      1,
		})

		restarted := gather(t, metrics.New(s, modelstest.QuietLog()).Registry())
		wantValues(t, restarted, gauges)
		wantValues(t, restarted, map[string]float64{
			`unhold_release_total{outcome="MANUAL",resource="inventory"}`: 0,
			`unhold_release_total{outcome="RETRY",resource="inventory"}`:  0,
		})
		wantAbsent(t, restarted, `unhold_release_failures_total{class="LOCKED_SHORT",resource="inventory"}`)
	})
}

// When the database cannot be read, the scrape still answers: the outbox
// gauges are left out rather than reported as 0, and unhold_db_up says why.
func TestMetricsDatabaseDown(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	var logs bytes.Buffer
	m := metrics.New(s, slogTo(&logs))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := gather(t, m.Registry())
	wantValues(t, got, map[string]float64{`unhold_db_up{}`: 0})
	wantAbsent(t, got, `unhold_release_backlog{}`, `unhold_release_oldest_due_seconds{}`,
		`unhold_release_manual_tasks{}`, `unhold_recon_open_diffs{resource="inventory"}`)
	if _, ok := got[`go_goroutines{}`]; !ok {
		t.Error("the Go runtime metrics are missing")
	}
	if !strings.Contains(logs.String(), "metrics scrape could not read the database") {
		t.Errorf("the failed read was not logged: %q", logs.String())
	}
}

// ObserveRelease counts what the worker itself decides (an error from the
// store, a turn skipped for a short lease) and never a negative latency.
func TestObserveReleaseOutcomes(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	m := metrics.New(s, modelstest.QuietLog())
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	task := func(rt models.ResourceType, created time.Time) models.ReleaseTask {
		return models.ReleaseTask{ResourceType: rt, CreatedAt: created, NextAt: created}
	}
	m.ObserveRelease(task(models.ResBalance, now), metrics.OutcomeError, "", now)
	m.ObserveRelease(task(models.ResBalance, now), metrics.OutcomeError, models.ClassTimeout, now)
	m.ObserveRelease(task(models.ResBalance, now), metrics.OutcomeLeaseShort, "", now)
	m.ObserveRelease(task(models.ResBalance, now), models.OutcomeLeaseLost, "", now)
	m.ObserveRelease(task(models.ResPoints, now.Add(time.Second)), models.OutcomeDone, "", now)
	m.ObserveRelease(task(models.ResSlot, now.Add(-2*time.Hour)), models.OutcomeDone, "", now)
	// Balance: released 300 ms after it was due, a minute after its close
	// (a release delay); coupon: retried, 40 s after its close; a rerun's
	// release is not latency.
	delayed := task(models.ResBalance, now.Add(-time.Minute))
	delayed.NextAt = now.Add(-300 * time.Millisecond)
	m.ObserveRelease(delayed, models.OutcomeDone, "", now)
	retried := task(models.ResCoupon, now.Add(-40*time.Second))
	retried.NextAt, retried.Failures = now.Add(-time.Second), 3
	m.ObserveRelease(retried, models.OutcomeDone, "", now)
	rerun := task(models.ResCoupon, now.Add(-time.Hour))
	rerun.Trigger = models.TriggerRerun
	m.ObserveRelease(rerun, models.OutcomeDone, "", now)
	m.ObserveRelease(task(models.ResQuota, now), models.OutcomeManual, models.ClassRetryExhausted, now)
	m.ObserveRelease(task(models.ResQuota, now), models.OutcomeDuplicate, "", now)
	wantValues(t, gather(t, m.Registry()), map[string]float64{
		`unhold_release_total{outcome="ERROR",resource="balance"}`:                2,
		`unhold_release_total{outcome="LEASE_SHORT",resource="balance"}`:          1,
		`unhold_release_total{outcome="LEASE_LOST",resource="balance"}`:           1,
		`unhold_release_failures_total{class="UNKNOWN",resource="balance"}`:       1,
		`unhold_release_failures_total{class="TIMEOUT",resource="balance"}`:       1,
		`unhold_release_failures_total{class="RETRY_EXHAUSTED",resource="quota"}`: 1,
		`unhold_release_duplicates_total{resource="quota"}`:                       1,
		`unhold_release_total{outcome="DUPLICATE",resource="quota"}`:              1,
		`unhold_close_to_release_seconds_count{resource="quota"}`:                 0,
		// A task created after "now" (clocks apart) counts as 0 s.
		`unhold_close_to_release_seconds_sum{resource="points"}`:               0,
		`unhold_close_to_release_seconds_bucket{le="0.005",resource="points"}`: 1,
		`unhold_close_to_release_seconds_sum{resource="slot"}`:                 7200,
		`unhold_close_to_release_seconds_bucket{le="3600",resource="slot"}`:    0,
		`unhold_close_to_release_seconds_bucket{le="+Inf",resource="slot"}`:    1,
		`unhold_close_to_release_seconds_count{resource="balance"}`:            1,
		`unhold_close_to_release_seconds_bucket{le="0.25",resource="balance"}`: 0,
		`unhold_close_to_release_seconds_bucket{le="0.5",resource="balance"}`:  1,
		`unhold_close_to_release_seconds_count{resource="coupon"}`:             1,
		`unhold_close_to_release_seconds_sum{resource="coupon"}`:               40,
	})
	// A nil *Metrics records nothing and does not panic.
	var off *metrics.Metrics
	off.ObserveRelease(task(models.ResSlot, now), models.OutcomeDone, "", now)
	off.ObserveHTTP("GET", "/", 200, time.Millisecond)
}

// The close-to-release histogram is fine below a second, has bounds at the
// 2 s target and the 10 s alert, and keeps the tail to an hour.
func TestCloseToReleaseBuckets(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{})
	m := metrics.New(s, modelstest.QuietLog())
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	for _, f := range fams {
		if f.GetName() != "unhold_close_to_release_seconds" {
			continue
		}
		for _, h := range f.GetMetric() {
			var got []float64
			for _, b := range h.GetHistogram().GetBucket() {
				got = append(got, b.GetUpperBound())
			}
			if !slices.Equal(got, want) {
				t.Errorf("buckets %v, want %v", got, want)
			}
		}
		return
	}
	t.Error("unhold_close_to_release_seconds is missing")
}

// The alert rules file parses, every alert has a severity and a Chinese and
// English summary and description, the alerts the issue asks for are
// there, and every unhold metric a rule reads is one unhold exposes. When
// promtool is installed, it checks the rules and runs their unit tests.
func TestAlertRules(t *testing.T) {
	t.Parallel()
	const dir = "../deploy/prometheus"
	raw, err := os.ReadFile(dir + "/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}

	// A remote type, so that the gauges of what reconciliation skipped are
	// exposed.
	s := giftCardStore(t, models.SQLite, nil, remotetest.New(remotetest.Options{}))
	// A subscription, so that the webhook gauges are exposed.
	if _, _, err := s.CreateWebhook(context.Background(), models.NewWebhook{URL: "http://127.0.0.1:9/hook"}, "admin"); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(s, modelstest.QuietLog())
	m.ObserveRelease(models.ReleaseTask{ResourceType: models.ResInventory}, models.OutcomeRetry, models.ClassDBBusy, time.Now())
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, f := range fams {
		exposed[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				exposed[f.GetName()+suffix] = true
			}
		}
	}

	han := func(s string) bool {
		return strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) }) >= 0
	}
	template := regexp.MustCompile(`\{\{.*?\}\}`)
	english := func(s string) bool {
		return len(regexp.MustCompile(`\b[A-Za-z]{2,}\b`).FindAllString(template.ReplaceAllString(s, ""), -1)) >= 3
	}
	metricName := regexp.MustCompile(`\bunhold_[a-z_]+`)
	alerts := map[string]string{}
	for _, g := range file.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %q has no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" {
				t.Errorf("group %q: a rule without an alert name or expression: %+v", g.Name, r)
				continue
			}
			if _, dup := alerts[r.Alert]; dup {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			alerts[r.Alert] = r.Expr
			if sev := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, sev) {
				t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, sev)
			}
			for _, a := range []string{"summary", "description"} {
				if text := r.Annotations[a]; !han(text) || !english(text) {
					t.Errorf("%s: %s %q is not in both Chinese and English", r.Alert, a, text)
				}
			}
			for _, name := range metricName.FindAllString(r.Expr, -1) {
				if !exposed[name] {
					t.Errorf("%s reads %s, which unhold does not expose", r.Alert, name)
				}
			}
		}
	}
	for name, reads := range map[string]string{
		"UnholdReleaseStalled":         "unhold_release_oldest_due_seconds",
		"UnholdManualTasksRising":      "unhold_release_manual_tasks",
		"UnholdManualPastSLA":          "unhold_manual_items",
		"UnholdReconOpenDiffs":         "unhold_recon_open_diffs",
		"UnholdReconKeysUnchecked":     "unhold_recon_unchecked_since_timestamp_seconds",
		"UnholdDuplicateReleaseSpike":  "unhold_release_duplicates_total",
		"UnholdReleaseFailureRateHigh": "unhold_release_failures_total",
		"UnholdReleaseLatencyHigh":     "unhold_close_to_release_seconds_bucket",
		"UnholdReleaseLatencyCritical": "unhold_close_to_release_seconds_bucket",
		"UnholdWebhookBacklog":         "unhold_webhook_oldest_age_seconds",
		"UnholdWebhookPaused":          "unhold_webhook_paused",
	} {
		if expr, ok := alerts[name]; !ok || !strings.Contains(expr, reads) {
			t.Errorf("alert %s reading %s is missing (have %q)", name, reads, expr)
		}
	}
	if !strings.Contains(alerts["UnholdReleaseStalled"], "> 600") {
		t.Errorf("UnholdReleaseStalled = %q, want it past 10 minutes (600 s)", alerts["UnholdReleaseStalled"])
	}

	for name, over := range map[string]string{"UnholdReleaseLatencyHigh": "> 2", "UnholdReleaseLatencyCritical": "> 10"} {
		if e := alerts[name]; !strings.Contains(e, "histogram_quantile(0.99, sum by (le) (rate(") || !strings.HasSuffix(e, over) {
			t.Errorf("%s = %q, want the p99 over all instances %s s", name, e, over)
		}
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed: rules parsed as YAML only, their unit tests not run")
		return
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

func slogTo(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
