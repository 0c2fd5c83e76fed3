package remote_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"unhold/remote"
)

// attackServer answers every request with status and body, "$auth" in it
// replaced by the request's Authorization header and "$k" by its
// Idempotency-Key.
func attackServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, strings.NewReplacer("$auth", r.Header.Get("Authorization"),
			"$k", r.Header.Get("Idempotency-Key")).Replace(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Attack (issue 22): the head of an unproven answer is kept as the
// attempt's error, the MANUAL message and, for a lock, the 502 the
// placing client gets. Whatever answered in the service's place — a
// debugging echo server, a proxy's error page, a service that reflects
// its request — may echo the request's headers, Authorization included:
// the bearer token then lands in the database, the dashboard and the API
// answer. remote.bodyHead (and clip for error answers) keeps it verbatim.
// Wants: the token never in an *Error's text.
func TestAttack22UnprovenAnswerHeadKeepsToken(t *testing.T) {
	t.Parallel()
	const token = "s3cretTOKEN42"
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"2xx echoing the headers", http.StatusOK, `{"headers":{"Authorization":"$auth"}}`},
		{"409 ALREADY_DONE echoing the headers", http.StatusConflict, `{"code":"ALREADY_DONE","auth":"$auth"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl, err := remote.New(remote.Config{Type: "giftcard", URL: attackServer(t, c.status, c.body), Strict: true, Token: token})
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Release(context.Background(), call)
			var e *remote.Error
			if !errors.As(err, &e) || e.Class != remote.ClassProtocol {
				t.Fatalf("got %v, want REMOTE_PROTOCOL", err)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(e.Message, token) {
				t.Fatalf("the bearer token is in the error kept for people: %q", e.Message)
			}
		})
	}
}

// Attack (issue 22): an answer with two idempotency_key members — another
// request's first, ours last — or another request's under the exact name
// and ours under a case-folded one, names another request, yet counts as
// done: encoding/json keeps the last member and matches names
// case-insensitively (remote.echoes). The same holds for GET /holds: a
// "key" naming another key beside a "Key" naming ours is accepted
// (Client.Holds). An ambiguous answer proves nothing. Wants: REMOTE_PROTOCOL.
func TestAttack22AmbiguousEchoCountsAsDone(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"idempotency_key":"uh1-00000000000000000000000000000000","idempotency_key":"$k"}`,
		`{"idempotency_key":"uh1-00000000000000000000000000000000","Idempotency_Key":"$k"}`,
	} {
		cl, err := remote.New(remote.Config{Type: "giftcard", URL: attackServer(t, http.StatusOK, body), Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := cl.Release(context.Background(), call); err == nil {
			t.Errorf("%s: counted as done (%+v); want REMOTE_PROTOCOL", body, res)
		}
	}
	cl, err := remote.New(remote.Config{Type: "giftcard", URL: attackServer(t, http.StatusOK, `{"key":"GC-9","Key":"GC-1","held":1}`), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := cl.Holds(context.Background(), "GC-1"); err == nil {
		t.Errorf("holds answer naming GC-9 and GC-1 taken as %+v; want REMOTE_PROTOCOL", h)
	}
}

// Attack (issue 22): the body's head shown on the task and the dashboard
// keeps Unicode format characters — a right-to-left override (U+202E), a
// zero-width space — that reorder or hide what a person reads of a
// hostile answer; clip drops only category Cc. Wants: none of category Cf.
func TestAttack22UnprovenAnswerHeadKeepsBidiControls(t *testing.T) {
	t.Parallel()
	cl, err := remote.New(remote.Config{Type: "giftcard", URL: attackServer(t, http.StatusOK, "ok \u202edenoler\u200b"), Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.Release(context.Background(), call)
	var e *remote.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *remote.Error", err)
	}
	if strings.IndexFunc(e.Message, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0 {
		t.Fatalf("message %q keeps format (bidi / zero-width) characters", e.Message)
	}
}
