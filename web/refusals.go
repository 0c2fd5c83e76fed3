package web

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// refusalsAudited is how many refusals of one actor in one minute are
// audited one by one. A person who clicks a stale form or follows a link
// above their role makes a few; past ten in a minute it is a script or a
// stuck client, and how many it sent is what an admin needs, not ten
// thousand identical rows (each refusal is a write on SQLite's one
// writer).
const refusalsAudited = 10

// maxRefusalActors bounds the actors counted in one minute; the refusals
// of any further actor are counted together, as refusalOthers.
const maxRefusalActors = 256

// refusalOthers is the actor the refusals of actors past maxRefusalActors
// are counted as.
const refusalOthers = "others"

// refusalCounter bounds the audit rows refused requests write, per
// instance: per actor (the principal's name, or "anonymous:<address>") and
// wall-clock minute of the store's clock, the first refusalsAudited are
// audited one by one; the rest are counted here and, once the minute is
// over, written as one refused_summary row per actor.
type refusalCounter struct {
	mu     sync.Mutex
	minute time.Time      // the minute counted (UTC, truncated); zero before the first
	seen   map[string]int // refusals in minute, by actor
	// over is the unix time minute ends, when some actor is past
	// refusalsAudited in it (0 otherwise): a cheap check for every request.
	over atomic.Int64
}

// count counts one refusal by actor at now. It returns whether to audit it
// one by one, and the summaries of an earlier minute that now is past.
func (r *refusalCounter) count(actor string, now time.Time) (bool, []models.AuditEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := now.UTC().Truncate(time.Minute)
	var sums []models.AuditEntry
	if !m.Equal(r.minute) {
		sums = r.takeLocked()
		r.minute, r.seen = m, map[string]int{}
	}
	if _, ok := r.seen[actor]; !ok && len(r.seen) >= maxRefusalActors {
		actor = refusalOthers
	}
	r.seen[actor]++
	if r.seen[actor] > refusalsAudited {
		r.over.Store(m.Add(time.Minute).Unix())
		return false, sums
	}
	return true, sums
}

// due takes the summaries of a minute that is over at now, if any.
func (r *refusalCounter) due(now time.Time) []models.AuditEntry {
	if end := r.over.Load(); end == 0 || now.Unix() < end {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.UTC().Truncate(time.Minute).Equal(r.minute) {
		return nil
	}
	sums := r.takeLocked()
	r.seen = map[string]int{}
	return sums
}

// takeAll takes every summary, the current minute's too: at shutdown.
func (r *refusalCounter) takeAll() []models.AuditEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	sums := r.takeLocked()
	r.seen = map[string]int{}
	return sums
}

// takeLocked is the summary rows of the minute counted, one per actor past
// refusalsAudited, by actor, and clears the flag.
func (r *refusalCounter) takeLocked() []models.AuditEntry {
	r.over.Store(0)
	var sums []models.AuditEntry
	for a, n := range r.seen {
		if n <= refusalsAudited {
			continue
		}
		sums = append(sums, models.AuditEntry{Actor: a, Action: models.RefusedSummaryAction,
			Target: models.RefusedSummaryKind + ":" + a, Outcome: "refused",
			Detail: fmt.Sprintf("%d more refused in this minute (%s UTC)", n-refusalsAudited, r.minute.Format("15:04"))})
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Actor < sums[j].Actor })
	return sums
}

// auditRefusal writes the audit row of a refused request, or counts it
// when its actor is past refusalsAudited this minute, and writes the
// summaries of a minute that is over.
func (s *server) auditRefusal(ctx context.Context, e models.AuditEntry) error {
	one, sums := s.refusals.count(e.Actor, s.store.Now())
	if err := s.writeSummaries(ctx, sums); err != nil {
		return err
	}
	if !one {
		return nil
	}
	return s.store.RecordAudit(ctx, e)
}

// writeSummaries writes refused_summary rows, without the metadata of the
// request that happens to write them.
func (s *server) writeSummaries(ctx context.Context, sums []models.AuditEntry) error {
	ctx = models.WithRequestMeta(ctx, models.RequestMeta{})
	for _, e := range sums {
		if err := s.store.RecordAudit(ctx, e); err != nil {
			return err
		}
	}
	return nil
}

// flushRefusals writes the summaries of a minute that is over, on any
// request: a flood that stops is summed up by the next request, not only
// by the next refusal. A failure is logged; the request goes on.
func (s *server) flushRefusals(ctx context.Context) {
	sums := s.refusals.due(s.store.Now())
	if err := s.writeSummaries(ctx, sums); err != nil {
		s.log.ErrorContext(ctx, "audit refused-request summaries", slog.Any("err", err))
	}
}

// refusalSummaries writes, on any request, the summaries of refused
// requests of a minute that is over.
func (s *server) refusalSummaries(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		s.flushRefusals(c.Request().Context())
		return next(c)
	}
}
