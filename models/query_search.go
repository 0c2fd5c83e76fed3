package models

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"gorm.io/gorm"
)

// The search box's reads (GET /search): orders by number, users by the id
// their orders carry, accounts, SKUs, activities, slots and declared
// counter keys by a prefix of their key whatever its case, coupons and
// release tasks by their number. Each prefix read is a range of lower(key)
// in an index of its own (migration 00022), so a search reads at most its
// limit and one more row of each kind, however many keys there are.

// SearchLimit is the most hits a search lists of one kind.
const SearchLimit = 20

// SearchKind is what a search hit is.
type SearchKind string

// Search kinds, in the order a search lists them.
const (
	SearchOrder    SearchKind = "order"
	SearchUser     SearchKind = "user"    // a user id that orders carry
	SearchAccount  SearchKind = "account" // a user id with a balance or points
	SearchCoupon   SearchKind = "coupon"
	SearchSKU      SearchKind = "sku"
	SearchTask     SearchKind = "task"
	SearchActivity SearchKind = "activity"
	SearchSlot     SearchKind = "slot"
	SearchDeclared SearchKind = "declared" // a key of a declared counter type
)

// SearchHit is one thing a search found: its key, and what a list of hits
// shows about it (fields a kind does not have stay zero).
type SearchHit struct {
	Key string `gorm:"column:hit_key"`
	// Exact: the key is the query, ignoring case.
	Exact   bool   `gorm:"-"`
	Status  string `gorm:"column:status"`   // an order's, coupon's, task's or slot's
	OrderNo string `gorm:"column:order_no"` // a coupon's, task's or slot's order
	UserID  string `gorm:"column:user_id"`  // an order's or coupon's user
	// Type and BizKey are a task's resource.
	Type   ResourceType `gorm:"column:hit_type"`
	BizKey string       `gorm:"column:biz_key"`
	// Available, Locked and Spent are a counter key's amounts.
	Available int64 `gorm:"column:available"`
	Locked    int64 `gorm:"column:locked"`
	Spent     int64 `gorm:"column:spent"`
}

// SearchGroup is the hits of one kind (of one declared type, Type), at
// most the search's limit; More says there were more.
type SearchGroup struct {
	Kind SearchKind
	Type ResourceType
	Hits []SearchHit
	More bool
}

// SearchResult is a search's groups that found something, in kind order.
type SearchResult struct {
	Groups []SearchGroup
}

// Total is how many hits the groups list.
func (r SearchResult) Total() int {
	n := 0
	for _, g := range r.Groups {
		n += len(g.Hits)
	}
	return n
}

// searchRead is one kind's read: its group, and the query that reads
// limit+1 hits.
type searchRead struct {
	group SearchGroup
	sql   string
	args  []any
}

// lowerKey is lower(column) as the search's indexes hold it: on
// PostgreSQL under the "C" collation, where text compares byte by byte as
// SQLite's does, so that a range of it is a prefix.
func (s *Store) lowerKey(column string) string {
	if s.Dialect == Postgres {
		return `lower(` + column + `) COLLATE "C"`
	}
	return `lower(` + column + `)`
}

// searchReads are the reads of a search for q (valid, see ValidKey), each
// asking for limit+1 hits. A key's alphabet lowers to bytes below 'z', so
// the range [lower(q), prefixEnd(lower(q))) always has its end.
func (s *Store) searchReads(q string, limit int) []searchRead {
	lo := strings.ToLower(q)
	hi, _ := prefixEnd(lo)
	n := limit + 1
	prefix := func(column string) (where, order string, args []any) {
		k := s.lowerKey(column)
		return k + " >= ? AND " + k + " < ?", k, []any{lo, hi}
	}
	var reads []searchRead
	add := func(kind SearchKind, t ResourceType, sql string, args ...any) {
		reads = append(reads, searchRead{group: SearchGroup{Kind: kind, Type: t}, sql: sql, args: append(args, n)})
	}
	w, o, a := prefix("order_no")
	add(SearchOrder, "", `SELECT order_no AS hit_key, status, user_id FROM orders WHERE `+w+` ORDER BY `+o+` LIMIT ?`, a...)
	w, o, a = prefix("user_id")
	add(SearchUser, "", `SELECT user_id AS hit_key FROM orders WHERE `+w+
		` GROUP BY `+o+`, user_id ORDER BY `+o+`, user_id LIMIT ?`, a...)
	w, o, a = prefix("uid")
	add(SearchAccount, "", `SELECT uid AS hit_key FROM accounts WHERE `+w+
		` GROUP BY `+o+`, uid ORDER BY `+o+`, uid LIMIT ?`, a...)
	id, err := strconv.ParseInt(q, 10, 64)
	numeric := err == nil && id > 0
	if numeric {
		add(SearchCoupon, "", `SELECT CAST(id AS TEXT) AS hit_key, status, user_id, COALESCE(order_no, '') AS order_no
			FROM user_coupons WHERE id = ? LIMIT ?`, id)
	}
	w, o, a = prefix("sku_id")
	add(SearchSKU, "", `SELECT sku_id AS hit_key, available, locked, sold AS spent FROM inventory WHERE `+w+
		` ORDER BY `+o+` LIMIT ?`, a...)
	if numeric {
		add(SearchTask, "", `SELECT CAST(id AS TEXT) AS hit_key, status, order_no, resource_type AS hit_type, biz_key
			FROM release_tasks WHERE id = ? LIMIT ?`, id)
	}
	w, o, a = prefix("activity_id")
	add(SearchActivity, "", `SELECT activity_id AS hit_key, available, locked, used AS spent FROM activity_quotas WHERE `+w+
		` ORDER BY `+o+` LIMIT ?`, a...)
	w, o, a = prefix("slot_id")
	add(SearchSlot, "", `SELECT slot_id AS hit_key, status, COALESCE(order_no, '') AS order_no FROM slot_holds WHERE `+w+
		` ORDER BY `+o+` LIMIT ?`, a...)
	w, o, a = prefix("biz_key")
	for _, t := range s.types {
		if c, ok := s.resources[t].(*counter); ok && c.table == "declared_counters" {
			add(SearchDeclared, t, `SELECT biz_key AS hit_key, available, locked, spent FROM declared_counters
				WHERE resource_type = ? AND `+w+` ORDER BY `+o+` LIMIT ?`, append([]any{t}, a...)...)
		}
	}
	return reads
}

// Search finds what q names: orders, users, accounts, SKUs, activities,
// slots and declared counter keys whose key starts with q ignoring case,
// and the coupon and the release task whose number q is. It lists at most
// limit hits of each kind (SearchLimit when limit is not in 1..100), each
// kind's in key order, all read in one snapshot. q must be a key (ValidKey):
// anything else is ErrInvalid, and nothing is read.
func (s *Store) Search(ctx context.Context, q string, limit int) (SearchResult, error) {
	if !ValidKey(q) {
		return SearchResult{}, invalid("search %q: use 1-64 letters, digits or -_.:", q)
	}
	if limit <= 0 || limit > 100 {
		limit = SearchLimit
	}
	reads := s.searchReads(q, limit)
	var res SearchResult
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		for _, r := range reads {
			g := r.group
			if err := tx.Raw(r.sql, r.args...).Scan(&g.Hits).Error; err != nil {
				return fmt.Errorf("%s: %w", g.Kind, err)
			}
			if len(g.Hits) == 0 {
				continue
			}
			if len(g.Hits) > limit {
				g.Hits, g.More = g.Hits[:limit], true
			}
			for i := range g.Hits {
				g.Hits[i].Exact = strings.EqualFold(g.Hits[i].Key, q) ||
					(g.Kind == SearchCoupon || g.Kind == SearchTask)
			}
			res.Groups = append(res.Groups, g)
		}
		return nil
	})
	if err != nil {
		return SearchResult{}, fmt.Errorf("search %s: %w", q, err)
	}
	return res, nil
}
