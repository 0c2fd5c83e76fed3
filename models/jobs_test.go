package models_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

func jobClaim(t *testing.T, b bundle, c models.JobClaim) models.JobTake {
	t.Helper()
	if c.Lease == 0 {
		c.Lease = 30 * time.Second
	}
	if c.TriggeredBy == "" {
		c.TriggeredBy = models.JobTriggerCron
	}
	got, err := b.s.ClaimJob(b.ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if got.Taken() {
		n++
	}
	if got.Held != nil {
		n++
	}
	if got.NotDue {
		n++
	}
	if n != 1 {
		t.Fatalf("claim %+v = %+v: want exactly one of taken, held, not due", c, got)
	}
	return got
}

func jobRuns(t *testing.T, b bundle, job string) []models.JobRun {
	t.Helper()
	page, err := b.s.JobRuns(b.ctx, job, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return page.Runs
}

func jobFinish(t *testing.T, b bundle, token string, run models.JobRun, record bool) (models.JobRun, bool) {
	t.Helper()
	got, lost, err := b.s.FinishJob(b.ctx, token, run, record)
	if err != nil {
		t.Fatal(err)
	}
	return got, lost
}

// One holder at a time; a released job is free again; a run is recorded
// only when asked, with what it said.
func TestJobLockOneHolder(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		a := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "a", TriggeredBy: "ops:1.2.3.4"})
		if !a.Taken() || a.Abandoned != nil {
			t.Fatalf("first claim = %+v, want taken", a)
		}
		held := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "b"})
		if held.Held == nil || held.Held.Owner != "a" || held.Held.TriggeredBy != "ops:1.2.3.4" || !held.Held.TakenAt.Equal(a.StartedAt) {
			t.Fatalf("second claim = %+v, want held by a", held)
		}
		if other := jobClaim(t, b, models.JobClaim{Name: "report", Owner: "b"}); !other.Taken() {
			t.Fatalf("another job was blocked by recon's lease: %+v", other)
		}
		b.clock.Advance(3 * time.Second)
		run, lost := jobFinish(t, b, a.Token, models.JobRun{Job: "recon", Instance: "a", TriggeredBy: "ops:1.2.3.4",
			Outcome: models.JobOK, Summary: "3 diffs", StartedAt: a.StartedAt, FinishedAt: b.clock.Now()}, true)
		if lost || run.ID == 0 {
			t.Fatalf("finish = %+v lost=%v", run, lost)
		}
		runs := jobRuns(t, b, "recon")
		if len(runs) != 1 || runs[0].Summary != "3 diffs" || runs[0].Outcome != models.JobOK || runs[0].Duration() != 3*time.Second {
			t.Fatalf("runs = %+v", runs)
		}
		again := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "b"})
		if !again.Taken() || again.Token == a.Token {
			t.Fatalf("claim after release = %+v", again)
		}
		// A quiet run releases without a row.
		if _, lost := jobFinish(t, b, again.Token, models.JobRun{Job: "recon", Outcome: models.JobOK}, false); lost {
			t.Fatal("lost a lease just taken")
		}
		if runs := jobRuns(t, b, "recon"); len(runs) != 1 {
			t.Fatalf("a quiet run was recorded: %+v", runs)
		}
		locks, err := b.s.JobLocks(b.ctx)
		if err != nil || len(locks) != 2 || locks[0].Name != "recon" || locks[0].Owner != "b" || locks[0].ReleasedAt == nil {
			t.Fatalf("locks = %+v, %v", locks, err)
		}
		if locks[0].Running(b.clock.Now()) {
			t.Fatal("a released lock still reads as running")
		}
	})
}

// A scheduled slot runs once: the instance that claims it moves next_due
// on, and another instance ticking at the same slot finds it not due.
// An operator's run does not consume a slot.
func TestJobSlotRunsOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		slot := time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)
		next := slot.Add(24 * time.Hour)
		a := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "a", Slot: &slot, NextDue: next})
		if !a.Taken() {
			t.Fatalf("claim = %+v", a)
		}
		jobFinish(t, b, a.Token, models.JobRun{Job: "recon", Outcome: models.JobOK}, false)
		if late := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "b", Slot: &slot, NextDue: next}); !late.NotDue {
			t.Fatalf("the same slot ran twice: %+v", late)
		}
		m := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "b", TriggeredBy: "ops:x"})
		if !m.Taken() {
			t.Fatalf("operator's claim = %+v", m)
		}
		jobFinish(t, b, m.Token, models.JobRun{Job: "recon", Outcome: models.JobOK}, false)
		if tomorrow := jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "b", Slot: &next, NextDue: next.Add(24 * time.Hour)}); !tomorrow.Taken() {
			t.Fatalf("next slot = %+v; the operator's run must not move the schedule", tomorrow)
		}
	})
}

// A holder that vanished keeps the job until its lease runs out, no longer:
// then the next claim takes it and records the vanished run as FAILED. The
// vanished holder, should it come back, finds its lease gone.
func TestJobLeaseExpiresAfterACrash(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		a := jobClaim(t, b, models.JobClaim{Name: "cleanup", Owner: "a", Lease: 30 * time.Second})
		b.clock.Advance(29 * time.Second)
		if held := jobClaim(t, b, models.JobClaim{Name: "cleanup", Owner: "b"}); held.Held == nil {
			t.Fatalf("taken before the lease ran out: %+v", held)
		}
		b.clock.Advance(time.Second)
		got := jobClaim(t, b, models.JobClaim{Name: "cleanup", Owner: "b"})
		if !got.Taken() || got.Abandoned == nil {
			t.Fatalf("claim after the lease = %+v, want taken with the abandoned run", got)
		}
		runs := jobRuns(t, b, "cleanup")
		if len(runs) != 1 || runs[0].Outcome != models.JobFailed || runs[0].Instance != "a" ||
			!runs[0].StartedAt.Equal(a.StartedAt) || !strings.Contains(runs[0].Error, "lease ran out") {
			t.Fatalf("runs = %+v, want a's run FAILED", runs)
		}
		if err := b.s.RenewJobLock(b.ctx, "cleanup", a.Token, time.Minute); !errors.Is(err, models.ErrJobLockLost) {
			t.Fatalf("renew by the vanished holder = %v, want ErrJobLockLost", err)
		}
		if err := b.s.RenewJobLock(b.ctx, "cleanup", got.Token, time.Minute); err != nil {
			t.Fatalf("renew by the holder: %v", err)
		}
		run, lost := jobFinish(t, b, a.Token, models.JobRun{Job: "cleanup", Instance: "a", Outcome: models.JobOK,
			Summary: "deleted 5", StartedAt: a.StartedAt, FinishedAt: b.clock.Now()}, false)
		if !lost || run.Outcome != models.JobFailed || !strings.Contains(run.Error, "another instance may have run it") {
			t.Fatalf("late finish = %+v lost=%v, want FAILED and recorded", run, lost)
		}
		// The late finish did not free b's lease.
		if held := jobClaim(t, b, models.JobClaim{Name: "cleanup", Owner: "c"}); held.Held == nil || held.Held.Owner != "b" {
			t.Fatalf("claim = %+v, want held by b", held)
		}
	})
}

// A due slot that finds the job still running records SKIPPED once per
// holding run, not at every tick.
func TestJobSkippedOncePerHolder(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		s1 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
		s2, s3 := s1.Add(10*time.Second), s1.Add(20*time.Second)
		a := jobClaim(t, b, models.JobClaim{Name: "close", Owner: "a", Slot: &s1, NextDue: s2})
		for i, who := range []string{"b", "c", "b"} {
			held := jobClaim(t, b, models.JobClaim{Name: "close", Owner: who, Slot: &s2, NextDue: s3})
			if held.Held == nil {
				t.Fatalf("%s took a held job: %+v", who, held)
			}
			if (held.Skipped != nil) != (i == 0) {
				t.Fatalf("tick %d by %s: skipped = %+v, want a SKIPPED row at the first tick only", i, who, held.Skipped)
			}
		}
		runs := jobRuns(t, b, "close")
		if len(runs) != 1 || runs[0].Outcome != models.JobSkipped || runs[0].Instance != "b" || !strings.Contains(runs[0].Summary, "on a") {
			t.Fatalf("runs = %+v, want one SKIPPED by b", runs)
		}
		// Not due: no SKIPPED either.
		if held := jobClaim(t, b, models.JobClaim{Name: "close", Owner: "b", Slot: &s1, NextDue: s2}); held.Skipped != nil {
			t.Fatalf("a slot already served was recorded as skipped: %+v", held)
		}
		jobFinish(t, b, a.Token, models.JobRun{Job: "close", Outcome: models.JobOK}, false)
		if got := jobClaim(t, b, models.JobClaim{Name: "close", Owner: "b", Slot: &s2, NextDue: s3}); !got.Taken() {
			t.Fatalf("the skipped slot is still due once the job is free: %+v", got)
		}
	})
}

// An operator's claim writes its audit row in the same transaction; a
// refused claim writes none.
func TestJobClaimAudit(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		audit := &models.AuditEntry{Actor: "ops:1.2.3.4", Action: "job_run_now", Target: "job:recon", Outcome: "started"}
		jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "a", TriggeredBy: "ops:1.2.3.4", Audit: audit})
		jobClaim(t, b, models.JobClaim{Name: "recon", Owner: "a", TriggeredBy: "ops:1.2.3.4", Audit: audit})
		var rows []models.AuditEntry
		if err := b.s.R.Where("action = ?", "job_run_now").Find(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Target != "job:recon" || !rows[0].CreatedAt.Equal(b.clock.Now()) {
			t.Fatalf("audit = %+v, want one row", rows)
		}
		if err := b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "ops:x", Action: "job_run_now", Target: "job:recon", Outcome: "already_running"}); err != nil {
			t.Fatal(err)
		}
	})
}

// Runs page newest first by id.
func TestJobRunsPages(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 5 {
			c := jobClaim(t, b, models.JobClaim{Name: "report", Owner: "a"})
			jobFinish(t, b, c.Token, models.JobRun{Job: "report", Outcome: models.JobOK, Summary: string(rune('a' + i))}, true)
		}
		var got []string
		var before int64
		for pages := 0; ; pages++ {
			p, err := b.s.JobRuns(b.ctx, "report", before, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Runs {
				got = append(got, r.Summary)
			}
			if p.Next == 0 {
				break
			}
			before = p.Next
			if pages > 5 {
				t.Fatal("pages never end")
			}
		}
		if strings.Join(got, "") != "edcba" {
			t.Fatalf("runs = %q, want newest first", got)
		}
		if p, _ := b.s.JobRuns(b.ctx, "other", 0, 2); len(p.Runs) != 0 {
			t.Fatalf("another job's runs: %+v", p.Runs)
		}
	})
}

// Old attempts of finished tasks go, in batches; attempts of open tasks
// and recent ones stay; the ledgers are untouched.
func TestDeleteOldAttempts(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 100, 0, "test"); return err })
		closeOne := func(no string) {
			t.Helper()
			must(t, func() error {
				_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
				return err
			})
			must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1"); return err })
		}
		for _, no := range []string{"old-1", "old-2", "old-3", "manual-1"} {
			closeOne(no)
		}
		b.drain(t, "w1")
		// Plant a task left open after its (old) attempt.
		must(t, func() error {
			return b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL' WHERE order_no = 'manual-1'`).Error
		})
		b.clock.Advance(91 * 24 * time.Hour)
		closeOne("new-1")
		b.drain(t, "w1")
		count := func(q string) int64 {
			var n int64
			must(t, func() error { return b.s.R.Raw(q).Scan(&n).Error })
			return n
		}
		flows := count(`SELECT COUNT(*) FROM inventory_flows`)
		cutoff := b.clock.Now().Add(-90 * 24 * time.Hour)
		var total int64
		for batches := 0; ; batches++ {
			n, err := b.s.DeleteOldAttempts(b.ctx, cutoff, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n > 2 {
				t.Fatalf("a batch of 2 deleted %d", n)
			}
			total += n
			if n < 2 {
				break
			}
		}
		if total != 3 {
			t.Fatalf("deleted %d attempts, want the 3 of old DONE tasks", total)
		}
		left := count(`SELECT COUNT(*) FROM task_attempts a JOIN release_tasks t ON t.id = a.task_id WHERE t.order_no IN ('manual-1','new-1')`)
		if all := count(`SELECT COUNT(*) FROM task_attempts`); all != 2 || left != 2 {
			t.Fatalf("%d attempts left (%d of manual-1 and new-1), want those 2", all, left)
		}
		if got := count(`SELECT COUNT(*) FROM inventory_flows`); got != flows {
			t.Fatalf("ledger rows %d → %d", flows, got)
		}
		// Job runs age out the same way.
		c := jobClaim(t, b, models.JobClaim{Name: "x", Owner: "a"})
		jobFinish(t, b, c.Token, models.JobRun{Job: "x", Outcome: models.JobOK, StartedAt: cutoff.Add(-time.Hour), FinishedAt: cutoff}, true)
		c = jobClaim(t, b, models.JobClaim{Name: "x", Owner: "a"})
		jobFinish(t, b, c.Token, models.JobRun{Job: "x", Outcome: models.JobOK, StartedAt: cutoff.Add(time.Hour), FinishedAt: cutoff.Add(time.Hour)}, true)
		if n, err := b.s.DeleteOldJobRuns(b.ctx, cutoff, 10); err != nil || n != 1 || len(jobRuns(t, b, "x")) != 1 {
			t.Fatalf("delete old job runs = %d, %v", n, err)
		}
	})
}
