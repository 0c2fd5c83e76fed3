package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"unhold/models"
)

// Running one job: a cluster job runs only while this instance holds its
// lease row (models.ClaimJob), renewed every third of the lease while the
// job runs; if a renewal finds the lease gone (this process stalled past it
// and another instance took the job) the run's context is cancelled. When
// the run ends the lease is released and the run recorded in one
// transaction. A holder that dies keeps the job only until its lease runs
// out; the next claim then takes it and records the lost run as FAILED.

// JobTriggerCron is the trigger of a scheduled run.
const JobTriggerCron = models.JobTriggerCron

// runScheduled runs a job for the time slot its schedule gave.
func (s *Scheduler) runScheduled(e *entry, slot time.Time) {
	if e.Local {
		if !e.running.CompareAndSwap(false, true) {
			s.log.Debug("job still running: tick skipped", slog.String("job", e.Name), slog.String("instance", s.instance))
			return
		}
		defer e.running.Store(false)
		s.runLocal(e, JobTriggerCron)
		return
	}
	claimCtx, cancel := context.WithTimeout(s.runCtx, 10*time.Second)
	defer cancel()
	take, err := s.store.ClaimJob(claimCtx, models.JobClaim{Name: e.Name, Owner: s.instance, TriggeredBy: JobTriggerCron,
		Lease: s.lease, Slot: &slot, NextDue: e.sched.Next(slot)})
	if err != nil {
		s.log.Error("job not started: its lease could not be claimed", slog.String("job", e.Name),
			slog.String("instance", s.instance), slog.Any("err", err))
		return
	}
	s.logTake(e, take)
	if take.Taken() {
		s.runHeld(e, take, JobTriggerCron)
	}
}

// logTake logs what a claim found besides the lease.
func (s *Scheduler) logTake(e *entry, take models.JobTake) {
	attrs := []any{slog.String("job", e.Name), slog.String("instance", s.instance)}
	if a := take.Abandoned; a != nil {
		s.log.Error("job run abandoned: its instance stopped before finishing", append(attrs,
			slog.String("abandoned_by", a.Instance), slog.Time("started_at", a.StartedAt), slog.String("error", a.Error))...)
	}
	switch {
	case take.Skipped != nil:
		s.logRun(*take.Skipped, true)
	case take.Held != nil:
		s.log.Debug("job held by another run: tick skipped", append(attrs,
			slog.String("holder", take.Held.Owner), slog.Time("since", take.Held.TakenAt))...)
	case take.NotDue:
		s.log.Debug("job slot already served by another instance", attrs...)
	}
}

// runHeld runs a job whose lease take holds, then releases and records it.
func (s *Scheduler) runHeld(e *entry, take models.JobTake, trigger string) {
	ctx, cancel := context.WithTimeout(s.runCtx, s.timeoutOf(e))
	defer cancel()
	lost := make(chan struct{})
	stopBeat := make(chan struct{})
	beatDone := make(chan struct{})
	go func() {
		defer close(beatDone)
		s.heartbeat(e.Name, take.Token, stopBeat, func() { close(lost); cancel() })
	}()
	summary, err := safeRun(ctx, e)
	close(stopBeat)
	<-beatDone
	select {
	case <-lost:
		if err == nil {
			err = models.ErrJobLockLost
		}
	default:
	}
	run := s.runRecord(ctx, e, trigger, take.StartedAt, s.store.Now(), summary, err)
	record := err != nil || run.Summary != "" || trigger != JobTriggerCron
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(s.runCtx), 10*time.Second)
	defer fcancel()
	recorded, _, ferr := s.store.FinishJob(fctx, take.Token, run, record)
	if ferr != nil {
		s.log.Error("job run not recorded; its lease runs out by itself", slog.String("job", e.Name),
			slog.String("instance", s.instance), slog.Any("err", ferr))
		s.logRun(run, false)
		return
	}
	if recorded.ID != 0 {
		run = recorded
	}
	s.logRun(run, recorded.ID != 0)
}

// heartbeat renews a lease every third of its length until stop; onLost is
// called once when a renewal finds the lease taken, or when renewals have
// failed for two thirds of the lease: then another instance may take the
// job soon, so this run stops itself before that can happen.
func (s *Scheduler) heartbeat(job, token string, stop <-chan struct{}, onLost func()) {
	t := time.NewTicker(s.lease / 3)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(s.runCtx, s.lease/3)
		err := s.store.RenewJobLock(ctx, job, token, s.lease)
		cancel()
		switch {
		case errors.Is(err, models.ErrJobLockLost):
			s.log.Error("job lease lost mid-run: cancelling the run", slog.String("job", job), slog.String("instance", s.instance))
			onLost()
			return
		case err != nil && time.Since(lastOK) >= s.lease*2/3:
			s.log.Error("job lease not renewed in time: cancelling the run before another instance takes it",
				slog.String("job", job), slog.String("instance", s.instance), slog.Any("err", err))
			onLost()
			return
		case err != nil:
			// Retried at the next beat; the lease lasts three beats.
			s.log.Warn("job lease not renewed", slog.String("job", job), slog.String("instance", s.instance), slog.Any("err", err))
		default:
			lastOK = time.Now()
		}
	}
}

// runLocal runs a job in this process only, unlocked and unrecorded.
func (s *Scheduler) runLocal(e *entry, trigger string) {
	ctx, cancel := context.WithTimeout(s.runCtx, s.timeoutOf(e))
	defer cancel()
	start := time.Now()
	summary, err := safeRun(ctx, e)
	s.logRun(s.runRecord(ctx, e, trigger, start, time.Now(), summary, err), false)
}

// runRecord is the record of one run.
func (s *Scheduler) runRecord(ctx context.Context, e *entry, trigger string, start, end time.Time, summary string, err error) models.JobRun {
	run := models.JobRun{Job: e.Name, Instance: s.instance, TriggeredBy: trigger, Outcome: models.JobOK,
		StartedAt: start, FinishedAt: end}
	run.Summary, run.Detail, _ = strings.Cut(strings.TrimSpace(summary), "\n")
	if err != nil {
		run.Outcome = models.JobFailed
		run.Error = err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, models.ErrJobLockLost) {
			run.Error = fmt.Sprintf("timed out after %s: %s", s.timeoutOf(e), run.Error)
		}
	}
	return run
}

// safeRun runs the job, turning a panic into an error.
func safeRun(ctx context.Context, e *entry) (summary string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return e.Run(ctx)
}

// logRun logs one run: failures as errors, skips as warnings, runs that
// did something at info, quiet runs at debug.
func (s *Scheduler) logRun(r models.JobRun, recorded bool) {
	attrs := []any{slog.String("job", r.Job), slog.String("instance", r.Instance), slog.String("trigger", r.TriggeredBy),
		slog.String("outcome", string(r.Outcome)), slog.Duration("duration", r.Duration()), slog.Bool("recorded", recorded)}
	if r.ID != 0 {
		attrs = append(attrs, slog.Int64("run_id", r.ID))
	}
	if r.Summary != "" {
		attrs = append(attrs, slog.String("summary", r.Summary))
	}
	switch {
	case r.Outcome == models.JobFailed:
		s.log.Error("job run failed", append(attrs, slog.String("error", r.Error))...)
	case r.Outcome == models.JobSkipped:
		s.log.Warn("job run skipped: an earlier run still holds the job", attrs...)
	case r.Summary != "" || r.TriggeredBy != JobTriggerCron:
		s.log.Info("job run", attrs...)
	default:
		s.log.Debug("job run", attrs...)
	}
}
