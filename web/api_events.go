package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"unhold/models"
)

// Events' page sizes: a poller's default and most.
const (
	eventsPageSize = 100
	maxEventsLimit = 1000
)

// eventsGone is the 410 answer to a poller whose after is before the
// oldest event kept: the events in between were cleaned up. Oldest is the
// id of the oldest kept; after=oldest-1 reads on from it.
type eventsGone struct {
	Error  errorDetail `json:"error"`
	Oldest string      `json:"oldest"`
}

// apiEvents is GET /api/v1/events: the events after ?after (an event id;
// 0 or absent: from the oldest kept), oldest first, at most ?limit, of
// the ?type list (comma-separated, or the parameter repeated; absent:
// every type). next is never
// empty, the last id answered or after again, so a poller just loops on
// it (docs/events.md). On PostgreSQL the events committed so far are
// sequenced first, so a quiet system with no worker running shows them
// too.
func (s *server) apiEvents(c *echo.Context) error {
	ctx := c.Request().Context()
	after := int64(0)
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return invalidf("after %.64q is not an event id; use 0, or the next of the previous answer", v)
		}
		after = n
	}
	limit, err := listLimit(c, eventsPageSize, maxEventsLimit)
	if err != nil {
		return err
	}
	// type may be repeated: every one counts (the first alone would
	// move next past the events of the others unread).
	types, err := models.ParseEventTypes(strings.Join(c.QueryParams()["type"], ","))
	if err != nil {
		return err
	}
	// Busy writes (no write turn within the busy timeout) leave the
	// waiting events to a later poll or the sequencer: this one reads what
	// is numbered.
	if _, err := s.store.SequenceEvents(ctx); err != nil && !models.IsBusy(err) {
		return err
	}
	if after > 0 {
		oldest, ok, err := s.store.OldestEvent(ctx)
		if err != nil {
			return err
		}
		if ok && after < oldest-1 {
			id := strconv.FormatInt(oldest, 10)
			return c.JSON(http.StatusGone, eventsGone{Oldest: id, Error: errorDetail{Code: "EVENTS_GONE",
				Message: "the events after " + strconv.FormatInt(after, 10) + " up to " + strconv.FormatInt(oldest-1, 10) +
					" were cleaned up (kept for -events-keep); the oldest kept is " + id + ": read on with after=" +
					strconv.FormatInt(oldest-1, 10)}})
		}
	}
	evs, err := s.store.EventsAfter(ctx, after, limit, types)
	if err != nil {
		return err
	}
	next := after
	if len(evs) > 0 {
		next = evs[len(evs)-1].ID
	}
	return c.JSON(http.StatusOK, newListPage(evs, strconv.FormatInt(next, 10)))
}

// eventTypeList names every event type, for the document.
func eventTypeList() string {
	s := ""
	for i, t := range models.EventTypes {
		if i > 0 {
			s += ", "
		}
		s += string(t)
	}
	return s
}
