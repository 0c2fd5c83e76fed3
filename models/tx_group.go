package models

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// A shared transaction (group commit): concurrent writes of one kind
// gather into one write transaction, each keeping its own answer. A write
// joins the group that is waiting for the write turn, or starts one and
// leads it; the leader takes every member that joined by the time its
// transaction began. A group therefore waits no longer than one write
// alone would, and holds the writes that queued behind the transactions
// before: a burst costs a commit and a write turn (writeGate) per group,
// not per write. Closes (closeGroups) and placements and payments
// (writeGroups) share transactions so.

// groupCall is what each member of a group carries: its context, and its
// answer once done is closed, unless alone says the group could not commit
// and the member is to be tried again on its own.
type groupCall struct {
	ctx   context.Context
	err   error
	alone bool
	done  chan struct{}
	// joined is when the member joined its group; waitUntil, when it is
	// to go alone, the end of its own wait for the write turn.
	joined    time.Time
	waitUntil time.Time
	// left says the member stopped waiting (leave); kept, that its write
	// is made in the group's transaction and commits with it (keep), so
	// that it waits for the group's answer however its ctx ends. Both are
	// guarded by the mutex of its txGroups.
	left, kept bool
}

func newGroupCall(ctx context.Context) groupCall {
	return groupCall{ctx: ctx, done: make(chan struct{}), joined: time.Now()}
}

// member is a groupCall with what its kind adds.
type member interface{ call() *groupCall }

func (c *groupCall) call() *groupCall { return c }

// txGroup is one group's members, appended while it forms.
type txGroup[M member] struct {
	members []M
	left    int  // members that stopped waiting, their ctx ended
	sealed  bool // no member joins any more
	// cancel ends the group's transaction once it is sealed and every
	// member left: nobody waits for it, and a write alone would have been
	// cancelled too (a row lock another transaction holds for ever on
	// PostgreSQL would otherwise keep it, and its connection, for ever).
	cancel context.CancelFunc
}

// txGroups gathers the members of one kind into groups of at most max.
// fault and faultCommit are the fault points a group's transaction passes
// (see FaultCloseGroup).
type txGroups[M member] struct {
	max                int
	fault, faultCommit string

	mu      sync.Mutex
	forming *txGroup[M] // the group whose leader waits for the write turn

	groups  atomic.Int64 // transactions committed for groups
	grouped atomic.Int64 // members answered by them
}

func newTxGroups[M member](max int, fault, faultCommit string) *txGroups[M] {
	if max <= 0 {
		max = DefaultCloseGroup
	}
	return &txGroups[M]{max: max, fault: fault, faultCommit: faultCommit}
}

// join adds c to the forming group and returns it, with lead true when
// it made the group (there was none, or it was full) and is to run it.
func (g *txGroups[M]) join(c M, cancel context.CancelFunc) (f *txGroup[M], lead bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.forming; f != nil && len(f.members) < g.max {
		f.members = append(f.members, c)
		return f, false
	}
	f = &txGroup[M]{members: []M{c}, cancel: cancel}
	g.forming = f
	return f, true
}

// seal closes f to new members and returns them.
func (g *txGroups[M]) seal(f *txGroup[M]) []M {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.forming == f {
		g.forming = nil
	}
	f.sealed = true
	return f.members
}

// leave records that member c of f stopped waiting, and ends the group's
// transaction if it was the last member to wait. A group still forming
// runs on: a member may join it yet, and the member that left is answered
// without being written (run skips a member whose ctx ended). It returns
// false, and c does not leave, when c's write is kept (keep): c is then to
// wait for the group's answer.
func (g *txGroups[M]) leave(f *txGroup[M], c *groupCall) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.kept {
		return false
	}
	c.left = true
	f.left++
	if f.sealed && f.left == len(f.members) {
		f.cancel()
	}
	return true
}

// keep makes c's write, made in its group's transaction, commit with it:
// c no longer leaves when its ctx ends, but waits for the group's answer,
// as a write alone whose commit began does; a caller that acts on a
// committed write once it is answered (PlaceOrder sends the remote locks
// of the order) then does so. It returns false when c left already, told
// its ctx's error: its write is then to be undone, not committed for
// nobody.
func (g *txGroups[M]) keep(c *groupCall) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.left {
		return false
	}
	c.kept = true
	return true
}

// stats says how many group transactions committed and how many members
// they answered.
func (g *txGroups[M]) stats() (groups, members int64) {
	if g == nil {
		return 0, 0
	}
	return g.groups.Load(), g.grouped.Load()
}

// inGroup writes c through a group of g, whose transaction runs run on
// its members: it joins one, starts it if it made it, and waits for the
// group's answer or the end of its ctx, whichever comes first, as a write
// alone would: the group's transaction runs on in a goroutine of its own,
// so that the others' writes do not end with the client that started it.
// A member that stopped waiting may still commit with the group (as a
// write alone may commit as its client hangs up), unless the group finds
// its ctx ended before it writes. It returns the member's error, or alone
// true when the caller is to write it alone, on the ctx returned. A member
// that left is answered without reading its answer, which runGroup may be
// writing still.
func inGroup[M member](s *Store, g *txGroups[M], c M, run func(tx *gorm.DB, calls []M) error) (ctx context.Context, alone bool, err error) {
	gc := c.call()
	ctx = gc.ctx
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f, lead := g.join(c, cancel)
	if lead {
		go runGroup(s, gctx, g, f, run)
	} else {
		cancel()
	}
	select {
	case <-gc.done:
	case <-ctx.Done():
		select {
		case <-gc.done: // answered meanwhile: the answer stands
		default:
			if g.leave(f, gc) {
				return ctx, false, ctx.Err()
			}
			<-gc.done // its write is kept: the group commits it
		}
	}
	if gc.alone && !gc.waitUntil.IsZero() {
		ctx = withGateDeadline(ctx, gc.waitUntil)
	}
	return ctx, gc.alone, gc.err
}

// runGroup runs group f's transaction and answers every member. The
// transaction does not end with its leader's request: it runs on ctx, the
// leader's context without its cancellation (ended only when every member
// left, see leave), so a client that hangs up leaves the others' writes
// alone. A transaction that began and failed (a statement, the commit, a
// lost connection, a panic) sends every member back to write on its own,
// where a failure is its own; one that never began, its wait for the
// write turn or the write lock at an end, answers its error to every
// member that waited as long, and sends one that joined later to wait the
// rest of its own time alone.
func runGroup[M member](s *Store, ctx context.Context, g *txGroups[M], f *txGroup[M], run func(tx *gorm.DB, calls []M) error) {
	defer f.cancel()
	var calls []M
	began := false
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("shared transaction: panic: %v", r)
				began = true
				// Its members go alone and may well succeed there: the
				// log is all that tells of a bug in the group's path.
				s.log.Error("shared transaction panicked; its writes go alone", "panic", r, "stack", string(debug.Stack()))
			}
		}()
		return s.write(ctx, func(tx *gorm.DB) error {
			began = true
			if s.faults != nil {
				if err := s.faults(g.fault, nil); err != nil {
					return err
				}
			}
			calls = g.seal(f)
			if err := run(tx, calls); err != nil {
				return err
			}
			if s.faults != nil {
				return s.faults(g.faultCommit, &ReleaseTask{Qty: int64(len(calls))})
			}
			return nil
		})
	}()
	if calls == nil {
		calls = g.seal(f)
	}
	if err == nil {
		g.groups.Add(1)
		g.grouped.Add(int64(len(calls)))
	}
	for _, m := range calls {
		c := m.call()
		switch {
		case err == nil:
		case began:
			c.err, c.alone = nil, true
		case !began && IsBusy(err) && time.Since(c.joined) < s.busy:
			// Its leader waited the whole busy timeout, for the write
			// turn or for the database's write lock (another process
			// holding it: BEGIN IMMEDIATE found it busy), it only part
			// of it: it waits the rest alone.
			c.err, c.alone, c.waitUntil = nil, true, c.joined.Add(s.busy)
		default:
			c.err = err
		}
		close(c.done)
	}
}
