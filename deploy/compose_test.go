package deploy_test

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		Environment string `yaml:"environment"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image       string `yaml:"image"`
	Build       *struct{ Context, Dockerfile string }
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
	Healthcheck struct {
		Test    []string `yaml:"test"`
		Disable bool     `yaml:"disable"`
	} `yaml:"healthcheck"`
	Secrets []composeSecretRef `yaml:"secrets"`
}

type composeSecretRef struct {
	Source string `yaml:"source"`
	Target string `yaml:"target"`
}

// dependsOn reads depends_on in either form (a list, or a map with
// conditions) as service → condition ("" for the list form).
func (s composeService) dependsOn(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	switch s.DependsOn.Kind {
	case 0:
	case yaml.SequenceNode:
		var names []string
		if err := s.DependsOn.Decode(&names); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			out[n] = ""
		}
	default:
		var m map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := s.DependsOn.Decode(&m); err != nil {
			t.Fatal(err)
		}
		for n, c := range m {
			out[n] = c.Condition
		}
	}
	return out
}

// mounts are a service's bind mounts: container path → path on the host,
// relative to the compose file's directory.
func (s composeService) mounts() map[string]string {
	out := map[string]string{}
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && (strings.HasPrefix(parts[0], "./") || strings.HasPrefix(parts[0], "../")) {
			out[parts[1]] = parts[0]
		}
	}
	return out
}

// hostFile is the file on the host a service sees at container path p,
// through a bind mount of it or of a directory above it; "" if none.
func (s composeService) hostFile(p string) string {
	for in, host := range s.mounts() {
		if p == in {
			return host
		}
		if rel, ok := strings.CutPrefix(p, in+"/"); ok {
			return path.Join(host, rel)
		}
	}
	return ""
}

// subcommands are the commands unhold's own usage text lists.
func subcommands(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(unholdBinary(t), "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	var subs []string
	for _, m := range regexp.MustCompile(`(?m)^  unhold ([a-z]+)`).FindAllStringSubmatch(string(out), -1) {
		subs = append(subs, m[1])
	}
	if len(subs) == 0 {
		t.Fatalf("unhold help lists no subcommand:\n%s", out)
	}
	return subs
}

// The compose file hangs together: every file it mounts is in the
// repository, every unhold service runs a real unhold subcommand, the web
// and the two workers start after a one-shot migrate that finished, every
// published port is on the host's loopback, Prometheus's rule file is the
// repository's alerts.yml and its targets are exactly the web and the
// workers on the ports they serve, its token is the one the services
// take, and Grafana is provisioned with the dashboard and that
// Prometheus. promtool checks the Prometheus configuration where it is
// installed.
func TestCompose(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	subs := subcommands(t)

	var unholds, workers []string
	for name, s := range c.Services {
		for in, host := range s.mounts() {
			if _, err := os.Stat(host); err != nil {
				t.Errorf("%s mounts %s at %s: %v", name, host, in, err)
			}
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %q, want it on 127.0.0.1 only", name, p)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("%s builds with %v: %v", name, s.Build, err)
			}
		}
		if s.Image != "unhold:local" {
			continue
		}
		unholds = append(unholds, name)
		if len(s.Command) == 0 || !slices.Contains(subs, s.Command[0]) {
			t.Errorf("%s runs unhold %q, not one of %v", name, s.Command, subs)
			continue
		}
		if tok := s.Environment["UNHOLD_METRICS_TOKEN"]; !strings.Contains(tok, "${UNHOLD_METRICS_TOKEN") {
			t.Errorf("%s: UNHOLD_METRICS_TOKEN=%q, want it from the environment", name, tok)
		}
		if !strings.HasPrefix(s.Environment["UNHOLD_DB"], "postgres://") || !strings.Contains(s.Environment["UNHOLD_DB"], "@postgres:5432/") {
			t.Errorf("%s: UNHOLD_DB=%q, want the postgres service", name, s.Environment["UNHOLD_DB"])
		}
		switch s.Command[0] {
		case "migrate":
			if dep := s.dependsOn(t); dep["postgres"] != "service_healthy" {
				t.Errorf("migrate depends on %v, want postgres healthy", dep)
			}
		default:
			if dep := s.dependsOn(t); len(dep) != 1 || dep["migrate"] != "service_completed_successfully" {
				t.Errorf("%s depends on %v, want only migrate completed successfully", name, dep)
			}
			// The one-shot migrate ran: the others check the schema
			// instead of racing to apply it.
			if m := s.Environment["UNHOLD_MIGRATE"]; m != "false" {
				t.Errorf("%s: UNHOLD_MIGRATE=%q, want false (migrate ran before it)", name, m)
			}
		}
		if s.Command[0] == "worker" {
			workers = append(workers, name)
			_, port, err := net.SplitHostPort(s.Environment["UNHOLD_METRICS_ADDR"])
			if err != nil {
				t.Errorf("%s: UNHOLD_METRICS_ADDR=%q: %v", name, s.Environment["UNHOLD_METRICS_ADDR"], err)
			}
			if want := []string{"CMD", "/unhold", "healthcheck", "-url", "http://127.0.0.1:" + port + "/readyz"}; !slices.Equal(s.Healthcheck.Test, want) {
				t.Errorf("%s healthcheck %q, want %q", name, s.Healthcheck.Test, want)
			}
		}
	}
	slices.Sort(unholds)
	if want := []string{"migrate", "web", "worker-1", "worker-2"}; !slices.Equal(unholds, want) {
		t.Errorf("unhold services %v, want %v", unholds, want)
	}
	if len(workers) != 2 || c.Services["worker-1"].Environment["UNHOLD_WORKER_ID"] == c.Services["worker-2"].Environment["UNHOLD_WORKER_ID"] {
		t.Errorf("workers %v, want two with their own UNHOLD_WORKER_ID", workers)
	}
	if img := c.Services["postgres"].Image; img != "postgres:15" {
		t.Errorf("postgres image %q, want postgres:15", img)
	}
	if web := c.Services["web"]; !slices.Contains(web.Ports, "127.0.0.1:8080:8080") {
		t.Errorf("web publishes %v, want 127.0.0.1:8080:8080 (the image's UNHOLD_ADDR port)", web.Ports)
	}

	// Prometheus reads the repository's configuration and rules.
	prom := c.Services["prometheus"]
	var config string
	for _, a := range prom.Command {
		if v, ok := strings.CutPrefix(a, "--config.file="); ok {
			config = v
		}
	}
	hostConfig := prom.hostFile(config)
	if hostConfig == "" {
		t.Fatalf("prometheus reads %q, which no bind mount provides", config)
	}
	praw, err := os.ReadFile(hostConfig)
	if err != nil {
		t.Fatal(err)
	}
	var pc struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			Authorization struct {
				CredentialsFile string `yaml:"credentials_file"`
			} `yaml:"authorization"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(praw, &pc); err != nil {
		t.Fatalf("%s: %v", hostConfig, err)
	}
	for _, r := range pc.RuleFiles {
		if !path.IsAbs(r) {
			r = path.Join(path.Dir(config), r)
		}
		if got := prom.hostFile(r); got != "./prometheus/alerts.yml" {
			t.Errorf("rule file %s is %q on the host, want ./prometheus/alerts.yml", r, got)
		}
	}
	if len(pc.RuleFiles) == 0 {
		t.Error("prometheus.yml has no rule_files")
	}
	var targets []string
	for _, sc := range pc.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
		secret, ok := strings.CutPrefix(sc.Authorization.CredentialsFile, "/run/secrets/")
		if !ok || !slices.ContainsFunc(prom.Secrets, func(s composeSecretRef) bool {
			return s.Target == secret && c.Secrets[s.Source].Environment == "UNHOLD_METRICS_TOKEN"
		}) {
			t.Errorf("scrape credentials %q, want a compose secret of UNHOLD_METRICS_TOKEN", sc.Authorization.CredentialsFile)
		}
	}
	slices.Sort(targets)
	wantTargets := []string{"web:8080"}
	for _, w := range workers {
		_, port, _ := net.SplitHostPort(c.Services[w].Environment["UNHOLD_METRICS_ADDR"])
		wantTargets = append(wantTargets, w+":"+port)
	}
	slices.Sort(wantTargets)
	if !slices.Equal(targets, wantTargets) {
		t.Errorf("prometheus scrapes %v, want %v", targets, wantTargets)
	}

	// Grafana: the dashboard where its provider looks, and this Prometheus.
	graf := c.Services["grafana"]
	prov := graf.hostFile("/etc/grafana/provisioning")
	var dashboards struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(prov, "dashboards", "unhold.yaml"), &dashboards)
	if len(dashboards.Providers) != 1 || graf.hostFile(dashboards.Providers[0].Options.Path+"/unhold.json") != "./grafana/unhold.json" {
		t.Errorf("grafana's dashboard provider %+v does not load ./grafana/unhold.json", dashboards.Providers)
	}
	var sources struct {
		Datasources []struct {
			Type string `yaml:"type"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(prov, "datasources", "prometheus.yaml"), &sources)
	if len(sources.Datasources) != 1 || sources.Datasources[0].Type != "prometheus" {
		t.Fatalf("grafana datasources %+v, want one prometheus", sources.Datasources)
	}
	if u, err := url.Parse(sources.Datasources[0].URL); err != nil || u.Hostname() != "prometheus" || !slices.Contains(prom.Ports, "127.0.0.1:"+u.Port()+":"+u.Port()) {
		t.Errorf("grafana's prometheus is %q, want the prometheus service on the port it serves", sources.Datasources[0].URL)
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed: prometheus.yml parsed here, not checked by promtool")
		return
	}
	// promtool wants the token file to exist: a copy of the configuration
	// reads one in a temporary directory, beside a copy of the rules.
	dir := t.TempDir()
	token := filepath.Join(dir, "metrics_token")
	for name, content := range map[string]string{
		"prometheus.yml": strings.ReplaceAll(string(praw), "/run/secrets/metrics_token", token),
		"alerts.yml":     string(mustRead(t, "prometheus/alerts.yml")),
		"metrics_token":  "0123456789abcdef\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(promtool, "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Errorf("promtool check config: %v\n%s", err, out)
	}
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	if err := yaml.Unmarshal(mustRead(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func mustRead(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
