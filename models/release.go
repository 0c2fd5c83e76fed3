package models

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// ClaimTasks leases up to n due tasks to owner until now + lease. A task is
// due when it is PENDING or RETRY, its next_at has come, and no lease holds
// it. A lease that expired without an outcome is a try whose worker died:
// it is counted first, as a CRASHED failure (recordLostTries), so a task
// that kills its worker every time reaches MANUAL instead of being claimed
// for ever. On PostgreSQL, FOR UPDATE SKIP LOCKED lets several instances
// claim at once without waiting on each other or claiming the same task.
func (s *Store) ClaimTasks(ctx context.Context, owner string, n int, lease time.Duration) ([]ReleaseTask, error) {
	token := newToken()
	var tasks []ReleaseTask
	err := s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		if _, err := s.recordLostTries(tx, now, maxLostPerTx); err != nil {
			return err
		}
		// Only a task without a lease is claimed: one whose expired lease
		// another claim is counting right now is skipped, not taken uncounted.
		return tx.Raw(`UPDATE release_tasks
			SET lease_owner = ?, lease_token = ?, lease_until = ?, attempts = attempts + 1, updated_at = ?
			WHERE id IN (`+s.claimableSQL()+s.skipLocked()+`)
			RETURNING *`, owner, token, now.Add(lease), now, now, n).Scan(&tasks).Error
	})
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	return tasks, nil
}

// byteOrder makes an ORDER BY of a text column compare bytes, as Go's <
// does: PostgreSQL sorts by the database's collation (en_US puts "a-b"
// after "ab" and "B" after "a"), SQLite by bytes already.
func (s *Store) byteOrder() string {
	if s.Dialect == Postgres {
		return ` COLLATE "C"`
	}
	return ""
}

// claimableSQL picks the first n due tasks without a lease (arguments: now,
// n), in claim order. Its WHERE repeats the condition of the partial index
// release_tasks_claimable, which holds exactly those tasks in that order,
// so a claim reads its batch and stops, however long the backlog. SQLite's
// planner, without statistics, prefers (status, next_at) and sorts every
// due task; INDEXED BY holds it to the claimable index.
func (s *Store) claimableSQL() string {
	return `SELECT id FROM release_tasks` + s.indexedBy("release_tasks_claimable") + `
		WHERE status IN ('PENDING','RETRY') AND lease_until IS NULL AND next_at <= ?
		ORDER BY next_at, id LIMIT ?`
}

// indexedBy holds SQLite's planner to index for the table it follows:
// without statistics it may prefer another and read far more rows.
// PostgreSQL plans by its own statistics.
func (s *Store) indexedBy(index string) string {
	if s.Dialect == SQLite {
		return " INDEXED BY " + index
	}
	return ""
}

// skipLocked makes a locking read pass over rows another transaction holds.
func (s *Store) skipLocked() string {
	if s.Dialect == Postgres {
		return " FOR UPDATE SKIP LOCKED"
	}
	return ""
}

// maxLostPerTx bounds the lost tries one claim or rescue transaction
// counts: a killed process may leave pools × batch expired leases, and a
// claim that counted them all could outlast its own timeout and count
// none. The rest are counted by the next claims.
const maxLostPerTx = 200

// recordLostTries counts up to limit tries whose lease expired without an
// outcome as CRASHED failures of their worker, with an attempt row. Every outcome
// clears lease_until (DONE, a recorded failure, ReturnLease handing an
// untried task back), so a waiting task whose lease is set and past was
// claimed by a worker that never came back. The retry wait counts from the
// lease's end; the token is cleared, so a worker that was only slow can no
// longer finish the try it lost.
func (s *Store) recordLostTries(tx *gorm.DB, now time.Time, limit int) (int64, error) {
	var lost []ReleaseTask
	err := tx.Raw(s.expiredLeasesSQL()+s.skipLocked(), now, limit).Scan(&lost).Error
	if err != nil {
		return 0, fmt.Errorf("read expired leases: %w", err)
	}
	return s.countLostTries(tx, lost, now)
}

// expiredLeasesSQL reads up to n tasks whose lease expired before now
// (arguments: now, n). Its WHERE repeats the condition of the partial index
// release_tasks_leased, which holds only the leased tasks (a batch or a
// few per worker); SQLite's planner, without statistics, reads every
// PENDING task by status instead and looks its lease up in the table (a
// backlog of 100,000: a quarter of a draining worker's CPU, on every
// claim), so INDEXED BY holds it to the small index.
func (s *Store) expiredLeasesSQL() string {
	return `SELECT * FROM release_tasks` + s.indexedBy("release_tasks_leased") + `
		WHERE status IN ('PENDING','RETRY') AND lease_until IS NOT NULL AND lease_until <= ?
		ORDER BY id LIMIT ?`
}

// countLostTries counts, among tasks read under lock in tx, each try whose
// lease expired without an outcome (see recordLostTries), and returns how
// many it counted.
func (s *Store) countLostTries(tx *gorm.DB, tasks []ReleaseTask, now time.Time) (int64, error) {
	var n int64
	for _, t := range tasks {
		if (t.Status != TaskPending && t.Status != TaskRetry) || t.LeaseUntil == nil || t.LeaseUntil.After(now) {
			continue
		}
		ended := *t.LeaseUntil
		// The claim set updated_at; only a rerun writes a leased row since.
		started := t.UpdatedAt
		if started.After(ended) {
			started = ended
		}
		msg := fmt.Sprintf("lease expired without an outcome, worker %s", t.LeaseOwner)
		res, err := s.fail(tx, t, t.LeaseOwner, ClassCrashed, true, msg, started, ended, now)
		if err != nil {
			return n, fmt.Errorf("record lost try of task %d: %w", t.ID, err)
		}
		if res.Outcome != OutcomeLeaseLost {
			n++
		}
	}
	return n, nil
}

// rerunNote is what an attempt after a rerun keeps of it: who asked, and why.
func (t ReleaseTask) rerunNote() string {
	if t.RerunBy == "" {
		return ""
	}
	return "rerun by " + t.RerunBy + ": " + t.RerunReason
}

func newToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// OutcomeLeaseLost means the task was no longer this worker's to finish:
// its lease went to another worker, or it was done or superseded meanwhile.
const OutcomeLeaseLost = "LEASE_LOST"

// ReleaseResult is what one try of a task came to.
type ReleaseResult struct {
	Outcome string
	Class   ErrorClass
	Err     string
}

// ReleaseTask gives back what one claimed task names, as its lease holder.
// In one transaction: the task becomes DONE (only while the lease token is
// still ours), the ledger row is inserted (a conflict means it was already
// released: DONE, counted as DUPLICATE), the conditional update is applied,
// and the attempt is recorded. A failure is then classified: permanent ones
// (LOCKED_SHORT, STATE_MISMATCH, NOT_FOUND) go MANUAL at once, transient ones
// retry on the retry policy of the task's type and the failure's class.
func (s *Store) ReleaseTask(ctx context.Context, t ReleaseTask, worker string) (ReleaseResult, error) {
	if t.LeaseToken == "" {
		return ReleaseResult{}, fmt.Errorf("release task %d: it was not claimed", t.ID)
	}
	one := []ReleaseTask{t}
	failed, err := s.callRemotes(ctx, one, worker)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("release task %d: %w", t.ID, s.handBackStopped(ctx, one, err))
	}
	if res, ok := failed[0]; ok {
		return res, nil
	}
	t = one[0]
	start := s.Now()
	var outcome string
	err = s.write(ctx, func(tx *gorm.DB) error {
		var err error
		outcome, err = s.releaseIn(tx, t, worker, start)
		return err
	})
	if errors.Is(err, errLeaseLost) {
		return ReleaseResult{Outcome: OutcomeLeaseLost}, nil
	}
	if err == nil {
		return ReleaseResult{Outcome: outcome}, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// The process is stopping: the try rolled back unfinished, whatever
		// error the driver made of the cancellation, and that is no failure
		// of the task. Handed back, it is due again at once.
		return ReleaseResult{}, fmt.Errorf("release task %d: %w", t.ID, s.handBackStopped(ctx, one, err))
	}
	res, ferr := s.recordFailure(ctx, t, worker, start, err)
	if ferr != nil {
		return res, fmt.Errorf("release task %d: %w (recording failure: %v)", t.ID, err, ferr)
	}
	return res, nil
}

// releaseIn is one try of claimed task t inside tx: the fenced DONE update,
// the resource's ledger insert and conditional update, the attempt row. It
// returns DONE or DUPLICATE, errLeaseLost when the task is no longer this
// lease's, or the release's error.
func (s *Store) releaseIn(tx *gorm.DB, t ReleaseTask, worker string, start time.Time) (string, error) {
	now := s.Now()
	done, err := fenceDone(tx, []int64{t.ID}, t.LeaseToken, now)
	if err != nil {
		return "", err
	}
	if len(done) == 0 {
		return "", errLeaseLost
	}
	row := done[t.ID]
	outcome, released, err := s.applyRelease(tx, t, row, worker, now)
	if err != nil {
		return "", err
	}
	if released {
		if err := emitEvents(tx, []newEvent{taskReleased(t, row.Trigger, now)}); err != nil {
			return "", err
		}
	}
	err = insertAttempt(tx, TaskAttempt{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, Worker: worker,
		Outcome: outcome, Note: row.rerunNote(), StartedAt: start, FinishedAt: s.Now()})
	return outcome, err
}

// fenceDone marks DONE the tasks of ids still leased with token and returns
// them by id, with the trigger and rerun note of each row as it was fenced,
// not of the claimed copy: a rerun may have committed since the claim.
func fenceDone(tx *gorm.DB, ids []int64, token string, now time.Time) (map[int64]ReleaseTask, error) {
	var fenced []struct {
		ID          int64
		Trigger     Trigger `gorm:"column:trigger_type"`
		RerunBy     string
		RerunReason string
	}
	err := tx.Raw(`UPDATE release_tasks SET status = 'DONE', done_at = ?, updated_at = ?, last_error = '', error_class = '',
		last_error_class = '', lease_until = NULL WHERE id IN ? AND lease_token = ? AND status IN ('PENDING','RETRY')
		RETURNING id, trigger_type, rerun_by, rerun_reason`,
		now, now, ids, token).Scan(&fenced).Error
	if err != nil {
		return nil, err
	}
	rows := make(map[int64]ReleaseTask, len(fenced))
	for _, f := range fenced {
		rows[f.ID] = ReleaseTask{ID: f.ID, Trigger: f.Trigger, RerunBy: f.RerunBy, RerunReason: f.RerunReason}
	}
	return rows, nil
}

// applyRelease gives back what fenced task t holds (its ledger insert and
// guarded update; for a DEDUCT task of a remote type, it records the
// deduction) and returns DONE, or DUPLICATE when the ledger already has
// it or the service had done the call before; the FaultAfterLedger point
// follows. released tells whether it wrote a RELEASE ledger row, which is
// a hold.released event: so does a remote type's ALREADY_DONE answer
// recorded for the first time (we learn of the release then), not a row
// the ledger had already.
func (s *Store) applyRelease(tx *gorm.DB, t, fenced ReleaseTask, worker string, now time.Time) (outcome string, released bool, err error) {
	outcome = OutcomeDone
	err = s.apply(tx, t.ResourceType, releaseOp(t, fenced, worker, now))
	switch {
	case errors.Is(err, errDuplicate):
		outcome = OutcomeDuplicate
	case err != nil:
		return "", false, err
	default:
		released = t.Op == FlowRelease
		if t.answer != nil && t.answer.Duplicate {
			outcome = OutcomeDuplicate
		}
	}
	return outcome, released, s.afterLedger(t)
}

// releaseOp is the change a worker applies for claimed task t, as fenced
// (its trigger and rerun as they were when it was marked DONE): its
// RELEASE (or DEDUCT), with the service's answer when t's type is remote.
func releaseOp(t, fenced ReleaseTask, worker string, now time.Time) Op {
	return Op{Kind: t.Op, OrderNo: t.OrderNo, Key: t.BizKey, Qty: t.Qty, Trigger: fenced.Trigger,
		Actor: releaseActor(worker, t, fenced), Now: now, answer: t.answer}
}

// releaseActor is who a worker's ledger row names: the worker, and when it
// was not the task's first try, which try it was (an automatic retry);
// when the try before crashed (its lease ran out without an outcome, and
// the lease rescue sweep or the next claim counted it), that this try
// makes up for it; and an operator's rerun with who asked and why, so that
// the row alone tells how the release came about.
func releaseActor(worker string, claimed, fenced ReleaseTask) string {
	a := "worker:" + worker
	if claimed.Attempts > 1 {
		a += fmt.Sprintf(" · attempt %d", claimed.Attempts)
	}
	if claimed.LastErrorClass == ClassCrashed {
		a += " · after a crashed try"
	}
	if note := fenced.rerunNote(); note != "" {
		a += " · " + clip(note, 300)
	}
	return a
}

// callRemotes makes, outside any transaction, the service call of each
// task of a remote type among tasks that has no answer yet, remoteCalls at
// a time, and keeps each answer on its task (tasks[i]), so that recording
// it again — alone, when a batch did not commit — does not call again. The
// FaultAfterCall point follows each answered call, from the calling
// goroutine. A failed call is its task's failed try: the failures are
// recorded together (a retry, or MANUAL, each fenced by its lease), and
// their results returned by index, with LEASE_LOST for a task no longer
// this lease's, which is not called: a task whose failed call was recorded
// and which is then tried alone (its batch did not commit) is not sent a
// call that nothing would record. When ctx was cancelled (the process
// stopping), nothing is recorded and ctx's error is returned: a call that
// was answered is sent again, with the same key, by the next try.
func (s *Store) callRemotes(ctx context.Context, tasks []ReleaseTask, worker string) (map[int]ReleaseResult, error) {
	var idx []int
	for i, t := range tasks {
		if _, ok := s.remotes[t.ResourceType]; ok && t.answer == nil {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil, nil
	}
	failed := map[int]ReleaseResult{}
	idx, err := s.stillLeased(ctx, tasks, idx, failed)
	if err != nil || len(idx) == 0 {
		return failed, err
	}
	start := s.Now()
	cctx, cancel := s.callContext(ctx, tasks, idx, start)
	defer cancel()
	errs := make([]error, len(idx))
	sent := make([]bool, len(idx))
	each(len(idx), func(k int) {
		if cctx.Err() != nil {
			return
		}
		sent[k] = true
		t := &tasks[idx[k]]
		a, err := s.remotes[t.ResourceType].call(cctx, releaseOp(*t, *t, worker, start))
		if err == nil {
			err = s.fault(FaultAfterCall, *t)
		}
		if err != nil {
			errs[k] = err
			return
		}
		t.answer = a
	})
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}
	var unsent []ReleaseTask
	err = s.write(context.WithoutCancel(ctx), func(tx *gorm.DB) error {
		for k, cause := range errs {
			switch {
			case !sent[k]:
				unsent = append(unsent, tasks[idx[k]])
				failed[idx[k]] = ReleaseResult{Outcome: OutcomeHandedBack}
			case cause != nil:
				res, err := s.failIn(tx, tasks[idx[k]], worker, start, cause)
				if err != nil {
					return fmt.Errorf("task %d: %w (the call: %v)", tasks[idx[k]].ID, err, cause)
				}
				failed[idx[k]] = res
			}
		}
		return s.returnLeasesIn(tx, unsent)
	})
	if err != nil {
		return nil, fmt.Errorf("record failed calls: %w", err)
	}
	return failed, nil
}

// OutcomeHandedBack is a claimed task handed back untried: due again at
// once, neither an attempt nor a failure. A remote task whose call could
// not be sent while its lease left time to record the answer ends so.
const OutcomeHandedBack = "HANDED_BACK"

// callContext is the context of the calls of tasks[idx]: ctx's
// cancellation (the process stopping) but not its deadline, which bounds
// the transaction that records them; they are bounded instead by the
// earliest of their leases, less a quarter of what is left of it, kept for
// the record. A call not started by then is not sent (callRemotes hands
// its task back): a slow service costs no task a failed try for a call it
// never got.
func (s *Store) callContext(ctx context.Context, tasks []ReleaseTask, idx []int, now time.Time) (context.Context, context.CancelFunc) {
	var end time.Time
	for _, i := range idx {
		if l := tasks[i].LeaseUntil; l != nil && (end.IsZero() || l.Before(end)) {
			end = *l
		}
	}
	base := context.WithoutCancel(ctx)
	var cctx context.Context
	var cancel context.CancelFunc
	if end.IsZero() {
		cctx, cancel = context.WithCancel(base)
	} else {
		cctx, cancel = context.WithTimeout(base, end.Sub(now)*3/4)
	}
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return cctx, func() {
		stop()
		cancel()
	}
}

// stillLeased keeps, of the tasks at idx, those still leased by the token
// they were claimed with, and puts LEASE_LOST in lost for the others.
func (s *Store) stillLeased(ctx context.Context, tasks []ReleaseTask, idx []int, lost map[int]ReleaseResult) ([]int, error) {
	ids := make([]int64, len(idx))
	for k, i := range idx {
		ids[k] = tasks[i].ID
	}
	var leased []struct {
		ID         int64
		LeaseToken string
	}
	err := s.R.WithContext(ctx).Raw(`SELECT id, lease_token FROM release_tasks WHERE id IN ? AND status IN ('PENDING','RETRY')`,
		ids).Scan(&leased).Error
	if err != nil {
		return nil, fmt.Errorf("read leases: %w", err)
	}
	token := make(map[int64]string, len(leased))
	for _, l := range leased {
		token[l.ID] = l.LeaseToken
	}
	keep := idx[:0:0]
	for _, i := range idx {
		if token[tasks[i].ID] == tasks[i].LeaseToken {
			keep = append(keep, i)
		} else {
			lost[i] = ReleaseResult{Outcome: OutcomeLeaseLost}
		}
	}
	return keep, nil
}

// handBackStopped hands back the leases of tasks when ctx was cancelled
// (the process stopping: no failure of theirs) and returns err, saying so.
func (s *Store) handBackStopped(ctx context.Context, tasks []ReleaseTask, err error) error {
	if !errors.Is(ctx.Err(), context.Canceled) {
		return err
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), handBackTimeout)
	defer cancel()
	if rerr := s.ReturnLeases(hctx, tasks); rerr != nil {
		return fmt.Errorf("%w (handing the leases back: %v)", err, rerr)
	}
	return fmt.Errorf("stopped, leases handed back: %w", err)
}

// afterLedger is the FaultAfterLedger point of task t.
func (s *Store) afterLedger(t ReleaseTask) error { return s.fault(FaultAfterLedger, t) }

// fault is the named fault point of task t; without faults it costs a
// nil check.
func (s *Store) fault(point string, t ReleaseTask) error {
	if s.faults == nil {
		return nil
	}
	return s.faults(point, &t)
}

// insertAttempt writes one attempt row; see insertAttempts.
func insertAttempt(tx *gorm.DB, a TaskAttempt) error {
	return insertAttempts(tx, []TaskAttempt{a})
}

// insertAttempts writes attempt rows in one plain insert, each clipped as
// BeforeCreate clips it: the worker writes one per try and needs no id back.
// Every attempt row is written here, and rolled up with it (rollUpAttempts)
// in the same transaction: nothing else inserts into task_attempts.
func insertAttempts(tx *gorm.DB, as []TaskAttempt) error {
	var q strings.Builder
	q.WriteString(`INSERT INTO task_attempts (task_id, order_no, resource_type, worker, outcome, error_class, error, note,
		started_at, finished_at) VALUES `)
	args := make([]any, 0, 10*len(as))
	for i, a := range as {
		if err := a.BeforeCreate(tx); err != nil {
			return err
		}
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		args = append(args, a.TaskID, a.OrderNo, a.ResourceType, a.Worker, a.Outcome, a.ErrorClass, a.Error, a.Note,
			a.StartedAt, a.FinishedAt)
	}
	if err := tx.Exec(q.String(), args...).Error; err != nil {
		return err
	}
	return rollUpAttempts(tx, as)
}

// handBackTimeout bounds handing back the leases of a stopping worker's batch.
const handBackTimeout = 10 * time.Second

// ErrBatchNotCommitted means a batch of releases did not commit as a whole
// (its transaction failed or timed out): nothing of it was recorded, every
// task is still leased to its worker, which tries each alone.
var ErrBatchNotCommitted = errors.New("release batch not committed")

// errTryEach sends a batch straight to the savepoint path.
var errTryEach = errors.New("release each task in a savepoint")

// taskFailed is a fast-path failure pinned on one task (tasks[i]): the
// batch runs again with savepoints, and that task's failure is recorded
// from cause without trying it a second time, so a try that fails is
// counted once, as it would be alone.
type taskFailed struct {
	i     int
	start time.Time
	cause error
}

func (e *taskFailed) Error() string {
	return fmt.Sprintf("task %d of the batch failed: %v", e.i, e.cause)
}
func (e *taskFailed) Unwrap() error { return e.cause }

// maxAttemptRows bounds the rows of one attempts insert (10 values each).
const maxAttemptRows = 100

// ReleaseBatch releases claimed tasks in one transaction and returns one
// result per task, in order, all committed together. On PostgreSQL the
// task rows are locked first, in id order, as every other transaction
// that locks several tasks does (a rerun, a late payment); resources are
// then applied in resource-and-key order, the order placement locks in: so
// a batch never waits on another transaction's rows in a cycle.
//
// The fast path (releaseAll) fences the whole claim with one update and
// writes the attempt rows together. When a task of it fails or panics, the
// transaction rolls back and the batch runs again: that task's failure is
// recorded (a retry, or MANUAL, as ReleaseTask records it) without a
// second try, and every other task's try runs inside its own savepoint
// (releaseSaved), so a task failing now rolls back alone and is recorded
// in the same transaction, while its neighbours' releases stand.
//
// A remote type's task has its service called first, outside the
// transaction (callRemotes); a failed call is recorded as its task's try
// before the others are released.
//
// An error means nothing of the batch was recorded but those failed calls,
// whose tasks, tried again alone, are LEASE_LOST: ErrBatchNotCommitted
// when the transaction failed (the caller retries each task alone, where
// a failure is attributed to its own task); or, when ctx was cancelled
// (the process stopping), every lease has been handed back (ReturnLeases)
// and the error wraps ctx's.
func (s *Store) ReleaseBatch(ctx context.Context, tasks []ReleaseTask, worker string) ([]ReleaseResult, error) {
	for _, t := range tasks {
		if t.LeaseToken == "" {
			return nil, fmt.Errorf("release batch: task %d was not claimed", t.ID)
		}
	}
	failed, err := s.callRemotes(ctx, tasks, worker)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, fmt.Errorf("release batch: %w", s.handBackStopped(ctx, tasks, err))
		}
		return nil, fmt.Errorf("%w: %w", ErrBatchNotCommitted, err)
	}
	if len(failed) == 0 {
		return s.releaseBatch(ctx, tasks, worker)
	}
	results := make([]ReleaseResult, len(tasks))
	var rest []ReleaseTask
	var at []int
	for i, t := range tasks {
		if res, ok := failed[i]; ok {
			results[i] = res
			continue
		}
		rest = append(rest, t)
		at = append(at, i)
	}
	if len(rest) == 0 {
		return results, nil
	}
	got, err := s.releaseBatch(ctx, rest, worker)
	if err != nil {
		return nil, err
	}
	for k, res := range got {
		results[at[k]] = res
	}
	return results, nil
}

// releaseBatch is ReleaseBatch once every remote task's call was answered.
func (s *Store) releaseBatch(ctx context.Context, tasks []ReleaseTask, worker string) ([]ReleaseResult, error) {
	order := make([]int, len(tasks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := tasks[order[i]], tasks[order[j]]
		return resourceLess(a.ResourceType, b.ResourceType, a.BizKey, b.BizKey)
	})
	var results []ReleaseResult
	err := errTryEach
	if oneClaim(tasks) {
		err = s.write(ctx, func(tx *gorm.DB) error {
			var err error
			results, err = s.releaseAll(tx, tasks, order, worker)
			return err
		})
	}
	var failed *taskFailed
	if errors.As(err, &failed) || errors.Is(err, errTryEach) {
		err = s.write(ctx, func(tx *gorm.DB) error {
			if err := s.lockTasks(tx, tasks); err != nil {
				return err
			}
			results = make([]ReleaseResult, len(tasks))
			for _, i := range order {
				var res ReleaseResult
				var err error
				if failed != nil && failed.i == i {
					res, err = s.failIn(tx, tasks[i], worker, failed.start, failed.cause)
				} else {
					res, err = s.releaseSaved(tx, tasks[i], worker)
				}
				if err != nil {
					return fmt.Errorf("task %d: %w", tasks[i].ID, err)
				}
				results[i] = res
			}
			return nil
		})
	}
	if err == nil {
		return results, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, fmt.Errorf("release batch: %w", s.handBackStopped(ctx, tasks, err))
	}
	return nil, fmt.Errorf("%w: %w", ErrBatchNotCommitted, err)
}

// lockTasks locks the rows of tasks in id order on PostgreSQL, before a
// transaction touches any of them; on SQLite the write transaction
// already excludes every other writer.
func (s *Store) lockTasks(tx *gorm.DB, tasks []ReleaseTask) error {
	if s.Dialect != Postgres || len(tasks) == 0 {
		return nil
	}
	var locked []int64
	return tx.Raw("SELECT id FROM release_tasks WHERE id IN ? ORDER BY id FOR UPDATE", taskIDs(tasks)).Scan(&locked).Error
}

func taskIDs(tasks []ReleaseTask) []int64 {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

// oneClaim tells whether tasks share one lease token, as one claim's do.
func oneClaim(tasks []ReleaseTask) bool {
	for _, t := range tasks {
		if t.LeaseToken != tasks[0].LeaseToken {
			return false
		}
	}
	return len(tasks) > 0
}

// releaseAll is a batch's fast path inside tx, for the tasks of one claim
// (one lease token): one update fences them all and marks them DONE; then,
// one resource type at a time in the given order, a counter's tasks are
// released together (counter.releaseMany: one locking read, one ledger
// insert, one guarded update, each task still its own ledger row) and any
// other resource's task by task (its own ledger insert and conditional
// update); the counters' hold rows move in one guarded update, the
// hold.released events of the tasks that wrote a RELEASE row are written
// in one insert, and the attempt rows together. A task no longer this lease's is
// LEASE_LOST and left alone. A task's failure or panic returns a
// *taskFailed, and what the shared statements cannot settle errTryEach:
// either way tx must roll back.
func (s *Store) releaseAll(tx *gorm.DB, tasks []ReleaseTask, order []int, worker string) (results []ReleaseResult, err error) {
	start := s.Now()
	cur := -1 // the task being applied
	defer func() {
		if r := recover(); r != nil {
			panicked := &TransientError{Class: ClassCrashed, Err: fmt.Errorf("panic: %v", r)}
			results, err = nil, panicked
			if cur >= 0 {
				err = &taskFailed{i: cur, start: start, cause: panicked}
			}
		}
	}()
	if err := s.lockTasks(tx, tasks); err != nil {
		return nil, err
	}
	fenced, err := fenceDone(tx, taskIDs(tasks), tasks[0].LeaseToken, start)
	if err != nil {
		return nil, err
	}
	rows := maps.Clone(fenced)
	results = make([]ReleaseResult, len(tasks))
	live := make([]int, 0, len(rows))
	for _, i := range order {
		if _, ok := rows[tasks[i].ID]; !ok {
			results[i] = ReleaseResult{Outcome: OutcomeLeaseLost}
			continue
		}
		// The fence is spent: a second copy of the task in tasks is no
		// longer this lease's, as a second ReleaseTask would find.
		delete(rows, tasks[i].ID)
		live = append(live, i)
	}
	attempts := make([]TaskAttempt, 0, len(live))
	events := make([]newEvent, 0, len(live))
	var counted []ReleaseTask // released by a releaseMany, hold rows still to move
	for len(live) > 0 {
		// One resource type at a time, in the order given.
		n := 1
		for n < len(live) && tasks[live[n]].ResourceType == tasks[live[0]].ResourceType {
			n++
		}
		group := live[:n]
		live = live[n:]
		c, many := s.resources[tasks[group[0]].ResourceType].(batchReleaser)
		for _, i := range group {
			many = many && tasks[i].Op == FlowRelease
		}
		if many {
			ops := make([]Op, len(group))
			for k, i := range group {
				ops[k] = releaseOp(tasks[i], fenced[tasks[i].ID], worker, start)
			}
			if err := c.releaseMany(tx, ops); err != nil {
				return nil, err
			}
		}
		for _, i := range group {
			t := tasks[i]
			cur = i
			var outcome string
			var released bool
			var err error
			if many {
				outcome, released, err = OutcomeDone, true, s.afterLedger(t)
				if t.answer != nil && t.answer.Duplicate {
					outcome = OutcomeDuplicate
				}
				counted = append(counted, t)
			} else {
				outcome, released, err = s.applyRelease(tx, t, fenced[t.ID], worker, start)
			}
			if err != nil {
				return nil, &taskFailed{i: i, start: start, cause: err}
			}
			cur = -1
			if released {
				events = append(events, taskReleased(t, fenced[t.ID].Trigger, start))
			}
			results[i] = ReleaseResult{Outcome: outcome}
			attempts = append(attempts, TaskAttempt{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, Worker: worker,
				Outcome: outcome, Note: fenced[t.ID].rerunNote(), StartedAt: start})
		}
	}
	if len(counted) > 0 {
		moved, err := releaseHolds(tx, counted)
		if err != nil {
			return nil, err
		}
		if moved != int64(len(counted)) {
			return nil, errTryEach
		}
	}
	if err := emitEvents(tx, events); err != nil {
		return nil, err
	}
	finished := s.Now()
	for i := range attempts {
		attempts[i].FinishedAt = finished
	}
	for len(attempts) > 0 {
		n := min(len(attempts), maxAttemptRows)
		if err := insertAttempts(tx, attempts[:n]); err != nil {
			return nil, err
		}
		attempts = attempts[n:]
	}
	return results, nil
}

// batchReleaser is a Resource that records many RELEASEs of one claim in
// a few statements (a counter, a remote type): the ledger rows and the
// resource's own change, but not the hold rows, which releaseAll moves for
// all of them together. What it cannot settle returns errTryEach.
type batchReleaser interface {
	releaseMany(tx *gorm.DB, ops []Op) error
}

// releaseSaved is one task of a batch: its try inside a savepoint, and a
// failed or panicking try rolled back to the savepoint and recorded as a
// failure in tx. An error is one of tx itself (a savepoint statement or
// the failure's record failed): the batch cannot go on.
func (s *Store) releaseSaved(tx *gorm.DB, t ReleaseTask, worker string) (ReleaseResult, error) {
	start := s.Now()
	if err := tx.Exec("SAVEPOINT release_try").Error; err != nil {
		return ReleaseResult{}, err
	}
	outcome, cause := s.tryRecovered(tx, t, worker, start)
	if cause == nil {
		return ReleaseResult{Outcome: outcome}, tx.Exec("RELEASE SAVEPOINT release_try").Error
	}
	// ROLLBACK TO keeps the savepoint open; RELEASE then ends it, so the
	// next task's savepoint does not nest inside this one.
	if err := tx.Exec("ROLLBACK TO SAVEPOINT release_try").Error; err != nil {
		return ReleaseResult{}, fmt.Errorf("roll back the try: %w (the try: %v)", err, cause)
	}
	if err := tx.Exec("RELEASE SAVEPOINT release_try").Error; err != nil {
		return ReleaseResult{}, err
	}
	if errors.Is(cause, errLeaseLost) {
		return ReleaseResult{Outcome: OutcomeLeaseLost}, nil
	}
	res, err := s.failIn(tx, t, worker, start, cause)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("record failure: %w (the try: %v)", err, cause)
	}
	return res, nil
}

// tryRecovered is releaseIn with a panic turned into a CRASHED error, so
// a task whose resource code panics fails alone instead of taking its
// batch down.
func (s *Store) tryRecovered(tx *gorm.DB, t ReleaseTask, worker string, start time.Time) (outcome string, err error) {
	defer func() {
		if r := recover(); r != nil {
			outcome, err = "", &TransientError{Class: ClassCrashed, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	return s.releaseIn(tx, t, worker, start)
}

// RecordCrash records a try that panicked (recovered) as a CRASHED
// failure, as recordFailure records any other: the release transaction has
// rolled back, and the task retries on the usual schedule or goes MANUAL.
func (s *Store) RecordCrash(ctx context.Context, t ReleaseTask, worker string, start time.Time, panicked any) (ReleaseResult, error) {
	res, err := s.recordFailure(ctx, t, worker, start, &TransientError{Class: ClassCrashed, Err: fmt.Errorf("panic: %v", panicked)})
	if err != nil {
		return res, fmt.Errorf("record crash of task %d: %w", t.ID, err)
	}
	return res, nil
}

// recordFailure schedules a retry or sends the task to MANUAL, with an
// attempt row, while the lease is still ours.
func (s *Store) recordFailure(ctx context.Context, t ReleaseTask, worker string, start time.Time, cause error) (ReleaseResult, error) {
	var out ReleaseResult
	// A cancelled or timed-out ctx must not stop the failure being recorded.
	ctx = context.WithoutCancel(ctx)
	err := s.write(ctx, func(tx *gorm.DB) error {
		var err error
		out, err = s.failIn(tx, t, worker, start, cause)
		return err
	})
	return out, err
}

// failIn records, inside tx, that a try of t failed with cause: a retry or
// MANUAL, with an attempt row, while the lease is still ours.
func (s *Store) failIn(tx *gorm.DB, t ReleaseTask, worker string, start time.Time, cause error) (ReleaseResult, error) {
	class, retryable := classOf(cause)
	msg := clip(cause.Error(), maxErrorLen)
	now := s.Now()
	// Count from the row, not from the claimed copy: a rerun may have
	// reset the count since the claim.
	var cur []ReleaseTask
	err := tx.Raw("SELECT * FROM release_tasks WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')"+s.forUpdate(),
		t.ID, t.LeaseToken).Scan(&cur).Error
	if err != nil {
		return ReleaseResult{}, err
	}
	if len(cur) == 0 {
		return ReleaseResult{Outcome: OutcomeLeaseLost, Class: class, Err: msg}, nil
	}
	return s.fail(tx, cur[0], worker, class, retryable, msg, start, now, now)
}

// fail records one failed try of t, the task's row as read under lock in
// tx, fenced by its lease token: failures + 1, a retry after the
// failure's retry policy's delay from retryFrom, or MANUAL when the class
// is permanent or the failures reach the policy's tries (RETRY_EXHAUSTED, the
// last error's class kept in last_error_class); the lease ends, and an
// attempt row says what happened.
func (s *Store) fail(tx *gorm.DB, t ReleaseTask, worker string, class ErrorClass, retryable bool, msg string,
	start, retryFrom, now time.Time) (ReleaseResult, error) {
	failures := t.Failures + 1
	policy := s.retry.of(t.ResourceType, class)
	status, next, outcome, taskClass := TaskRetry, retryFrom.Add(policy.Delay(failures)), OutcomeRetry, class
	switch {
	case !retryable:
		status, next, outcome = TaskManual, now, OutcomeManual
	case failures >= policy.Tries:
		status, next, outcome, taskClass = TaskManual, now, OutcomeManual, ClassRetryExhausted
	}
	// The task was PENDING or RETRY, so it has no manual_since (a rerun
	// cleared it): set when it goes MANUAL, left NULL when it retries.
	var manualSince *time.Time
	if status == TaskManual {
		manualSince = &now
	}
	res := tx.Exec(`UPDATE release_tasks SET status = ?, failures = ?, next_at = ?, last_error = ?, error_class = ?,
		last_error_class = ?, lease_until = NULL, lease_token = '', updated_at = ?, manual_since = ?
		WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`,
		status, failures, next, msg, taskClass, class, now, manualSince, t.ID, t.LeaseToken)
	if res.Error != nil {
		return ReleaseResult{}, res.Error
	}
	if res.RowsAffected == 0 {
		return ReleaseResult{Outcome: OutcomeLeaseLost, Class: class, Err: msg}, nil
	}
	err := insertAttempt(tx, TaskAttempt{TaskID: t.ID, OrderNo: t.OrderNo, ResourceType: t.ResourceType, Worker: worker,
		Outcome: outcome, ErrorClass: class, Error: msg, Note: t.rerunNote(), StartedAt: start, FinishedAt: retryFrom})
	if err == nil && status == TaskManual {
		err = emitEvents(tx, []newEvent{{Type: EventTaskManual, OrderNo: t.OrderNo, At: now, Data: manualData{OrderNo: t.OrderNo,
			TaskID: t.ID, ResourceType: t.ResourceType, Key: t.BizKey, ErrorClass: taskClass, Failures: failures}}})
	}
	return ReleaseResult{Outcome: outcome, Class: class, Err: msg}, err
}

// ReturnLease hands back the lease of a claimed task its worker chose not
// to try (too little lease left): the task is due again at once, and it is
// neither an attempt nor, since its lease ends with an outcome, a crash. A
// cancelled ctx (the process stopping) does not stop it: left to expire,
// the lease would count as a crash.
func (s *Store) ReturnLease(ctx context.Context, t ReleaseTask) error {
	if err := s.ReturnLeases(context.WithoutCancel(ctx), []ReleaseTask{t}); err != nil {
		return fmt.Errorf("return lease of task %d: %w", t.ID, err)
	}
	return nil
}

// ReturnLeases hands back, in one transaction, the leases of claimed
// tasks a stopping worker will not try; see ReturnLease. Unlike it, it
// runs under ctx as given: a stopping caller passes one not cancelled.
func (s *Store) ReturnLeases(ctx context.Context, tasks []ReleaseTask) error {
	err := s.write(ctx, func(tx *gorm.DB) error { return s.returnLeasesIn(tx, tasks) })
	if err != nil {
		return fmt.Errorf("return leases: %w", err)
	}
	return nil
}

// returnLeasesIn is ReturnLeases inside tx.
func (s *Store) returnLeasesIn(tx *gorm.DB, tasks []ReleaseTask) error {
	if err := s.lockTasks(tx, tasks); err != nil {
		return err
	}
	now := s.Now()
	for _, t := range tasks {
		err := tx.Exec(`UPDATE release_tasks SET lease_until = NULL, lease_token = '', attempts = attempts - 1,
			updated_at = ? WHERE id = ? AND lease_token = ? AND status IN ('PENDING','RETRY')`, now, t.ID, t.LeaseToken).Error
		if err != nil {
			return fmt.Errorf("task %d: %w", t.ID, err)
		}
	}
	return nil
}

// RescueLeases counts the tries whose lease expired without an outcome as
// CRASHED failures (see recordLostTries), so the dashboard neither shows
// them as owned nor waits for the next claim to learn of the crash. It
// counts maxLostPerTx per transaction until fewer are left, and returns
// how many it counted.
func (s *Store) RescueLeases(ctx context.Context) (int64, error) {
	var total int64
	for {
		var n int64
		err := s.write(ctx, func(tx *gorm.DB) error {
			var err error
			n, err = s.recordLostTries(tx, s.Now(), maxLostPerTx)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("rescue leases: %w", err)
		}
		total += n
		if n < maxLostPerTx {
			return total, nil
		}
	}
}

// RerunCandidate is one task a rerun would make due, as its preview shows
// it: the task, and the epoch-0 RELEASE ledger row its worker's insert
// would collide with, if there is one.
type RerunCandidate struct {
	Task     ReleaseTask
	Released *Flow
}

// Rerunnable lists what a rerun of the order's tasks of type t would make
// due: its RETRY and MANUAL tasks, in the chain's order. The page's preview
// and the API's dry run both show it.
func (c *Chain) Rerunnable(t ResourceType) []RerunCandidate {
	var out []RerunCandidate
	for _, task := range c.Tasks {
		if task.ResourceType != t || (task.Status != TaskRetry && task.Status != TaskManual) {
			continue
		}
		rc := RerunCandidate{Task: task.ReleaseTask}
		// The worker releases (or deducts) in epoch 0.
		for i, f := range c.Flows {
			if f.ResourceType == t && f.BizKey == task.BizKey && f.Type == task.Op && f.Epoch == 0 {
				rc.Released = &c.Flows[i]
			}
		}
		out = append(out, rc)
	}
	return out
}

// MaxReasonLen is the longest reason of an operator's action (a rerun, an
// abandon, a correction), in characters.
const MaxReasonLen = 500

// Why an action's reason is refused; both are ErrInvalid.
var (
	ErrReasonRequired = fmt.Errorf("%w: give a reason: it is kept in the audit log", ErrInvalid)
	ErrReasonTooLong  = fmt.Errorf("%w: a reason is at most %d characters", ErrInvalid, MaxReasonLen)
)

// RerunReason is the one rule for the reason of an operator's action (a
// rerun on the page, the bulk rerun and the API, an abandon, a correction):
// trimmed, not empty, at most MaxReasonLen characters.
// It returns the reason trimmed.
func RerunReason(reason string) (string, error) {
	reason = strings.TrimSpace(reason)
	switch {
	case reason == "":
		return "", ErrReasonRequired
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return "", ErrReasonTooLong
	}
	return reason, nil
}

// rerunSet is the SET list of a rerun: the task is due now with trigger
// RERUN and a fresh failure budget, and a RETRY_EXHAUSTED class goes back
// to the last error's, since its "8 of 8 failed" no longer holds. It
// leaves the manual queue, so its age there ends.
const rerunSet = `status = 'PENDING', next_at = ?, failures = 0, trigger_type = 'RERUN', rerun_by = ?, rerun_reason = ?,
	error_class = CASE WHEN error_class = 'RETRY_EXHAUSTED' THEN last_error_class ELSE error_class END, updated_at = ?,
	manual_since = NULL`

// Rerun makes the RETRY or MANUAL tasks of one resource type of one order due
// now, with trigger RERUN, and audits it. It never releases anything itself:
// the worker does, and the ledger's unique key still decides. It returns how
// many tasks it made due, or ErrNothingToRerun; when any of them needs
// approval, ErrNeedsApproval and nothing is made due.
func (s *Store) Rerun(ctx context.Context, orderNo string, t ResourceType, actor, reason string) (int64, error) {
	if _, err := s.ParseType(string(t)); err != nil {
		return 0, err
	}
	reason, err := RerunReason(reason)
	if err != nil {
		return 0, err
	}
	target := "order:" + orderNo + "/" + string(t)
	var n int64
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		// Rows are locked by id, the order a late payment locks them in,
		// all in this one read. A try whose lease has already run out was
		// made before this rerun: counted first, it falls in the budget
		// the rerun resets.
		var held []ReleaseTask
		err := tx.Raw(`SELECT * FROM release_tasks WHERE order_no = ? AND resource_type = ? AND status IN ('RETRY','MANUAL')
			ORDER BY id`+s.forUpdate(), orderNo, t).Scan(&held).Error
		if err != nil {
			return err
		}
		var need []int64
		for _, task := range held {
			if s.approval.needs(task) {
				need = append(need, task.ID)
			}
		}
		if len(need) > 0 {
			// All or nothing: an order's tasks of a type are one rerun.
			return fmt.Errorf("%w: order %s, %s task(s) %s", ErrNeedsApproval, orderNo, t, idList(need))
		}
		// Exactly the locked tasks checked above are made due: a task that
		// turned RETRY or MANUAL since that read (PostgreSQL reads each
		// statement afresh) was not checked for approval. A task a worker
		// holds is made due too: the worker takes trigger and note from the
		// row when it finishes (ReleaseTask), not its copy.
		if len(held) > 0 {
			if err := s.makeDue(tx, held, actor, reason, now); err != nil {
				return err
			}
		}
		n = int64(len(held))
		if n == 0 {
			if _, err := orderStatus(tx, orderNo); err != nil {
				return err
			}
			return fmt.Errorf("%w: order %s has no RETRY or MANUAL %s task", ErrNothingToRerun, orderNo, t)
		}
		return tx.Create(&AuditEntry{Actor: actor, Action: "rerun", Target: target, Reason: reason,
			Outcome: "ok", Detail: fmt.Sprintf("%d task(s) made due", n), CreatedAt: now}).Error
	})
	if err != nil {
		detail := ""
		switch {
		case errors.Is(err, ErrNothingToRerun):
			detail = "nothing to rerun"
		case errors.Is(err, ErrNeedsApproval):
			detail = "needs approval"
		}
		if detail != "" {
			aerr := s.W.WithContext(ctx).Create(&AuditEntry{Actor: actor, Action: "rerun", Target: target, Reason: reason,
				Outcome: "refused", Detail: detail, CreatedAt: s.Now()}).Error
			if aerr != nil {
				s.log.Error("audit refused rerun", slog.String("target", target), slog.Any("err", aerr))
			}
		}
		return 0, fmt.Errorf("rerun %s: %w", target, err)
	}
	return n, nil
}
