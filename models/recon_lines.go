package models

import (
	"context"
	"fmt"

	"gorm.io/gorm"
)

// Reconciliation of a counter's order lines against their ledger rows: the
// seeds' "held = locked − released − deducted, by line". A line's hold row
// is moved by every operation in the same transaction as its ledger row,
// so, key by key, what the lines still hold (taken − released − paid)
// must be the ledger's LOCK rows less its RELEASE and DEDUCT rows
// (LINE_HELD), and what they refunded, restocked and wrote off must be its
// REFUND, RESTOCK and WRITE_OFF rows (LINE_AFTER_SALE). A hand edit of
// order_holds shows here. The sums are per key, not per line: reading the
// ledger grouped by order and key cost more than the rest of
// reconciliation together (8–10 s of 17–19 s on a 200,000-order shop),
// where the key's sums come with the ledger sums it already reads, and
// the lines' from two indexes (lineDiffs). Two hand edits of two
// lines of one key that cancel out are not seen. A line's returned never
// exceeds its shipped: a CHECK on the row holds that
// (TestMigration23WidensChecks), so no check reads it.
const (
	CheckLineHeld      = "LINE_HELD"
	CheckLineAfterSale = "LINE_AFTER_SALE"
)

// lineDiffs compares the type's order lines, key by key, with the ledger
// sums Reconcile read (ledgerSums).
func (c *counter) lineDiffs(ctx context.Context, db *gorm.DB, sums map[string]counterRow, after map[string]int64) ([]Diff, error) {
	type row struct {
		Key         string
		Held, After int64
	}
	// Two reads, each from an index alone: what lines hold, from the open
	// holds' covering index (00017: only the lines that still hold, whose
	// condition the query repeats to use it); what they gave back after
	// sale, from the partial index of the few lines that did (00026). A
	// key with no row in either holds, or gave back, nothing.
	var rows, after2 []row
	err := db.WithContext(ctx).Raw(`SELECT biz_key AS key, SUM(qty - released - deducted) AS held
		FROM order_holds WHERE resource_type = ? AND qty > released + deducted GROUP BY biz_key`, c.typ).Scan(&rows).Error
	if err == nil {
		err = db.WithContext(ctx).Raw(`SELECT biz_key AS key, SUM(refunded + restocked + written_off) AS after
			FROM order_holds WHERE resource_type = ? AND refunded + restocked + written_off > 0 GROUP BY biz_key`, c.typ).Scan(&after2).Error
	}
	if err != nil {
		return nil, fmt.Errorf("reconcile %s lines: %w", c.typ, err)
	}
	lineAfter := make(map[string]int64, len(after2))
	for _, r := range after2 {
		lineAfter[r.Key] = r.After
	}
	seen := make(map[string]bool, len(rows))
	for _, r := range rows {
		seen[r.Key] = true
	}
	for k, sum := range sums {
		if !seen[k] && (sum.Held != 0 || after[k] != 0) {
			rows = append(rows, row{Key: k})
		}
	}
	var diffs []Diff
	for _, r := range rows {
		if want := sums[r.Key].Held; r.Held != want {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckLineHeld, Expected: want, Actual: r.Held})
		}
		if want, got := after[r.Key], lineAfter[r.Key]; got != want {
			diffs = append(diffs, Diff{Resource: c.typ, Key: r.Key, Check: CheckLineAfterSale, Expected: want, Actual: got})
		}
	}
	return diffs, nil
}
