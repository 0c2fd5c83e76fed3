package models

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// The reads of a declared counter type's pages: one page of its keys, one
// key with the orders holding it now, and one page of a key's ledger. Each
// reads a keyset page through an index of declared_counters,
// declared_counter_flows, order_holds or release_tasks; none reads a type's
// or a key's whole history.

// DeclaredCountCap is the most keys a type's list counts: past it the list
// says "more than DeclaredCountCap" instead of reading every key.
const DeclaredCountCap = 10_000

// DeclaredKey is one key of a declared counter type: its three amounts and
// when they last changed.
type DeclaredKey struct {
	Key string `gorm:"column:biz_key"`
	CounterState
	UpdatedAt time.Time
}

// DeclaredKeyQuery is one page of a type's keys: those that start with
// Prefix (case-sensitive), in key order, after the key After.
type DeclaredKeyQuery struct {
	Prefix, After string
	Limit         int
}

// DeclaredKeyPage is one page of keys. Next is the After of the next page,
// "" on the last one. Total is how many keys the prefix selects; when
// there are more than DeclaredCountCap, Total is DeclaredCountCap and Over
// is set.
type DeclaredKeyPage struct {
	Keys  []DeclaredKey
	Next  string
	Total int64
	Over  bool
}

// declared is the counter of declared type t; ErrNotFound when t is not a
// declared type (unknown, or built in: those have pages of their own).
func (s *Store) declared(t ResourceType) (*counter, error) {
	if _, ok := s.labels[t]; !ok {
		return nil, fmt.Errorf("%w: %q is not a declared resource type", ErrNotFound, t)
	}
	return s.counterOf(t)
}

// ListDeclaredKeys reads one page of a declared type's keys through the
// primary key (resource_type, biz_key), and counts the keys the prefix
// selects up to DeclaredCountCap.
func (s *Store) ListDeclaredKeys(ctx context.Context, t ResourceType, q DeclaredKeyQuery) (DeclaredKeyPage, error) {
	if _, err := s.declared(t); err != nil {
		return DeclaredKeyPage{}, err
	}
	if q.Prefix != "" && !ValidKey(q.Prefix) {
		return DeclaredKeyPage{}, invalid("key prefix %q may hold only letters, digits and - _ . : (at most 64)", q.Prefix)
	}
	if q.After != "" && !ValidKey(q.After) {
		return DeclaredKeyPage{}, invalid("after %q is not a key; use the page links", q.After)
	}
	limit := pageLimit(q.Limit)
	where, args := "resource_type = ?", []any{t}
	if q.Prefix != "" {
		cond, a := prefixCond(s.Dialect, "biz_key", q.Prefix)
		where, args = where+" AND "+cond, append(args, a...)
	}
	var page DeclaredKeyPage
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		err := tx.Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM declared_counters WHERE `+where+` LIMIT ?) k`,
			append(args, DeclaredCountCap+1)...).Scan(&page.Total).Error
		if err != nil {
			return err
		}
		list, largs := where, args
		if q.After != "" {
			list, largs = list+" AND biz_key > ?", append(largs, q.After)
		}
		return tx.Raw(`SELECT biz_key, available, locked, spent, updated_at FROM declared_counters WHERE `+list+
			` ORDER BY biz_key LIMIT ?`, append(largs, limit+1)...).Scan(&page.Keys).Error
	})
	if err != nil {
		return DeclaredKeyPage{}, fmt.Errorf("list %s keys: %w", t, err)
	}
	if page.Total > DeclaredCountCap {
		page.Total, page.Over = DeclaredCountCap, true
	}
	if len(page.Keys) > limit {
		page.Keys = page.Keys[:limit]
		page.Next = page.Keys[limit-1].Key
	}
	return page, nil
}

// KeyHolders is how many of the orders holding a key now a key page lists.
const KeyHolders = 50

// KeyHold is a PENDING order's open hold of a key.
type KeyHold struct {
	OrderNo     string
	UserID      string
	Qty         int64 // still held: qty - released - deducted
	CreatedAt   time.Time
	PayDeadline time.Time
}

// KeyTask is an unfinished (PENDING, RETRY, MANUAL) release task of a key:
// a closed order's hold that the worker has not given back yet.
type KeyTask struct {
	ID       int64
	OrderNo  string
	Qty      int64
	Status   TaskStatus
	Attempts int
	NextAt   time.Time
}

// DeclaredKeyStatus is one key of a declared type and who holds it now:
// the first KeyHolders PENDING holds (by order number) and unfinished tasks
// (by id), with the totals of all of them.
type DeclaredKeyStatus struct {
	DeclaredKey
	KeyHolding
}

// KeyHolding is who holds one key of any type now: the first KeyHolders
// PENDING holds (by order number) and unfinished tasks (by id), and the
// totals of all of them.
type KeyHolding struct {
	Holds               []KeyHold
	HeldQty, HoldOrders int64 // all PENDING orders' open holds of the key
	Tasks               []KeyTask
	TaskQty, TaskCount  int64 // all unfinished release tasks of the key
}

// ExpectedLocked is what locked should be: what PENDING orders hold plus
// what unfinished release tasks will give back.
func (k DeclaredKeyStatus) ExpectedLocked() int64 { return k.HeldQty + k.TaskQty }

// DeclaredKeyOf reads one key of a declared type and the orders holding it
// now, in one snapshot, so a release committed meanwhile shows in all of
// it or in none. ErrNotFound when the type is not declared or has no such
// key.
func (s *Store) DeclaredKeyOf(ctx context.Context, t ResourceType, key string) (*DeclaredKeyStatus, error) {
	if _, err := s.declared(t); err != nil {
		return nil, err
	}
	if !ValidKey(key) {
		return nil, fmt.Errorf("%w: %s key %q", ErrNotFound, t, key)
	}
	var out DeclaredKeyStatus
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		if err := take(tx.Raw(`SELECT biz_key, available, locked, spent, updated_at FROM declared_counters
			WHERE resource_type = ? AND biz_key = ?`, t, key), &out.DeclaredKey, fmt.Sprintf("%s key %s", t, key)); err != nil {
			return err
		}
		var err error
		out.KeyHolding, err = s.keyHolding(tx, t, key)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", t, key, err)
	}
	return &out, nil
}

// keyHolding reads, in tx, who holds key of type t now.
func (s *Store) keyHolding(tx *gorm.DB, t ResourceType, key string) (KeyHolding, error) {
	var out KeyHolding
	pending, tasks, err := s.expectedHeld(tx, []ResourceType{t}, []string{key})
	if err != nil {
		return out, err
	}
	k := ResourceKey{t, key}
	out.HeldQty, out.HoldOrders = pending[k].Q, pending[k].N
	out.TaskQty, out.TaskCount = tasks[k].Q, tasks[k].N
	// The open holds of the key in order_holds_open's order, each
	// one's order read by its number, as pendingHeldSQL does.
	join := "JOIN"
	if s.Dialect == SQLite {
		join = "CROSS JOIN"
	}
	err = tx.Raw(`SELECT h.order_no, o.user_id, h.qty - h.released - h.deducted AS qty, o.created_at, o.pay_deadline
		FROM order_holds h `+join+` orders o ON o.order_no = h.order_no
		WHERE h.qty > h.released + h.deducted AND h.resource_type = ? AND h.biz_key = ? AND o.status = 'PENDING'
		ORDER BY h.order_no LIMIT ?`, t, key, KeyHolders).Scan(&out.Holds).Error
	if err != nil {
		return out, fmt.Errorf("holds: %w", err)
	}
	err = tx.Raw(`SELECT id, order_no, qty, status, attempts, next_at FROM release_tasks
		WHERE resource_type = ? AND biz_key = ? AND status IN ('PENDING','RETRY','MANUAL')
		ORDER BY id LIMIT ?`, t, key, KeyHolders).Scan(&out.Tasks).Error
	if err != nil {
		return out, fmt.Errorf("unfinished tasks: %w", err)
	}
	return out, nil
}

// DeclaredFlows reads one page of a declared key's ledger below the id
// before (0: from the newest), through the index (resource_type, biz_key, id).
func (s *Store) DeclaredFlows(ctx context.Context, t ResourceType, key string, before int64, limit int) (FlowPage, error) {
	if _, err := s.declared(t); err != nil {
		return FlowPage{}, err
	}
	db := s.R.WithContext(ctx).Raw(`SELECT biz_key, `+counterFlowCols+` FROM declared_counter_flows
		WHERE resource_type = ? AND biz_key = ? AND id < ? ORDER BY id DESC LIMIT ?`, t, key, below(before), pageLimit(limit)+1)
	page, err := flowPage(db, pageLimit(limit), t)
	if err != nil {
		return FlowPage{}, fmt.Errorf("ledger of %s %s: %w", t, key, err)
	}
	return page, nil
}
