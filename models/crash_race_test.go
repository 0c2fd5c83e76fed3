package models_test

import (
	"fmt"
	"sync"
	"testing"

	"unhold/models"
)

// Every try whose lease expired comes to exactly one outcome, whoever gets
// there first: its slow worker finishing it (DONE, allowed while nobody has
// counted it), or one CRASHED count by a claim or the lease rescue, never
// both and never neither. Claimers, rescues and the slow worker race for
// real on both engines; each task is released exactly once.
func TestExpiredTriesEndOnceUnderRace(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		const orders = 60
		for i := range orders {
			b.closedOrder(t, fmt.Sprintf("o-%d", i), 1)
		}
		slow, err := b.s.ClaimTasks(b.ctx, "w-slow", orders, testLease)
		if err != nil || len(slow) != orders {
			t.Fatalf("claimed %d, %v; want %d", len(slow), err, orders)
		}
		b.clock.Advance(testLease + models.RetryDelay(1))
		var wg sync.WaitGroup
		var mu sync.Mutex
		slowDone := 0
		wg.Go(func() { // the slow worker finishes its old tries, late
			for _, tk := range slow {
				r, err := b.s.ReleaseTask(b.ctx, tk, "w-slow")
				if err != nil {
					t.Error(err)
					return
				}
				if r.Outcome == models.OutcomeDone {
					mu.Lock()
					slowDone++
					mu.Unlock()
				} else if r.Outcome != models.OutcomeLeaseLost {
					t.Errorf("slow release of %d = %+v", tk.ID, r)
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				if _, err := b.s.RescueLeases(b.ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
		for w := range 3 {
			wg.Go(func() {
				name := fmt.Sprintf("w%d", w)
				for {
					tasks, err := b.s.ClaimTasks(b.ctx, name, 4, testLease)
					if err != nil || len(tasks) == 0 {
						if err != nil {
							t.Error(err)
						}
						return
					}
					for _, tk := range tasks {
						if r, err := b.s.ReleaseTask(b.ctx, tk, name); err != nil || r.Outcome != models.OutcomeDone {
							t.Errorf("release %d by %s = %+v, %v", tk.ID, name, r, err)
						}
					}
				}
			})
		}
		wg.Wait()
		// What the claimers left behind (a task counted after they stopped)
		// is due after its retry delay.
		b.clock.Advance(models.RetryDelay(2))
		b.drain(t, "w-last")
		var crashes int64
		must(t, func() error {
			return b.s.R.Model(&models.TaskAttempt{}).Where("error_class = ?", models.ClassCrashed).Count(&crashes).Error
		})
		if crashes+int64(slowDone) != orders {
			t.Errorf("%d crashes counted + %d late DONEs by the slow worker = %d, want exactly one outcome per expired try (%d)",
				crashes, slowDone, crashes+int64(slowDone), orders)
		}
		var open int64
		must(t, func() error {
			return b.s.R.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&open).Error
		})
		if open != 0 {
			t.Errorf("%d tasks not DONE", open)
		}
		b.assertReconciles(t)
	})
}
