package models_test

import (
	"net/http"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// heldTickets are the open HELD tickets of the gift card's key gc-1.
func heldTickets(t *testing.T, b bundle) []models.DiffTicket {
	t.Helper()
	var ds []models.DiffTicket
	must(t, func() error {
		return b.s.W.Where("resource_type = ? AND biz_key = 'gc-1' AND check_name = ? AND status <> 'RESOLVED'",
			giftCard, models.CheckHeld).Find(&ds).Error
	})
	return ds
}

// ticketedHeld gives the gift card's key gc-1 a HELD ticket: an order
// holds 1, the service, edited by hand, says 3.
func ticketedHeld(t *testing.T, b bundle) {
	t.Helper()
	b.svc.SetAvailable("gc-1", 5)
	placeOne(t, b, "o-rh", "u1", giftCard, "gc-1", 1, false)
	b.clock.Advance(time.Minute) // past the placement's call window: not busy
	b.svc.SetHeld("gc-1", 3)
	if _, err := b.s.RunReconciliation(b.ctx, "test", "test"); err != nil {
		t.Fatal(err)
	}
	if n := len(heldTickets(t, b)); n != 1 {
		t.Fatalf("open HELD tickets of gc-1 = %d, want 1", n)
	}
}

// A run whose GET /holds was not compared keeps the key's HELD ticket
// open (design: "keys not compared keep their open HELD tickets"). A
// service that fails, or answers garbage, keeps it; one 404 — a proxy's,
// a route lost in a deploy, a key the service does not know — makes the
// run skip the whole type's HELD check and close every open HELD ticket of
// it as "gone", though nothing was compared.
func TestAttackReconHoldsUncheckedKeepsTicket(t *testing.T) {
	t.Parallel()
	answers := map[string]remotetest.Answer{
		"503":     {Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY"}`},
		"garbage": {Status: http.StatusOK, Body: `<html>not json</html>`},
		"drop":    {Drop: true},
		"404":     {Status: http.StatusNotFound, Body: `{"code":"NOT_FOUND"}`},
	}
	for _, d := range modelstest.Engines {
		for name, a := range answers {
			t.Run(string(d)+"/"+name, func(t *testing.T) {
				t.Parallel()
				b := conformanceStore(t, d)
				ticketedHeld(t, b)
				b.svc.Next(2, a) // the client may resend once on a dropped connection
				if _, err := b.s.RunReconciliation(b.ctx, "test", "test"); err != nil {
					t.Fatalf("a run with the service answering %s failed as a whole: %v", name, err)
				}
				if n := len(heldTickets(t, b)); n != 1 {
					t.Errorf("after a run whose GET /holds answered %s, open HELD tickets of gc-1 = %d, want 1 (not compared)", name, n)
				}
			})
		}
	}
}
