package deploy_test

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"unhold/models"
)

// binDir holds the unhold binary the tests build, once per test process.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "unhold-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
}

func dockerfile(t *testing.T) []instruction {
	t.Helper()
	raw, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	for line := range strings.Lines(string(raw)) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont)
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// dockerBuildCommand is the Dockerfile's RUN that builds the binary, and
// the path it writes.
var dockerBuildCommand = regexp.MustCompile(`^(.*\bgo build\b.*)-o (\S+) (\./cmd/unhold)$`)

var built struct {
	once sync.Once
	path string
	err  error
}

// unholdBinary is unhold built by the Dockerfile's own build command, run
// from the repository root by sh, with its output path moved to a
// temporary directory.
func unholdBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		var run string
		for _, in := range dockerfile(t) {
			if in.cmd == "RUN" && dockerBuildCommand.MatchString(in.args) {
				run = in.args
			}
		}
		if run == "" {
			built.err = errors.New("the Dockerfile has no RUN ... go build ... -o PATH ./cmd/unhold")
			return
		}
		built.path = filepath.Join(binDir, "unhold")
		cmd := exec.Command("sh", "-c", dockerBuildCommand.ReplaceAllString(run, "$1-o "+built.path+" $3"))
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("%s: %v\n%s", cmd, err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// The Dockerfile builds a static binary with CGO off in a Go 1.26 stage
// and runs it as a non-root user on a distroless or empty base, with the
// data directory a volume, the database in it, and a health check by
// unhold itself on /readyz. No Docker engine is needed to check this.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	ins := dockerfile(t)
	var froms []string
	all := map[string][]string{}
	for _, in := range ins {
		all[in.cmd] = append(all[in.cmd], in.args)
		if in.cmd == "FROM" {
			froms = append(froms, in.args)
		}
	}
	if len(froms) < 2 || !strings.HasPrefix(froms[0], "golang:1.26") {
		t.Errorf("FROM %q: want a golang:1.26 build stage and a final stage", froms)
	}
	if final := froms[len(froms)-1]; !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("final stage FROM %q, want distroless/static or scratch", final)
	}
	var build string
	for _, r := range all["RUN"] {
		if dockerBuildCommand.MatchString(r) {
			build = r
		}
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
		if !strings.Contains(build, want) {
			t.Errorf("build command %q lacks %s", build, want)
		}
	}
	want := map[string]string{
		"USER":        `^65532:65532$`,
		"VOLUME":      `^/data$`,
		"EXPOSE":      `^8080$`,
		"ENV":         `UNHOLD_DB=/data/unhold\.db\b.*UNHOLD_ADDR=0\.0\.0\.0:8080`,
		"HEALTHCHECK": `CMD \["/unhold", "healthcheck", "-url", "http://127\.0\.0\.1:8080/readyz"\]$`,
		"ENTRYPOINT":  `^\["/unhold"\]$`,
		"CMD":         `^\["serve"\]$`,
	}
	for cmd, re := range want {
		if got := all[cmd]; len(got) != 1 || !regexp.MustCompile(re).MatchString(got[0]) {
			t.Errorf("%s %q, want one matching %s", cmd, got, re)
		}
	}
}

// servingOn is unhold serve's line naming the address it listens on.
var servingOn = regexp.MustCompile(`serving on http://(\S+) `)

// The binary built as the Dockerfile builds it is static (no ELF
// interpreter, no shared library), so it runs on a distroless or empty
// base; it serves on SQLite, its healthcheck subcommand (the image's
// HEALTHCHECK) says healthy while it runs and unhealthy once it stopped,
// and SIGTERM (what docker stop and systemd send) stops it cleanly.
func TestStaticBinaryRunsAndChecksItsHealth(t *testing.T) {
	t.Parallel()
	bin := unholdBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("imported libraries %v (%v), want none", libs, err)
	}

	dir := t.TempDir()
	serve := exec.Command(bin, "serve")
	serve.Dir = dir
	serve.Env = append(os.Environ(), "UNHOLD_DB="+filepath.Join(dir, "unhold.db"), "UNHOLD_ADDR=127.0.0.1:0", "UNHOLD_LOG_FORMAT=json")
	stdout, err := serve.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	serve.Stderr = &stderr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingOn.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		exited <- serve.Wait()
	}()
	t.Cleanup(func() { serve.Process.Kill() })
	var base string
	select {
	case base = <-addr:
	case err := <-exited:
		t.Fatalf("unhold serve exited before serving: %v\n%s", err, stderr.String())
	}

	check := func() (string, int) {
		out, err := exec.Command(bin, "healthcheck", "-url", "http://"+base+"/readyz").CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := check(); code != 0 || !strings.Contains(out, "200 OK") {
		t.Errorf("healthcheck of a running server: exit %d, %q; want 0 and 200 OK", code, out)
	}

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("unhold serve on SIGTERM: %v, want exit 0\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("unhold serve still runs a minute after SIGTERM\n%s", stderr.String())
	}
	if out, code := check(); code != 1 {
		t.Errorf("healthcheck of a stopped server: exit %d, %q; want 1", code, out)
	}
}

// The binary built as the Dockerfile builds it says when it was built
// (the -X main.buildTime of the build command) and the schema it carries,
// in unhold version -json.
func TestBinaryVersion(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(unholdBinary(t), "version", "-json").Output()
	if err != nil {
		t.Fatalf("unhold version -json: %v", err)
	}
	var v struct {
		BuildTime string `json:"build_time"`
		GoVersion string `json:"go_version"`
		Schema    int64  `json:"schema"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("unhold version -json: %v\n%s", err, out)
	}
	schema, err := models.SchemaVersion(models.SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339, v.BuildTime); err != nil || v.Schema != schema || !strings.HasPrefix(v.GoVersion, "go1.26") {
		t.Errorf("unhold version -json = %s; want an RFC 3339 build_time, schema %d and Go 1.26", out, schema)
	}
}
