package remote_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"unhold/remote"
)

// A key that is a dot segment is never put in GET /holds/{key}: a server
// or a proxy resolves /holds/.. to / and /holds/. to /holds/, and their
// 404 would read "the service offers no GET /holds". It is refused unsent.
func TestHoldsDotKeyNotSent(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(srv.Close)
	for _, key := range []string{".", ".."} {
		_, err := client(t, srv.URL, 0, "tok").Holds(context.Background(), key)
		var e *remote.Error
		if !errors.As(err, &e) || e.Class != remote.ClassRejected || errors.Is(err, remote.ErrNoHolds) {
			t.Errorf("Holds(%q) = %v, want a refusal of class %s", key, err, remote.ClassRejected)
		}
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
