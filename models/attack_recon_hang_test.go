package models_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// A gift-card service that hangs (every GET /holds outlasts the client's
// 2s timeout) costs a run keys × 2s / 8: its keys are asked one wave
// after another to the end, and then what the run found is recorded
// under the same context. The reconcile job gives a run 10 minutes, which
// 2,400 gift cards outlast; scaled down here, 24 keys and a 5s budget.
// The run must not fail as a whole for one service: that service's keys
// go unchecked, every other check is recorded.
func TestAttackReconHangingServiceFailsRun(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := conformanceStore(t, d)
			for i := range 24 {
				key := fmt.Sprintf("GC-%02d", i)
				b.svc.SetAvailable(key, 1)
				placeOne(t, b, "o-"+key, "u1", giftCard, key, 1, true)
			}
			b.drain(t, "w-h")
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 2 WHERE sku_id = 'sku-1'").Error })
			b.clock.Advance(time.Minute)
			b.svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 2500 * time.Millisecond})
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			defer cancel()
			run, err := b.s.RunReconciliation(ctx, "test", "test")
			if err != nil {
				t.Fatalf("a run with the gift-card service hanging failed as a whole: %v", err)
			}
			if run.Opened == 0 {
				t.Errorf("run %+v opened no ticket for sku-1's hand edit", run)
			}
		})
	}
}
