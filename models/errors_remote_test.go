package models_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"unhold/models"
	"unhold/remote"
)

// A remote service's answer keeps its class when a try fails with it,
// however wrapped: busy answers retry, a refusal goes MANUAL.
func TestRemoteErrorsKeepTheirClass(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status    int
		class     models.ErrorClass
		retryable bool
	}{
		{http.StatusServiceUnavailable, models.ClassRemoteBusy, true},
		{http.StatusTooManyRequests, models.ClassRemoteBusy, true},
		{http.StatusUnprocessableEntity, models.ClassRemoteRejected, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"message":"no"}`, tc.status)
		}))
		c, err := remote.New(remote.Config{Type: "giftcard", URL: srv.URL, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Release(context.Background(), remote.Call{OrderNo: "o-1", Key: "k", Qty: 1, Trigger: "TIMEOUT"})
		srv.Close()
		class, retryable := models.ClassOf(fmt.Errorf("release task 7: %w", err))
		if class != tc.class || retryable != tc.retryable {
			t.Errorf("%d: class %s retryable %v, want %s %v (%v)", tc.status, class, retryable, tc.class, tc.retryable, err)
		}
	}
}
