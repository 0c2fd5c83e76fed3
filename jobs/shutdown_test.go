package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// A graceful stop (SIGTERM: the Run ctx is cancelled) arriving while the
// worker is in the middle of a batch is no failure of any task: the try it
// interrupts rolled back, and the tasks after it in the batch were never
// tried. None of them may be counted towards MANUAL, or a task that was
// claimed across eight deploys would end RETRY_EXHAUSTED without one real
// try; each is handed back, due again at once.
func TestShutdownMidBatchCountsNoFailure(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		clock := modelstest.NewClock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var first atomic.Bool
		first.Store(true)
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: func(point string, _ *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && first.Swap(false) {
				cancel() // the process is told to stop during the batch's first try
			}
			return nil
		}})
		bg := context.Background()
		if _, err := s.SetStock(bg, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		nos := []string{"o-1", "o-2", "o-3"}
		for _, no := range nos {
			modelstest.PlaceAndClose(t, s, no, 1)
		}
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog())
		w.Drain(ctx)
		for _, no := range nos {
			c, err := s.OrderChain(bg, no)
			if err != nil {
				t.Fatal(err)
			}
			tk := c.Tasks[0]
			if tk.Failures != 0 || len(tk.AttemptLog) != 0 || tk.LeaseUntil != nil {
				t.Errorf("%s after a graceful stop: status %s, failures %d (%s %q), %d attempt rows, lease %v; "+
					"want no failure counted and the lease handed back", no, tk.Status, tk.Failures, tk.ErrorClass, tk.LastError,
					len(tk.AttemptLog), tk.LeaseUntil)
			}
		}
		// The next process releases all three at once: none waits a retry delay.
		w2 := jobs.NewWorker(s, "w2", 10, 30*time.Second, modelstest.QuietLog())
		if st := w2.Drain(bg); st[models.OutcomeDone] != len(nos) {
			t.Errorf("drain after restart = %v, want %d DONE", st, len(nos))
		}
		modelstest.CheckInvariants(t, s)
	})
}
