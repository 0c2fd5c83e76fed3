package models

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// The search box's reads (GET /search): orders by number, users by the id
// their orders or accounts carry, SKUs, activities, slots and declared
// counter keys by a prefix of their key whatever its case, coupons and
// release tasks by their number. Each prefix read is a range of lower(key)
// in an index of its own (migration 00022), so a search reads at most its
// limit and one more row of each kind, however many keys there are; then
// each listed user's last order (one row of the index on user and creation
// time) and the balance and points the listed orders froze.

// SearchLimit is the most hits a search lists of one kind.
const SearchLimit = 20

// SearchKind is what a search hit is.
type SearchKind string

// Search kinds, in the order a search lists them.
const (
	SearchOrder    SearchKind = "order"
	SearchUser     SearchKind = "user" // a user id that orders or accounts carry
	SearchCoupon   SearchKind = "coupon"
	SearchSKU      SearchKind = "sku"
	SearchTask     SearchKind = "task"
	SearchActivity SearchKind = "activity"
	SearchSlot     SearchKind = "slot"
	SearchDeclared SearchKind = "declared" // a key of a declared counter type
	// searchAccount is the read of users by their balance or points
	// accounts, whose hits join the users of orders in one group.
	searchAccount SearchKind = "account"
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
	Owner   string `gorm:"column:owner"`    // a coupon's: PLATFORM or MERCHANT
	// Frozen is the balance (in fen) and points an order froze.
	Frozen Frozen `gorm:"-"`
	// A user's: whether they have a balance or points account, and their
	// last order (nil when they have none).
	Account   bool           `gorm:"column:has_account"`
	LastOrder *UserLastOrder `gorm:"-"`
	// Type and BizKey are a task's resource.
	Type   ResourceType `gorm:"column:hit_type"`
	BizKey string       `gorm:"column:biz_key"`
	// Available, Locked and Spent are a counter key's amounts.
	Available int64 `gorm:"column:available"`
	Locked    int64 `gorm:"column:locked"`
	Spent     int64 `gorm:"column:spent"`
}

// Frozen is the balance, in fen, and the points an order froze.
type Frozen struct {
	Balance, Points int64
}

// UserLastOrder is a user's last order as a search lists it.
type UserLastOrder struct {
	No        string      `gorm:"column:order_no"`
	Status    OrderStatus `gorm:"column:status"`
	CreatedAt time.Time   `gorm:"column:created_at"`
	Frozen    Frozen      `gorm:"-"`
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
	add(searchAccount, "", `SELECT uid AS hit_key, 1 AS has_account FROM accounts WHERE `+w+
		` GROUP BY `+o+`, uid ORDER BY `+o+`, uid LIMIT ?`, a...)
	id, err := strconv.ParseInt(q, 10, 64)
	numeric := err == nil && id > 0
	if numeric {
		add(SearchCoupon, "", `SELECT CAST(id AS TEXT) AS hit_key, status, user_id, owner, COALESCE(order_no, '') AS order_no
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

// Search finds what q names: orders, users (of orders or accounts, each
// once), SKUs, activities, slots and declared counter keys whose key
// starts with q ignoring case, and the coupon and the release task whose
// number q is. It lists at most limit hits of each kind (SearchLimit when
// limit is not in 1..100), each kind's in key order, with each order's
// frozen balance and points and each user's last order, all read in one
// snapshot. q must be a key (ValidKey):
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
		res = SearchResult{}
		for _, r := range reads {
			g := r.group
			if err := tx.Raw(r.sql, r.args...).Scan(&g.Hits).Error; err != nil {
				return fmt.Errorf("%s: %w", g.Kind, err)
			}
			if len(g.Hits) == 0 {
				continue
			}
			if g.Kind == searchAccount {
				res.Groups = joinAccounts(res.Groups, g.Hits)
				continue
			}
			res.Groups = append(res.Groups, g)
		}
		for gi := range res.Groups {
			g := &res.Groups[gi]
			if len(g.Hits) > limit {
				g.Hits, g.More = g.Hits[:limit], true
			}
			for i := range g.Hits {
				g.Hits[i].Exact = strings.EqualFold(g.Hits[i].Key, q) ||
					(g.Kind == SearchCoupon || g.Kind == SearchTask)
			}
		}
		return searchDetails(tx, res.Groups)
	})
	if err != nil {
		return SearchResult{}, fmt.Errorf("search %s: %w", q, err)
	}
	return res, nil
}

// joinAccounts adds the users found by their accounts to the users found
// by their orders, each user once, in key order. Each read holds its first
// limit+1 users, so the two hold the first limit+1 of their union.
func joinAccounts(groups []SearchGroup, accounts []SearchHit) []SearchGroup {
	i := slices.IndexFunc(groups, func(g SearchGroup) bool { return g.Kind == SearchUser })
	if i < 0 {
		// The users' group comes right after the orders'.
		i = 0
		if len(groups) > 0 && groups[0].Kind == SearchOrder {
			i = 1
		}
		groups = slices.Insert(groups, i, SearchGroup{Kind: SearchUser})
	}
	hits := groups[i].Hits
	for _, a := range accounts {
		if j := slices.IndexFunc(hits, func(h SearchHit) bool { return h.Key == a.Key }); j >= 0 {
			hits[j].Account = true
			continue
		}
		hits = append(hits, a)
	}
	slices.SortFunc(hits, func(a, b SearchHit) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Key), strings.ToLower(b.Key)), strings.Compare(a.Key, b.Key))
	})
	groups[i].Hits = hits
	return groups
}

// searchDetails reads what the listed hits show beyond their own row: each
// user's last order, and the balance and points each listed order (and
// each last order) froze.
func searchDetails(tx *gorm.DB, groups []SearchGroup) error {
	frozen := map[string][]*Frozen{} // an order may be listed and be a user's last
	for gi := range groups {
		g := &groups[gi]
		for i := range g.Hits {
			h := &g.Hits[i]
			switch g.Kind {
			case SearchOrder:
				frozen[h.Key] = append(frozen[h.Key], &h.Frozen)
			case SearchUser:
				var last []UserLastOrder
				if err := tx.Raw(`SELECT order_no, status, created_at FROM orders WHERE user_id = ?
					ORDER BY created_at DESC, id DESC LIMIT 1`, h.Key).Scan(&last).Error; err != nil {
					return fmt.Errorf("last order of %s: %w", h.Key, err)
				}
				if len(last) == 1 {
					h.LastOrder = &last[0]
					frozen[last[0].No] = append(frozen[last[0].No], &h.LastOrder.Frozen)
				}
			}
		}
	}
	if len(frozen) == 0 {
		return nil
	}
	nos := make([]string, 0, len(frozen))
	for no := range frozen {
		nos = append(nos, no)
	}
	var rows []struct {
		OrderNo      string
		ResourceType ResourceType
		Qty          int64
	}
	if err := tx.Raw(`SELECT order_no, resource_type, qty FROM order_holds
		WHERE order_no IN ? AND resource_type IN ?`, nos, []ResourceType{ResBalance, ResPoints}).Scan(&rows).Error; err != nil {
		return fmt.Errorf("frozen amounts: %w", err)
	}
	for _, r := range rows {
		for _, f := range frozen[r.OrderNo] {
			if r.ResourceType == ResBalance {
				f.Balance += r.Qty
			} else {
				f.Points += r.Qty
			}
		}
	}
	return nil
}
