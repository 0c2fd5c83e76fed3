package models

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"
)

// CloseResult is the answer to a close: the order's status and how many
// release tasks it has. Won is true only for the call that flipped it.
type CloseResult struct {
	Status OrderStatus `json:"status"`
	Tasks  int64       `json:"tasks"`
	Won    bool        `json:"-"`
}

// CloseOrder flips a PENDING order to CLOSED and writes one release task per
// outstanding hold in the same transaction. Closing a CLOSED order answers
// the same result and writes nothing; closing a PAID order is refused.
// Concurrent closes share transactions (closeGroups), each with its own
// answer: one's refusal never fails another's.
func (s *Store) CloseOrder(ctx context.Context, orderNo string, reason Trigger, actor string) (CloseResult, error) {
	if _, err := ParseCloseReason(string(reason)); err != nil {
		return CloseResult{}, err
	}
	if s.closes != nil {
		return s.closeInGroup(ctx, orderNo, reason)
	}
	return s.closeAlone(ctx, orderNo, reason)
}

// closeAlone is a close in a transaction of its own: a group of one
// (closeCalls), whose refusal is its answer.
func (s *Store) closeAlone(ctx context.Context, orderNo string, reason Trigger) (CloseResult, error) {
	c := &closeCall{groupCall: groupCall{ctx: ctx}, no: orderNo, reason: reason}
	err := s.write(ctx, func(tx *gorm.DB) error {
		c.res, c.err = CloseResult{}, nil
		return s.closeCalls(tx, []*closeCall{c})
	})
	if err == nil {
		err = c.err
	}
	if err != nil {
		return CloseResult{}, fmt.Errorf("close order %s: %w", orderNo, err)
	}
	return c.res, nil
}

// closeOrders closes, inside tx, those of nos still PENDING, by a
// conditional update (a payment racing it wins or loses each order
// cleanly), and writes one release task per outstanding hold of each order
// it closed. It returns the orders it closed, in order-number order, and
// the number of tasks written for each.
func (s *Store) closeOrders(tx *gorm.DB, nos []string, reason Trigger) ([]string, map[string]int64, error) {
	now := s.Now()
	var won []string
	for part := range slices.Chunk(nos, closeChunk) {
		// On PostgreSQL the orders are locked first, in one order that
		// every closer shares (a group, the timeout sweep, another
		// instance's), whatever plan the update would take.
		if s.Dialect == Postgres {
			var locked []string
			if err := tx.Raw(`SELECT order_no FROM orders WHERE order_no IN ? ORDER BY order_no FOR UPDATE`, part).
				Scan(&locked).Error; err != nil {
				return nil, nil, err
			}
		}
		var page []string
		err := tx.Raw(`UPDATE orders SET status = 'CLOSED', close_reason = ?, closed_at = ?, updated_at = ?, version = version + 1
			WHERE order_no IN ? AND status = 'PENDING' RETURNING order_no`, reason, now, now, part).Scan(&page).Error
		if err != nil {
			return nil, nil, err
		}
		won = append(won, page...)
	}
	if len(won) == 0 {
		return nil, nil, nil
	}
	slices.Sort(won)
	var hs []Hold
	for part := range slices.Chunk(won, closeChunk) {
		var page []Hold
		if err := tx.Where("order_no IN ?", part).Find(&page).Error; err != nil {
			return nil, nil, err
		}
		hs = append(hs, page...)
	}
	slices.SortFunc(hs, func(a, b Hold) int {
		if c := strings.Compare(a.OrderNo, b.OrderNo); c != 0 {
			return c
		}
		switch {
		case resourceLess(a.ResourceType, b.ResourceType, a.BizKey, b.BizKey):
			return -1
		case resourceLess(b.ResourceType, a.ResourceType, b.BizKey, a.BizKey):
			return 1
		}
		return 0
	})
	var delays map[ResourceType]map[string]time.Duration
	// An aborted placement never gave its customer an order: what it took
	// goes back at once, whatever delay keeps scalpers off.
	if reason != TriggerPlaceAborted {
		var err error
		if delays, err = s.releaseDelays(tx, hs); err != nil {
			return nil, nil, err
		}
	}
	var tasks []ReleaseTask
	for _, h := range hs {
		if h.Outstanding() == 0 {
			continue
		}
		tasks = append(tasks, ReleaseTask{OrderNo: h.OrderNo, ResourceType: h.ResourceType, BizKey: h.BizKey,
			Qty: h.Outstanding(), Op: FlowRelease, Trigger: reason, NextAt: now.Add(delays[h.ResourceType][h.BizKey])})
	}
	if err := insertTasks(tx, tasks, now); err != nil {
		return nil, nil, err
	}
	perOrder := make(map[string]int64, len(won))
	for _, t := range tasks {
		perOrder[t.OrderNo]++
	}
	evs := make([]newEvent, len(won))
	for i, no := range won {
		evs[i] = newEvent{Type: EventOrderClosed, OrderNo: no, At: now, Data: closedData{OrderNo: no, Trigger: reason, Tasks: int(perOrder[no])}}
	}
	if err := emitEvents(tx, evs); err != nil {
		return nil, nil, err
	}
	return won, perOrder, nil
}

// delayReader is a Resource that reads the release delays of many keys
// in one statement (a counter); the others are asked key by key.
type delayReader interface {
	releaseDelays(tx *gorm.DB, keys []string) (map[string]time.Duration, error)
}

// releaseDelays reads the release delay of each key the outstanding holds
// of hs name, once per key: orders closed together share SKUs.
func (s *Store) releaseDelays(tx *gorm.DB, hs []Hold) (map[ResourceType]map[string]time.Duration, error) {
	keys := map[ResourceType][]string{}
	for _, h := range hs {
		if h.Outstanding() > 0 {
			keys[h.ResourceType] = append(keys[h.ResourceType], h.BizKey)
		}
	}
	out := make(map[ResourceType]map[string]time.Duration, len(keys))
	for t, ks := range keys {
		slices.Sort(ks)
		ks = slices.Compact(ks)
		r := s.resources[t]
		if many, ok := r.(delayReader); ok {
			got := map[string]time.Duration{}
			for part := range slices.Chunk(ks, closeChunk) {
				page, err := many.releaseDelays(tx, part)
				if err != nil {
					return nil, err
				}
				maps.Copy(got, page)
			}
			out[t] = got
			continue
		}
		got := make(map[string]time.Duration, len(ks))
		for _, k := range ks {
			d, err := r.ReleaseDelay(tx, k)
			if err != nil {
				return nil, err
			}
			got[k] = d
		}
		out[t] = got
	}
	return out, nil
}

// closeChunk bounds the rows of one IN list or one multi-row insert, well
// under both engines' limits on bound parameters.
const closeChunk = 100

// insertTasks writes new PENDING tasks, many rows a statement: a task's ID
// is not needed by whoever closes, and gorm's Create of one row at a time
// was the larger part of a close.
func insertTasks(tx *gorm.DB, tasks []ReleaseTask, now time.Time) error {
	for part := range slices.Chunk(tasks, closeChunk) {
		var q strings.Builder
		q.WriteString(`INSERT INTO release_tasks (order_no, resource_type, biz_key, qty, op, status, trigger_type, next_at,
			created_at, updated_at) VALUES `)
		args := make([]any, 0, 10*len(part))
		for i, t := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, t.OrderNo, t.ResourceType, t.BizKey, t.Qty, t.Op, TaskPending, t.Trigger, t.NextAt, now, now)
		}
		if err := tx.Exec(q.String(), args...).Error; err != nil {
			return err
		}
	}
	return nil
}

func orderStatus(tx *gorm.DB, orderNo string) (OrderStatus, error) {
	var o Order
	err := tx.Select("status").Where("order_no = ?", orderNo).Take(&o).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", fmt.Errorf("%w: order %s", ErrNotFound, orderNo)
	}
	return o.Status, err
}

// CloseExpired closes, with reason TIMEOUT, up to limit PENDING orders whose
// pay deadline has passed, in one transaction, and returns the numbers it
// closed: an order paid between the scan and the close stays paid. One
// transaction a page, not an order, so that a flash sale's worth of expired
// orders takes few turns of SQLite's one writer and few commits.
func (s *Store) CloseExpired(ctx context.Context, limit int) ([]string, error) {
	var nos []string
	err := s.R.WithContext(ctx).Model(&Order{}).Where("status = ? AND pay_deadline < ?", OrderPending, s.Now()).
		Order("pay_deadline").Limit(limit).Pluck("order_no", &nos).Error
	if err != nil {
		return nil, fmt.Errorf("find expired orders: %w", err)
	}
	if len(nos) == 0 {
		return nil, nil
	}
	// Locked in order-number order, as a close group locks its orders: in
	// pay-deadline order a sweep and a group on PostgreSQL could each hold
	// an order the other waits for.
	slices.Sort(nos)
	var closed []string
	err = s.write(ctx, func(tx *gorm.DB) error {
		var err error
		closed, _, err = s.closeOrders(tx, nos, TriggerTimeout)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("close expired orders: %w", err)
	}
	return closed, nil
}
