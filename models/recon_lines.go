package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Reconciliation of a counter's order lines against their ledger rows: the
// seeds' "held = locked − released − deducted, by line". A line's hold row
// is moved by every operation in the same transaction as its ledger row,
// so each (order, key) must agree: what it still holds is its LOCK rows
// less its RELEASE and DEDUCT rows (LINE_HELD), and what it refunded,
// restocked and wrote off is its REFUND, RESTOCK and WRITE_OFF rows
// (LINE_AFTER_SALE). A hand edit of order_holds shows here, keyed by the
// resource key, with the sums over its disagreeing lines. A line's
// returned never exceeds its shipped: a CHECK on the row holds that
// (TestMigration23WidensChecks), so no check reads it.
const (
	CheckLineHeld      = "LINE_HELD"
	CheckLineAfterSale = "LINE_AFTER_SALE"
)

func (c *counter) lineDiffs(ctx context.Context, db *gorm.DB) ([]Diff, error) {
	fixed, args := "", []any{}
	if c.fixedCol != "" {
		fixed, args = " AND f."+c.fixedCol+" = ?", []any{c.fixedVal}
	}
	args = append(args, c.typ)
	type row struct {
		Key                      string
		Held, Net, After, LAfter int64
	}
	var rows []row
	q := fmt.Sprintf(`SELECT h.biz_key AS key,
		SUM(h.qty - h.released - h.deducted) AS held, SUM(COALESCE(f.net, 0)) AS net,
		SUM(h.refunded + h.restocked + h.written_off) AS after, SUM(COALESCE(f.after, 0)) AS l_after
		FROM order_holds h LEFT JOIN (
			SELECT f.order_no, f.%[1]s AS k,
				SUM(CASE f.type WHEN 'LOCK' THEN f.qty WHEN 'RELEASE' THEN -f.qty WHEN 'DEDUCT' THEN -f.qty ELSE 0 END) AS net,
				SUM(CASE WHEN f.type IN ('REFUND','RESTOCK','WRITE_OFF') THEN f.qty ELSE 0 END) AS after
			FROM %[2]s f WHERE f.order_no IS NOT NULL%[3]s GROUP BY f.order_no, f.%[1]s
		) f ON f.order_no = h.order_no AND f.k = h.biz_key
		WHERE h.resource_type = ? AND (h.qty - h.released - h.deducted <> COALESCE(f.net, 0)
			OR h.refunded + h.restocked + h.written_off <> COALESCE(f.after, 0))
		GROUP BY h.biz_key ORDER BY h.biz_key`, c.key, c.ledger, fixed)
	if err := db.WithContext(ctx).Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("reconcile %s lines: %w", c.typ, err)
	}
	var diffs []Diff
	for _, r := range rows {
		if r.Held != r.Net {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckLineHeld, Expected: r.Net, Actual: r.Held})
		}
		if r.After != r.LAfter {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckLineAfterSale, Expected: r.LAfter, Actual: r.After})
		}
	}
	return diffs, nil
}
