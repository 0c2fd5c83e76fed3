package jobs_test

import (
	"context"
	"testing"
	"time"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// A worker wakes its sequencer after a batch: on PostgreSQL the batch's
// events are numbered for pollers at once, though the sequencer's own
// interval is an hour. Breaks if the worker did not wake it (nothing
// would be readable for an hour) or the sequencer ran on SQLite's
// already readable events and failed.
func TestEventSequencerWokenByTheWorker(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		s := modelstest.Open(t, d, models.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		seq := jobs.NewEventSequencer(s, time.Hour, modelstest.QuietLog())
		done := make(chan struct{})
		go func() { defer close(done); seq.Run(ctx) }()
		modelstest.PlaceAndClose(t, s, "o-1", 1)
		w := jobs.NewWorker(s, "w1", 10, 30*time.Second, modelstest.QuietLog()).WithEvents(seq)
		if st := w.Drain(ctx); st[models.OutcomeDone] != 1 {
			t.Fatalf("drain = %v", st)
		}
		var evs []models.Event
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			var err error
			if evs, err = s.EventsAfter(ctx, 0, 10, nil); err != nil {
				t.Fatal(err)
			}
			if len(evs) == 2 {
				break
			}
		}
		if len(evs) != 2 || evs[0].Type != models.EventOrderClosed || evs[1].Type != models.EventHoldReleased {
			t.Fatalf("events readable after the drain: %+v, want order.closed then hold.released", evs)
		}
		cancel()
		<-done
	})
}
