package models

import (
	"context"
	"fmt"
	"net/url"

	"gorm.io/gorm"
)

// declaredCounter is a counter type that a shop declares in its resources
// file (docs/resources-file.md) instead of writing code for it:
// available → locked → spent. Every declared counter type keeps its rows in
// declared_counters and its ledger in declared_counter_flows, each type's
// narrowed to its own by resource_type, as balance and points share
// accounts by asset; the key is the biz_key its holds name.
//
// A LOCK that finds too little is INSUFFICIENT_STOCK, with the type and the
// key in its message: declared types share the error codes that the API
// and the dashboard already know, so that declaring one adds none.
func declaredCounter(s *Store, t ResourceType) *counter {
	return &counter{
		s: s, typ: t, table: "declared_counters", ledger: "declared_counter_flows", key: "biz_key",
		fixedCol: "resource_type", fixedVal: string(t),
		avail: "available", held: "locked", spent: "spent",
		short: ErrInsufficientStock, missing: ErrResourceNotFound, maxQty: MaxQty,
		page: func(key string) string { return "/resources/" + string(t) + "/" + url.PathEscape(key) },
	}
}

// CounterState is what one key of a counter type has: available, held and
// spent.
type CounterState struct {
	Available int64 `json:"available"`
	Locked    int64 `json:"locked"`
	Spent     int64 `json:"spent"`
}

// counterOf is the counter of type t, or an error saying why there is none.
func (s *Store) counterOf(t ResourceType) (*counter, error) {
	if _, err := s.ParseType(string(t)); err != nil {
		return nil, err
	}
	c, ok := s.resources[t].(*counter)
	if !ok {
		return nil, fmt.Errorf("%w: %s is %s, not counted", ErrInvalid, t, kindWords[s.resources[t].Kind()])
	}
	return c, nil
}

// Counter reads one key of a counter type, built-in or declared.
func (s *Store) Counter(ctx context.Context, t ResourceType, key string) (CounterState, error) {
	c, err := s.counterOf(t)
	if err != nil {
		return CounterState{}, err
	}
	if !ValidKey(key) {
		return CounterState{}, invalid("key must be 1-64 letters, digits or -_.:")
	}
	row, found, err := c.read(s.R.WithContext(ctx), key)
	if err != nil {
		return CounterState{}, fmt.Errorf("read %s %s: %w", t, key, err)
	}
	if !found {
		return CounterState{}, fmt.Errorf("%w: %s %s", ErrNotFound, t, key)
	}
	return CounterState{Available: row.Avail, Locked: row.Held, Spent: row.Spent}, nil
}

// SetDeclared makes a declared counter key's available amount equal to
// available, creating the key when new, with an ADJUST ledger row and an
// audit entry. A built-in type is set through its own route (a SKU's stock,
// an account's credit, an activity's total), which keeps what else it has.
func (s *Store) SetDeclared(ctx context.Context, t ResourceType, key string, available int64, actor string) (CounterState, error) {
	c, err := s.counterOf(t)
	if err != nil {
		return CounterState{}, err
	}
	if _, declared := s.labels[t]; !declared {
		return CounterState{}, fmt.Errorf("%w: %s is a built-in type: set it through its own route", ErrInvalid, t)
	}
	if !ValidKey(key) {
		return CounterState{}, invalid("key must be 1-64 letters, digits or -_.:")
	}
	if available < 0 || available > MaxAmount {
		return CounterState{}, invalid("available must be from 0 to %d", int64(MaxAmount))
	}
	var out CounterState
	err = s.write(ctx, func(tx *gorm.DB) error {
		now := s.Now()
		err := tx.Exec(`INSERT INTO declared_counters (resource_type, biz_key, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (resource_type, biz_key) DO NOTHING`, t, key, now).Error
		if err != nil {
			return err
		}
		cur, _, err := c.lock(tx, key)
		if err != nil {
			return err
		}
		after, err := c.adjust(tx, key, available-cur.Avail, actor, now)
		if err != nil {
			return err
		}
		out = CounterState{Available: after.Avail, Locked: after.Held, Spent: after.Spent}
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "set_counter", Target: string(t) + ":" + key, Outcome: "ok",
			Detail: fmt.Sprintf("available %d → %d", cur.Avail, available)}, now)
	})
	if err != nil {
		return CounterState{}, fmt.Errorf("set %s %s: %w", t, key, err)
	}
	return out, nil
}
