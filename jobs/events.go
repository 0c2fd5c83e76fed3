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

// Run numbers events every interval and whenever woken, until ctx ends.
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
	}
}

// sequence numbers what is pending, a SequenceEvents call at a time until
// one finds nothing.
func (q *EventSequencer) sequence(ctx context.Context) {
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
		if n == 0 {
			return
		}
	}
}
