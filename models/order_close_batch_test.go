package models_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"unhold/models"
)

// The timeout job closes expired orders a page per transaction while their
// payments arrive: each order is won by exactly one side. An order the
// payment won is PAID on time and has no release task; an order the close
// won is CLOSED by TIMEOUT with one task per hold, and its payment took the
// late path. Never both, never neither.
func TestCloseExpiredRacesPayments(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		// 40: a close that does not check the order is still PENDING made
		// both winners in 10 runs of 10 on each engine (with 20, in 3 of 10).
		const orders = 40
		must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 10*orders, 0, "test"); return err })
		must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, 10*orders, "test"); return err })
		nos := make([]string, orders)
		for i := range nos {
			nos[i] = fmt.Sprintf("o-%03d", i)
			req := models.PlaceRequest{OrderNo: nos[i], UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
				Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}, PayTimeout: time.Minute}
			if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		b.clock.Advance(2 * time.Minute)

		var wg sync.WaitGroup
		closed := map[string]bool{}
		wg.Go(func() {
			for {
				page, err := b.s.CloseExpired(b.ctx, 25)
				if err != nil {
					t.Error(err)
					return
				}
				if len(page) == 0 {
					return
				}
				for _, no := range page {
					closed[no] = true
				}
			}
		})
		late := make([]bool, orders)
		// Two payers from both ends, so payments meet the pages early and late.
		for _, idx := range [][]int{evens(orders), reversedOdds(orders)} {
			wg.Go(func() {
				for _, i := range idx {
					r, err := b.s.PayOrder(b.ctx, nos[i], "txn-"+nos[i])
					if err != nil {
						t.Error(err)
						return
					}
					late[i] = r.Late
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}

		var paidOnTime int
		for i, no := range nos {
			c, err := b.s.OrderChain(b.ctx, no)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case closed[no] == !late[i]:
				t.Errorf("%s: closed by the timeout job %v, payment late %v: want exactly one winner", no, closed[no], late[i])
			case !late[i]:
				paidOnTime++
				if c.Order.Status != models.OrderPaid || len(c.Tasks) != 0 || c.Order.CloseReason != "" {
					t.Errorf("%s paid on time: status %s, close reason %q, %d tasks; want PAID, none, none", no, c.Order.Status, c.Order.CloseReason, len(c.Tasks))
				}
			default:
				if c.Order.CloseReason != string(models.TriggerTimeout) || len(c.Tasks) != len(c.Holds) {
					t.Errorf("%s closed: close reason %q, %d tasks for %d holds; want TIMEOUT, one a hold", no, c.Order.CloseReason, len(c.Tasks), len(c.Holds))
				}
				for _, task := range c.Tasks {
					if task.Trigger != models.TriggerTimeout {
						t.Errorf("%s: task %s/%s trigger %s, want TIMEOUT", no, task.ResourceType, task.BizKey, task.Trigger)
					}
				}
			}
		}
		t.Logf("%d paid on time, %d closed first", paidOnTime, len(closed))
		b.assertReconciles(t)
	})
}

func evens(n int) []int {
	var r []int
	for i := 0; i < n; i += 2 {
		r = append(r, i)
	}
	return r
}

func reversedOdds(n int) []int {
	var r []int
	for i := n - 1; i >= 0; i-- {
		if i%2 == 1 {
			r = append(r, i)
		}
	}
	return r
}
