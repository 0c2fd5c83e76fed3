package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dashboardFile is the Grafana dashboard compose provisions.
const dashboardFile = "grafana/unhold.json"

// The dashboard reads only what the server exports: every PromQL
// expression in it (each target's expr, at any depth, and each template
// variable's query) names metrics the real /metrics handler serves after a
// small shop ran, and labels those metrics have. It uses the datasource
// variable, never a fixed datasource, and has a panel for each thing the
// issue names.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID           string `json:"uid"`
		Title         string `json:"title"`
		SchemaVersion int    `json:"schemaVersion"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []dashPanel `json:"panels"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if dash.UID == "" || dash.Title == "" || dash.SchemaVersion < 39 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want both set and a current Grafana's schema (39 or later)",
			dash.UID, dash.Title, dash.SchemaVersion)
	}

	ex := serverMetrics(t)
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	exprs := 0
	walkJSON(generic, "", func(path, key string, v any) {
		switch key {
		case "expr":
			expr, ok := v.(string)
			if !ok || strings.TrimSpace(expr) == "" {
				t.Errorf("%s: an empty or non-string expr", path)
				return
			}
			exprs++
			for _, p := range checkGrafanaExpr(expr, ex) {
				t.Errorf("%s: %s: %s", path, expr, p)
			}
		case "datasource":
			if !usesVariable(v) {
				t.Errorf("%s: datasource %v, want the ${datasource} variable", path, v)
			}
		}
	})

	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Type
		if v.Type != "query" {
			continue
		}
		q := v.Query
		if m, ok := q.(map[string]any); ok {
			q = m["query"]
		}
		s, _ := q.(string)
		for _, p := range checkVariableQuery(s, ex) {
			t.Errorf("variable %s: %s: %s", v.Name, s, p)
		}
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("template variables %v, want datasource of type datasource", vars)
	}

	// Each thing the issue asks the dashboard to show is read by a panel.
	var all []string
	for _, p := range flattenPanels(dash.Panels) {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			all = append(all, tg.Expr)
		}
	}
	for _, m := range []string{
		"unhold_release_backlog", "unhold_release_oldest_due_seconds",
		"unhold_close_to_release_seconds_bucket",
		"unhold_release_failures_total", "unhold_release_total", "unhold_release_duplicates_total",
		"unhold_manual_items", "unhold_manual_oldest_age_seconds",
		"unhold_recon_open_diffs", "unhold_recon_skipped_keys",
		"unhold_http_requests_total", "unhold_http_request_duration_seconds_bucket",
		"unhold_db_up", "go_sql_in_use_connections", "process_resident_memory_bytes",
		"unhold_webhook_backlog", "unhold_webhook_oldest_age_seconds", "unhold_webhook_deliveries_total", "unhold_webhook_paused",
	} {
		if !slices.ContainsFunc(all, func(e string) bool { return strings.Contains(e, m+"{") || strings.Contains(e, m+"[") }) {
			t.Errorf("no panel reads %s", m)
		}
	}
	if exprs != len(all) {
		t.Errorf("%d exprs in the file, %d in panels' targets: a query outside a panel", exprs, len(all))
	}
}

type dashPanel struct {
	Type    string `json:"type"`
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's
}

func flattenPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, flattenPanels(p.Panels)...)
	}
	return out
}

// walkJSON calls fn for every object member under v, with its path.
func walkJSON(v any, path string, fn func(path, key string, v any)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			fn(path+"."+k, k, x)
			walkJSON(x, path+"."+k, fn)
		}
	case []any:
		for i, x := range v {
			walkJSON(x, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}

// usesVariable tells whether a datasource reference is the ${datasource}
// variable: a string, or an object with that uid.
func usesVariable(v any) bool {
	switch v := v.(type) {
	case string:
		return v == "${datasource}"
	case map[string]any:
		return v["uid"] == "${datasource}"
	}
	return false
}

// The alert rules read only what the server exports, labels included:
// the same check as the dashboard's, over every rule's expression.
func TestAlertRulesReadExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	ex := serverMetrics(t)
	n := 0
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			n++
			for _, p := range checkPromQL(r.Expr, ex) {
				t.Errorf("%s: %s: %s", r.Alert, r.Expr, p)
			}
		}
	}
	if n == 0 {
		t.Error("alerts.yml has no rules")
	}
}
