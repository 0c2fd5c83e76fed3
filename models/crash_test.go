package models_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
)

// closedOrder places and closes one order holding qty of sku-1, so it has
// one release task.
func (b bundle) closedOrder(t *testing.T, no string, qty int64) {
	t.Helper()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: qty}}}
	if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system"); err != nil {
		t.Fatal(err)
	}
}

// task reads the order's one task with its attempts.
func (b bundle) task(t *testing.T, no string) models.ChainTask {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil || len(c.Tasks) != 1 {
		t.Fatalf("chain of %s: %v, %+v", no, err, c)
	}
	return c.Tasks[0]
}

const testLease = 30 * time.Second

// A worker killed mid-try leaves its lease to expire with no outcome: the
// next claim counts that try as a CRASHED failure of that worker (attempt
// row, failures + 1, the retry wait from the lease's end), then claims the
// task again.
func TestKilledTryCountsAtNextClaim(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		if got, _ := b.s.ClaimTasks(b.ctx, "w-dead", 10, testLease); len(got) != 1 {
			t.Fatalf("claimed %d, want 1", len(got))
		}
		// The worker is killed: nothing is ever recorded for its try.
		b.clock.Advance(testLease + models.RetryDelay(1))
		got, err := b.s.ClaimTasks(b.ctx, "w2", 10, testLease)
		if err != nil || len(got) != 1 {
			t.Fatalf("claim after the lease = %d, %v; want the task again", len(got), err)
		}
		tk := b.task(t, "o-1")
		if tk.Failures != 1 || tk.ErrorClass != models.ClassCrashed || len(tk.AttemptLog) != 1 {
			t.Fatalf("task after a kill = %+v, want 1 CRASHED failure with one attempt", tk)
		}
		a := tk.AttemptLog[0]
		if a.Worker != "w-dead" || a.Outcome != models.OutcomeRetry || a.ErrorClass != models.ClassCrashed ||
			a.Error != "lease expired without an outcome, worker w-dead" {
			t.Fatalf("attempt = %+v", a)
		}
		if r, err := b.s.ReleaseTask(b.ctx, got[0], "w2"); err != nil || r.Outcome != models.OutcomeDone {
			t.Fatalf("release by w2 = %+v, %v", r, err)
		}
		// The ledger row says the release made up for a crashed try.
		b.assertReleaseActor(t, "o-1", "worker:w2 · attempt 2 · after a crashed try")
		b.assertReconciles(t)
	})
}

// assertReleaseActor checks the actor of the order's one RELEASE row.
func (b bundle) assertReleaseActor(t *testing.T, no, want string) {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil {
		t.Fatal(err)
	}
	var actors []string
	for _, f := range c.Flows {
		if f.Type == models.FlowRelease {
			actors = append(actors, f.Actor)
		}
	}
	if len(actors) != 1 || actors[0] != want {
		t.Fatalf("release rows of %s name %q, want one naming %q", no, actors, want)
	}
}

// The lease rescue counts a killed try too, without claiming anything; a
// live lease is left alone.
func TestRescueCountsKilledTry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		if got, _ := b.s.ClaimTasks(b.ctx, "w-dead", 10, testLease); len(got) != 1 {
			t.Fatalf("claimed %d, want 1", len(got))
		}
		if n, err := b.s.RescueLeases(b.ctx); err != nil || n != 0 {
			t.Fatalf("rescue under a live lease = %d, %v; want 0", n, err)
		}
		b.clock.Advance(testLease)
		if n, err := b.s.RescueLeases(b.ctx); err != nil || n != 1 {
			t.Fatalf("rescue = %d, %v; want 1", n, err)
		}
		tk := b.task(t, "o-1")
		if tk.Status != models.TaskRetry || tk.Failures != 1 || tk.LeaseUntil != nil || len(tk.AttemptLog) != 1 ||
			tk.AttemptLog[0].ErrorClass != models.ClassCrashed {
			t.Fatalf("task after rescue = %+v", tk)
		}
		if n, _ := b.s.RescueLeases(b.ctx); n != 0 {
			t.Fatalf("a second rescue counted %d again", n)
		}
		// The next try, found by the sweep once the retry is due, makes
		// up for the crashed one and its ledger row says so.
		b.clock.Advance(models.RetryDelay(1))
		if got := b.drain(t, "w2"); got[models.OutcomeDone] != 1 {
			t.Fatalf("after rescue: %v, want 1 DONE", got)
		}
		b.assertReleaseActor(t, "o-1", "worker:w2 · attempt 2 · after a crashed try")
	})
}

// A task whose worker is killed every time goes MANUAL at the 8th kill,
// RETRY_EXHAUSTED with CRASHED as the last error's class, and is not
// claimed again.
func TestEightKillsGoManual(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		for i := 1; i <= models.MaxFailures; i++ {
			got, err := b.s.ClaimTasks(b.ctx, fmt.Sprintf("w%d", i), 10, testLease)
			if err != nil || len(got) != 1 {
				t.Fatalf("claim %d = %d, %v; want the task", i, len(got), err)
			}
			b.clock.Advance(testLease + models.RetryDelay(i))
		}
		if got, _ := b.s.ClaimTasks(b.ctx, "w9", 10, testLease); len(got) != 0 {
			t.Fatalf("the task was claimed after %d kills", models.MaxFailures)
		}
		tk := b.task(t, "o-1")
		if tk.Status != models.TaskManual || tk.Failures != models.MaxFailures || tk.ErrorClass != models.ClassRetryExhausted ||
			tk.LastErrorClass != models.ClassCrashed || len(tk.AttemptLog) != models.MaxFailures {
			t.Fatalf("after %d kills: %+v", models.MaxFailures, tk)
		}
		if last := tk.AttemptLog[models.MaxFailures-1]; last.Outcome != models.OutcomeManual || last.Worker != "w8" {
			t.Fatalf("last attempt = %+v", last)
		}
		f := models.TaskFilter{Class: models.ClassRetryExhausted}
		if page, err := b.s.ListTasks(b.ctx, f, models.Cursor{}, false, 0); err != nil || len(page.Tasks) != 1 {
			t.Fatalf("RETRY_EXHAUSTED filter = %+v, %v; want the task", page.Tasks, err)
		}
		// A rerun gives a fresh budget and puts the last error's class back.
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "worker fixed"); err != nil {
			t.Fatal(err)
		}
		if tk := b.task(t, "o-1"); tk.Failures != 0 || tk.ErrorClass != models.ClassCrashed {
			t.Fatalf("after rerun: %+v", tk)
		}
		if got := b.drain(t, "w10"); got[models.OutcomeDone] != 1 {
			t.Fatalf("after rerun: %v, want DONE", got)
		}
	})
}

// A worker that was only slow, not dead, cannot finish the try another
// claim counted as crashed: its token no longer fences the row.
func TestSlowWorkerCannotFinishCountedTry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		slow, _ := b.s.ClaimTasks(b.ctx, "slow", 10, testLease)
		b.clock.Advance(testLease)
		if got, _ := b.s.ClaimTasks(b.ctx, "other", 10, testLease); len(got) != 0 {
			t.Fatalf("claimed %d before the retry wait, want 0", len(got))
		}
		if r, _ := b.s.ReleaseTask(b.ctx, slow[0], "slow"); r.Outcome != models.OutcomeLeaseLost {
			t.Fatalf("slow worker = %+v, want LEASE_LOST", r)
		}
		if sku, _ := b.s.GetSKU(b.ctx, "sku-1"); sku.Locked != 2 {
			t.Fatalf("sku = %+v, want still held", sku)
		}
	})
}

// A handed-back lease is neither a crash nor an attempt.
func TestReturnedLeaseIsNoCrash(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		got, _ := b.s.ClaimTasks(b.ctx, "w1", 10, testLease)
		must(t, func() error { return b.s.ReturnLease(b.ctx, got[0]) })
		b.clock.Advance(testLease)
		if n, _ := b.s.RescueLeases(b.ctx); n != 0 {
			t.Fatalf("rescue counted a returned lease as %d crash(es)", n)
		}
		if got := b.drain(t, "w2"); got[models.OutcomeDone] != 1 {
			t.Fatalf("drain = %v, want DONE", got)
		}
		if tk := b.task(t, "o-1"); tk.Failures != 0 || tk.Attempts != 1 || len(tk.AttemptLog) != 1 {
			t.Fatalf("task = %+v, want one attempt, no failure", tk)
		}
	})
}

// Several workers claiming while killed tries expire: every kill is
// counted once, and no task is claimed twice at once.
func TestConcurrentClaimsCountEachKillOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 1000, 0, "test"); return err })
		const orders = 40
		for i := range orders {
			b.closedOrder(t, fmt.Sprintf("o-%d", i), 1)
		}
		if got, _ := b.s.ClaimTasks(b.ctx, "w-dead", orders, testLease); len(got) != orders {
			t.Fatalf("claimed %d, want %d", len(got), orders)
		}
		b.clock.Advance(testLease + models.RetryDelay(1))
		var mu sync.Mutex
		claimed := map[int64]string{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				name := fmt.Sprintf("w%d", w)
				for {
					tasks, err := b.s.ClaimTasks(b.ctx, name, 3, testLease)
					if err != nil || len(tasks) == 0 {
						if err != nil {
							t.Error(err)
						}
						return
					}
					for _, tk := range tasks {
						mu.Lock()
						if prev, ok := claimed[tk.ID]; ok {
							t.Errorf("task %d claimed by %s and %s", tk.ID, prev, name)
						}
						claimed[tk.ID] = name
						mu.Unlock()
						if r, err := b.s.ReleaseTask(b.ctx, tk, name); err != nil || r.Outcome != models.OutcomeDone {
							t.Errorf("release %d = %+v, %v", tk.ID, r, err)
						}
					}
				}
			})
		}
		wg.Wait()
		if len(claimed) != orders {
			t.Fatalf("%d tasks claimed, want %d", len(claimed), orders)
		}
		var crashes int64
		must(t, func() error {
			return b.s.R.Model(&models.TaskAttempt{}).Where("error_class = ?", models.ClassCrashed).Count(&crashes).Error
		})
		if crashes != orders {
			t.Fatalf("%d CRASHED attempts, want one per killed try (%d)", crashes, orders)
		}
		b.assertReconciles(t)
	})
}

// A rerun that commits while a worker holds the task (after its claim,
// before its release commits): the release takes trigger RERUN and the
// rerun's note from the row, not from its claimed copy.
func TestRerunBeforeWorkerCommits(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = 'RETRY', failures = 3, error_class = 'TIMEOUT'").Error
		})
		claimed, _ := b.s.ClaimTasks(b.ctx, "w1", 10, testLease)
		if len(claimed) != 1 || claimed[0].Trigger != models.TriggerTimeout {
			t.Fatalf("claimed = %+v", claimed)
		}
		if n, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "stock service back"); err != nil || n != 1 {
			t.Fatalf("rerun = %d, %v", n, err)
		}
		if r, err := b.s.ReleaseTask(b.ctx, claimed[0], "w1"); err != nil || r.Outcome != models.OutcomeDone {
			t.Fatalf("release = %+v, %v", r, err)
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		var rel []models.Flow
		for _, f := range c.Flows {
			if f.Type == models.FlowRelease {
				rel = append(rel, f)
			}
		}
		if len(rel) != 1 || rel[0].Trigger != models.TriggerRerun {
			t.Fatalf("release rows = %+v, want one with trigger RERUN", rel)
		}
		att := c.Tasks[0].AttemptLog
		if len(att) != 1 || att[0].Note != "rerun by ops:alice: stock service back" {
			t.Fatalf("attempts = %+v, want the rerun's note", att)
		}
		if len(c.Audit) != 1 || c.Audit[0].Outcome != "ok" {
			t.Fatalf("audit = %+v", c.Audit)
		}
	})
}

// A rerun that comes after the worker's release committed finds nothing
// to rerun: the release keeps its trigger, the refusal is audited.
func TestRerunAfterWorkerCommits(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = 'RETRY', failures = 3, error_class = 'TIMEOUT'").Error
		})
		claimed, _ := b.s.ClaimTasks(b.ctx, "w1", 10, testLease)
		if r, err := b.s.ReleaseTask(b.ctx, claimed[0], "w1"); err != nil || r.Outcome != models.OutcomeDone {
			t.Fatalf("release = %+v, %v", r, err)
		}
		_, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "stock service back")
		if !errors.Is(err, models.ErrNothingToRerun) {
			t.Fatalf("rerun after the release = %v, want ErrNothingToRerun", err)
		}
		c, _ := b.s.OrderChain(b.ctx, "o-1")
		for _, f := range c.Flows {
			if f.Type == models.FlowRelease && f.Trigger != models.TriggerTimeout {
				t.Fatalf("release row = %+v, want trigger TIMEOUT", f)
			}
		}
		if att := c.Tasks[0].AttemptLog; len(att) != 1 || att[0].Note != "" {
			t.Fatalf("attempts = %+v, want no rerun note", att)
		}
		if len(c.Audit) != 1 || c.Audit[0].Outcome != "refused" {
			t.Fatalf("audit = %+v, want one refused rerun", c.Audit)
		}
	})
}

// One rule for a rerun's reason: trimmed, not empty, at most 500
// characters; Store.Rerun enforces it and changes nothing when refused.
func TestRerunReasonRule(t *testing.T) {
	for _, c := range []struct {
		in, want string
		err      error
	}{
		{"  why  ", "why", nil},
		{"", "", models.ErrReasonRequired},
		{" \t\n", "", models.ErrReasonRequired},
		{strings.Repeat("原", models.MaxReasonLen), strings.Repeat("原", models.MaxReasonLen), nil},
		{strings.Repeat("原", models.MaxReasonLen+1), "", models.ErrReasonTooLong},
	} {
		got, err := models.RerunReason(c.in)
		if got != c.want || !errors.Is(err, c.err) || (c.err != nil && !errors.Is(err, models.ErrInvalid)) {
			t.Errorf("RerunReason(%q) = %q, %v; want %q, %v", c.in, got, err, c.want, c.err)
		}
	}
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		b.closedOrder(t, "o-1", 2)
		must(t, func() error { return b.s.W.Exec("UPDATE release_tasks SET status = 'MANUAL'").Error })
		before := b.task(t, "o-1")
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "api:t", "  "); !errors.Is(err, models.ErrReasonRequired) {
			t.Fatalf("rerun without a reason = %v, want ErrReasonRequired", err)
		}
		after := b.task(t, "o-1")
		if after.Status != models.TaskManual || after.UpdatedAt != before.UpdatedAt {
			t.Fatalf("a refused rerun changed the task: %+v", after)
		}
	})
}

// A rerun sent while the worker's release transaction is open waits for it
// (the row lock on PostgreSQL, the one writer on SQLite) and then finds
// the task DONE: nothing to rerun, and the release keeps its trigger.
func TestRerunDuringWorkerTransaction(t *testing.T) {
	t.Parallel()
	for _, d := range []models.Dialect{models.SQLite, models.Postgres} {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			var b bundle
			rerun := make(chan error, 1)
			var once sync.Once
			b = setup(t, d, models.Options{Faults: func(point string, _ *models.ReleaseTask) error {
				if point == models.FaultAfterLedger {
					once.Do(func() {
						go func() {
							_, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops:alice", "stock service back")
							rerun <- err
						}()
						// Give the rerun time to reach the lock it waits on.
						time.Sleep(200 * time.Millisecond)
					})
				}
				return nil
			}})
			must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
			b.closedOrder(t, "o-1", 2)
			must(t, func() error {
				return b.s.W.Exec("UPDATE release_tasks SET status = 'RETRY', failures = 3, error_class = 'TIMEOUT'").Error
			})
			if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
				t.Fatalf("drain = %v, want DONE", got)
			}
			if err := <-rerun; !errors.Is(err, models.ErrNothingToRerun) {
				t.Fatalf("rerun during the release = %v, want ErrNothingToRerun", err)
			}
			c, _ := b.s.OrderChain(b.ctx, "o-1")
			for _, f := range c.Flows {
				if f.Type == models.FlowRelease && f.Trigger != models.TriggerTimeout {
					t.Fatalf("release row = %+v, want trigger TIMEOUT", f)
				}
			}
			if tk := c.Tasks[0]; tk.Status != models.TaskDone || tk.RerunBy != "" {
				t.Fatalf("task = %+v, want DONE without a rerun", tk)
			}
		})
	}
}

// A process killed holding more leases than one transaction counts leaves
// them to be counted in bounded steps: a claim counts maxLostPerTx and
// still claims, the rescue counts the rest, each exactly once.
func TestLostTriesCountedInBoundedSteps(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		n := models.MaxLostPerTx + 5
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", int64(n), 0, "test"); return err })
		for i := range n {
			b.closedOrder(t, fmt.Sprintf("o-%d", i), 1)
		}
		if got, err := b.s.ClaimTasks(b.ctx, "w-dead", n, testLease); err != nil || len(got) != n {
			t.Fatalf("claimed %d, %v; want %d", len(got), err, n)
		}
		b.clock.Advance(2 * testLease)
		crashed := func() (c int64) {
			must(t, func() error {
				return b.s.R.Raw("SELECT COUNT(*) FROM task_attempts WHERE error_class = 'CRASHED'").Scan(&c).Error
			})
			return c
		}
		if got, err := b.s.ClaimTasks(b.ctx, "w2", 1, testLease); err != nil || len(got) != 1 {
			t.Fatalf("claim after the kill = %d, %v; want 1", len(got), err)
		}
		if c := crashed(); c != int64(models.MaxLostPerTx) {
			t.Fatalf("one claim counted %d lost tries, want %d", c, models.MaxLostPerTx)
		}
		if got, err := b.s.RescueLeases(b.ctx); err != nil || got != 5 {
			t.Fatalf("rescue = %d, %v; want the 5 left", got, err)
		}
		if c := crashed(); c != int64(n) {
			t.Fatalf("%d lost tries counted in all, want %d", c, n)
		}
	})
}
