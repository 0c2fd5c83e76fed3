package models_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// Tickets opened before grouping (one per check, checks = ”) stay
// readable, as their one check; the next run that finds their key opens
// the key's one ticket, listing every check, and closes them in its favour.
func TestOldTicketsGiveWayToGroupedTicket(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test"); return err })
		run1, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil || run1.Found != 0 {
			t.Fatalf("first run = %+v, %v", run1, err)
		}
		now := b.clock.Now()
		var old []int64
		for _, c := range []string{models.CheckHeld, models.CheckLedgerHeld} {
			tk := models.DiffTicket{ResourceType: models.ResInventory, BizKey: "sku-1", CheckName: c, Expected: 0, Actual: 1, Sign: 1,
				Status: models.DiffOpen, FirstRunID: run1.ID, LastRunID: run1.ID, CreatedAt: now, UpdatedAt: now}
			must(t, func() error { return b.s.W.Create(&tk).Error })
			old = append(old, tk.ID)
		}
		var raw string
		must(t, func() error { return b.s.R.Raw("SELECT checks FROM recon_diffs WHERE id = ?", old[0]).Scan(&raw).Error })
		if raw != "" {
			t.Fatalf("an old ticket's checks = %q, want ''", raw)
		}
		d, err := b.s.GetDiff(b.ctx, old[1])
		if err != nil || len(d.Checks) != 1 || d.Checks[0] != (models.TicketCheck{Check: models.CheckLedgerHeld, Expected: 0, Actual: 1}) {
			t.Fatalf("old ticket read = %+v, %v; want its one check", d, err)
		}
		b.clock.Advance(time.Minute)
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-1'").Error
		})
		run2, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil {
			t.Fatal(err)
		}
		if got := b.tickets(t); strings.Join(got, " ") != "inventory/sku-1/HELD+CONSERVATION+LEDGER_HELD/+1" {
			t.Fatalf("tickets = %v", got)
		}
		opened, err := b.s.OpenedTickets(b.ctx, run2)
		if err != nil || len(opened) != 1 || run2.Opened != 1 || run2.Closed != 2 || run2.Found != 3 {
			t.Fatalf("run2 = %+v, opened %+v, %v", run2, opened, err)
		}
		for _, id := range old {
			d, err := b.s.GetDiff(b.ctx, id)
			if err != nil || d.Status != models.DiffResolved || !d.AutoClosed ||
				!strings.Contains(d.Note, fmt.Sprintf("grouped into ticket %d in run %d", opened[0].ID, run2.ID)) {
				t.Fatalf("old ticket %d after the run = %+v, %v", id, d, err)
			}
		}
		// A third run updates the one ticket, and opens nothing.
		run3, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
		if err != nil || run3.Opened != 0 || run3.Closed != 0 {
			t.Fatalf("run3 = %+v, %v", run3, err)
		}
		if again := b.ticket(t, models.ResInventory, "sku-1", models.CheckHeld); again.ID != opened[0].ID || again.LastRunID != run3.ID {
			t.Fatalf("the ticket was not carried over: %+v", again)
		}
	})
}
