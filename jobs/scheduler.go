package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"unhold/models"
)

// Job is one periodic job: a stable name, when it runs, and its work.
type Job struct {
	Name string
	// Spec is "@every <duration>" or a 5-field cron spec, read in the
	// scheduler's time zone.
	Spec string
	// Local jobs run in every instance on their own ticks, without the
	// cluster lease, and are never recorded: the release sweep only wakes
	// this process's worker, whose releases task_attempts records.
	Local bool
	// Timeout bounds one run; 0 takes the scheduler's default.
	Timeout time.Duration
	// Run does the work and says what it did: the first line of summary is
	// the summary, any further lines the detail. An empty summary and no
	// error is a quiet run (nothing to do): logged at debug level and, when
	// cron started it, not recorded.
	Run func(ctx context.Context) (summary string, err error)
}

// Scheduler defaults.
const (
	DefaultLease   = time.Minute      // a job's lease, renewed every third of it while the job runs
	DefaultTimeout = time.Minute      // one run's bound when the job names none
	DefaultGrace   = 10 * time.Second // how long Stop waits before cancelling running jobs
)

// Options configure a Scheduler. Only Store is needed for the cluster
// guarantees; without it every job runs as Local.
type Options struct {
	// Store keeps the job leases (job_locks) and the record of runs
	// (job_runs).
	Store *models.Store
	// Instance names this process on leases and runs: the worker id.
	Instance string
	// Location is the time zone cron specs are read in; nil is UTC.
	Location *time.Location
	Lease    time.Duration
	Timeout  time.Duration
	Grace    time.Duration
	Log      *slog.Logger
}

// Errors of RunNow.
var (
	ErrUnknownJob     = errors.New("no such job")
	ErrAlreadyRunning = errors.New("job already running")
	ErrStopped        = errors.New("scheduler stopped")
)

// RunningError says which run holds a job that was asked to run; it
// matches ErrAlreadyRunning.
type RunningError struct {
	Job         string
	Owner       string    // instance running it
	TriggeredBy string    // "cron" or the operator
	Since       time.Time // when that run started; zero for a local job
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("job %s already running on %s since %s", e.Job, e.Owner, e.Since.UTC().Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrAlreadyRunning) hold.
func (e *RunningError) Is(target error) bool { return target == ErrAlreadyRunning }

// JobInfo is one job as the Jobs page lists it.
type JobInfo struct {
	Name    string
	Spec    string
	Local   bool
	Timeout time.Duration
	Next    time.Time // next tick in this process; zero when none is coming
}

// Scheduler runs each job on its schedule. Each job has its own loop: it
// waits for the next time the job's robfig/cron schedule gives, runs the
// job to its end (so a run is never started over itself in this process)
// and only then computes the next time, skipping the times the run
// overlapped. Knowing the exact scheduled time of each run is what lets
// instances agree on it: a cluster job's run claims its time slot together
// with the job's lease (models.ClaimJob), so however many instances tick at
// 03:00, one runs the job and the others find the slot served.
type Scheduler struct {
	store    *models.Store
	instance string
	loc      *time.Location
	lease    time.Duration
	timeout  time.Duration
	grace    time.Duration
	log      *slog.Logger

	runCtx    context.Context // parent of every run; cancelled when Stop's grace is over
	cancelRun context.CancelFunc

	entries []*entry
	byName  map[string]*entry

	mu      sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}
	loops   sync.WaitGroup
	runs    sync.WaitGroup // runs started by RunNow
}

type entry struct {
	Job
	sched   cron.Schedule
	running atomic.Bool // a local run is in progress in this process

	mu   sync.Mutex
	next time.Time
}

func (e *entry) setNext(t time.Time) {
	e.mu.Lock()
	e.next = t
	e.mu.Unlock()
}

func (e *entry) getNext() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.next
}

// ParseSpec reads a job spec as the scheduler does: "@every <duration>"
// in whole seconds, a descriptor such as @daily, or a 5-field cron spec
// (robfig/cron's standard parser). A spec naming its own time zone (TZ= or
// CRON_TZ=) is refused: the schedule's Location is the zone of every job.
func ParseSpec(spec string) (cron.Schedule, error) {
	if strings.Contains(spec, "TZ=") {
		return nil, fmt.Errorf("a job spec takes no time zone, the schedule's location is its zone; got %q", spec)
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		// robfig/cron would round a shorter or fractional interval up
		// silently, and a negative one to 1s.
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur < time.Second || dur%time.Second != 0 {
			return nil, fmt.Errorf("@every needs a whole number of seconds, at least 1s, like 30s or 5m; got %q", d)
		}
		return cron.Every(dur), nil
	}
	return cron.ParseStandard(spec)
}

// New makes a scheduler for jobs. Runs get contexts derived from ctx.
func New(ctx context.Context, jobs []Job, opt Options) (*Scheduler, error) {
	s := &Scheduler{store: opt.Store, instance: opt.Instance, loc: opt.Location, lease: opt.Lease,
		timeout: opt.Timeout, grace: opt.Grace, log: opt.Log, byName: map[string]*entry{}, stop: make(chan struct{})}
	if s.loc == nil {
		s.loc = time.UTC
	}
	if s.lease <= 0 {
		s.lease = DefaultLease
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	if s.grace <= 0 {
		s.grace = DefaultGrace
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.instance == "" {
		s.instance = "unhold"
	}
	for _, j := range jobs {
		if j.Name == "" || j.Run == nil {
			return nil, fmt.Errorf("job %q: a job needs a name and a Run function", j.Name)
		}
		if _, dup := s.byName[j.Name]; dup {
			return nil, fmt.Errorf("job %s is listed twice", j.Name)
		}
		sched, err := ParseSpec(j.Spec)
		if err != nil {
			return nil, fmt.Errorf("job %s: schedule %q: %w", j.Name, j.Spec, err)
		}
		if s.store == nil {
			j.Local = true
		}
		e := &entry{Job: j, sched: sched}
		s.entries = append(s.entries, e)
		s.byName[j.Name] = e
	}
	s.runCtx, s.cancelRun = context.WithCancel(ctx)
	return s, nil
}

// Start starts every job's loop.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	for _, e := range s.entries {
		s.loops.Add(1)
		go s.loop(e)
	}
}

// Stop stops ticking and waits for running jobs; jobs still running after
// the grace period have their context cancelled, and Stop waits for them
// to return. Each records its run and releases its lease.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	close(s.stop)
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.loops.Wait()
		s.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(s.grace):
		s.log.Warn("jobs still running at shutdown: cancelling them", slog.Duration("grace", s.grace))
		s.cancelRun()
		<-done
	}
	s.cancelRun()
	for _, e := range s.entries {
		e.setNext(time.Time{})
	}
}

// Instance is this process's name on leases and runs.
func (s *Scheduler) Instance() string { return s.instance }

// Location is the time zone the specs are read in.
func (s *Scheduler) Location() *time.Location { return s.loc }

// Lease is how long a job's lease lasts between renewals.
func (s *Scheduler) Lease() time.Duration { return s.lease }

// Jobs lists the jobs in the order they were given, with the next tick of
// each in this process.
func (s *Scheduler) Jobs() []JobInfo {
	s.mu.Lock()
	started, stopped := s.started, s.stopped
	s.mu.Unlock()
	now := time.Now().In(s.loc)
	out := make([]JobInfo, len(s.entries))
	for i, e := range s.entries {
		info := JobInfo{Name: e.Name, Spec: e.Spec, Local: e.Local, Timeout: s.timeoutOf(e)}
		switch next := e.getNext(); {
		case stopped:
		case started && next.After(now):
			info.Next = next
		default:
			// Not started, or the tick is running: the loop's next tick
			// is the schedule's next time after now.
			info.Next = e.sched.Next(now)
		}
		out[i] = info
	}
	return out
}

func (s *Scheduler) timeoutOf(e *entry) time.Duration {
	if e.Timeout > 0 {
		return e.Timeout
	}
	return s.timeout
}

// loop runs one job on its schedule until Stop.
func (s *Scheduler) loop(e *entry) {
	defer s.loops.Done()
	for {
		now := time.Now().In(s.loc)
		slot := e.sched.Next(now)
		if slot.IsZero() {
			e.setNext(time.Time{})
			return // a spec that never fires again
		}
		e.setNext(slot)
		// The timer runs on the monotonic clock; wait again if the wall
		// clock has not reached the slot yet, so the run is never early.
		for d := time.Until(slot); d > 0; d = time.Until(slot) {
			t := time.NewTimer(d)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		select {
		case <-s.stop:
			return
		default:
		}
		s.runScheduled(e, slot)
	}
}

// RunNow runs a job at once, outside its schedule, on behalf of actor (who
// is audited): through the same lease as a scheduled run, in the
// background. It returns once the run has started, or a *RunningError when
// another run holds the job, or ErrUnknownJob.
func (s *Scheduler) RunNow(ctx context.Context, name, actor string) error {
	e := s.byName[name]
	if e == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return ErrStopped
	}
	s.runs.Add(1) // before Stop can wait; given back unless a run starts
	s.mu.Unlock()
	started := false
	defer func() {
		if !started {
			s.runs.Done()
		}
	}()
	audit := models.AuditEntry{Actor: actor, Action: "job_run_now", Target: "job:" + name, Outcome: "started"}
	if e.Local {
		if !e.running.CompareAndSwap(false, true) {
			return &RunningError{Job: name, Owner: s.instance}
		}
		if s.store != nil {
			if err := s.store.RecordAudit(ctx, audit); err != nil {
				e.running.Store(false)
				return err
			}
		}
		started = true
		go func() {
			defer s.runs.Done()
			defer e.running.Store(false)
			s.runLocal(e, actor)
		}()
		return nil
	}
	// Not the caller's context: a claim committed while the request was
	// cancelled would hold the lease with nothing running.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer ccancel()
	take, err := s.store.ClaimJob(cctx, models.JobClaim{Name: name, Owner: s.instance, TriggeredBy: actor, Lease: s.lease, Audit: &audit})
	if err != nil {
		return err
	}
	if !take.Taken() {
		h := take.Held
		audit.Outcome = "already_running"
		audit.Detail = fmt.Sprintf("held by %s (%s) since %s", h.Owner, h.TriggeredBy, h.TakenAt.UTC().Format(time.RFC3339))
		if err := s.store.RecordAudit(ctx, audit); err != nil {
			return err
		}
		return &RunningError{Job: name, Owner: h.Owner, TriggeredBy: h.TriggeredBy, Since: h.TakenAt}
	}
	s.logTake(e, take)
	started = true
	go func() {
		defer s.runs.Done()
		s.runHeld(e, take, actor)
	}()
	return nil
}
