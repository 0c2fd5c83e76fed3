package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"unhold/models"
)

// slowInsert makes inserts into table for one order sleep, so the
// transaction that makes them holds its first row lock long enough for
// another to take the next row in the opposite order, if any does.
func slowInsert(t *testing.T, s *models.Store, table, orderNo string) {
	t.Helper()
	must(t, func() error {
		return s.W.Exec(fmt.Sprintf(`CREATE OR REPLACE FUNCTION slow_%[1]s() RETURNS trigger AS $$ BEGIN
			IF NEW.order_no = '%[2]s' THEN PERFORM pg_sleep(0.4); END IF; RETURN NEW; END $$ LANGUAGE plpgsql`, table, orderNo)).Error
	})
	must(t, func() error {
		return s.W.Exec(fmt.Sprintf("CREATE TRIGGER slow_%[1]s BEFORE INSERT ON %[1]s FOR EACH ROW EXECUTE FUNCTION slow_%[1]s()", table)).Error
	})
}

// A late payment locks resource rows in the order placing an order does.
// It used to take the rows of released holds first (here the quota) and
// the rest after (the flash-sale SKU), and deadlocked with a placement.
func TestLatePaymentLocksInPlaceOrder(t *testing.T) {
	t.Parallel()
	b := setup(t, models.Postgres, models.Options{})
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-f", 10, 180, "test"); return err })
	must(t, func() error { _, err := b.s.SetActivity(b.ctx, "act-1", 10, "test"); return err })
	a := models.PlaceRequest{OrderNo: "A", UserID: "u1", Items: []models.Item{{SkuID: "sku-f", Qty: 1}}, ActivityID: "act-1"}
	if _, _, err := b.s.PlaceOrder(b.ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.CloseOrder(b.ctx, "A", models.TriggerTimeout, "system"); err != nil {
		t.Fatal(err)
	}
	if got := b.drain(t, "w1"); got[models.OutcomeDone] != 1 {
		t.Fatalf("drain = %v, want only the quota task done", got)
	}
	slowInsert(t, b.s, "inventory_flows", "B")
	var wg sync.WaitGroup
	var placeErr, payErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		req := models.PlaceRequest{OrderNo: "B", UserID: "u2", Items: []models.Item{{SkuID: "sku-f", Qty: 1}}, ActivityID: "act-1"}
		_, _, placeErr = b.s.PlaceOrder(b.ctx, req)
	}()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond) // B holds sku-f and sleeps
		_, payErr = b.s.PayOrder(b.ctx, "A", "txn-late")
	}()
	wg.Wait()
	if placeErr != nil || payErr != nil {
		t.Fatalf("place B: %v; late pay A: %v", placeErr, payErr)
	}
	b.assertReconciles(t)
}

// On a database whose collation is not bytewise, SQL ORDER BY and Go's sort
// disagree ("SKU-B" vs "sku-a"); every path sorts in Go, so placing and
// paying still lock SKUs in one order.
func TestLockOrderIgnoresCollation(t *testing.T) {
	t.Parallel()
	s := icuStore(t, models.Options{})
	ctx := context.Background()
	for _, sku := range []string{"SKU-B", "sku-a"} {
		if _, err := s.SetStock(ctx, sku, 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	items := []models.Item{{SkuID: "sku-a", Qty: 1}, {SkuID: "SKU-B", Qty: 1}}
	if _, _, err := s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "A", UserID: "u1", Items: items}); err != nil {
		t.Fatal(err)
	}
	slowInsert(t, s, "inventory_flows", "B")
	var wg sync.WaitGroup
	var placeErr, payErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _, placeErr = s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "B", UserID: "u2", Items: items})
	}()
	go func() {
		defer wg.Done()
		time.Sleep(100 * time.Millisecond)
		_, payErr = s.PayOrder(ctx, "A", "txn-A")
	}()
	wg.Wait()
	if placeErr != nil || payErr != nil {
		t.Fatalf("place B: %v; pay A: %v", placeErr, payErr)
	}
}
