package models

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"
)

// FaultCloseGroup is passed, with a nil task, inside a group's write
// transaction once it has the write turn and before it takes its members:
// a test can hold it there while closes join, and an error fails the
// group's transaction as a lost connection would.
const FaultCloseGroup = "close.group"

// FaultCloseGroupCommit is passed inside a group's write transaction once
// its closes are written, before the commit, with a task that carries
// nothing but the group's size in Qty: a drill can kill the process there.
const FaultCloseGroupCommit = "close.group.commit"

// DefaultCloseGroup is how many closes share one transaction at most.
const DefaultCloseGroup = 64

// closeGroups gathers concurrent closes into shared write transactions
// (txGroups); closeCalls writes a group's closes together.
type closeGroups = txGroups[*closeCall]

// closeCall is one CloseOrder waiting for its group, and its answer.
type closeCall struct {
	groupCall
	no     string
	reason Trigger
	res    CloseResult
}

func newCloseGroups(max int) *closeGroups {
	return newTxGroups[*closeCall](max, FaultCloseGroup, FaultCloseGroupCommit)
}

// CloseGroupStats says how many group transactions committed and how many
// closes they answered, since the store opened.
func (s *Store) CloseGroupStats() (groups, closes int64) {
	return s.closes.stats()
}

// closeInGroup is CloseOrder through a group (inGroup); a close the group
// could not commit is tried again alone.
func (s *Store) closeInGroup(ctx context.Context, orderNo string, reason Trigger) (CloseResult, error) {
	c := &closeCall{groupCall: newGroupCall(ctx), no: orderNo, reason: reason}
	ctx, alone, err := inGroup(s, s.closes, c, s.closeCalls)
	switch {
	case alone:
		return s.closeAlone(ctx, orderNo, reason)
	case err != nil:
		return CloseResult{}, fmt.Errorf("close order %s: %w", orderNo, err)
	}
	return c.res, nil
}

// closeCalls closes calls inside tx and sets each one's answer: in
// order-number order, so that two groups on PostgreSQL lock orders in one
// order, each run of closes of one reason in one closeOrders (each order
// still by its own conditional update, with its own tasks and event); then the
// status and tasks of those that were not PENDING, read together. A
// refusal (not found, not closable) is that call's answer, never the
// group's error. A call whose context ended before its turn is answered
// so and not closed.
func (s *Store) closeCalls(tx *gorm.DB, calls []*closeCall) error {
	live := make([]*closeCall, 0, len(calls))
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		live = append(live, c)
	}
	slices.SortStableFunc(live, func(a, b *closeCall) int { return strings.Compare(a.no, b.no) })
	won := map[string]bool{}
	tasks := map[string]int64{}
	for i := 0; i < len(live); {
		j := i + 1
		for j < len(live) && live[j].reason == live[i].reason {
			j++
		}
		nos := make([]string, 0, j-i)
		for _, c := range live[i:j] {
			nos = append(nos, c.no)
		}
		closed, n, err := s.closeOrders(tx, slices.Compact(nos), live[i].reason)
		if err != nil {
			return err
		}
		for _, no := range closed {
			won[no] = true
		}
		for no, k := range n {
			tasks[no] = k
		}
		i = j
	}
	// In order-number order, as live is.
	var rest []string
	for _, c := range live {
		if won[c.no] {
			// The first call of an order wins it; a second one in the
			// group finds it closed, as it would after the first.
			c.res = CloseResult{Status: OrderClosed, Tasks: tasks[c.no], Won: true}
			delete(won, c.no)
			continue
		}
		rest = append(rest, c.no)
	}
	if len(rest) == 0 {
		return nil
	}
	status, counts, err := closedOrdersState(tx, slices.Compact(rest))
	if err != nil {
		return err
	}
	for _, c := range live {
		if c.res.Won {
			continue
		}
		st, ok := status[c.no]
		switch {
		case !ok:
			c.err = fmt.Errorf("%w: order %s", ErrNotFound, c.no)
		case st != OrderClosed:
			c.err = fmt.Errorf("%w: order %s is %s", ErrOrderNotClosable, c.no, st)
		default:
			c.res = CloseResult{Status: OrderClosed, Tasks: counts[c.no]}
		}
	}
	return nil
}

// closedOrdersState reads the status and the number of release tasks of
// each of nos (sorted, distinct); an order that does not exist is absent.
func closedOrdersState(tx *gorm.DB, nos []string) (map[string]OrderStatus, map[string]int64, error) {
	status := make(map[string]OrderStatus, len(nos))
	counts := make(map[string]int64, len(nos))
	for part := range slices.Chunk(nos, closeChunk) {
		var os []Order
		if err := tx.Select("order_no", "status").Where("order_no IN ?", part).Find(&os).Error; err != nil {
			return nil, nil, err
		}
		for _, o := range os {
			status[o.OrderNo] = o.Status
		}
		var rows []struct {
			OrderNo string
			N       int64
		}
		err := tx.Raw(`SELECT order_no, COUNT(*) AS n FROM release_tasks WHERE order_no IN ? GROUP BY order_no`, part).
			Scan(&rows).Error
		if err != nil {
			return nil, nil, err
		}
		for _, r := range rows {
			counts[r.OrderNo] = r.N
		}
	}
	return status, counts, nil
}
