package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The cron jobs' shared state: one lease row per job in job_locks, so one
// instance at a time runs a job however many share the database, and the
// record of runs in job_runs. A lease row rather than a PostgreSQL advisory
// lock: it works the same on SQLite, it needs no connection pinned for the
// length of a run, it names its holder for the Jobs page, and it expires by
// itself when its holder dies.

// JobTriggerCron is the TriggeredBy of a scheduled run; an operator's run
// carries the operator's name.
const JobTriggerCron = "cron"

// JobOutcome is how a recorded job run ended.
type JobOutcome string

// Job outcomes.
const (
	JobOK      JobOutcome = "OK"
	JobFailed  JobOutcome = "FAILED"
	JobSkipped JobOutcome = "SKIPPED" // due, but an earlier run still held the job
)

// ErrJobLockLost means a job's lease is no longer the caller's: it ran out
// and another instance took the job.
var ErrJobLockLost = errors.New("job lease lost: another instance holds the job")

// JobLock is a job's lease row. Token is empty while the job is free.
type JobLock struct {
	Name        string     `gorm:"primaryKey" json:"name"`
	Owner       string     `json:"owner"` // the instance holding it, or that held it last
	Token       string     `json:"-"`
	TriggeredBy string     `json:"triggered_by"`
	LeaseUntil  time.Time  `json:"lease_until"`
	TakenAt     time.Time  `json:"taken_at"` // when the current or last run started
	ReleasedAt  *time.Time `json:"released_at,omitempty"`
	NextDue     *time.Time `json:"next_due,omitempty"` // first scheduled time no instance has claimed
	SkipNoted   string     `json:"-"`
}

// TableName is the lease table.
func (JobLock) TableName() string { return "job_locks" }

// Running tells whether a run holds the job at now.
func (l JobLock) Running(now time.Time) bool { return l.Token != "" && now.Before(l.LeaseUntil) }

// Abandoned tells whether the holder's lease ran out before it released
// the job: its instance stopped or hung mid-run.
func (l JobLock) Abandoned(now time.Time) bool { return l.Token != "" && !now.Before(l.LeaseUntil) }

// due tells whether a scheduled slot is still unclaimed.
func (l JobLock) due(slot time.Time) bool { return l.NextDue == nil || !l.NextDue.After(slot) }

// JobRun is one recorded run of a job.
type JobRun struct {
	ID          int64      `json:"id"`
	Job         string     `json:"job"`
	Instance    string     `json:"instance"`
	TriggeredBy string     `json:"triggered_by"`
	Outcome     JobOutcome `json:"outcome"`
	Summary     string     `json:"summary,omitempty"`
	Detail      string     `json:"detail,omitempty"`
	Error       string     `json:"error,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  time.Time  `json:"finished_at"`
}

// TableName is the run table.
func (JobRun) TableName() string { return "job_runs" }

// Duration is how long the run took.
func (r JobRun) Duration() time.Duration { return r.FinishedAt.Sub(r.StartedAt) }

// JobClaim asks for a job's lease.
type JobClaim struct {
	Name        string
	Owner       string // this instance
	TriggeredBy string // JobTriggerCron or the operator
	Lease       time.Duration
	// Slot is the scheduled time a cron run serves, nil for an operator's
	// run. A slot runs once: the claim that takes it moves the row's
	// next_due to NextDue, and a later claim for the same slot (another
	// instance ticking at the same time) finds it not due.
	Slot    *time.Time
	NextDue time.Time
	// Audit, when set, is written in the transaction that takes the lease.
	Audit *AuditEntry
}

// JobTake is what a claim got. Exactly one of Token (taken), Held and
// NotDue is set.
type JobTake struct {
	Token     string    // the lease's token, for renewing and releasing it
	StartedAt time.Time // when the lease was taken
	Held      *JobLock  // the run that holds the job
	NotDue    bool      // the slot was already claimed by another instance
	// Skipped is the SKIPPED run recorded because the slot was due while
	// Held ran; it is recorded once per holding run.
	Skipped *JobRun
	// Abandoned is the run of a holder whose lease ran out without a
	// release, recorded as FAILED when this claim replaced it.
	Abandoned *JobRun
}

// Taken tells whether the claim got the lease.
func (t JobTake) Taken() bool { return t.Token != "" }

// ClaimJob takes a job's lease when the job is free (or its holder's lease
// ran out) and, for a scheduled run, when the slot is still due; all in one
// write transaction, so of several instances claiming at once exactly one
// gets it.
func (s *Store) ClaimJob(ctx context.Context, c JobClaim) (JobTake, error) {
	var out JobTake
	err := s.write(ctx, func(tx *gorm.DB) error {
		out = JobTake{}
		now := s.Now()
		token := newToken()
		var nextDue *time.Time
		if c.Slot != nil {
			nd := c.NextDue.UTC()
			nextDue = &nd
		}
		// Writing first makes the row exist and, on SQLite, takes the write
		// lock before anything is read (the driver opens every transaction
		// DEFERRED; a read first would fail with SQLITE_BUSY_SNAPSHOT when
		// another process wrote in between). A new row is a free job.
		err := tx.Exec(`INSERT INTO job_locks (name, lease_until, taken_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			c.Name, now, now).Error
		if err != nil {
			return err
		}
		var l JobLock
		if err := tx.Raw(`SELECT * FROM job_locks WHERE name = ?`+s.forUpdate(), c.Name).Scan(&l).Error; err != nil {
			return err
		}
		if l.Running(now) {
			out.Held = &l
			if c.Slot == nil || !l.due(*c.Slot) || l.SkipNoted == l.Token {
				return nil
			}
			res := tx.Exec(`UPDATE job_locks SET skip_noted = token WHERE name = ? AND token = ?`, c.Name, l.Token)
			if res.Error != nil {
				return res.Error
			}
			if res.RowsAffected != 1 {
				return nil
			}
			run := JobRun{Job: c.Name, Instance: c.Owner, TriggeredBy: c.TriggeredBy, Outcome: JobSkipped,
				Summary: fmt.Sprintf("the run started at %s on %s (%s) still held the job at %s",
					stamp(l.TakenAt), l.Owner, l.TriggeredBy, stamp(*c.Slot)),
				StartedAt: now, FinishedAt: now}
			if err := tx.Create(&run).Error; err != nil {
				return err
			}
			out.Skipped = &run
			return nil
		}
		if c.Slot != nil && !l.due(*c.Slot) {
			out.NotDue = true
			return nil
		}
		if l.Abandoned(now) {
			run := JobRun{Job: c.Name, Instance: l.Owner, TriggeredBy: l.TriggeredBy, Outcome: JobFailed,
				Error: fmt.Sprintf("instance %s stopped or hung mid-run: its lease ran out at %s without a release; %s took the job over",
					l.Owner, stamp(l.LeaseUntil), c.Owner),
				StartedAt: l.TakenAt, FinishedAt: l.LeaseUntil}
			if err := tx.Create(&run).Error; err != nil {
				return err
			}
			out.Abandoned = &run
		}
		if nextDue == nil {
			nextDue = l.NextDue
		}
		res := tx.Exec(`UPDATE job_locks SET owner = ?, token = ?, triggered_by = ?, lease_until = ?, taken_at = ?,
			released_at = NULL, next_due = ?, skip_noted = '' WHERE name = ? AND token = ?`,
			c.Owner, token, c.TriggeredBy, now.Add(c.Lease), now, nextDue, c.Name, l.Token)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return fmt.Errorf("job lease row %s changed under its row lock", c.Name)
		}
		out.Token, out.StartedAt = token, now
		return auditIn(tx, c.Audit, now)
	})
	if err != nil {
		return JobTake{}, fmt.Errorf("claim job %s: %w", c.Name, err)
	}
	return out, nil
}

func auditIn(tx *gorm.DB, a *AuditEntry, now time.Time) error {
	if a == nil {
		return nil
	}
	e := *a
	e.CreatedAt = now
	return tx.Create(&e).Error
}

// stamp is a time in run texts.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// RenewJobLock extends a held lease to now + lease; ErrJobLockLost when the
// token no longer holds the job.
func (s *Store) RenewJobLock(ctx context.Context, name, token string, lease time.Duration) error {
	res := s.W.WithContext(ctx).Exec(`UPDATE job_locks SET lease_until = ? WHERE name = ? AND token = ?`,
		s.Now().Add(lease), name, token)
	if res.Error != nil {
		return fmt.Errorf("renew job lease %s: %w", name, res.Error)
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("renew job lease %s: %w", name, ErrJobLockLost)
	}
	return nil
}

// FinishJob releases the lease held with token and, when record is set,
// records run, in one transaction. A lease that was no longer the run's is
// recorded whatever record says, as FAILED: another instance may have run
// the job meanwhile. It returns the run as recorded (ID 0 when it was not)
// and whether the lease was lost.
func (s *Store) FinishJob(ctx context.Context, token string, run JobRun, record bool) (JobRun, bool, error) {
	var lost bool
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		res := tx.Exec(`UPDATE job_locks SET token = '', lease_until = ?, released_at = ? WHERE name = ? AND token = ?`,
			now, now, run.Job, token)
		if res.Error != nil {
			return res.Error
		}
		lost = res.RowsAffected == 0
		if lost {
			run.Outcome, record = JobFailed, true
			note := "the job's lease ran out before the run finished: another instance may have run it meanwhile"
			if run.Error != "" {
				note = run.Error + "; " + note
			}
			run.Error = note
		}
		if !record {
			return nil
		}
		run.ID = 0
		return tx.Create(&run).Error
	})
	if err != nil {
		return JobRun{}, false, fmt.Errorf("finish job %s: %w", run.Job, err)
	}
	return run, lost, nil
}

// RecordAudit writes one audit row.
func (s *Store) RecordAudit(ctx context.Context, e AuditEntry) error {
	e.ID = 0
	e.CreatedAt = s.Now()
	if err := s.W.WithContext(ctx).Create(&e).Error; err != nil {
		return fmt.Errorf("audit %s %s: %w", e.Action, e.Target, err)
	}
	return nil
}

// JobLocks reads every job's lease row, by name; there is one per job.
func (s *Store) JobLocks(ctx context.Context) ([]JobLock, error) {
	var out []JobLock
	if err := s.R.WithContext(ctx).Order("name").Find(&out).Error; err != nil {
		return nil, fmt.Errorf("job locks: %w", err)
	}
	return out, nil
}

// JobRunPage is one page of a job's runs, newest first; Next is the id the
// next page starts below, 0 on the last page.
type JobRunPage struct {
	Runs []JobRun
	Next int64
}

// JobRuns reads one page of a job's recorded runs below the id before (0:
// from the newest), through the index (job, id).
func (s *Store) JobRuns(ctx context.Context, job string, before int64, limit int) (JobRunPage, error) {
	limit = pageLimit(limit)
	var runs []JobRun
	err := s.R.WithContext(ctx).Raw(`SELECT * FROM job_runs WHERE job = ? AND id < ? ORDER BY id DESC LIMIT ?`,
		job, below(before), limit+1).Scan(&runs).Error
	if err != nil {
		return JobRunPage{}, fmt.Errorf("runs of job %s: %w", job, err)
	}
	var page JobRunPage
	if len(runs) > limit {
		runs = runs[:limit]
		page.Next = runs[limit-1].ID
	}
	page.Runs = runs
	return page, nil
}

// DeleteOldAttempts deletes up to limit attempts that finished before
// before and whose task is finished (DONE or SUPERSEDED), oldest first, in
// one short transaction, and returns how many it deleted. Attempts of
// tasks still open (PENDING, RETRY, MANUAL) stay whatever their age: ops
// need them. task_attempts is a log of tries, not a ledger. The attempts
// are read oldest first through their finished_at index, each task looked
// up by its key: written as EXISTS so that no engine starts from the
// (large) set of DONE tasks instead.
func (s *Store) DeleteOldAttempts(ctx context.Context, before time.Time, limit int) (int64, error) {
	res := s.W.WithContext(ctx).Exec(`DELETE FROM task_attempts WHERE id IN (
		SELECT a.id FROM task_attempts a
		WHERE a.finished_at < ? AND EXISTS (
			SELECT 1 FROM release_tasks t WHERE t.id = a.task_id AND t.status IN ('DONE','SUPERSEDED'))
		ORDER BY a.finished_at LIMIT ?)`, before.UTC(), limit)
	if res.Error != nil {
		return 0, fmt.Errorf("delete old attempts: %w", res.Error)
	}
	return res.RowsAffected, nil
}

// DeleteOldJobRuns deletes up to limit recorded job runs that started
// before before, oldest first.
func (s *Store) DeleteOldJobRuns(ctx context.Context, before time.Time, limit int) (int64, error) {
	res := s.W.WithContext(ctx).Exec(`DELETE FROM job_runs WHERE id IN (
		SELECT id FROM job_runs WHERE started_at < ? ORDER BY started_at LIMIT ?)`, before.UTC(), limit)
	if res.Error != nil {
		return 0, fmt.Errorf("delete old job runs: %w", res.Error)
	}
	return res.RowsAffected, nil
}
