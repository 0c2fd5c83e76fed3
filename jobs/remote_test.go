package jobs_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// A worker drains a batch of gift card releases from a service that is
// slow but healthy: every call is answered in 300 ms, well within the
// client's 2 s timeout. The batch's calls, 8 at a time, take longer than
// the worker's timeout for a batch (a quarter of the lease), yet no task
// may count more failed tries than the service got calls of it: the
// failure budget (8, then MANUAL) is for a service that failed, not for
// calls the worker did not get round to. Breaks if the calls not yet made
// when the batch's context ends are recorded as TIMEOUT failures.
func TestRemoteSlowBatchCountsNoUnsentCall(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const orders = 24
		svc := remotetest.New(remotetest.Options{})
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		client, err := remote.New(remote.Config{Type: "giftcard", URL: srv.URL, Timeout: 2 * time.Second, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		s := modelstest.Open(t, d, models.Options{Logger: modelstest.QuietLog(),
			Remote: []models.RemoteType{{Type: "giftcard", Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
		ctx := context.Background()
		for i := range orders {
			no, key := fmt.Sprintf("o-%02d", i), fmt.Sprintf("card-%02d", i)
			svc.SetAvailable(key, 1)
			_, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
				Holds: []models.HoldRequest{{Type: "giftcard", Key: key, Qty: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
				t.Fatal(err)
			}
		}
		svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 300 * time.Millisecond})
		// A 2 s lease: the batch has 500 ms, three rounds of calls need 900.
		st := jobs.NewWorker(s, "w-slow", orders, 2*time.Second, modelstest.QuietLog()).Drain(ctx)
		var failed []models.ReleaseTask
		if err := s.R.Where("failures > 0").Order("id").Find(&failed).Error; err != nil {
			t.Fatal(err)
		}
		var unsent []string
		for _, tk := range failed {
			calls := svc.Calls(remote.IdempotencyKey(tk.OrderNo, "giftcard", tk.BizKey, remote.OpRelease, 0))
			if tk.Failures > calls {
				unsent = append(unsent, fmt.Sprintf("%s (%d failures, %d calls; %s)", tk.OrderNo, tk.Failures, calls, tk.LastError))
			}
		}
		if len(unsent) > 0 {
			t.Fatalf("drain %v: %d of %d tasks counted more failed tries than calls the service got: %v",
				st, len(unsent), orders, unsent)
		}
	})
}
