package models_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
)

// heldWrites is a SQLite store (placements and payments share
// transactions there only) whose first shared transaction h holds.
func heldWrites(t *testing.T) (bundle, *groupHold) {
	t.Helper()
	t.Parallel()
	h := &groupHold{writes: true}
	b := setup(t, models.SQLite, models.Options{Faults: h.fault})
	h.s = b.s
	return b, h
}

// together runs every one of writes at once, in one shared transaction
// (h holds it until they all joined), and returns each one's error.
func together(h *groupHold, writes ...func() error) []error {
	h.want.Store(int32(len(writes)))
	out := make([]error, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Go(func() { out[i] = w() })
	}
	wg.Wait()
	return out
}

// placing is a placement of r, to run (together).
func (b bundle) placing(r models.PlaceRequest) func() error {
	return func() error {
		_, _, err := b.s.PlaceOrder(b.ctx, r)
		return err
	}
}

func (b bundle) place(no, sku string) func() error {
	return b.placing(models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}})
}

func (b bundle) pay(no, txn string) func() error {
	return func() error {
		_, err := b.s.PayOrder(b.ctx, no, txn)
		return err
	}
}

// Placements and payments that share a transaction each get their own
// answer: a placement short of stock, a second placement of one order
// number, a payment of no order and a placement the database itself
// refuses (a trigger, as a CHECK would) are refused alone and leave
// nothing behind; the others commit, in one transaction.
func TestWriteGroupAnswersEachWrite(t *testing.T) {
	b, h := heldWrites(t)
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 3, 0, "test"); return err })
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 5, 0, "test"); return err })
	b.placeN(t, "o-pay") // sku-1: 2 left
	groups0, writes0 := b.s.WriteGroupStats()
	must(t, func() error {
		return b.s.W.Exec(`CREATE TRIGGER test_refuse_place BEFORE INSERT ON orders WHEN NEW.order_no = 'o-bad'
			BEGIN SELECT RAISE(ABORT, 'o-bad may not be placed'); END`).Error
	})
	got := together(h,
		b.place("o-a", "sku-1"), b.place("o-b", "sku-1"), b.place("o-c", "sku-1"),
		b.place("o-d", "sku-2"), b.place("o-d", "sku-2"),
		b.place("o-bad", "sku-2"),
		b.pay("o-pay", "txn-1"), b.pay("o-none", "txn-2"))
	short, exists := 0, 0
	for i, err := range got[:3] {
		switch {
		case errors.Is(err, models.ErrInsufficientStock):
			short++
		case err != nil:
			t.Fatalf("placement %d of sku-1 = %v", i, err)
		}
	}
	for _, err := range got[3:5] {
		switch {
		case errors.Is(err, models.ErrOrderExists):
			exists++
		case err != nil:
			t.Fatalf("placement of o-d = %v", err)
		}
	}
	if short != 1 || exists != 1 {
		t.Fatalf("%d placements of sku-1 short and %d of o-d refused as existing, want 1 and 1", short, exists)
	}
	if err := got[5]; err == nil || !strings.Contains(err.Error(), "o-bad may not be placed") {
		t.Fatalf("placement of o-bad = %v, want its own statement's error", err)
	}
	if err := got[6]; err != nil {
		t.Fatalf("payment of o-pay = %v", err)
	}
	if err := got[7]; !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("payment of no order = %v, want NOT_FOUND", err)
	}
	if got := b.stockOf(t, "sku-1"); got != [3]int64{0, 2, 1} {
		t.Fatalf("sku-1 available, locked, sold = %v, want 0 2 1", got)
	}
	if got := b.stockOf(t, "sku-2"); got != [3]int64{4, 1, 0} {
		t.Fatalf("sku-2 available, locked, sold = %v, want 4 1 0", got)
	}
	if _, err := b.s.OrderChain(b.ctx, "o-bad"); !errors.Is(err, models.ErrNotFound) {
		t.Fatalf("o-bad after its refusal: %v, want NOT_FOUND", err)
	}
	c, err := b.s.OrderChain(b.ctx, "o-pay")
	if err != nil {
		t.Fatal(err)
	}
	if c.Order.Status != models.OrderPaid {
		t.Fatalf("o-pay is %s, want PAID", c.Order.Status)
	}
	if groups, writes := b.s.WriteGroupStats(); groups-groups0 != 1 || writes-writes0 != int64(len(got)) {
		t.Fatalf("%d groups answered %d writes, want 1 and %d", groups, writes, len(got))
	}
	modelstest.CheckInvariants(t, b.s)
}

// When the shared transaction fails for none of its writes (a lost
// connection at the commit), every write is made again alone, from its
// request, not from what the rolled-back run left in it: a line deducted
// at payment is held as ordered, and paid once.
func TestWriteGroupFailureRetriesAlone(t *testing.T) {
	b, h := heldWrites(t)
	must(t, func() error {
		_, err := b.s.SetSKU(b.ctx, "sku-1", 10, models.SKUSettings{DeductAt: models.DeductAtPayment}, "test")
		return err
	})
	b.placeN(t, "o-pay")
	groups0, _ := b.s.WriteGroupStats()
	lost := errors.New("connection lost")
	h.failAtCommit.Store(&lost)
	for i, err := range together(h, b.place("o-1", "sku-1"), b.place("o-2", "sku-1"), b.pay("o-pay", "txn-1")) {
		if err != nil {
			t.Fatalf("write %d after its group's transaction failed = %v, want made alone", i, err)
		}
	}
	if got := b.stockOf(t, "sku-1"); got != [3]int64{9, 0, 1} {
		t.Fatalf("sku-1 available, locked, sold = %v, want 9 0 1", got)
	}
	for _, no := range []string{"o-1", "o-2"} {
		c, err := b.s.OrderChain(b.ctx, no)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Holds) != 1 || c.Holds[0].Ordered != 1 {
			t.Fatalf("%s holds %+v, want one line of 1 deducted at payment", no, c.Holds)
		}
	}
	if groups, _ := b.s.WriteGroupStats(); groups != groups0 {
		t.Fatalf("%d groups committed, want none: the group failed and each write went alone", groups-groups0)
	}
	modelstest.CheckInvariants(t, b.s)
}

// PostgreSQL writes Options.Writers transactions at once instead of
// sharing them; CloseGroup 1 makes every write alone on SQLite too.
func TestWriteGroupOnlyOnSQLite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d     models.Dialect
		group int
	}{{models.Postgres, 0}, {models.SQLite, 1}} {
		t.Run(string(tc.d), func(t *testing.T) {
			t.Parallel()
			s := modelstest.Open(t, tc.d, models.Options{CloseGroup: tc.group})
			if _, err := s.SetStock(t.Context(), "sku-1", 10, 0, "test"); err != nil {
				t.Fatal(err)
			}
			modelstest.PlaceAndClose(t, s, "o-1", 1)
			if groups, writes := s.WriteGroupStats(); groups != 0 || writes != 0 {
				t.Fatalf("%d groups, %d writes; want none", groups, writes)
			}
		})
	}
}
