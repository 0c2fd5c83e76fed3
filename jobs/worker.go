package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"unhold/models"
)

// Worker claims due release tasks with a lease and releases them one by one.
// Each worker is one Run loop (a pool); Wake asks it to drain now.
type Worker struct {
	s       *models.Store
	id      string
	batch   int
	lease   time.Duration
	timeout time.Duration
	log     *slog.Logger
	wake    chan struct{}
	metrics *Metrics
	next    *Worker
}

// NewWorker makes a worker that leases batch tasks at a time for lease.
func NewWorker(s *models.Store, id string, batch int, lease time.Duration, log *slog.Logger) *Worker {
	return &Worker{s: s, id: id, batch: batch, lease: lease, timeout: lease / 4, log: log, wake: make(chan struct{}, 1)}
}

// WithMetrics makes the worker record every release in m (nil: none). Call
// it before Run.
func (w *Worker) WithMetrics(m *Metrics) *Worker {
	w.metrics = m
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

// Run drains whenever woken, until ctx ends. The end of ctx stops claiming
// (see Drain), so Run returns with no task of its own left leased.
func (w *Worker) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
			w.Drain(ctx)
		}
	}
}

// Stats counts what a drain did, by outcome.
type Stats map[string]int

// handBackTimeout bounds the hand-back of the rest of a stopping worker's
// batch.
const handBackTimeout = 10 * time.Second

// Drain claims and releases due tasks until none are due or ctx ends. The
// end of ctx (the process stopping) stops it claiming; the try in hand
// rolls back and is handed back by ReleaseTask, and the claimed tasks not
// yet tried are handed back here (Store.ReturnLease): due again at once for
// another worker, none is counted as a failure or waits out its lease to be
// counted as a crash.
func (w *Worker) Drain(ctx context.Context) Stats {
	st := Stats{}
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
		if len(tasks) == w.batch && w.next != nil {
			w.next.Wake()
		}
		for i, t := range tasks {
			if ctx.Err() != nil {
				w.handBack(wctx, tasks[i:], st)
				return st
			}
			// A batch runs one task after another; a task whose lease would
			// run out before its try could finish is handed back untried
			// rather than tried and lost. Left to expire, its lease would
			// count as a crash.
			if t.LeaseUntil != nil && w.s.Now().Add(w.timeout).After(*t.LeaseUntil) {
				w.returnLease(wctx, t)
				st[OutcomeLeaseShort]++
				w.metrics.ObserveRelease(t, OutcomeLeaseShort, "", w.s.Now())
				continue
			}
			st[w.release(ctx, t)]++
		}
	}
	return st
}

// handBack returns the leases of claimed tasks a stopping worker will not try.
func (w *Worker) handBack(ctx context.Context, tasks []models.ReleaseTask, st Stats) {
	ctx, cancel := context.WithTimeout(ctx, handBackTimeout)
	defer cancel()
	for _, t := range tasks {
		w.returnLease(ctx, t)
		st[OutcomeHandedBack]++
	}
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
			outcome = OutcomeCrashed
			cres, err := w.s.RecordCrash(ctx, t, w.id, start, r)
			res.Class = models.ClassCrashed
			w.log.Error("release crashed", append(attrs, slog.Any("panic", fmt.Sprint(r)),
				slog.String("task_outcome", cres.Outcome), slog.Any("err", err))...)
		}
		w.metrics.ObserveRelease(t, outcome, res.Class, w.s.Now())
	}()
	tctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	res, err := w.s.ReleaseTask(tctx, t, w.id)
	if err != nil {
		w.log.Error("release task", append(attrs, slog.Any("err", err))...)
		return OutcomeError
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
