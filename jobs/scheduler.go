package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
	"unhold/models"
)

// Job is one periodic job: a name, a cron spec, and its work.
type Job struct {
	Name string
	Spec string
	Run  func(ctx context.Context) error
}

// Schedule says how often each job runs.
type Schedule struct {
	Sweep, TimeoutClose, LeaseRescue time.Duration
}

// Jobs lists every periodic job in one place.
func Jobs(s *models.Store, w *Worker, sc Schedule, log *slog.Logger) []Job {
	every := func(d time.Duration) string { return "@every " + d.String() }
	return []Job{
		{Name: "release_sweep", Spec: every(sc.Sweep), Run: func(context.Context) error {
			w.Wake()
			return nil
		}},
		{Name: "timeout_close", Spec: every(sc.TimeoutClose), Run: func(ctx context.Context) error {
			closed, err := s.CloseExpired(ctx, 500)
			if len(closed) > 0 {
				log.Info("closed unpaid orders past their deadline", slog.Int("orders", len(closed)))
				w.Wake()
			}
			return err
		}},
		{Name: "lease_rescue", Spec: every(sc.LeaseRescue), Run: func(ctx context.Context) error {
			n, err := s.RescueLeases(ctx)
			if n > 0 {
				log.Warn("cleared expired leases", slog.Int64("tasks", n))
			}
			return err
		}},
	}
}

// Scheduler runs jobs on robfig/cron; a job still running is not started
// again, and a panic in one is recovered and logged.
type Scheduler struct {
	c   *cron.Cron
	log *slog.Logger
}

// NewScheduler registers jobs; each run gets ctx with a timeout.
func NewScheduler(ctx context.Context, jobs []Job, timeout time.Duration, log *slog.Logger) (*Scheduler, error) {
	cl := cronLogger{log}
	c := cron.New(cron.WithLogger(cl), cron.WithChain(cron.Recover(cl), cron.SkipIfStillRunning(cl)))
	for _, j := range jobs {
		_, err := c.AddFunc(j.Spec, func() {
			jctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if err := j.Run(jctx); err != nil {
				log.Error("job failed", slog.String("job", j.Name), slog.Any("err", err))
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return &Scheduler{c: c, log: log}, nil
}

// Start starts ticking.
func (s *Scheduler) Start() { s.c.Start() }

// Stop stops ticking and waits for running jobs.
func (s *Scheduler) Stop() { <-s.c.Stop().Done() }

type cronLogger struct{ log *slog.Logger }

func (l cronLogger) Info(string, ...any) {}

func (l cronLogger) Error(err error, msg string, kv ...any) {
	l.log.Error("cron: "+msg, append(kv, slog.Any("err", err))...)
}
