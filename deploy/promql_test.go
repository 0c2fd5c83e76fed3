// Package deploy_test checks the deploy kit against the code it deploys:
// the Grafana dashboard's and the alert rules' PromQL against the metrics
// the server exports, the systemd units with systemd-analyze, the binary
// built as the Dockerfile builds it, and the compose file and Prometheus
// configuration against the repository and the unhold subcommands.
package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"unhold/jobs"
	"unhold/metrics"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
)

// exported is what a server's /metrics serves: each metric name with the
// names of its labels. A histogram's and a summary's series are there under
// their own names (_bucket with le, _sum, _count; quantile).
type exported map[string]map[string]bool

// targetLabels are the labels Prometheus adds to every series it scrapes.
var targetLabels = []string{"instance", "job"}

// serverMetrics drives a small shop on SQLite through place, close,
// release (one release done, one failed and retried), an HTTP request and
// a reconciliation, with a remote type declared so the reconciliation
// gauges of remote types are there too, then scrapes the real /metrics
// handler and reads what it served.
func serverMetrics(t *testing.T) exported {
	t.Helper()
	var failNext atomic.Bool
	client, err := remote.New(remote.Config{Type: "giftcard", URL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	s := modelstest.Open(t, models.SQLite, models.Options{
		Logger: modelstest.QuietLog(),
		Remote: []models.RemoteType{{Type: "giftcard", Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}},
		Faults: func(point string, _ *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && failNext.Swap(false) {
				return &models.TransientError{Class: models.ClassConnection, Err: errors.New("connection reset")}
			}
			return nil
		},
	})
	ctx := context.Background()
	if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
		t.Fatal(err)
	}
	m := metrics.New(s, modelstest.QuietLog())
	w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog()).WithMetrics(m)
	modelstest.PlaceAndClose(t, s, "o-done", 1)
	if st := w.Drain(ctx); st[models.OutcomeDone] != 1 {
		t.Fatalf("drain = %v, want 1 DONE", st)
	}
	modelstest.PlaceAndClose(t, s, "o-retry", 1)
	failNext.Store(true)
	if st := w.Drain(ctx); st[models.OutcomeRetry] != 1 {
		t.Fatalf("drain = %v, want 1 RETRY", st)
	}
	m.ObserveHTTP(http.MethodGet, "/orders/:order_no", http.StatusOK, 3*time.Millisecond)
	if _, err := s.RunReconciliation(ctx, models.ReconByCLI, "test"); err != nil {
		t.Fatal(err)
	}
	// A subscription, so that the per-subscription webhook gauges have
	// samples.
	if _, _, err := s.CreateWebhook(ctx, models.NewWebhook{URL: "http://127.0.0.1:9/hook"}, "test"); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	return parseExposition(t, string(body))
}

// parseExposition reads a scrape in the text format into what it exports.
func parseExposition(t *testing.T, text string) exported {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	ex := exported{}
	add := func(name string, names []string) {
		if ex[name] == nil {
			ex[name] = map[string]bool{}
		}
		for _, l := range names {
			ex[name][l] = true
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var names []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name+"_bucket", append(slices.Clone(names), "le"))
				add(name+"_sum", names)
				add(name+"_count", names)
			case dto.MetricType_SUMMARY:
				add(name, append(slices.Clone(names), "quantile"))
				add(name+"_sum", names)
				add(name+"_count", names)
			default:
				add(name, names)
			}
		}
	}
	return ex
}

// grafanaRange stands for Grafana's interval variables, which are
// replaced by a duration before the query is sent.
var grafanaRange = regexp.MustCompile(`\$\{?__(rate_interval|interval|range)\}?`)

// checkGrafanaExpr checks a panel's PromQL, Grafana's interval variables
// replaced by a duration. Other variables may stand only inside strings
// (a matcher's value), where they do not change the query's shape.
func checkGrafanaExpr(expr string, ex exported) []string {
	return checkPromQL(grafanaRange.ReplaceAllString(expr, "5m"), ex)
}

// labelValues is Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// checkVariableQuery checks a template variable's query: label_values of a
// selector and one of its labels, or plain PromQL.
func checkVariableQuery(q string, ex exported) []string {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return checkGrafanaExpr(q, ex)
	}
	problems := checkGrafanaExpr(m[1], ex)
	if len(problems) > 0 {
		return problems
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaRange.ReplaceAllString(m[1], "5m"))
	if err != nil {
		return []string{err.Error()}
	}
	if !labelsOf(expr, ex)[m[2]] {
		return []string{fmt.Sprintf("label_values reads label %q, which %s does not have", m[2], m[1])}
	}
	return nil
}

// checkPromQL parses expr and names every metric it reads that ex does not
// have, every label a selector matches that its metric does not have, and
// every label an aggregation (by, without), a vector match (on, ignoring,
// group_left, group_right) or label_replace/label_join reads that none of
// the metrics under it has.
func checkPromQL(expr string, ex exported) []string {
	root, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return []string{fmt.Sprintf("parse %q: %v", expr, err)}
	}
	var problems []string
	need := func(labels []string, under []parser.Node, what string) {
		have := map[string]bool{}
		for _, n := range under {
			for l := range labelsOf(n, ex) {
				have[l] = true
			}
		}
		for _, l := range labels {
			if !have[l] {
				problems = append(problems, fmt.Sprintf("%s reads label %q, which no metric under it has", what, l))
			}
		}
	}
	parser.Inspect(root, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			name := metricName(n)
			if name == "" {
				problems = append(problems, fmt.Sprintf("selector %s names no single metric", n))
				return nil
			}
			has, ok := ex[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("metric %q is not exported by the server", name))
				return nil
			}
			for _, m := range n.LabelMatchers {
				if m.Name != model.MetricNameLabel && !has[m.Name] && !slices.Contains(targetLabels, m.Name) {
					problems = append(problems, fmt.Sprintf("metric %q has no label %q", name, m.Name))
				}
			}
		case *parser.AggregateExpr:
			need(n.Grouping, []parser.Node{n.Expr}, "aggregation "+n.Op.String())
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				need(append(slices.Clone(n.VectorMatching.MatchingLabels), n.VectorMatching.Include...),
					[]parser.Node{n.LHS, n.RHS}, "vector matching")
			}
		case *parser.Call:
			switch n.Func.Name {
			case "label_replace": // (v, dst, replacement, src, regex)
				need(stringArgs(n.Args[3:4]), []parser.Node{n.Args[0]}, n.Func.Name)
			case "label_join": // (v, dst, separator, src...)
				need(stringArgs(n.Args[3:]), []parser.Node{n.Args[0]}, n.Func.Name)
			}
		}
		return nil
	})
	return problems
}

// metricName is the name a selector reads, from its name or its __name__
// equality matcher; "" when it matches names by pattern, which the check
// refuses.
func metricName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

func stringArgs(args parser.Expressions) []string {
	var out []string
	for _, a := range args {
		if s, ok := a.(*parser.StringLiteral); ok {
			out = append(out, s.Val)
		}
	}
	return out
}

// labelsOf is every label a series read under n may have: those of each
// metric a selector under it reads, and the target labels.
func labelsOf(n parser.Node, ex exported) map[string]bool {
	out := map[string]bool{}
	for _, l := range targetLabels {
		out[l] = true
	}
	parser.Inspect(n, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for l := range ex[metricName(vs)] {
				out[l] = true
			}
		}
		return nil
	})
	return out
}

// The checker itself: what it must accept (histogram and summary series,
// target labels, offsets, subqueries, strings, numbers, vector matching)
// and every way of naming a metric or a label the server does not export.
// Its exported set is a small fixed one here; the dashboard's test reads
// the server's.
func TestCheckPromQL(t *testing.T) {
	t.Parallel()
	ex := exported{
		"unhold_release_total":                   {"resource": true, "outcome": true},
		"unhold_release_failures_total":          {"resource": true, "class": true},
		"unhold_release_backlog":                 {},
		"unhold_close_to_release_seconds_bucket": {"resource": true, "le": true},
		"unhold_close_to_release_seconds_count":  {"resource": true},
		"go_gc_duration_seconds":                 {"quantile": true},
	}
	for _, c := range []struct {
		expr string
		want string // "" accepts; otherwise a problem containing this
	}{
		{`unhold_release_backlog`, ""},
		{`max(unhold_release_backlog{instance=~"$instance", job="unhold"}) > 600`, ""},
		{`histogram_quantile(0.99, sum by (le, resource) (rate(unhold_close_to_release_seconds_bucket[5m])))`, ""},
		{`sum without (outcome) (rate(unhold_release_total{outcome=~"DONE|RETRY"}[5m] offset 1h))`, ""},
		{`sum by (resource) (rate(unhold_release_failures_total[10m])) / on (resource) group_left sum by (resource) (rate(unhold_release_total[10m]))`, ""},
		{`max_over_time(unhold_release_backlog[1h:5m]) - ignoring (instance) unhold_release_backlog`, ""},
		{`go_gc_duration_seconds{quantile="0.5"}`, ""},
		{`{__name__="unhold_release_backlog"}`, ""},
		{`label_replace(unhold_release_total, "r", "$1", "resource", "(.*)")`, ""},
		{`time() - 3 * 1e3`, ""},

		{`unhold_release_backlogg`, `metric "unhold_release_backlogg" is not exported`},
		{`rate(unhold_release_totl[5m])`, `metric "unhold_release_totl" is not exported`},
		{`unhold_release_total_bucket`, `metric "unhold_release_total_bucket" is not exported`},
		{`unhold_close_to_release_seconds_sum`, `metric "unhold_close_to_release_seconds_sum" is not exported`},
		{`{__name__=~"unhold_.*"}`, `names no single metric`},
		{`unhold_release_total{klass="TIMEOUT"}`, `metric "unhold_release_total" has no label "klass"`},
		{`unhold_release_backlog{resource="inventory"}`, `metric "unhold_release_backlog" has no label "resource"`},
		{`unhold_release_total{class="TIMEOUT"}`, `metric "unhold_release_total" has no label "class"`},
		{`sum by (clas) (rate(unhold_release_failures_total[5m]))`, `aggregation sum reads label "clas"`},
		{`sum by (le) (rate(unhold_release_total[5m]))`, `aggregation sum reads label "le"`},
		{`topk without (class) (3, unhold_release_total)`, `aggregation topk reads label "class"`},
		{`unhold_release_total / on (resurce) unhold_release_failures_total`, `vector matching reads label "resurce"`},
		{`unhold_release_total * on (resource) group_left (klass) unhold_release_failures_total`, `vector matching reads label "klass"`},
		{`label_replace(unhold_release_backlog, "r", "$1", "resource", "(.*)")`, `label_replace reads label "resource"`},
		{`label_join(unhold_release_total, "x", ",", "resource", "clas")`, `label_join reads label "clas"`},
		{`sum by (resource) (rate(unhold_release_total[5m])`, `parse`},
		{`rate(unhold_release_total[${interval}])`, `parse`},
	} {
		problems := checkPromQL(c.expr, ex)
		switch {
		case c.want == "" && len(problems) > 0:
			t.Errorf("%s: %v, want accepted", c.expr, problems)
		case c.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }):
			t.Errorf("%s: %v, want a problem saying %q", c.expr, problems, c.want)
		}
	}
	for _, c := range []struct {
		query string
		want  string
	}{
		{`label_values(unhold_release_total, resource)`, ""},
		{`label_values(unhold_release_backlog, instance)`, ""},
		{`label_values(unhold_release_backlog, resource)`, `label "resource"`},
		{`label_values(unhold_release_backlogg, instance)`, `not exported`},
		{`rate(unhold_release_total[$__rate_interval])`, ""},
	} {
		problems := checkVariableQuery(c.query, ex)
		switch {
		case c.want == "" && len(problems) > 0:
			t.Errorf("%s: %v, want accepted", c.query, problems)
		case c.want != "" && !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, c.want) }):
			t.Errorf("%s: %v, want a problem saying %q", c.query, problems, c.want)
		}
	}
}
