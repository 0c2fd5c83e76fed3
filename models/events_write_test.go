package models_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// orderEvents is the order's events as "type" a line, read from its chain.
func orderEvents(t *testing.T, b bundle, no string) []models.Event {
	t.Helper()
	c, err := b.s.OrderChain(b.ctx, no)
	if err != nil {
		t.Fatal(err)
	}
	return c.Events
}

// typesOf counts evs by type, as "type=n" sorted.
func typesOf(evs []models.Event) string {
	n := map[models.EventType]int{}
	for _, e := range evs {
		n[e.Type]++
	}
	var parts []string
	for typ, c := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", typ, c))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// dataOf decodes an event's data.
func dataOf(t *testing.T, e models.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Data, &m); err != nil {
		t.Fatalf("event %s data %s: %v", e.Type, e.Data, err)
	}
	return m
}

// eventCount counts the events of typ, whatever their order.
func eventCount(t *testing.T, s *models.Store, typ models.EventType) int64 {
	t.Helper()
	var n int64
	must(t, func() error { return s.R.Raw("SELECT COUNT(*) FROM events WHERE type = ?", typ).Scan(&n).Error })
	return n
}

// An order closed and released writes one order.closed and one
// hold.released per hold, by the single and by the batch path; a close
// sent again, a redelivered release (the ledger has the row) and a
// payment after the close write none. Breaks if a fact's transaction
// missed its event or a repeat wrote a second one.
func TestEventsOnceForCloseAndRelease(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, fullOrder("o-1", cp)); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := b.s.CloseOrder(b.ctx, "o-1", models.TriggerUserCancel, "user:u1"); err != nil {
				t.Fatal(err)
			}
		}
		evs := orderEvents(t, b, "o-1")
		if got := typesOf(evs); got != "order.closed=1" {
			t.Fatalf("after closing twice: %s, want order.closed=1", got)
		}
		if d := dataOf(t, evs[0]); d["trigger"] != "USER_CANCEL" || d["tasks"] != 7.0 || d["order_no"] != "o-1" {
			t.Fatalf("order.closed data %s", evs[0].Data)
		}
		if got := b.drain(t, "w1"); got[models.OutcomeDone] != 7 {
			t.Fatalf("drain = %v", got)
		}
		evs = orderEvents(t, b, "o-1")
		if got := typesOf(evs); got != "hold.released=7 order.closed=1" {
			t.Fatalf("after the release: %s", got)
		}
		tasks := map[float64]bool{}
		for _, e := range evs[1:] {
			d := dataOf(t, e)
			if d["trigger"] != "USER_CANCEL" || d["task_id"] == nil || d["key"] == "" || d["qty"].(float64) <= 0 {
				t.Fatalf("hold.released data %s", e.Data)
			}
			tasks[d["task_id"].(float64)] = true
		}
		if len(tasks) != 7 {
			t.Fatalf("hold.released names %d tasks, want 7", len(tasks))
		}
		// A redelivery: the tasks are PENDING again, only the ledger's
		// unique key stands in the way, alone and as a batch.
		redeliver := func() {
			t.Helper()
			must(t, func() error {
				return b.s.W.Exec("UPDATE release_tasks SET status = 'PENDING', lease_until = NULL WHERE order_no = 'o-1'").Error
			})
		}
		redeliver()
		if got := b.drain(t, "w2"); got[models.OutcomeDuplicate] != 7 {
			t.Fatalf("redelivered drain = %v", got)
		}
		redeliver()
		claimed, err := b.s.ClaimTasks(b.ctx, "w3", 100, time.Minute)
		if err != nil || len(claimed) != 7 {
			t.Fatalf("claim = %d, %v", len(claimed), err)
		}
		res, err := b.s.ReleaseBatch(b.ctx, claimed, "w3")
		if err != nil || res[0].Outcome != models.OutcomeDuplicate {
			t.Fatalf("redelivered batch = %+v, %v", res, err)
		}
		if _, err := b.s.PayOrder(b.ctx, "o-1", "txn-late"); err != nil {
			t.Fatal(err)
		}
		if got := typesOf(orderEvents(t, b, "o-1")); got != "hold.released=7 order.closed=1" {
			t.Fatalf("after redeliveries and a late payment: %s", got)
		}

		// The batch path: one event per task, in the batch's transaction.
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-2", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-2", models.TriggerTimeout, "timeout"); err != nil {
			t.Fatal(err)
		}
		claimed, err = b.s.ClaimTasks(b.ctx, "w4", 100, time.Minute)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim = %d, %v", len(claimed), err)
		}
		if res, err := b.s.ReleaseBatch(b.ctx, claimed, "w4"); err != nil || res[0].Outcome != models.OutcomeDone {
			t.Fatalf("batch = %+v, %v", res, err)
		}
		evs = orderEvents(t, b, "o-2")
		if got := typesOf(evs); got != "hold.released=2 order.closed=1" {
			t.Fatalf("o-2 after its batch: %s", got)
		}
		if d := dataOf(t, evs[1]); d["trigger"] != "TIMEOUT" || d["resource_type"] != "inventory" {
			t.Fatalf("batch's hold.released data %s", evs[1].Data)
		}
	})
}

// A task that goes MANUAL writes task.manual; once fixed and rerun, its
// release writes one hold.released. Breaks if a failure wrote no event,
// or the rerun's release none.
func TestEventsTaskManualThenRerun(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-m", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 2}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-m", models.TriggerUserCancel, "user:u1"); err != nil {
			t.Fatal(err)
		}
		must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 0 WHERE sku_id = 'sku-1'").Error })
		if got := b.drain(t, "w1"); got[models.OutcomeManual] != 1 {
			t.Fatalf("drain with the stock short = %v, want MANUAL", got)
		}
		evs := orderEvents(t, b, "o-m")
		if got := typesOf(evs); got != "order.closed=1 task.manual=1" {
			t.Fatalf("after the failure: %s", got)
		}
		if d := dataOf(t, evs[1]); d["error_class"] != string(models.ClassLockedShort) || d["key"] != "sku-1" || d["failures"] != 1.0 {
			t.Fatalf("task.manual data %s", evs[1].Data)
		}
		must(t, func() error { return b.s.W.Exec("UPDATE inventory SET locked = 2 WHERE sku_id = 'sku-1'").Error })
		if _, err := b.s.Rerun(b.ctx, "o-m", models.ResInventory, "ops", "stock fixed by hand"); err != nil {
			t.Fatal(err)
		}
		if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
			t.Fatalf("drain after the rerun = %v", got)
		}
		if got := typesOf(orderEvents(t, b, "o-m")); got != "hold.released=1 order.closed=1 task.manual=1" {
			t.Fatalf("after the rerun: %s", got)
		}
	})
}

// A line cancel that gives stock back writes hold.released (and, the
// last one, order.closed); a refund writes order.refunded; an inbound of
// returned units return.inbound; each sent again writes nothing more.
func TestEventsOfTheOrderLife(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		cp := b.shop(t)
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-lc", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 2}, {SkuID: "sku-2", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, -1, "c-1", "", "user:u1"); err != nil {
				t.Fatal(err)
			}
		}
		evs := orderEvents(t, b, "o-lc")
		if got := typesOf(evs); got != "hold.released=1" {
			t.Fatalf("after a line cancel sent twice: %s", got)
		}
		var epoch float64
		must(t, func() error {
			return b.s.R.Raw("SELECT epoch FROM inventory_flows WHERE order_no = 'o-lc' AND type = 'RELEASE'").Scan(&epoch).Error
		})
		d := dataOf(t, evs[0])
		if d["trigger"] != "LINE_CANCEL" || d["key"] != "sku-1" || d["qty"] != 1.0 || d["epoch"] != epoch || d["task_id"] != nil {
			t.Fatalf("line cancel's hold.released data %s", evs[0].Data)
		}
		must(t, func() error {
			_, err := b.s.CancelLine(b.ctx, "o-lc", "sku-1", 1, -1, "c-2", "", "user:u1")
			return err
		})
		must(t, func() error {
			_, err := b.s.CancelLine(b.ctx, "o-lc", "sku-2", 1, -1, "c-3", "", "user:u1")
			return err
		})
		evs = orderEvents(t, b, "o-lc")
		if got := typesOf(evs); got != "hold.released=3 order.closed=1" {
			t.Fatalf("after every line was cancelled: %s", got)
		}
		if d := dataOf(t, evs[3]); evs[3].Type != models.EventOrderClosed || d["trigger"] != "LINE_CANCEL" {
			t.Fatalf("last event %s %s, want the order closed by the line cancel", evs[3].Type, evs[3].Data)
		}

		b.paidOrder(t, "o-life", cp)
		for range 2 {
			if _, err := b.s.Refund(b.ctx, "o-life", "rf-1", lines("sku-1", 1), "changed mind", "cs:ann"); err != nil {
				t.Fatal(err)
			}
		}
		must(t, func() error { _, err := b.s.Ship(b.ctx, "o-life", "ship-1", lines("sku-2", 1), "wms"); return err })
		must(t, func() error {
			_, err := b.s.Return(b.ctx, "o-life", "ret-1", lines("sku-2", 1), "broken", "cs:ann")
			return err
		})
		for range 2 {
			if _, err := b.s.Inbound(b.ctx, "ret-1", []models.LineQty{inbound("sku-2", 1, true)}, "wms"); err != nil {
				t.Fatal(err)
			}
		}
		evs = orderEvents(t, b, "o-life")
		if got := typesOf(evs); got != "order.refunded=1 return.inbound=1" {
			t.Fatalf("after the order's life: %s", got)
		}
		if d := dataOf(t, evs[0]); d["refund_id"] != "rf-1" || d["status"] != string(models.OrderPartRefunded) ||
			fmt.Sprint(d["lines"]) != "[map[qty:1 sku_id:sku-1]]" {
			t.Fatalf("order.refunded data %s", evs[0].Data)
		}
		if d := dataOf(t, evs[1]); d["return_id"] != "ret-1" || fmt.Sprint(d["lines"]) != "[map[qty:1 restock:true sku_id:sku-2]]" {
			t.Fatalf("return.inbound data %s", evs[1].Data)
		}
	})
}

// A transaction that fails after writing its events leaves none: here a
// release whose attempt row the database refuses, alone and in a batch
// (the attempts follow the events), and a close refused.
func TestEventsRolledBackWithTheirFact(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		refuse := []string{
			`CREATE TRIGGER refuse_attempt BEFORE INSERT ON task_attempts WHEN NEW.order_no = 'o-bad'
				BEGIN SELECT RAISE(ABORT, 'attempt refused'); END`,
		}
		if b.s.Dialect == models.Postgres {
			refuse = []string{
				`CREATE FUNCTION refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN RAISE EXCEPTION 'attempt refused'; END $$`,
				`CREATE TRIGGER refuse_attempt BEFORE INSERT ON task_attempts FOR EACH ROW
					WHEN (NEW.order_no = 'o-bad') EXECUTE FUNCTION refuse_attempt()`,
			}
		}
		for _, q := range refuse {
			must(t, func() error { return b.s.W.Exec(q).Error })
		}
		if _, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-bad", UserID: "u1",
			Items: []models.Item{{SkuID: "sku-1", Qty: 1}, {SkuID: "sku-2", Qty: 1}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.CloseOrder(b.ctx, "o-bad", models.TriggerUserCancel, "user:u1"); err != nil {
			t.Fatal(err)
		}
		claimed, err := b.s.ClaimTasks(b.ctx, "w1", 100, time.Minute)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim = %d, %v", len(claimed), err)
		}
		if _, err := b.s.ReleaseBatch(b.ctx, claimed, "w1"); !errors.Is(err, models.ErrBatchNotCommitted) {
			t.Fatalf("batch with its attempts refused: %v, want ErrBatchNotCommitted", err)
		}
		if _, err := b.s.ReleaseTask(b.ctx, claimed[0], "w1"); err == nil {
			t.Fatal("a release with its attempt refused succeeded")
		}
		var released int64
		must(t, func() error {
			return b.s.R.Raw("SELECT COUNT(*) FROM inventory_flows WHERE order_no = 'o-bad' AND type = 'RELEASE'").Scan(&released).Error
		})
		if got := typesOf(orderEvents(t, b, "o-bad")); got != "order.closed=1" || released != 0 {
			t.Fatalf("after the refused releases: events %s, %d RELEASE rows; want only order.closed", got, released)
		}

		b.paidOrder(t, "o-paid", mustCoupon(t, b))
		if _, err := b.s.CloseOrder(b.ctx, "o-paid", models.TriggerUserCancel, "user:u1"); !errors.Is(err, models.ErrOrderNotClosable) {
			t.Fatalf("close of a paid order: %v", err)
		}
		if n := eventCount(t, b.s, models.EventOrderClosed); n != 1 {
			t.Fatalf("%d order.closed events, want 1 (the refused close wrote one)", n)
		}
	})
}

// mustCoupon gives u1 a new coupon.
func mustCoupon(t *testing.T, b bundle) int64 {
	t.Helper()
	cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
	if err != nil {
		t.Fatal(err)
	}
	return cp.ID
}

// Reconciliation writes recon.ticket_opened when it opens a ticket, not
// when a later run updates it.
func TestEventsTicketOpenedOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		b.shop(t)
		must(t, func() error {
			return b.s.W.Exec("UPDATE inventory SET locked = locked + 1 WHERE sku_id = 'sku-2'").Error
		})
		for i := range 2 {
			run, err := b.s.RunReconciliation(b.ctx, models.ReconByCLI, "test")
			if err != nil || run.Found == 0 {
				t.Fatalf("run %d = %+v, %v; want the planted diff found", i+1, run, err)
			}
		}
		evs, err := b.s.EventsAfter(b.ctx, 0, 100, []models.EventType{models.EventTicketOpened})
		if err == nil && b.s.Dialect == models.Postgres && len(evs) == 0 {
			if _, err = b.s.SequenceEvents(b.ctx); err == nil {
				evs, err = b.s.EventsAfter(b.ctx, 0, 100, []models.EventType{models.EventTicketOpened})
			}
		}
		if err != nil || len(evs) != 1 {
			t.Fatalf("ticket events after two runs: %+v, %v; want 1", evs, err)
		}
		if d := dataOf(t, evs[0]); d["key"] != "sku-2" || d["kind"] != "DIFF" || d["ticket_id"] == nil || d["run_id"] == nil {
			t.Fatalf("recon.ticket_opened data %s", evs[0].Data)
		}
	})
}
