package jobs

import (
	"context"
	"log/slog"
	"time"

	"unhold/models"
)

// EventSequenceEvery is how often an EventSequencer numbers the events
// committed since, when nothing wakes it sooner.
const EventSequenceEvery = 200 * time.Millisecond

// sequenceTimeout bounds one round of numbering.
const sequenceTimeout = 10 * time.Second

// sequenceGap is the least time between two rounds that woken ones start.
// During a burst every release batch wakes the sequencer, and each round
// is a write transaction of its own that takes a write turn from the
// closes and the worker and rewrites the rows it numbers; resting lets a
// round number what a few batches wrote. A poller waits at most this much
// longer for an event.
const sequenceGap = 50 * time.Millisecond

// EventSequencer gives committed events their place in the reading order
// on PostgreSQL (Store.SequenceEvents): every interval, and at once when
// woken, as a worker does after each release batch it commits, so a
// poller sees a batch's events about a batch after they were written.
// Several instances may each run one: they take turns on the store's
// advisory lock. On SQLite events are readable as they commit, and Run
// returns at once.
type EventSequencer struct {
	s     *models.Store
	every time.Duration
	log   *slog.Logger
	wake  chan struct{}
}

// NewEventSequencer makes a sequencer that numbers every interval.
func NewEventSequencer(s *models.Store, every time.Duration, log *slog.Logger) *EventSequencer {
	return &EventSequencer{s: s, every: every, log: log, wake: make(chan struct{}, 1)}
}

// Wake asks the sequencer to number now; it never blocks, and a nil
// sequencer does nothing.
func (q *EventSequencer) Wake() {
	if q == nil {
		return
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run numbers events every interval and whenever woken, resting
// sequenceGap after each round, until ctx ends.
func (q *EventSequencer) Run(ctx context.Context) {
	if q.s.Dialect != models.Postgres {
		return
	}
	tick := time.NewTicker(q.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-q.wake:
		}
		q.sequence(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(sequenceGap):
		}
	}
}

// sequence numbers what is pending, a SequenceEvents call at a time until
// one numbers fewer than it may: it took everything committed before it,
// and what committed since waits for the next round.
func (q *EventSequencer) sequence(ctx context.Context) {
	// Numbering what the releases wrote is the release path's work: it
	// writes in the worker's rounds of the write gate, not between them,
	// where it held up a draining worker's pools.
	ctx = models.ReleasePriority(ctx)
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, sequenceTimeout)
		n, err := q.s.SequenceEvents(sctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("sequence events", slog.Any("err", err))
			}
			return
		}
		if n < models.MaxSequenced {
			return
		}
	}
}
