// Package metrics is unhold's Prometheus metrics: the release worker's
// outcomes and latency, the HTTP server's requests, the outbox and
// reconciliation gauges read from the database at scrape time, the
// database pools, and the Go runtime. jobs records releases in it, web
// records requests and serves it.
package metrics

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"unhold/models"
)

// Outcomes of one claimed task that are the worker's, not the store's, as
// ObserveRelease records them: the try panicked, the store returned an
// error, or the lease was too short to start it.
const (
	OutcomeCrashed    = "CRASHED"
	OutcomeError      = "ERROR"
	OutcomeLeaseShort = "LEASE_SHORT"
)

// scrapeTimeout bounds the database reads of one scrape.
const scrapeTimeout = 5 * time.Second

// scrapeMaxInFlight bounds concurrent scrapes, each of which reads the
// database, so a flood of requests to /metrics cannot load it.
const scrapeMaxInFlight = 4

// Histogram buckets. Close to release has the overview's buckets
// (models.LatencyBuckets: fine below 1 s, bounds at the 2 s target and the
// 10 s alert, then the retry schedule and a worker down for an hour), so
// Prometheus and the overview estimate quantiles alike; HTTP latency has a
// bucket at the dashboard's 200 ms budget.
var (
	closeToReleaseBuckets = seconds(models.LatencyBuckets)
	httpDurationBuckets   = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 5, 10}
)

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// Metrics is unhold's Prometheus metrics on a registry of its own (never the
// global default one, so tests and several servers in one process do not
// share counters). Counters and histograms are this process's: they start at
// zero with it. The outbox and reconciliation gauges are read from the
// database at scrape time, so they are right after a restart and the same on
// every instance: aggregate those with max, not sum.
//
// ObserveRelease and ObserveHTTP on a nil *Metrics record nothing, so a
// worker or server may run without metrics.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	releases       *prometheus.CounterVec
	failures       *prometheus.CounterVec
	duplicates     *prometheus.CounterVec
	closeToRelease *prometheus.HistogramVec
	httpRequests   *prometheus.CounterVec
	httpDuration   *prometheus.HistogramVec
	webhooks       *prometheus.CounterVec
}

// scrapeSource is what the scrape-time gauges read; *models.Store is one.
type scrapeSource interface {
	ReleaseQueue(ctx context.Context) (models.ReleaseQueue, error)
	OpenDiffCounts(ctx context.Context) (map[models.ResourceType]int64, error)
	LastFinishedCoverage(ctx context.Context) ([]models.ReconCoverage, error)
	UncheckedSince(ctx context.Context) (map[models.ResourceType]time.Time, error)
	Types() []models.ResourceType
	RemoteTypes() []models.ResourceType
	ManualAgeing(ctx context.Context) (models.ManualAgeing, error)
	Webhooks(ctx context.Context) ([]models.WebhookSubscription, error)
	Now() time.Time
}

// New registers every unhold metric, the Go runtime and process
// collectors, and the database pools' statistics. log (nil: discarded)
// receives scrape errors.
func New(s *models.Store, log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		releases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unhold_release_total",
			Help: "Claimed release tasks by how their turn ended: DONE, DUPLICATE (already in the ledger), RETRY, MANUAL, LEASE_LOST, CRASHED, ERROR, LEASE_SHORT (not tried: too little lease left).",
		}, []string{"resource", "outcome"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unhold_release_failures_total",
			Help: "Release tries that failed (RETRY, MANUAL, CRASHED, ERROR) by error class.",
		}, []string{"resource", "class"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unhold_release_duplicates_total",
			Help: "Releases the ledger's unique key stopped because they were already applied; a spike means closes are triggered repeatedly.",
		}, []string{"resource"}),
		closeToRelease: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "unhold_close_to_release_seconds",
			Help:    "Time from a release task's close to its release (DONE), as the overview counts it: from when the task was due if it was released on its first try (a SKU's release delay is not latency), from the close if it was retried; a rerun's release is not observed.",
			Buckets: closeToReleaseBuckets,
		}, []string{"resource"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unhold_http_requests_total",
			Help: "HTTP requests by method, route template and status code.",
		}, []string{"method", "route", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "unhold_http_request_duration_seconds",
			Help:    "HTTP request latency by method and route template, error pages included.",
			Buckets: httpDurationBuckets,
		}, []string{"method", "route"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "unhold_webhook_deliveries_total",
			Help: "Webhook sends by result: delivered (2xx), retry (no answer, 408, 429, 5xx: sent again later), failed (another status: not retried).",
		}, []string{"result"}),
	}
	for _, r := range []string{models.DeliveryOutcomeDelivered, models.DeliveryOutcomeRetry, models.DeliveryOutcomeFailed} {
		m.webhooks.WithLabelValues(r)
	}
	m.reg.MustRegister(m.releases, m.failures, m.duplicates, m.closeToRelease, m.httpRequests, m.httpDuration, m.webhooks,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "unhold_close_groups_total",
			Help: "Write transactions that committed a group of closes (group commit; -close-group) in this process.",
		}, func() float64 { g, _ := s.CloseGroupStats(); return float64(g) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "unhold_closes_grouped_total",
			Help: "Closes answered by those group transactions; divided by unhold_close_groups_total, the closes a commit carried.",
		}, func() float64 { _, c := s.CloseGroupStats(); return float64(c) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "unhold_write_groups_total",
			Help: "Write transactions that committed a group of placements and payments (SQLite; -close-group) in this process.",
		}, func() float64 { g, _ := s.WriteGroupStats(); return float64(g) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "unhold_writes_grouped_total",
			Help: "Placements and payments answered by those group transactions.",
		}, func() float64 { _, w := s.WriteGroupStats(); return float64(w) }),
		newQueueCollector(s, scrapeTimeout, log),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := registerPools(m.reg, s); err != nil {
		log.Warn("database pool metrics are off", slog.Any("err", err))
	}
	// Series for every resource type from the start, declared ones too,
	// so a rate() over a counter that has not moved yet is 0, not absent.
	for _, t := range s.Types() {
		m.duplicates.WithLabelValues(string(t))
		m.closeToRelease.WithLabelValues(string(t))
		for _, o := range []string{models.OutcomeDone, models.OutcomeDuplicate, models.OutcomeRetry, models.OutcomeManual} {
			m.releases.WithLabelValues(string(t), o)
		}
	}
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slogPrinter{log},
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.reg,
		MaxRequestsInFlight: scrapeMaxInFlight,
	})
	return m
}

// registerPools adds the database/sql statistics of the store's pools
// (go_sql_* by db_name): the writer, and on SQLite the read pool.
func registerPools(reg *prometheus.Registry, s *models.Store) error {
	w, err := s.W.DB()
	if err != nil {
		return err
	}
	pools := map[string]*sql.DB{"write": w}
	r, err := s.R.DB()
	if err != nil {
		return err
	}
	if r != w {
		pools["read"] = r
	}
	for name, db := range pools {
		if err := reg.Register(collectors.NewDBStatsCollector(db, name)); err != nil {
			return err
		}
	}
	return nil
}

// Registry is the registry every unhold metric is on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// ObserveRelease records how one claimed task's turn ended: outcome is the
// store's (DONE, DUPLICATE, RETRY, MANUAL, LEASE_LOST) or the worker's
// (CRASHED, ERROR, LEASE_SHORT), class the failure's class when there is
// one, now the time the turn ended. A release's latency counts from
// t.LatencyStart, the overview's rule, so the alerts and the overview
// measure the same thing.
func (m *Metrics) ObserveRelease(t models.ReleaseTask, outcome string, class models.ErrorClass, now time.Time) {
	if m == nil {
		return
	}
	res := string(t.ResourceType)
	m.releases.WithLabelValues(res, outcome).Inc()
	switch outcome {
	case models.OutcomeDone:
		if start, ok := t.LatencyStart(); ok {
			m.closeToRelease.WithLabelValues(res).Observe(max(now.Sub(start).Seconds(), 0))
		}
	case models.OutcomeDuplicate:
		m.duplicates.WithLabelValues(res).Inc()
	case OutcomeCrashed:
		m.failures.WithLabelValues(res, string(models.ClassCrashed)).Inc()
	case models.OutcomeRetry, models.OutcomeManual, OutcomeError:
		if class == "" {
			class = models.ClassUnknown
		}
		m.failures.WithLabelValues(res, string(class)).Inc()
	}
}

// ObserveHTTP records one answered request. route must be the route
// template (/orders/:order_no), never the raw path, so the number of series
// stays bounded.
func (m *Metrics) ObserveHTTP(method, route string, code int, d time.Duration) {
	if m == nil {
		return
	}
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// ObserveWebhook counts one webhook send by its recorded outcome
// (models.DeliveryOutcome*); a send whose lease was lost is not counted.
func (m *Metrics) ObserveWebhook(outcome string) {
	if m == nil || outcome == models.DeliveryOutcomeLost {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
}

// queueCollector reads the outbox and reconciliation gauges from the
// database on every scrape.
type queueCollector struct {
	src     scrapeSource
	timeout time.Duration
	log     *slog.Logger

	up, backlog, oldest, retry, manual, openDiffs *prometheus.Desc
	skipped, uncheckedSince                       *prometheus.Desc
	manualItems, manualOldest                     *prometheus.Desc
	webhookBacklog, webhookOldest, webhookPaused  *prometheus.Desc
}

func newQueueCollector(src scrapeSource, timeout time.Duration, log *slog.Logger) *queueCollector {
	return &queueCollector{
		src: src, timeout: timeout, log: log,
		up: prometheus.NewDesc("unhold_db_up",
			"1 when this scrape read the outbox and reconciliation gauges from the database, 0 when a read failed.", nil, nil),
		backlog: prometheus.NewDesc("unhold_release_backlog",
			"Release tasks due now: PENDING or RETRY with next_at come.", nil, nil),
		oldest: prometheus.NewDesc("unhold_release_oldest_due_seconds",
			"How long the oldest due release task has waited past its next_at; over 600 means no worker is draining.", nil, nil),
		retry: prometheus.NewDesc("unhold_release_retry_tasks",
			"Release tasks in RETRY, due or waiting for their next try.", nil, nil),
		manual: prometheus.NewDesc("unhold_release_manual_tasks",
			"Release tasks in MANUAL, waiting for a person.", nil, nil),
		openDiffs: prometheus.NewDesc("unhold_recon_open_diffs",
			"Reconciliation diff tickets not yet resolved (OPEN or ACKED), by resource; UNCHECKED tickets are not counted.", []string{"resource"}, nil),
		skipped: prometheus.NewDesc("unhold_recon_skipped_keys",
			"Keys of a remote type the last finished reconciliation run left unchecked, by reason (UNKNOWN_OUTCOME, NO_ANSWER, REFUSED, OTHER_KEY, UNPARSEABLE).",
			[]string{"resource", "reason"}, nil),
		uncheckedSince: prometheus.NewDesc("unhold_recon_unchecked_since_timestamp_seconds",
			"When the oldest current streak of reconciliation runs that left a key of a remote type unchecked began (Unix seconds); 0 when every key was compared by the last run that met it.",
			[]string{"resource"}, nil),
		manualItems: prometheus.NewDesc("unhold_manual_items",
			"Items waiting for a person by queue (tasks: MANUAL release tasks, aged since they went MANUAL; tickets: unresolved reconciliation tickets, aged since they were opened) and age bucket: lt_1h (under an hour and within the SLA), lt_sla (an hour or more, within the SLA), past_sla (waited at least -manual-sla).",
			[]string{"queue", "age"}, nil),
		manualOldest: prometheus.NewDesc("unhold_manual_oldest_age_seconds",
			"How long the oldest item of the queue (tasks or tickets) has waited for a person; 0 when none waits.",
			[]string{"queue"}, nil),
		webhookBacklog: prometheus.NewDesc("unhold_webhook_backlog",
			"Webhook deliveries waiting to be sent (PENDING or RETRY), by subscription id.", []string{"subscription"}, nil),
		webhookOldest: prometheus.NewDesc("unhold_webhook_oldest_age_seconds",
			"How long the oldest waiting webhook delivery of the subscription has waited since it was made; 0 when none waits.",
			[]string{"subscription"}, nil),
		webhookPaused: prometheus.NewDesc("unhold_webhook_paused",
			"1 when the subscription is paused (by hand, or after its deliveries failed for 24 hours), else 0.", []string{"subscription"}, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.backlog, c.oldest, c.retry, c.manual, c.openDiffs, c.skipped, c.uncheckedSince,
		c.manualItems, c.manualOldest, c.webhookBacklog, c.webhookOldest, c.webhookPaused} {
		ch <- d
	}
}

// Collect leaves out a gauge it could not read rather than report it as 0,
// and says so in unhold_db_up.
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	var errs []error
	q, err := c.src.ReleaseQueue(ctx)
	if err == nil {
		ch <- prometheus.MustNewConstMetric(c.backlog, prometheus.GaugeValue, float64(q.Due))
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, q.OldestDueAge().Seconds())
		ch <- prometheus.MustNewConstMetric(c.retry, prometheus.GaugeValue, float64(q.Retry))
		ch <- prometheus.MustNewConstMetric(c.manual, prometheus.GaugeValue, float64(q.Manual))
	} else {
		errs = append(errs, err)
	}
	diffs, err := c.src.OpenDiffCounts(ctx)
	if err == nil {
		types := c.src.Types()
		for _, t := range types {
			ch <- prometheus.MustNewConstMetric(c.openDiffs, prometheus.GaugeValue, float64(diffs[t]), string(t))
		}
		for t, n := range diffs {
			if !slices.Contains(types, t) {
				// A check that is not one resource type (the ledger's, say).
				ch <- prometheus.MustNewConstMetric(c.openDiffs, prometheus.GaugeValue, float64(n), string(t))
			}
		}
	} else {
		errs = append(errs, fmt.Errorf("open diffs: %w", err))
	}
	if err := c.collectUnchecked(ctx, ch); err != nil {
		errs = append(errs, err)
	}
	if m, err := c.src.ManualAgeing(ctx); err == nil {
		for _, q := range []struct {
			name  string
			queue models.ManualQueue
		}{{"tasks", m.Tasks}, {"tickets", m.Tickets}} {
			for _, a := range models.ManualAges {
				ch <- prometheus.MustNewConstMetric(c.manualItems, prometheus.GaugeValue, float64(q.queue.N[a]), q.name, string(a))
			}
			ch <- prometheus.MustNewConstMetric(c.manualOldest, prometheus.GaugeValue, m.OldestAge(q.queue).Seconds(), q.name)
		}
	} else {
		errs = append(errs, err)
	}
	if err := c.collectWebhooks(ctx, ch); err != nil {
		errs = append(errs, err)
	}
	up := 1.0
	if err := errors.Join(errs...); err != nil {
		up = 0
		c.log.Error("metrics scrape could not read the database", slog.Any("err", err))
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
}

// collectUnchecked reports, per remote type, the keys the last finished
// run skipped by reason, and since when keys have gone unchecked.
func (c *queueCollector) collectUnchecked(ctx context.Context, ch chan<- prometheus.Metric) error {
	cov, err := c.src.LastFinishedCoverage(ctx)
	if err != nil {
		return err
	}
	since, err := c.src.UncheckedSince(ctx)
	if err != nil {
		return err
	}
	for _, t := range c.src.RemoteTypes() {
		var tc models.ReconCoverage
		for _, x := range cov {
			if x.ResourceType == t {
				tc = x
			}
		}
		for _, r := range models.SkipReasons {
			ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.GaugeValue, float64(tc.SkippedBy(r)), string(t), string(r))
		}
		var at float64
		if s, ok := since[t]; ok {
			at = float64(s.Unix())
		}
		ch <- prometheus.MustNewConstMetric(c.uncheckedSince, prometheus.GaugeValue, at, string(t))
	}
	return nil
}

// collectWebhooks reports each subscription's backlog, oldest waiting
// delivery and whether it is paused.
func (c *queueCollector) collectWebhooks(ctx context.Context, ch chan<- prometheus.Metric) error {
	subs, err := c.src.Webhooks(ctx)
	if err != nil {
		return err
	}
	now := c.src.Now()
	for _, w := range subs {
		id := strconv.FormatInt(w.ID, 10)
		var age, paused float64
		if w.Oldest != nil {
			age = max(now.Sub(*w.Oldest).Seconds(), 0)
		}
		if w.Paused() {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(c.webhookBacklog, prometheus.GaugeValue, float64(w.Backlog), id)
		ch <- prometheus.MustNewConstMetric(c.webhookOldest, prometheus.GaugeValue, age, id)
		ch <- prometheus.MustNewConstMetric(c.webhookPaused, prometheus.GaugeValue, paused, id)
	}
	return nil
}

// slogPrinter lets promhttp log through slog.
type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) {
	p.log.Error("serve metrics", slog.String("err", fmt.Sprint(v...)))
}
