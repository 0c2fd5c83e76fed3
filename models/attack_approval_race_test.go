package models_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"unhold/models"
)

// Two requests on one task, a rerun and an abandon, approved at once by
// two other people while the worker and an owner's take run too: exactly
// one approval acts, the other closes its request STALE and says why, the
// take either lands or finds the task no longer MANUAL, and the money is
// given back at most once (once when the rerun won).
func TestApprovalRerunAbandonTakeRace(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 4 {
			no := fmt.Sprintf("o-%d", i)
			tk := b.balanceTask(t, no, 100, models.TaskManual)
			rerun := b.request(t, tk.ID, models.ApprovalRerun, alice)
			abandon := b.request(t, tk.ID, models.ApprovalAbandon, root)
			start := make(chan struct{})
			var rerunErr, abandonErr, takeErr error
			var wg sync.WaitGroup
			wg.Go(func() { <-start; _, rerunErr = b.s.ApproveRequest(b.ctx, rerun.ID, bob, "ok") })
			wg.Go(func() { <-start; _, abandonErr = b.s.ApproveRequest(b.ctx, abandon.ID, boss, "ok") })
			wg.Go(func() { <-start; takeErr = b.s.AssignTask(b.ctx, tk.ID, "carol", "", "carol") })
			wg.Go(func() { <-start; _, _ = b.drainErr("w2") })
			close(start)
			wg.Wait()
			if (rerunErr == nil) == (abandonErr == nil) {
				t.Fatalf("rerun approval: %v; abandon approval: %v; want exactly one to act", rerunErr, abandonErr)
			}
			if lost := errors.Join(rerunErr, abandonErr); !errors.Is(lost, models.ErrTaskChanged) {
				t.Fatalf("the losing approval: %v, want ErrTaskChanged", lost)
			}
			if takeErr != nil && !errors.Is(takeErr, models.ErrNotOpen) {
				t.Fatalf("take: %v, want nil or ErrNotOpen", takeErr)
			}
			b.drain(t, "w1")
			want, status := int64(0), models.TaskAbandoned
			if rerunErr == nil {
				want, status = 1, models.TaskDone
			}
			if got := b.balanceOf(t, no); got.Status != status {
				t.Fatalf("task is %s, want %s", got.Status, status)
			}
			if n := b.balanceReleases(t, no); n != want {
				t.Fatalf("%d RELEASE rows, want %d", n, want)
			}
		}
	})
}
