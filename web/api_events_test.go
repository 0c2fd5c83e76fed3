package web_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
)

// eventsGone is the 410 answer of GET /api/v1/events.
type eventsGone struct {
	apiError
	Oldest string `json:"oldest"`
}

// closeAndRelease places no (one sku-1), closes it and releases its task
// through the store: an order.closed and a hold.released event.
func closeAndRelease(t *testing.T, b bundle, no string) {
	t.Helper()
	_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
	try(t, "place "+no, err)
	_, err = b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "user:u1")
	try(t, "close "+no, err)
	tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	try(t, "claim", err)
	_, err = b.s.ReleaseBatch(b.ctx, tasks, "w1")
	try(t, "release "+no, err)
}

// GET /api/v1/events pages by after and limit, filters by type, answers
// next = after when nothing is new, refuses bad input 400, and, once the
// cleanup took events a poller has not read, 410 EVENTS_GONE with the
// oldest kept. A viewer reads it; nobody else does. On PostgreSQL nothing
// but the handler sequences the events here.
func TestAPIEvents(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
		try(t, "stock", err)
		for i := range 3 {
			closeAndRelease(t, b, fmt.Sprintf("o-%d", i+1))
		}
		viewer := b.as(b.mustSignIn("vic", auth.RoleViewer))
		var all []models.Event
		after := "0"
		for page := 0; ; page++ {
			got := must[readPage[models.Event]](t, viewer, http.StatusOK, http.MethodGet, "/api/v1/events?limit=4&after="+after, "")
			if got.Next == "" || (len(got.Items) == 0 && got.Next != after) {
				t.Fatalf("page %d: %d items, next %q after %q", page, len(got.Items), got.Next, after)
			}
			if len(got.Items) == 0 {
				break
			}
			if got.Next != strconv.FormatInt(got.Items[len(got.Items)-1].ID, 10) {
				t.Fatalf("page %d: next %q is not its last id", page, got.Next)
			}
			all = append(all, got.Items...)
			after = got.Next
		}
		if len(all) != 6 {
			t.Fatalf("read %d events, want 6", len(all))
		}
		for i, e := range all {
			if i > 0 && e.ID <= all[i-1].ID {
				t.Fatalf("event %d's id %d is not after %d", i, e.ID, all[i-1].ID)
			}
			want := models.EventOrderClosed
			if i%2 == 1 {
				want = models.EventHoldReleased
			}
			if e.Type != want || e.OrderNo != fmt.Sprintf("o-%d", i/2+1) {
				t.Fatalf("event %d = %s of %s", i, e.Type, e.OrderNo)
			}
		}
		closed := must[readPage[models.Event]](t, b, http.StatusOK, http.MethodGet, "/api/v1/events?type=order.closed,task.manual", "")
		if len(closed.Items) != 3 || closed.Items[2].Type != models.EventOrderClosed || closed.Next != strconv.FormatInt(all[4].ID, 10) {
			t.Fatalf("order.closed only: %+v", closed)
		}
		// A repeated type is every one named, never the first alone.
		repeated := must[readPage[models.Event]](t, b, http.StatusOK, http.MethodGet, "/api/v1/events?type=order.closed&type=hold.released", "")
		if len(repeated.Items) != 6 || repeated.Next != strconv.FormatInt(all[5].ID, 10) {
			t.Fatalf("type repeated: %d events, next %s; want all 6", len(repeated.Items), repeated.Next)
		}
		for _, q := range []string{"type=order.closed&type=order.closed", "after=-1", "after=x", "limit=0", "limit=1001", "type=nope", "type=order.closed,order.closed"} {
			wantError(t, b.call(http.MethodGet, "/api/v1/events?"+q, ""), http.StatusBadRequest, "INVALID_INPUT")
		}
		wantError(t, b.as(nil).call(http.MethodGet, "/api/v1/events", ""), http.StatusUnauthorized, "UNAUTHENTICATED")

		// Eight days on, o-4's events are young, the others cleaned up.
		b.clock.Advance(8 * 24 * time.Hour)
		closeAndRelease(t, b, "o-4")
		n, err := b.s.DeleteOldEvents(b.ctx, b.clock.Now().Add(-7*24*time.Hour))
		if err != nil || n != 6 {
			t.Fatalf("cleanup deleted %d, %v; want 6", n, err)
		}
		rec := b.call(http.MethodGet, "/api/v1/events?after="+strconv.FormatInt(all[1].ID, 10), "")
		if rec.Code != http.StatusGone {
			t.Fatalf("after a cleaned up event: %d %s, want 410", rec.Code, rec.Body)
		}
		gone := decodeStrict[eventsGone](t, rec)
		oldest, _ := strconv.ParseInt(gone.Oldest, 10, 64)
		if gone.Error.Code != "EVENTS_GONE" || gone.Error.Message == "" || oldest <= all[5].ID {
			t.Fatalf("410 answer %+v: want EVENTS_GONE and an oldest after the cleaned up %d", gone, all[5].ID)
		}
		// A poller that had read everything cleaned up misses nothing: no 410.
		for _, from := range []string{strconv.FormatInt(all[5].ID, 10), "0"} {
			got := must[readPage[models.Event]](t, b, http.StatusOK, http.MethodGet, "/api/v1/events?after="+from, "")
			if len(got.Items) != 2 || got.Items[0].OrderNo != "o-4" || got.Items[0].ID != oldest {
				t.Fatalf("after %s: %+v", from, got.Items)
			}
		}
	})
}

// On PostgreSQL a poll numbers the events waiting (SequenceEvents), which
// takes a write turn; when writes hold every turn past the busy timeout it
// reads what is numbered instead of failing 503 BUSY: it is a read, and a
// later poll or the sequencer numbers the rest.
func TestAPIEventsReadWhileWritesBusy(t *testing.T) {
	t.Parallel()
	clock := modelstest.NewClock()
	b := newBundle(modelstest.Open(t, models.Postgres, models.Options{Now: clock.Now, BusyTimeout: 200 * time.Millisecond, Writers: 1}), clock)
	_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
	try(t, "stock", err)
	closeAndRelease(t, b, "o-1")
	// The first poll numbers o-1's events (and touches the token, a write).
	must[readPage[models.Event]](t, b, http.StatusOK, http.MethodGet, "/api/v1/events", "")
	_, _, err = b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-2", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
	try(t, "place o-2", err)
	_, err = b.s.CloseOrder(b.ctx, "o-2", models.TriggerUserCancel, "user:u1")
	try(t, "close o-2", err)
	end := modelstest.HoldWriteTurn(t, b.s)
	rec := b.call(http.MethodGet, "/api/v1/events", "")
	end()
	if rec.Code != http.StatusOK {
		t.Fatalf("poll while a write holds the turn: %d %s; want 200 with the numbered events", rec.Code, rec.Body)
	}
	if got := decodeStrict[readPage[models.Event]](t, rec); len(got.Items) != 2 || got.Items[0].OrderNo != "o-1" {
		t.Fatalf("poll while a write holds the turn: %+v; want o-1's two events", got.Items)
	}
}
