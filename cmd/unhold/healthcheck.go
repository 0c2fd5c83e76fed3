package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// healthcheckTimeout bounds one check: a server that hangs must count as
// unhealthy, not hang the container engine's probe.
const healthcheckTimeout = 3 * time.Second

// defaultHealthURL is the readiness check of "unhold serve" or "unhold web"
// on the container's default -addr.
const defaultHealthURL = "http://127.0.0.1:8080/readyz"

// errUnhealthy is a check that got no 200: the process exits 1, which a
// Dockerfile's HEALTHCHECK reads as unhealthy (2 is reserved there).
var errUnhealthy = errors.New("unhealthy")

// healthcheck is "unhold healthcheck [-url U]": one GET, for images that
// have no curl. It exits 0 on a 200 and 1 on any other answer or none.
func healthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("unhold healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	raw := fs.String("url", defaultHealthURL, "URL to GET; healthy when it answers 200 within "+healthcheckTimeout.String())
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	u, err := url.Parse(*raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("healthcheck: -url must be an http(s) URL like %s, got %q", defaultHealthURL, *raw)
	}
	status, err := checkHealth(ctx, u.String(), healthcheckTimeout)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, status)
	return nil
}

// checkHealth GETs target, without following redirects, and answers its
// status line when it is 200.
func checkHealth(ctx context.Context, target string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return "", fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("healthcheck: %w: %w", errUnhealthy, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("healthcheck: %w: %s answered %s: %s", errUnhealthy, target, resp.Status, strings.TrimSpace(string(body)))
	}
	return fmt.Sprintf("%s %s", target, resp.Status), nil
}

// exitStatus is the process's exit status for what run returned (not nil):
// 1 for an unhealthy check, 2 for everything else.
func exitStatus(err error) int {
	if errors.Is(err, errUnhealthy) {
		return 1
	}
	return 2
}
