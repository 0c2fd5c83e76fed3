package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// unhold healthcheck exits 0 only on a 200: a 503 (database not ready), a
// redirect, a refused connection and a server that never answers are all
// unhealthy (exit 1), and a bad -url is a usage error (exit 2), not a
// verdict on the server.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.Write([]byte("ok\n"))
		case "/busy":
			http.Error(w, "database not ready", http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/readyz", http.StatusFound)
		case "/hang":
			<-r.Context().Done()
		}
	}))
	t.Cleanup(srv.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String() + "/readyz"
	closed.Close()

	for _, c := range []struct {
		name    string
		args    []string
		status  int // 0: healthy
		wantOut string
		wantErr string
	}{
		{"ready", []string{"-url", srv.URL + "/readyz"}, 0, "200 OK", ""},
		{"503", []string{"-url", srv.URL + "/busy"}, 1, "", "503 Service Unavailable: database not ready"},
		{"redirect", []string{"-url", srv.URL + "/moved"}, 1, "", "302 Found"},
		{"refused", []string{"-url", refused}, 1, "", "connection refused"},
		{"not http", []string{"-url", "ftp://127.0.0.1/readyz"}, 2, "", "-url must be an http(s) URL"},
		{"no host", []string{"-url", "/readyz"}, 2, "", "-url must be an http(s) URL"},
		{"extra argument", []string{srv.URL}, 2, "", "unexpected argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), append([]string{"healthcheck"}, c.args...), func(string) string { return "" }, nil, &out, &errOut)
			if c.status == 0 {
				if err != nil || !strings.Contains(out.String(), c.wantOut) {
					t.Fatalf("err %v, stdout %q; want nil and %q", err, out.String(), c.wantOut)
				}
				return
			}
			if err == nil {
				t.Fatalf("healthy (stdout %q), want exit %d", out.String(), c.status)
			}
			if got := exitStatus(err); got != c.status || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("exit %d, err %q; want exit %d and %q", got, err, c.status, c.wantErr)
			}
		})
	}

	// A server that accepts and never answers: the check gives up at its
	// timeout (shortened here) and says unhealthy.
	_, err = checkHealth(context.Background(), srv.URL+"/hang", 50*time.Millisecond)
	if !errors.Is(err, errUnhealthy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("hung server: %v, want unhealthy by the deadline", err)
	}
}
