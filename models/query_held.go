package models

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// HeldKey is one hold of a listed order and where it stands. State is
// ReleaseState's rules read for this hold alone (holdStateSQL): its
// task's status, else what it still holds or gave back. A hold NONE that
// Deducted something was consumed by payment; one that did not held
// nothing. Task is its release task's status, "" when none was written.
type HeldKey struct {
	Type      ResourceType `json:"resource_type" gorm:"column:resource_type"`
	Key       string       `json:"biz_key" gorm:"column:biz_key"`
	State     ReleaseState `json:"release_state" gorm:"column:state"`
	Qty       int64        `json:"qty"`
	Released  int64        `json:"released"`
	Deducted  int64        `json:"deducted"`
	Refunded  int64        `json:"refunded"`
	Restocked int64        `json:"restocked"`
	Task      TaskStatus   `json:"task_status,omitempty" gorm:"column:task_status"`
}

// Paid tells whether payment consumed what the hold took: nothing is left
// to release or being released, and it deducted something.
func (h HeldKey) Paid() bool { return h.State == ReleaseNone && h.Deducted > 0 }

// heldKeys reads the holds of the orders nos with their release states,
// in one statement: each order's holds through the unique (order_no,
// resource_type, biz_key) index of order_holds, each hold's task through
// the same index of release_tasks. They come by order number, in the
// registry's order of types, then by key.
func (s *Store) heldKeys(db *gorm.DB, nos []string) (map[string][]HeldKey, error) {
	out := make(map[string][]HeldKey, len(nos))
	if len(nos) == 0 {
		return out, nil
	}
	var rows []struct {
		OrderNo string
		HeldKey `gorm:"embedded"`
	}
	err := db.Raw(heldKeysSQL(), nos).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read what the orders held: %w", err)
	}
	for _, r := range rows {
		out[r.OrderNo] = append(out[r.OrderNo], r.HeldKey)
	}
	for _, hs := range out {
		slices.SortFunc(hs, func(a, b HeldKey) int {
			return cmp.Or(cmp.Compare(s.TypeRank(a.Type), s.TypeRank(b.Type)),
				strings.Compare(string(a.Type), string(b.Type)), strings.Compare(a.Key, b.Key))
		})
	}
	return out, nil
}

// heldKeysSQL reads the holds of some orders (its argument: their
// numbers), each with its task's status and its release state.
func heldKeysSQL() string {
	return `SELECT h.order_no, h.resource_type, h.biz_key, h.qty, h.released, h.deducted, h.refunded, h.restocked,
			COALESCE(t.status, '') AS task_status, ` + holdStateSQL("h", "t") + ` AS state
		FROM order_holds h LEFT JOIN release_tasks t
			ON t.order_no = h.order_no AND t.resource_type = h.resource_type AND t.biz_key = h.biz_key
		WHERE h.order_no IN ?`
}
