package modelstest

import (
	"context"
	"fmt"
	"testing"

	"unhold/models"
)

// CheckInvariants asserts every invariant of DESIGN.md over a quiet store:
// reconciliation finds nothing (held = PENDING holds + unfinished tasks, and
// available + held + spent = what the ledger says was added), every change
// has its ledger row, every hold is within bounds and agrees with its
// order's status, and each order's ledger rows add up to what it still holds.
func CheckInvariants(t testing.TB, s *models.Store) {
	t.Helper()
	ctx := context.Background()
	diffs, err := s.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 0 {
		t.Fatalf("reconcile found %d diffs: %+v", len(diffs), diffs)
	}
	CheckLedgerChains(t, s)
	checkHolds(t, s)
	checkOrderLedgers(t, s)
}

// checkHolds: released + deducted never exceed what was taken, and a quiet
// order's holds match its status.
func checkHolds(t testing.TB, s *models.Store) {
	t.Helper()
	type row struct {
		OrderNo, Status, ResourceType, BizKey string
		Qty, Released, Deducted, Open         int64
		OpenDeduct                            int64
		Shipped, Refunded, Returned           int64
		Restocked, WrittenOff                 int64
	}
	var rows []row
	open := func(op string) string {
		return `(SELECT COUNT(*) FROM release_tasks t WHERE t.order_no = h.order_no AND t.resource_type = h.resource_type
			AND t.biz_key = h.biz_key AND t.status IN ('PENDING','RETRY','MANUAL') AND t.op = '` + op + `')`
	}
	err := s.R.Raw(`SELECT h.order_no, o.status, h.resource_type, h.biz_key, h.qty, h.released, h.deducted,
		h.shipped, h.refunded, h.returned, h.restocked, h.written_off,
		` + open("RELEASE") + ` AS open, ` + open("DEDUCT") + ` AS open_deduct
		FROM order_holds h JOIN orders o ON o.order_no = h.order_no`).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Released < 0 || r.Deducted < 0 || r.Released+r.Deducted > r.Qty || r.Shipped+r.Refunded > r.Deducted ||
			r.Returned > r.Shipped || r.Restocked+r.WrittenOff > r.Returned {
			t.Fatalf("hold out of bounds: %+v", r)
		}
		var ok bool
		switch st := models.OrderStatus(r.Status); st {
		case models.OrderPending:
			// A line cancel gives back part of a line at once, or all of
			// it while another line still holds or orders stock.
			ok = r.Deducted == 0 && (r.Released == 0 || r.ResourceType == string(models.ResInventory))
		case models.OrderPaid, models.OrderPartShipped, models.OrderShipped, models.OrderPartRefunded,
			models.OrderReturning, models.OrderReturned, models.OrderRefunded:
			// What a line cancel gave back before payment stays released;
			// the rest was deducted. A remote type's hold is deducted by
			// a task, which may be unfinished. A refunded order's holds
			// are refunded whole (a REFUND_PENDING order's money that
			// went back held nothing: all released).
			ok = r.Deducted+r.Released == r.Qty && (r.Released == 0 || r.ResourceType == string(models.ResInventory)) ||
				r.OpenDeduct > 0 && r.Deducted == 0
			inv := r.ResourceType == string(models.ResInventory)
			switch {
			case s.Resource(models.ResourceType(r.ResourceType)).Kind() == models.KindRemote:
				// A remote type's service keeps what was paid: it takes
				// no refund, and its DEDUCT task may still be running.
				ok = ok && r.Refunded == 0
			case st == models.OrderRefunded:
				ok = ok && r.Refunded == r.Deducted || r.Deducted == 0 && r.Released == r.Qty
			case st == models.OrderReturned:
				// Every paid unit came back, refunded or returned and
				// taken in, and the other holds with them.
				ok = ok && r.Shipped+r.Refunded == r.Deducted && r.Returned == r.Shipped &&
					r.Restocked+r.WrittenOff == r.Returned && (inv || r.Shipped == 0)
			case !inv:
				// The other holds come back only with the whole order.
				ok = ok && r.Refunded == 0
			}
		case models.OrderClosed, models.OrderRefundPending:
			// An order closed by its last line cancel has those lines
			// released already, with no task.
			ok = r.Deducted == 0 && (r.Released == r.Qty || r.Open > 0 && (r.Released == 0 || r.ResourceType == string(models.ResInventory)))
		}
		if !ok {
			t.Fatalf("hold does not match its order's status: %+v", r)
		}
	}
}

// checkOrderLedgers: for each order and held key, what the ledger took
// (LOCK) minus what it gave back (RELEASE) and consumed (DEDUCT) is what the
// hold still has outstanding, and no row type repeats within an epoch; what
// it refunded, restocked and wrote off is what the hold says.
func checkOrderLedgers(t testing.TB, s *models.Store) {
	t.Helper()
	type row struct {
		OrderNo, ResourceType, BizKey string
		Outstanding, Net              int64
		Refunded, Restocked, WriteOff int64
		LRefunded, LRestocked         int64
		LWriteOff                     int64
	}
	for _, typ := range s.Types() {
		sp := s.Resource(typ).Ledger()
		var rows []row
		q := fmt.Sprintf(`SELECT h.order_no, h.resource_type, h.biz_key, h.qty - h.released - h.deducted AS outstanding,
			COALESCE((SELECT SUM(CASE f.type WHEN 'LOCK' THEN %[1]s WHEN 'RELEASE' THEN -%[1]s WHEN 'DEDUCT' THEN -%[1]s ELSE 0 END) FROM %[2]s f
				WHERE f.order_no = h.order_no AND %[3]s = h.biz_key%[4]s), 0) AS net,
			h.refunded, h.restocked, h.written_off AS write_off,
			COALESCE((SELECT SUM(%[1]s) FROM %[2]s f WHERE f.type = 'REFUND' AND f.order_no = h.order_no AND %[3]s = h.biz_key%[4]s), 0) AS l_refunded,
			COALESCE((SELECT SUM(%[1]s) FROM %[2]s f WHERE f.type = 'RESTOCK' AND f.order_no = h.order_no AND %[3]s = h.biz_key%[4]s), 0) AS l_restocked,
			COALESCE((SELECT SUM(%[1]s) FROM %[2]s f WHERE f.type = 'WRITE_OFF' AND f.order_no = h.order_no AND %[3]s = h.biz_key%[4]s), 0) AS l_write_off
			FROM order_holds h WHERE h.resource_type = ?`, sp.Qty, sp.Table, sp.Key, sp.Where)
		if err := s.R.Raw(q, typ).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Net != r.Outstanding {
				t.Fatalf("ledger of %s %s %s nets %d, hold has %d outstanding", r.OrderNo, r.ResourceType, r.BizKey, r.Net, r.Outstanding)
			}
			if r.LRefunded != r.Refunded || r.LRestocked != r.Restocked || r.LWriteOff != r.WriteOff {
				t.Fatalf("ledger of %s %s %s refunded/restocked/wrote off %d/%d/%d, hold says %d/%d/%d", r.OrderNo, r.ResourceType, r.BizKey,
					r.LRefunded, r.LRestocked, r.LWriteOff, r.Refunded, r.Restocked, r.WriteOff)
			}
		}
	}
}

// CheckLedgerChains proves every change of a counter resource has its ledger
// row: per key, each row's before values are the previous row's after
// values, the first row starts from zero, and the last row's after values
// are what the resource row holds now. A gap before a correction of the
// same key (a row with trigger CORRECTION, at the gap or later) is a change
// made outside unhold that the correction found and put right: its before
// values are what it found, and the ledger sums to the row again.
func CheckLedgerChains(t testing.TB, s *models.Store) {
	t.Helper()
	type row struct {
		Key, Trigger                        string
		AvailBefore, AvailAfter, HeldBefore int64
		HeldAfter, SpentBefore, SpentAfter  int64
		CurAvail, CurHeld, CurSpent         int64
	}
	for _, typ := range s.Types() {
		sp := s.Resource(typ).Ledger()
		if sp.Counter == nil {
			continue
		}
		c := sp.Counter
		var flows []row
		q := fmt.Sprintf(`SELECT %[1]s AS key, trigger_type AS trigger, avail_before, avail_after, held_before, held_after, spent_before, spent_after
			FROM %[2]s f WHERE 1 = 1%[3]s ORDER BY %[1]s, id`, sp.Key, sp.Table, sp.Where)
		if err := s.R.Raw(q).Scan(&flows).Error; err != nil {
			t.Fatal(err)
		}
		var cur []row
		q = fmt.Sprintf("SELECT %s AS key, %s AS cur_avail, %s AS cur_held, %s AS cur_spent FROM %s f WHERE 1 = 1%s",
			sp.Key, c.Avail, c.Held, c.Spent, c.Table, sp.Where)
		if err := s.R.Raw(q).Scan(&cur).Error; err != nil {
			t.Fatal(err)
		}
		// corrected is, by key, the index of its last CORRECTION row.
		corrected := map[string]int{}
		for i, f := range flows {
			if f.Trigger == string(models.TriggerCorrection) {
				corrected[f.Key] = i
			}
		}
		last := map[string]row{}
		for i, f := range flows {
			prev, seen := last[f.Key]
			if !seen && (f.AvailBefore != 0 || f.HeldBefore != 0 || f.SpentBefore != 0) {
				t.Fatalf("%s %s: first ledger row starts from %d/%d/%d, not zero", typ, f.Key, f.AvailBefore, f.HeldBefore, f.SpentBefore)
			}
			c, fixed := corrected[f.Key]
			if seen && !(fixed && c >= i) && (f.AvailBefore != prev.AvailAfter || f.HeldBefore != prev.HeldAfter || f.SpentBefore != prev.SpentAfter) {
				t.Fatalf("%s %s: a change without a ledger row: %+v follows %+v", typ, f.Key, f, prev)
			}
			last[f.Key] = f
		}
		for _, r := range cur {
			l := last[r.Key]
			if l.AvailAfter != r.CurAvail || l.HeldAfter != r.CurHeld || l.SpentAfter != r.CurSpent {
				t.Fatalf("%s %s: row holds %d/%d/%d, ledger ends at %d/%d/%d", typ, r.Key,
					r.CurAvail, r.CurHeld, r.CurSpent, l.AvailAfter, l.HeldAfter, l.SpentAfter)
			}
		}
	}
}
