package models

import (
	"context"
	"fmt"
	"strconv"
)

// The JSON read API's queries that no dashboard page had: one page of any
// registered type's ledger, and the tickets one reconciliation run opened.

// LedgerFlows reads one page of type t's ledger, newest first, below the
// id before (0: from the newest); with a key, only that key's rows, through
// the ledger's (key, id) index. Any registered type is read as its
// LedgerSpec says: a built-in table, the declared counters' shared ledger,
// or remote_flows. Without a key, a page of a type sharing its table with
// others reads the table's newest rows until a page of the type's is found.
func (s *Store) LedgerFlows(ctx context.Context, t ResourceType, key string, before int64, limit int) (FlowPage, error) {
	if _, err := s.ParseType(string(t)); err != nil {
		return FlowPage{}, err
	}
	if before < 0 {
		return FlowPage{}, invalid("the page position must be a positive ledger row id, not %d", before)
	}
	l := s.resources[t].Ledger()
	cond, args := "f.id < ?"+l.Where, []any{t, below(before)}
	if key != "" {
		kc, kv, err := ledgerKeyCond(t, l, key)
		if err != nil {
			return FlowPage{}, err
		}
		cond, args = cond+" AND "+kc, append(args, kv)
	}
	limit = pageLimit(limit)
	db := s.R.WithContext(ctx).Raw(`SELECT f.id, f.order_no, f.type, f.epoch, f.trigger_type AS trigger, f.actor, f.created_at, `+
		flowColumns(l)+` FROM `+l.Table+` f WHERE `+cond+` ORDER BY f.id DESC LIMIT ?`, append(args, limit+1)...)
	page, err := flowPage(db, limit, t)
	if err != nil {
		return FlowPage{}, fmt.Errorf("ledger of %s: %w", t, err)
	}
	return page, nil
}

// ledgerKeyCond is the condition that a row of t's ledger names key, and
// its argument. The coupon ledger keys rows by the coupon's integer id,
// which its LedgerSpec reads as text; compared as text, no index would
// serve it, so there the key is an id compared as one.
func ledgerKeyCond(t ResourceType, l LedgerSpec, key string) (string, any, error) {
	if t == ResCoupon {
		id, err := strconv.ParseInt(key, 10, 64)
		if err != nil || id <= 0 {
			return "", nil, invalid("a coupon ledger's key is a coupon id, a positive whole number, not %q", key)
		}
		return "f.coupon_id = ?", id, nil
	}
	if !ValidKey(key) {
		return "", nil, invalid("key %q: use 1-64 letters, digits or -_.:", key)
	}
	return l.Key + " = ?", key, nil
}

// MaxOpenedTickets is the most tickets OpenedTickets lists.
const MaxOpenedTickets = 500

// OpenedTickets lists the tickets run opened, in id order, at most
// MaxOpenedTickets of them (run.Opened says how many there were). A run
// writes its new tickets at its start time, so they are read through the
// (created_at, id) index from there.
func (s *Store) OpenedTickets(ctx context.Context, run *ReconRun) ([]DiffTicket, error) {
	out := []DiffTicket{}
	err := s.R.WithContext(ctx).Where("created_at >= ? AND first_run_id = ?", run.StartedAt.UTC(), run.ID).
		Order("id").Limit(MaxOpenedTickets).Find(&out).Error
	if err != nil {
		return nil, fmt.Errorf("tickets opened by run %d: %w", run.ID, err)
	}
	withChecks(out)
	return out, nil
}
