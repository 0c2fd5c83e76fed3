package models_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// releaseShop places one order per release state and returns the state
// each must show: HOLDING (placed), NONE (paid, or paid and shipped),
// RELEASED (closed and released, or paid and refunded), RELEASING (closed, not yet tried), RETRY and MANUAL (a task
// planted so), and a MANUAL order whose other task is DONE.
func releaseShop(t *testing.T, b bundle) map[string]models.ReleaseState {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 100, 0, "test"); return err })
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-2", 100, 0, "test"); return err })
	place := func(no string, skus ...string) {
		t.Helper()
		b.clock.Advance(time.Second)
		req := models.PlaceRequest{OrderNo: no, UserID: "u1"}
		for _, s := range skus {
			req.Items = append(req.Items, models.Item{SkuID: s, Qty: 1})
		}
		must(t, func() error { _, _, err := b.s.PlaceOrder(b.ctx, req); return err })
	}
	closeOrder := func(no string) {
		t.Helper()
		must(t, func() error { _, err := b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "user:u1"); return err })
	}
	plant := func(no, sku string, st models.TaskStatus) {
		t.Helper()
		must(t, func() error {
			return b.s.W.Exec("UPDATE release_tasks SET status = ? WHERE order_no = ? AND biz_key = ?", st, no, sku).Error
		})
	}
	for _, no := range []string{"r-hold", "r-paid", "r-shipped", "r-refunded", "r-released", "r-releasing", "r-retry", "r-manual"} {
		place(no, "sku-1")
	}
	place("r-mixed", "sku-1", "sku-2")
	for _, no := range []string{"r-paid", "r-shipped", "r-refunded"} {
		must(t, func() error { _, err := b.s.PayOrder(b.ctx, no, "txn-"+no); return err })
	}
	one := []models.LineQty{{SkuID: "sku-1", Qty: 1}}
	must(t, func() error { _, err := b.s.Ship(b.ctx, "r-shipped", "ship-1", one, "wms"); return err })
	must(t, func() error {
		_, err := b.s.Refund(b.ctx, "r-refunded", "refund-1", nil, "changed mind", "cs")
		return err
	})
	closeOrder("r-released")
	b.drain(t, "w1")
	for _, no := range []string{"r-releasing", "r-retry", "r-manual", "r-mixed"} {
		closeOrder(no)
	}
	plant("r-retry", "sku-1", models.TaskRetry)
	plant("r-manual", "sku-1", models.TaskManual)
	plant("r-mixed", "sku-1", models.TaskManual)
	plant("r-mixed", "sku-2", models.TaskDone)
	return map[string]models.ReleaseState{
		"r-hold": models.ReleaseHolding, "r-paid": models.ReleaseNone, "r-shipped": models.ReleaseNone,
		"r-refunded": models.ReleaseReleased, "r-released": models.ReleaseReleased,
		"r-releasing": models.ReleaseReleasing, "r-retry": models.ReleaseRetry, "r-manual": models.ReleaseManual,
		"r-mixed": models.ReleaseManual,
	}
}

// Each order shows its release state, and the filter by each state lists
// exactly the orders in it, with their count.
func TestOrdersReleaseState(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		want := releaseShop(t, b)
		page, err := b.s.ListOrders(b.ctx, models.OrderQuery{Count: models.OrderCountCap})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Orders) != len(want) || page.Total != int64(len(want)) || page.Over {
			t.Fatalf("listed %d orders, total %d (over %v), want %d", len(page.Orders), page.Total, page.Over, len(want))
		}
		for no, st := range want {
			if got := page.Release[no]; got != st {
				t.Errorf("%s: release state %q, want %q", no, got, st)
			}
		}
		for _, st := range models.ReleaseStates {
			page, err := b.s.ListOrders(b.ctx, models.OrderQuery{Release: st, Count: models.OrderCountCap})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for no, w := range want {
				if w == st {
					n++
					if _, ok := page.Release[no]; !ok {
						t.Errorf("filter %s misses %s", st, no)
					}
				}
			}
			if len(page.Orders) != n || page.Total != int64(n) {
				t.Errorf("filter %s: %d orders, total %d, want %d", st, len(page.Orders), page.Total, n)
			}
			for _, o := range page.Orders {
				if page.Release[o.OrderNo] != st {
					t.Errorf("filter %s lists %s, which is %s", st, o.OrderNo, page.Release[o.OrderNo])
				}
			}
		}
		if _, err := b.s.ListOrders(b.ctx, models.OrderQuery{Release: "DONE"}); !errors.Is(err, models.ErrInvalid) {
			t.Errorf("release DONE: %v, want ErrInvalid", err)
		}
	})
}

// A count stops at OrderCountCap and says there are more.
func TestOrdersCountCapped(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		placeMany(t, b, 3)
		page, err := b.s.ListOrders(b.ctx, models.OrderQuery{Count: models.OrderCountCap, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 3 || page.Over {
			t.Fatalf("total %d over %v, want 3", page.Total, page.Over)
		}
		page, err = b.s.ListOrders(b.ctx, models.OrderQuery{Count: 2, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 2 || !page.Over {
			t.Fatalf("capped at 2: total %d over %v, want 2 and over", page.Total, page.Over)
		}
	})
}

// The orders list reads each order's release state through the order's
// own rows, and a filter by state through indexes only: on PostgreSQL,
// over 20,000 orders a tenth PENDING, no step scans a whole table; on
// SQLite, the orders come from an index and each state's reads are
// searches of the order_no indexes.
func TestOrdersReleaseStatePlan(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		if b.s.Dialect == models.Postgres {
			for _, q := range []string{
				`INSERT INTO orders (order_no, user_id, status, pay_deadline, created_at, updated_at)
					SELECT 'o-'||i, 'u'||(i%1000), CASE WHEN i%10=0 THEN 'PENDING' WHEN i%3=0 THEN 'PAID' ELSE 'CLOSED' END,
					now(), now() - (i||' seconds')::interval, now() FROM generate_series(1,20000) i`,
				`INSERT INTO order_holds (order_no, resource_type, biz_key, qty, released, deducted)
					SELECT 'o-'||i, 'inventory', 'sku-'||(i%100), 2, CASE WHEN i%10<>0 AND i%3<>0 THEN 2 ELSE 0 END,
					CASE WHEN i%10<>0 AND i%3=0 THEN 2 ELSE 0 END FROM generate_series(1,20000) i`,
				`INSERT INTO release_tasks (order_no, resource_type, biz_key, qty, status, trigger_type, next_at, created_at, updated_at)
					SELECT 'o-'||i, 'inventory', 'sku-'||(i%100), 2,
					CASE WHEN i%97=0 THEN 'MANUAL' WHEN i%49=0 THEN 'RETRY' WHEN i%21=0 THEN 'PENDING' ELSE 'DONE' END,
					'TIMEOUT', now(), now() - (i||' seconds')::interval, now() FROM generate_series(1,20000) i WHERE i%10<>0 AND i%3<>0`,
				`ANALYZE orders, order_holds, release_tasks`,
			} {
				must(t, func() error { return b.s.W.Exec(q).Error })
			}
		}
		for _, st := range append([]models.ReleaseState{""}, models.ReleaseStates...) {
			plan, err := b.s.OrdersListPlan(models.OrderQuery{Release: st})
			if err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			for _, line := range plan {
				bad := strings.Contains(line, "Seq Scan")
				if b.s.Dialect == models.SQLite {
					bad = (strings.HasPrefix(line, "SCAN") && !strings.Contains(line, "USING INDEX")) ||
						((strings.Contains(line, " rt ") || strings.Contains(line, " oh ")) && !strings.Contains(line, "(order_no=?)"))
				}
				if bad {
					t.Errorf("release %q: %q is not an index read; plan:\n%s", st, line, text)
				}
			}
		}
	})
}
