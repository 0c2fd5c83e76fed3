package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"unhold/metrics"
	"unhold/models"
)

// OutcomeHandedBack is a claimed task handed back untried (the worker was
// stopping, or a remote call could not be sent in time): it counts in
// Drain's stats, never in the metrics. The worker's other outcomes
// (crashed, error, lease short) are the metrics package's.
const OutcomeHandedBack = models.OutcomeHandedBack

// Worker claims due release tasks with a lease and releases each claimed
// batch in one transaction.
// Each worker is one Run loop (a pool); Wake asks it to drain now.
type Worker struct {
	s       *models.Store
	id      string
	batch   int
	lease   time.Duration
	timeout time.Duration
	log     *slog.Logger
	wake    chan struct{}
	metrics *metrics.Metrics
	next    *Worker
	gap     time.Duration
	events  *EventSequencer
}

// drainGap is how long a worker rests between two drains started by
// wake-ups. While closes pour in, every close wakes the worker; resting
// 10 ms lets the closes of those 10 ms go out in one claim and one batch
// instead of a claim and a batch each, which on SQLite would take two of
// every few turns of the one write connection from the closes. A drain
// that claims full batches does not rest: a backlog drains at full speed.
const drainGap = 10 * time.Millisecond

// NewWorker makes a worker that leases batch tasks at a time for lease.
func NewWorker(s *models.Store, id string, batch int, lease time.Duration, log *slog.Logger) *Worker {
	return &Worker{s: s, id: id, batch: batch, lease: lease, timeout: lease / 4, log: log, wake: make(chan struct{}, 1),
		gap: drainGap}
}

// WithMetrics makes the worker record every release in m (nil: none). Call
// it before Run.
func (w *Worker) WithMetrics(m *metrics.Metrics) *Worker {
	w.metrics = m
	return w
}

// WithEvents makes the worker wake q after each drain's releases, so the
// events they wrote are numbered for pollers at once (nil: none). Call it
// before Run.
func (w *Worker) WithEvents(q *EventSequencer) *Worker {
	w.events = q
	return w
}

// WakeAlso makes the worker wake next whenever it claims a full batch, so
// that a backlog spreads over the pools of a process while a trickle keeps
// only the first one busy. Call it before Run.
func (w *Worker) WakeAlso(next *Worker) *Worker {
	w.next = next
	return w
}

// ID is the worker's name, written on leases, attempts and ledger rows.
func (w *Worker) ID() string { return w.id }

// Wake asks the Run loop to drain as soon as it can; it never blocks.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run drains whenever woken, resting drainGap between drains, until ctx
// ends. The end of ctx stops claiming (see Drain), so Run returns with no
// task of its own left leased.
func (w *Worker) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.Drain(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(w.gap):
		}
	}
}

// Stats counts what a drain did, by outcome.
type Stats map[string]int

// handBackTimeout bounds the hand-back of the rest of a stopping worker's
// batch.
const handBackTimeout = 10 * time.Second

// Drain claims and releases due tasks until a claim finds fewer than a
// batch (it took every task due) or ctx ends. Each
// claimed batch is released in one transaction (Store.ReleaseBatch); a
// batch that does not commit as a whole is tried again task by task, so a
// fault is pinned on its own task. The end of ctx (the process stopping)
// stops it claiming; the batch in hand rolls back and its leases are
// handed back (Store.ReturnLeases), as are claimed tasks not yet tried:
// due again at once for another worker, none is counted as a failure or
// waits out its lease to be counted as a crash.
func (w *Worker) Drain(ctx context.Context) Stats {
	st := Stats{}
	// The worker's writes wait in the write gate's priority line, served
	// every other turn.
	ctx = models.ReleasePriority(ctx)
	// A claim outlives ctx: one cancelled while it commits would leave
	// leases behind that no one knows of to hand back.
	wctx := context.WithoutCancel(ctx)
	for ctx.Err() == nil {
		cctx, cancel := context.WithTimeout(wctx, w.lease)
		tasks, err := w.s.ClaimTasks(cctx, w.id, w.batch, w.lease)
		cancel()
		if err != nil {
			w.log.Error("claim release tasks", slog.String("worker", w.id), slog.Any("err", err))
			return st
		}
		if len(tasks) == 0 {
			return st
		}
		full := len(tasks) == w.batch
		if full && w.next != nil {
			w.next.Wake()
		}
		if w.leaseShort(tasks[0]) {
			for _, t := range tasks {
				w.handBackShort(wctx, t, st)
			}
			continue
		}
		short := st[metrics.OutcomeLeaseShort]
		if !w.releaseBatch(ctx, tasks, st) {
			w.releaseEach(ctx, wctx, tasks, st)
		}
		w.events.Wake()
		// A claim short of a batch took every task due: those that become
		// due later wake the worker, or the sweep finds them. Claiming
		// again now would cost a write for nothing, unless some were
		// handed back untried and are due again at once.
		if !full && st[metrics.OutcomeLeaseShort] == short {
			return st
		}
	}
	return st
}

// leaseShort tells whether t's lease would run out before a try could
// finish. One claim leases its tasks until the same moment.
func (w *Worker) leaseShort(t models.ReleaseTask) bool {
	return t.LeaseUntil != nil && w.s.Now().Add(w.timeout).After(*t.LeaseUntil)
}

// handBackShort hands back a task whose lease is too short to try it:
// tried and cut off, it would be lost; left to expire, its lease would
// count as a crash.
func (w *Worker) handBackShort(ctx context.Context, t models.ReleaseTask, st Stats) {
	w.returnLease(ctx, t)
	st[metrics.OutcomeLeaseShort]++
	w.metrics.ObserveRelease(t, metrics.OutcomeLeaseShort, "", w.s.Now())
}

// releaseBatch releases tasks in one transaction and records each
// outcome. It returns false when the batch did not commit and the tasks
// are still this worker's to try one by one; a stopping worker's batch is
// handed back whole.
func (w *Worker) releaseBatch(ctx context.Context, tasks []models.ReleaseTask, st Stats) bool {
	bctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	results, err := w.releaseRecovered(bctx, tasks)
	switch {
	case err == nil:
		now := w.s.Now()
		for i, res := range results {
			st[w.observe(tasks[i], res, now)]++
		}
		return true
	case errors.Is(err, models.ErrBatchNotCommitted), errors.Is(err, errBatchPanicked):
		w.log.Warn("release batch not committed; releasing its tasks one by one", slog.String("worker", w.id),
			slog.Int("tasks", len(tasks)), slog.Any("err", err))
		return false
	default:
		// Stopping: ReleaseBatch handed the leases back (or failed to,
		// which it says; the leases then expire and count as crashes).
		w.log.Info("stopping: release batch rolled back and handed back", slog.String("worker", w.id),
			slog.Int("tasks", len(tasks)), slog.Any("err", err))
		st[OutcomeHandedBack] += len(tasks)
		return true
	}
}

// errBatchPanicked is a panic out of ReleaseBatch outside any one task's
// try (those are recovered one by one): its transaction rolled back.
var errBatchPanicked = errors.New("release batch panicked")

// releaseRecovered is ReleaseBatch with a panic turned into
// errBatchPanicked; only the call is covered, so a panic while the
// committed outcomes are reported is not taken for a batch to try again.
func (w *Worker) releaseRecovered(ctx context.Context, tasks []models.ReleaseTask) (results []models.ReleaseResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			results, err = nil, fmt.Errorf("%w: %v", errBatchPanicked, r)
		}
	}()
	return w.s.ReleaseBatch(ctx, tasks, w.id)
}

// observe logs one committed outcome of a batch, records it in the
// metrics, and returns what the drain counts it as: a try that panicked
// is CRASHED, as when a task is tried alone.
func (w *Worker) observe(t models.ReleaseTask, res models.ReleaseResult, now time.Time) string {
	attrs := []any{slog.Int64("task_id", t.ID), slog.String("order_no", t.OrderNo),
		slog.String("resource", string(t.ResourceType)), slog.String("worker", w.id)}
	outcome := res.Outcome
	switch {
	case outcome == OutcomeHandedBack:
		return outcome
	case res.Class == models.ClassCrashed && (outcome == models.OutcomeRetry || outcome == models.OutcomeManual):
		w.log.Error("release crashed", append(attrs, slog.String("task_outcome", outcome), slog.String("error", res.Err))...)
		outcome = metrics.OutcomeCrashed
	case outcome == models.OutcomeRetry, outcome == models.OutcomeManual:
		w.log.Warn("release failed", append(attrs, slog.String("outcome", outcome),
			slog.String("class", string(res.Class)), slog.String("error", res.Err))...)
	case outcome == models.OutcomeDuplicate:
		w.log.Info("release already in the ledger", append(attrs, slog.String("outcome", outcome))...)
	}
	w.metrics.ObserveRelease(t, outcome, res.Class, now)
	return outcome
}

// releaseEach tries tasks one after another, each in its own transaction
// with its own timeout, as a batch that did not commit falls back to.
func (w *Worker) releaseEach(ctx, wctx context.Context, tasks []models.ReleaseTask, st Stats) {
	for i, t := range tasks {
		if ctx.Err() != nil {
			w.handBack(wctx, tasks[i:], st)
			return
		}
		if w.leaseShort(t) {
			w.handBackShort(wctx, t, st)
			continue
		}
		st[w.release(ctx, t)]++
	}
}

// handBack returns the leases of claimed tasks a stopping worker will not try.
func (w *Worker) handBack(ctx context.Context, tasks []models.ReleaseTask, st Stats) {
	ctx, cancel := context.WithTimeout(ctx, handBackTimeout)
	defer cancel()
	if err := w.s.ReturnLeases(ctx, tasks); err != nil {
		w.log.Error("return leases", slog.String("worker", w.id), slog.Int("tasks", len(tasks)), slog.Any("err", err))
	}
	st[OutcomeHandedBack] += len(tasks)
	w.log.Info("stopping: handed back untried tasks", slog.String("worker", w.id), slog.Int("tasks", len(tasks)))
}

func (w *Worker) returnLease(ctx context.Context, t models.ReleaseTask) {
	if err := w.s.ReturnLease(ctx, t); err != nil {
		w.log.Error("return lease", slog.Int64("task_id", t.ID), slog.String("worker", w.id), slog.Any("err", err))
	}
}

// release runs one task. A panic inside it is a crash of this try: the
// transaction has rolled back, and the crash is recorded as a CRASHED
// failure, so a task that panics every time ends in MANUAL.
func (w *Worker) release(ctx context.Context, t models.ReleaseTask) (outcome string) {
	attrs := []any{slog.Int64("task_id", t.ID), slog.String("order_no", t.OrderNo),
		slog.String("resource", string(t.ResourceType)), slog.String("worker", w.id)}
	var res models.ReleaseResult
	start := w.s.Now()
	defer func() {
		if r := recover(); r != nil {
			outcome = metrics.OutcomeCrashed
			cres, err := w.s.RecordCrash(ctx, t, w.id, start, r)
			res.Class = models.ClassCrashed
			w.log.Error("release crashed", append(attrs, slog.Any("panic", fmt.Sprint(r)),
				slog.String("task_outcome", cres.Outcome), slog.Any("err", err))...)
		}
		if outcome != OutcomeHandedBack {
			w.metrics.ObserveRelease(t, outcome, res.Class, w.s.Now())
		}
	}()
	tctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	res, err := w.s.ReleaseTask(tctx, t, w.id)
	if err != nil {
		w.log.Error("release task", append(attrs, slog.Any("err", err))...)
		return metrics.OutcomeError
	}
	switch res.Outcome {
	case models.OutcomeRetry, models.OutcomeManual:
		w.log.Warn("release failed", append(attrs, slog.String("outcome", res.Outcome),
			slog.String("class", string(res.Class)), slog.String("error", res.Err))...)
	case models.OutcomeDuplicate:
		w.log.Info("release already in the ledger", append(attrs, slog.String("outcome", res.Outcome))...)
	}
	return res.Outcome
}
