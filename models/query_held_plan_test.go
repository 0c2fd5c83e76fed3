package models_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"unhold/models"
)

// The orders list's held and close-date filters, its page and its count,
// read through indexes: a held key from order_holds' (resource_type,
// biz_key), a held type per order from the unique (order_no,
// resource_type, biz_key), a close range from orders_closed; and what the
// page's orders held is one read of their own holds and tasks. On
// PostgreSQL the shop is 20,000 orders one a minute, a tenth PENDING, a
// third of the rest PAID, one in seven with a coupon.
func TestOrdersHeldFiltersPlan(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		now := b.clock.Now()
		if b.s.Dialect == models.Postgres {
			for _, q := range []string{
				`INSERT INTO orders (order_no, user_id, status, pay_deadline, created_at, updated_at, closed_at)
					SELECT 'o-'||i, 'u'||(i%1000), CASE WHEN i%10=0 THEN 'PENDING' WHEN i%3=0 THEN 'PAID' ELSE 'CLOSED' END,
					$1, $1 - (i||' minutes')::interval, $1,
					CASE WHEN i%10<>0 AND i%3<>0 THEN $1 - (i||' minutes')::interval + interval '15 minutes' END
					FROM generate_series(1,20000) i`,
				`INSERT INTO order_holds (order_no, resource_type, biz_key, qty, released, deducted)
					SELECT 'o-'||i, 'inventory', 'sku-'||(i%100), 2, CASE WHEN i%10<>0 AND i%3<>0 THEN 2 ELSE 0 END,
					CASE WHEN i%10<>0 AND i%3=0 THEN 2 ELSE 0 END FROM generate_series(1,20000) i`,
				`INSERT INTO order_holds (order_no, resource_type, biz_key, qty, released, deducted)
					SELECT 'o-'||i, 'coupon', i::text, 1, CASE WHEN i%10<>0 AND i%3<>0 THEN 1 ELSE 0 END,
					CASE WHEN i%10<>0 AND i%3=0 THEN 1 ELSE 0 END FROM generate_series(1,20000) i WHERE i%7=0`,
				`INSERT INTO release_tasks (order_no, resource_type, biz_key, qty, status, trigger_type, next_at, created_at, updated_at)
					SELECT order_no, resource_type, biz_key, qty, 'DONE', 'TIMEOUT', $1, $1, $1 FROM order_holds WHERE released > 0`,
				`ANALYZE orders, order_holds, release_tasks`,
			} {
				q = strings.ReplaceAll(q, "$1", "'"+now.UTC().Format(time.RFC3339)+"'::timestamptz")
				must(t, func() error { return b.s.W.Exec(q).Error })
			}
		}
		day := now.Add(-3 * 24 * time.Hour).Truncate(24 * time.Hour)
		// A page of orders closed before a day may start in the
		// created_at index where that day ends (an order is closed after
		// it was placed) instead of reading the day's closures.
		closedPage := []string{"orders_closed", "orders_created (created_at<?)", "Index Cond: (created_at < "}
		cases := []struct {
			q models.OrderQuery
			// page and count are what the page's plan and the count's
			// must read through, one of each.
			page, count []string
		}{
			{models.OrderQuery{HeldType: models.ResCoupon, HeldKey: "700"}, []string{"order_holds_resource"}, []string{"order_holds_resource"}},
			{models.OrderQuery{ClosedFrom: day, ClosedTo: day.Add(24 * time.Hour)}, closedPage, []string{"orders_closed"}},
			{models.OrderQuery{ClosedTo: day.Add(24 * time.Hour)}, closedPage, []string{"orders_closed", "orders_created"}},
			{models.OrderQuery{HeldType: models.ResCoupon, ClosedFrom: day, ClosedTo: day.Add(24 * time.Hour)}, closedPage, []string{"orders_closed"}},
		}
		for _, c := range cases {
			list, err := b.s.OrdersListPlan(c.q)
			if err != nil {
				t.Fatal(err)
			}
			count, err := b.s.OrdersCountPlan(c.q)
			if err != nil {
				t.Fatal(err)
			}
			for what, p := range map[string]struct{ plan, uses []string }{"page": {list, c.page}, "count": {count, c.count}} {
				text := strings.Join(p.plan, "\n")
				if !slices.ContainsFunc(p.uses, func(idx string) bool { return strings.Contains(text, idx) }) {
					t.Errorf("%+v: the %s reads none of %q; plan:\n%s", c.q, what, p.uses, text)
				}
				checkIndexReads(t, b, fmt.Sprintf("%s of %+v", what, c.q), p.plan, true)
			}
		}
		// A type most orders hold is asked of each listed order (its
		// count may then read the whole list), but never read from a
		// scan of all holds.
		list, err := b.s.OrdersListPlan(models.OrderQuery{HeldType: models.ResCoupon})
		if err != nil {
			t.Fatal(err)
		}
		checkIndexReads(t, b, "page of a held type", list, true)
		count, err := b.s.OrdersCountPlan(models.OrderQuery{HeldType: models.ResCoupon})
		if err != nil {
			t.Fatal(err)
		}
		checkIndexReads(t, b, "count of a held type", count, false)
		held, err := b.s.HeldKeysPlan([]string{"o-7", "o-14", "o-21"})
		if err != nil {
			t.Fatal(err)
		}
		checkIndexReads(t, b, "what the orders held", held, true)
	})
}

// checkIndexReads fails the test where plan reads a table whole: on
// PostgreSQL a Seq Scan (of order_holds only, unless orders too), on
// SQLite a SCAN without an index.
func checkIndexReads(t *testing.T, b bundle, what string, plan []string, orders bool) {
	t.Helper()
	for _, line := range plan {
		bad := strings.Contains(line, "Seq Scan on order_holds") || orders && strings.Contains(line, "Seq Scan")
		if b.s.Dialect == models.SQLite {
			bad = strings.HasPrefix(line, "SCAN") && !strings.Contains(line, "INDEX") && line != "SCAN n"
		}
		if bad {
			t.Errorf("%s: %q is not an index read; plan:\n%s", what, line, strings.Join(plan, "\n"))
		}
	}
}
