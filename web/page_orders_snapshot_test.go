package web_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// churn, at every point between the statements of a snapshot read once
// armed, closes and releases the PENDING order and places the next one with
// one more unit of sku-1: the shop stays correct, but what is held moves.
type churn struct {
	s     *models.Store
	armed bool
	n     int
	err   error
}

func (c *churn) fault(point string, _ *models.ReleaseTask) error {
	if point != models.FaultBetweenReads || !c.armed || c.err != nil {
		return nil
	}
	c.err = c.step(context.Background())
	return nil
}

func (c *churn) step(ctx context.Context) error {
	if _, err := c.s.CloseOrder(ctx, fmt.Sprintf("o-%d", c.n), models.TriggerUserCancel, "user:u1"); err != nil {
		return err
	}
	tasks, err := c.s.ClaimTasks(ctx, "w1", 10, time.Minute)
	if err != nil {
		return err
	}
	for _, tk := range tasks {
		if _, err := c.s.ReleaseTask(ctx, tk, "w1"); err != nil {
			return err
		}
	}
	c.n++
	return c.place(ctx)
}

func (c *churn) place(ctx context.Context) error {
	_, _, err := c.s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: fmt.Sprintf("o-%d", c.n), UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: int64(c.n + 1)}}})
	return err
}

// The order page reads its chain and its "does it reconcile" answer from
// one snapshot: with orders closed, released and placed between its
// statements, a correct SKU reconciles and the chain is the order as it was.
func TestOrderChainReadsOneSnapshot(t *testing.T) {
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := modelstest.NewClock()
			c := &churn{}
			c.s = modelstest.Open(t, d, models.Options{Now: clock.Now, Faults: c.fault})
			if _, err := c.s.SetStock(ctx, "sku-1", 100, 0, "test"); err != nil {
				t.Fatal(err)
			}
			if err := c.place(ctx); err != nil {
				t.Fatal(err)
			}
			b := newBundle(c.s, clock)
			c.armed = true
			body := getPage(t, b, "/orders/o-0", false, http.StatusOK)
			c.armed = false
			if c.n == 0 || c.err != nil {
				t.Fatalf("the writes between statements: %d made, %v", c.n, c.err)
			}
			row := testidElement(body, "resource-inventory-sku-1")
			if got := markupText(testidElement(row, "q-reconciles")); got != "对得上" {
				t.Errorf("sku-1 reconciles = %q on a correct shop", got)
			}
			if got := markupText(testidElement(row, "q-released")); got != "否 订单未关闭，尚无需释放" {
				t.Errorf("sku-1 released = %q, want the order as it was when the read began", got)
			}
		})
	}
}
