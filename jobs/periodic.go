package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"unhold/auth"
	"unhold/models"
)

// Job names, stable: they key job_locks and job_runs and the Jobs page.
const (
	JobReleaseSweep   = "release_sweep"
	JobLeaseRescue    = "lease_rescue"
	JobTimeoutClose   = "timeout_close"
	JobReconcile      = "reconcile"
	JobLedgerReport   = "ledger_report"
	JobAttemptCleanup = "attempt_cleanup"
	JobBackup         = "backup"
)

// Schedule defaults, used for zero fields of Schedule.
const (
	DefaultSweep            = 2 * time.Second
	DefaultTimeoutClose     = 10 * time.Second
	DefaultLeaseRescue      = 30 * time.Second
	DefaultReconcileAt      = "03:00"
	DefaultLedgerReport     = "5 0 * * *"  // 00:05: yesterday's ledgers are complete
	DefaultCleanup          = "30 4 * * *" // 04:30: after reconciliation, before the day's traffic
	DefaultAttemptRetention = 90 * 24 * time.Hour
	DefaultBackup           = "15 3 * * *" // 03:15: after reconciliation, before the cleanup
	DefaultBackupKeep       = 7
	DefaultEventsKeep       = 7 * 24 * time.Hour // events kept for pollers (-events-keep)
)

// Bounds of the work of one run.
const (
	closePage    = 200 // unpaid orders closed per transaction of the timeout close
	cleanupBatch = 500 // rows deleted per cleanup transaction: a short hold of SQLite's one writer
)

// Deps is what the periodic jobs work on.
type Deps struct {
	Store *models.Store
	// Auth is the accounts whose ended sessions and spent login throttles
	// the cleanup deletes; nil is one on Store with the default policies.
	Auth *auth.Store
	// Worker is woken by the sweep and after timeout closes; nil leaves the
	// sweep out.
	Worker *Worker
	// Reconcile runs one reconciliation and says what it found; nil leaves
	// the reconciliation job out.
	Reconcile func(ctx context.Context) (summary string, err error)
	Log       *slog.Logger
}

// Schedule says when each job runs, in Location; zero fields take the
// defaults above.
type Schedule struct {
	Sweep, TimeoutClose, LeaseRescue time.Duration
	// ReconcileAt is the daily time of reconciliation, "HH:MM".
	ReconcileAt string
	// LedgerReport and Cleanup are "@every <duration>" or 5-field cron specs.
	LedgerReport, Cleanup string
	// AttemptRetention is how long attempts of finished tasks (and
	// recorded job runs) are kept.
	AttemptRetention time.Duration
	// EventsKeep is how long events are kept for pollers.
	EventsKeep time.Duration
	// BackupDir, when set, is where the backup job writes copies of the
	// SQLite database, on the Backup spec, keeping the BackupKeep newest.
	BackupDir  string
	Backup     string
	BackupKeep int
	// Location is the time zone of the specs and of the ledger report's
	// days; nil is UTC.
	Location *time.Location
}

func (sc Schedule) withDefaults() Schedule {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&sc.Sweep, DefaultSweep)
	def(&sc.TimeoutClose, DefaultTimeoutClose)
	def(&sc.LeaseRescue, DefaultLeaseRescue)
	def(&sc.AttemptRetention, DefaultAttemptRetention)
	def(&sc.EventsKeep, DefaultEventsKeep)
	if sc.ReconcileAt == "" {
		sc.ReconcileAt = DefaultReconcileAt
	}
	if sc.LedgerReport == "" {
		sc.LedgerReport = DefaultLedgerReport
	}
	if sc.Cleanup == "" {
		sc.Cleanup = DefaultCleanup
	}
	if sc.Backup == "" {
		sc.Backup = DefaultBackup
	}
	if sc.BackupKeep <= 0 {
		sc.BackupKeep = DefaultBackupKeep
	}
	if sc.Location == nil {
		sc.Location = time.UTC
	}
	return sc
}

// every is the spec of a fixed interval.
func every(d time.Duration) string { return "@every " + d.String() }

// ParseClock reads a time of day "HH:MM", from 00:00 to 23:59; the hour
// may have one digit.
func ParseClock(hhmm string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(hhmm, ":")
	hour, herr := strconv.Atoi(h)
	minute, merr := strconv.Atoi(m)
	if !ok || herr != nil || merr != nil || len(h) < 1 || len(h) > 2 || len(m) != 2 ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 {
		return 0, 0, fmt.Errorf("a time of day must be HH:MM from 00:00 to 23:59, got %q", hhmm)
	}
	return hour, minute, nil
}

// DailyAt is the cron spec of a daily time "HH:MM" (see ParseClock).
func DailyAt(hhmm string) (string, error) {
	hour, minute, err := ParseClock(hhmm)
	if err != nil {
		return "", fmt.Errorf("daily time: %w", err)
	}
	return fmt.Sprintf("%d %d * * *", minute, hour), nil
}

// List is every periodic job with its schedule, in one place:
//
//   - release_sweep: wakes this process's worker (per process, unlocked,
//     unrecorded);
//   - lease_rescue: counts each task lease that expired without an
//     outcome as a CRASHED try and frees the task;
//   - timeout_close: closes unpaid orders past their deadline;
//   - reconcile: daily reconciliation, at ReconcileAt;
//   - ledger_report: yesterday's ledger totals, shortly after midnight;
//   - attempt_cleanup: deletes old attempts of finished tasks, old job runs,
//     old events, ended sessions and spent login throttles;
//   - backup: with BackupDir, a copy of the SQLite database there, the
//     BackupKeep newest kept.
//
// Every job but the sweep runs on one instance at a time.
func List(d Deps, sc Schedule) ([]Job, error) {
	sc = sc.withDefaults()
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, w, a := d.Store, d.Worker, d.Auth
	if a == nil {
		a = auth.New(s, auth.Options{Logger: log})
	}
	wake := func() {
		if w != nil {
			w.Wake()
		}
	}
	var jobs []Job
	if w != nil {
		jobs = append(jobs, Job{Name: JobReleaseSweep, Spec: every(sc.Sweep), Local: true,
			Run: func(context.Context) (string, error) {
				w.Wake()
				return "", nil
			}})
	}
	jobs = append(jobs,
		Job{Name: JobLeaseRescue, Spec: every(sc.LeaseRescue), Run: func(ctx context.Context) (string, error) {
			n, err := s.RescueLeases(ctx)
			if n == 0 {
				return "", err
			}
			return fmt.Sprintf("counted %d crashed tries (leases expired without an outcome)", n), err
		}},
		Job{Name: JobTimeoutClose, Spec: every(sc.TimeoutClose), Run: func(ctx context.Context) (string, error) {
			return CloseExpired(ctx, s, wake)
		}},
	)
	if d.Reconcile != nil {
		spec, err := DailyAt(sc.ReconcileAt)
		if err != nil {
			return nil, fmt.Errorf("reconcile: %w", err)
		}
		jobs = append(jobs, Job{Name: JobReconcile, Spec: spec, Timeout: 10 * time.Minute, Run: d.Reconcile})
	}
	jobs = append(jobs,
		Job{Name: JobLedgerReport, Spec: sc.LedgerReport, Timeout: 5 * time.Minute,
			Run: func(ctx context.Context) (string, error) { return LedgerReport(ctx, s, sc.Location, log) }},
		Job{Name: JobAttemptCleanup, Spec: sc.Cleanup, Timeout: 10 * time.Minute,
			Run: func(ctx context.Context) (string, error) {
				return CleanupAttempts(ctx, s, a, sc.AttemptRetention, sc.EventsKeep)
			}},
	)
	if sc.BackupDir != "" {
		jobs = append(jobs, Job{Name: JobBackup, Spec: sc.Backup, Timeout: 30 * time.Minute,
			Run: func(ctx context.Context) (string, error) { return Backup(ctx, s, sc.BackupDir, sc.BackupKeep) }})
	}
	return jobs, nil
}

// CloseExpired closes unpaid orders past their deadline a page of closePage
// per transaction, page after page until none is due or the run's ctx ends,
// and wakes the worker after each page, so a flash sale's expired orders
// start releasing while the rest are still being closed.
func CloseExpired(ctx context.Context, s *models.Store, wake func()) (string, error) {
	var closed, pages int
	var err error
	for ctx.Err() == nil {
		var page []string
		page, err = s.CloseExpired(ctx, closePage)
		if len(page) == 0 {
			break
		}
		closed += len(page)
		pages++
		wake()
	}
	if err == nil {
		err = ctx.Err() // cut short by the run's bound: the next run goes on
	}
	if closed == 0 {
		return "", err
	}
	return fmt.Sprintf("closed %d unpaid orders past their deadline, %d pages", closed, pages), err
}

// LedgerReport totals yesterday's ledger rows (the day before the store's
// today in loc) by resource, cost bearer and type, logs the totals and
// returns them as a run summary: one line of rows per resource, then one
// line per total.
func LedgerReport(ctx context.Context, s *models.Store, loc *time.Location, log *slog.Logger) (string, error) {
	now := s.Now().In(loc)
	to := models.DayStart(now.Year(), now.Month(), now.Day(), loc)
	from := models.DayStart(now.Year(), now.Month(), now.Day()-1, loc)
	totals, err := s.LedgerTotals(ctx, from, to)
	if err != nil {
		return "", err
	}
	types := s.Types()
	order := func(r models.ResourceType) int { return slices.Index(types, r) }
	slices.SortFunc(totals, func(a, b models.LedgerTotal) int {
		if c := order(a.Resource) - order(b.Resource); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.Owner), string(b.Owner)); c != 0 {
			return c
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
	day := from.Format("2006-01-02")
	var rows int64
	byResource := map[models.ResourceType]int64{}
	var detail strings.Builder
	for _, t := range totals {
		rows += t.Rows
		byResource[t.Resource] += t.Rows
		name := string(t.Resource)
		if t.Owner != "" {
			name += " " + string(t.Owner)
		}
		fmt.Fprintf(&detail, "\n%s %s: %d rows, qty %d", name, t.Type, t.Rows, t.Qty)
	}
	var parts []string
	for _, r := range types {
		if n := byResource[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	summary := fmt.Sprintf("%s (%s): %d ledger rows", day, loc, rows)
	if len(parts) > 0 {
		summary += " — " + strings.Join(parts, ", ")
	}
	log.Info("daily ledger report", slog.String("day", day), slog.String("tz", loc.String()),
		slog.Int64("rows", rows), slog.Any("totals", totals))
	return summary + detail.String(), nil
}

// CleanupAttempts deletes, in batches of cleanupBatch rows each in its own
// short transaction, the attempts of finished (DONE, SUPERSEDED) tasks and
// the recorded job runs older than retention; the webhook deliveries
// delivered over models.WebhookDeliveredKeep ago; then the overview's
// per-minute rollups older than models.RollupRetention (whatever the
// attempts' retention: the overview reads no further back), the events
// older than eventsKeep (models.DeleteOldEvents), the sessions
// past their end and the login throttles whose window and lock are over. Ledgers and
// the audit log are never touched: they are append-only.
func CleanupAttempts(ctx context.Context, s *models.Store, a *auth.Store, retention, eventsKeep time.Duration) (string, error) {
	cutoff := s.Now().Add(-retention)
	// Each table is pruned even when the other could not be.
	attempts, aerr := drainBefore(ctx, s.DeleteOldAttempts, cutoff)
	runs, rerr := drainBefore(ctx, s.DeleteOldJobRuns, cutoff)
	deliveredCutoff := s.Now().Add(-models.WebhookDeliveredKeep)
	delivered, derr := drainBefore(ctx, s.DeleteOldDeliveries, deliveredCutoff)
	rollupCutoff := s.Now().Add(-models.RollupRetention)
	rollups, uerr := s.DeleteOldRollups(ctx, rollupCutoff)
	eventsCutoff := s.Now().Add(-eventsKeep)
	events, eerr := s.DeleteOldEvents(ctx, eventsCutoff)
	sessions, serr := a.PruneSessions(ctx, s.Now())
	err := errors.Join(aerr, rerr, derr, uerr, eerr, serr)
	return fmt.Sprintf("deleted %d attempts of finished tasks and %d job runs from before %s (kept %s), %d webhook deliveries delivered before %s, %d overview rollup rows from before %s, %d events from before %s (kept %s); %d ended sessions and login throttles",
		attempts, runs, cutoff.Format("2006-01-02 15:04Z"), retentionText(retention), delivered, deliveredCutoff.Format("2006-01-02 15:04Z"),
		rollups, rollupCutoff.Format("2006-01-02 15:04Z"), events, eventsCutoff.Format("2006-01-02 15:04Z"), retentionText(eventsKeep), sessions), err
}

// drainBefore runs del on rows before cutoff, cleanupBatch at a time in
// transactions of their own, until a batch comes back short.
func drainBefore(ctx context.Context, del func(context.Context, time.Time, int) (int64, error), cutoff time.Time) (int64, error) {
	var total int64
	for ctx.Err() == nil {
		n, err := del(ctx, cutoff, cleanupBatch)
		total += n
		if err != nil || n < cleanupBatch {
			return total, err
		}
	}
	return total, ctx.Err()
}

func retentionText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
