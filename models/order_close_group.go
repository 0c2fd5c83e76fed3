package models

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
// (group commit). A close joins the group that is waiting for the write
// turn, or starts one and leads it; the leader takes every member that
// joined by the time its transaction began. A group therefore waits no
// longer than one close alone would, and holds the closes that queued
// behind the transactions before: a burst of closes costs a commit and a
// write turn (writeGate) per group, not per close.
type closeGroups struct {
	max     int
	mu      sync.Mutex
	forming *closeGroup // the group whose leader waits for the write turn

	groups  atomic.Int64 // transactions committed for groups
	grouped atomic.Int64 // closes answered by them
}

// closeGroup is one group's members, appended while it forms.
type closeGroup struct {
	members []*closeCall
	left    int  // members that stopped waiting, their ctx ended
	sealed  bool // no member joins any more
	// cancel ends the group's transaction once it is sealed and every
	// member left: nobody waits for it, and a close alone would have been
	// cancelled too (a row lock another transaction holds for ever on
	// PostgreSQL would otherwise keep it, and its connection, for ever).
	cancel context.CancelFunc
}

// closeCall is one CloseOrder waiting for its group. Its answer is res or
// err once done is closed, unless alone says the group could not commit
// and the close is to be tried again on its own.
type closeCall struct {
	ctx    context.Context
	group  *closeGroup
	no     string
	reason Trigger
	res    CloseResult
	err    error
	alone  bool
	done   chan struct{}
	// joined is when the close joined its group; waitUntil, when it is
	// to close alone, the end of its own wait for the write turn.
	joined    time.Time
	waitUntil time.Time
}

func newCloseGroups(max int) *closeGroups {
	if max <= 0 {
		max = DefaultCloseGroup
	}
	return &closeGroups{max: max}
}

// join adds c to the forming group, or makes a group of c that the caller
// leads (the group is returned) when there is none or it is full.
func (g *closeGroups) join(c *closeCall, cancel context.CancelFunc) *closeGroup {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.forming; f != nil && len(f.members) < g.max {
		f.members = append(f.members, c)
		c.group = f
		return nil
	}
	f := &closeGroup{members: []*closeCall{c}, cancel: cancel}
	c.group = f
	g.forming = f
	return f
}

// seal closes f to new members and returns them.
func (g *closeGroups) seal(f *closeGroup) []*closeCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.forming == f {
		g.forming = nil
	}
	f.sealed = true
	return f.members
}

// leave records that c stopped waiting for its group, and ends the
// group's transaction if it was the last member to wait. A group still
// forming runs on: a close may join it yet, and it does not close c
// (closeCalls answers a call whose ctx ended without closing it).
func (g *closeGroups) leave(c *closeCall) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := c.group
	f.left++
	if f.sealed && f.left == len(f.members) {
		f.cancel()
	}
}

// CloseGroupStats says how many group transactions committed and how many
// closes they answered, since the store opened.
func (s *Store) CloseGroupStats() (groups, closes int64) {
	if s.closes == nil {
		return 0, 0
	}
	return s.closes.groups.Load(), s.closes.grouped.Load()
}

// closeInGroup is CloseOrder through a group: it joins one, starts it if
// it made it, and waits for the group's answer or the end of its ctx,
// whichever comes first, as a close alone would: the group's transaction
// runs on in a goroutine of its own, so that the others' closes do not end
// with the client that started it. A close that stopped waiting may still
// commit with the group (as a close alone may commit as its client hangs
// up), unless the group finds its ctx ended before it writes.
func (s *Store) closeInGroup(ctx context.Context, orderNo string, reason Trigger) (CloseResult, error) {
	c := &closeCall{ctx: ctx, no: orderNo, reason: reason, done: make(chan struct{}), joined: time.Now()}
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if f := s.closes.join(c, cancel); f != nil {
		go s.runCloseGroup(gctx, f)
	} else {
		cancel()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		select {
		case <-c.done: // answered meanwhile: the answer stands
		default:
			s.closes.leave(c)
			return CloseResult{}, fmt.Errorf("close order %s: %w", orderNo, ctx.Err())
		}
	}
	if c.alone {
		if !c.waitUntil.IsZero() {
			ctx = withGateDeadline(ctx, c.waitUntil)
		}
		return s.closeAlone(ctx, orderNo, reason)
	}
	if c.err != nil {
		return CloseResult{}, fmt.Errorf("close order %s: %w", orderNo, c.err)
	}
	return c.res, nil
}

// runCloseGroup runs group f's transaction and answers every member. The
// transaction does not end with its leader's request: it runs on ctx, the
// leader's context without its cancellation (ended only when every member
// left, see leave), so a client that hangs up leaves the others' closes
// alone. A transaction that began and failed
// (a statement, the commit, a lost connection, a panic) sends every member
// back to close on its own, where a failure is its own; one that never got
// the write turn answers its error to every member that waited as long,
// and sends one that joined later to wait the rest of its own time alone.
func (s *Store) runCloseGroup(ctx context.Context, f *closeGroup) {
	defer f.cancel()
	var calls []*closeCall
	began := false
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("close group: panic: %v", r)
				began = true
				// Its closes go alone and may well succeed there: the
				// log is all that tells of a bug in the group's path.
				s.log.Error("close group panicked; its closes go alone", "panic", r, "stack", string(debug.Stack()))
			}
		}()
		return s.write(ctx, func(tx *gorm.DB) error {
			began = true
			if s.faults != nil {
				if err := s.faults(FaultCloseGroup, nil); err != nil {
					return err
				}
			}
			calls = s.closes.seal(f)
			if err := s.closeCalls(tx, calls); err != nil {
				return err
			}
			if s.faults != nil {
				return s.faults(FaultCloseGroupCommit, &ReleaseTask{Qty: int64(len(calls))})
			}
			return nil
		})
	}()
	if calls == nil {
		calls = s.closes.seal(f)
	}
	if err == nil {
		s.closes.groups.Add(1)
		s.closes.grouped.Add(int64(len(calls)))
	}
	for _, c := range calls {
		switch {
		case err == nil:
		case began:
			c.res, c.err, c.alone = CloseResult{}, nil, true
		case errors.Is(err, errWriteQueueTimeout) && time.Since(c.joined) < s.busy:
			// Its leader waited the whole busy timeout for the write
			// turn, it only part of it: it waits the rest alone.
			c.res, c.err, c.alone, c.waitUntil = CloseResult{}, nil, true, c.joined.Add(s.busy)
		default:
			c.res, c.err = CloseResult{}, err
		}
		close(c.done)
	}
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
