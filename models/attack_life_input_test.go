package models_test

import (
	"errors"
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// Hostile input to the life operations, on both engines: a reason with
// NUL and bytes that are not UTF-8 (PostgreSQL refuses both in TEXT), ids
// at and past their bounds, quantities at zero, negative and past MaxQty,
// a line for another type's key (the user's balance), the same SKU twice,
// an inbound split across restock and write-off. Each is either done or
// refused with a domain code, never a database error, and the refused ones
// change nothing. Breaks if a raw reason reached a TEXT column, or a bound
// was checked only by the database.
func TestAttackLifeHostileInput(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-h", cp)
		before := ledgerRows(t, b)
		refused := []struct {
			name string
			do   func() error
			want *models.Error
		}{
			{"qty 0", func() error { _, err := b.s.Ship(b.ctx, "o-h", "s1", lines("sku-1", 0), "w"); return err }, models.ErrInvalid},
			{"qty -1", func() error { _, err := b.s.Refund(b.ctx, "o-h", "r1", lines("sku-1", -1), "", "w"); return err }, models.ErrInvalid},
			{"qty past MaxQty", func() error {
				_, err := b.s.Ship(b.ctx, "o-h", "s1", []models.LineQty{{SkuID: "sku-1", Qty: models.MaxQty + 1}}, "w")
				return err
			}, models.ErrInvalid},
			{"same sku twice", func() error { _, err := b.s.Ship(b.ctx, "o-h", "s1", lines("sku-1", 1, "sku-1", 1), "w"); return err }, models.ErrInvalid},
			{"id of 65 bytes", func() error {
				_, err := b.s.Ship(b.ctx, "o-h", strings.Repeat("x", 65), lines("sku-1", 1), "w")
				return err
			}, models.ErrInvalid},
			{"unicode id", func() error { _, err := b.s.Ship(b.ctx, "o-h", "发货-1", lines("sku-1", 1), "w"); return err }, models.ErrInvalid},
			{"NUL in sku", func() error { _, err := b.s.Ship(b.ctx, "o-h", "s1", lines("sku\x00-1", 1), "w"); return err }, models.ErrInvalid},
			{"reason of 501 bytes", func() error {
				_, err := b.s.Refund(b.ctx, "o-h", "r1", lines("sku-1", 1), strings.Repeat("退", 167), "w")
				return err
			}, models.ErrInvalid},
			{"balance key as a line", func() error { _, err := b.s.Refund(b.ctx, "o-h", "r1", lines("u1", 1), "", "w"); return err }, models.ErrLineNotFound},
			{"more than paid", func() error { _, err := b.s.Ship(b.ctx, "o-h", "s1", lines("sku-1", 3), "w"); return err }, models.ErrQtyExceeded},
			{"order no with NUL", func() error { _, err := b.s.Ship(b.ctx, "o-h\x00", "s1", lines("sku-1", 1), "w"); return err }, models.ErrInvalid},
			{"inbound of no return", func() error {
				_, err := b.s.Inbound(b.ctx, "nope", []models.LineQty{inbound("sku-1", 1, true)}, "w")
				return err
			}, models.ErrNotFound},
		}
		for _, c := range refused {
			if err := c.do(); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %s", c.name, err, c.want.Code)
			}
		}
		if ledgerRows(t, b) != before {
			t.Fatal("a refused request wrote rows")
		}
		// Done: a reason with NUL and bytes that are not UTF-8, then an
		// inbound split across restock and write-off.
		res, err := b.s.Refund(b.ctx, "o-h", "r-odd", lines("sku-1", 1), "bad\x00\xff reason", "cs")
		if err != nil || res.Status != models.OrderPartRefunded {
			t.Fatalf("refund with an odd reason: %+v, %v", res, err)
		}
		again, err := b.s.Refund(b.ctx, "o-h", "r-odd", lines("sku-1", 1), "bad\x00\xff reason", "cs")
		if err != nil || !again.Repeat {
			t.Fatalf("the same refund again: %+v, %v; want a repeat", again, err)
		}
		if _, err := b.s.Ship(b.ctx, "o-h", "s-2", lines("sku-1", 1, "sku-2", 1), "w"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Return(b.ctx, "o-h", "rt-1", lines("sku-1", 1), "", "cs"); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Inbound(b.ctx, "rt-1", []models.LineQty{inbound("sku-1", 1, true), inbound("sku-1", 1, false)}, "w"); !errors.Is(err, models.ErrInboundUneven) {
			t.Fatalf("inbound of 2 for a return of 1: %v, want INBOUND_MISMATCH", err)
		}
		if _, err := b.s.Inbound(b.ctx, "rt-1", []models.LineQty{inbound("sku-1", 1, false)}, "w"); err != nil {
			t.Fatal(err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}

// An operation's actor reaches its ledger rows as storable text, as the
// operation's record and audit entry have it: an actor with NUL or bytes
// that are not UTF-8 (PostgreSQL refuses both in TEXT, SQLSTATE 22021)
// is clipped once, before anything is written. Through the API the actor
// is a principal's name or "anonymous:"+RealIP; a caller of the models API
// can pass anything. (Found by an attack: the ledger row got it raw.)
func TestAttackLifeActorReachesLedgerRaw(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		b.paidOrder(t, "o-act", cp)
		res, err := b.s.Refund(b.ctx, "o-act", "r-act", lines("sku-1", 1), "", "cs\x00\xff")
		if err != nil || res.Status != models.OrderPartRefunded {
			t.Fatalf("refund by an actor with NUL and a non-UTF-8 byte: %+v, %v", res, err)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}
