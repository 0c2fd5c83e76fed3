package models

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// FaultWriteGroup and FaultWriteGroupCommit are FaultCloseGroup and
// FaultCloseGroupCommit for the shared transactions of placements and
// payments (writeGroups).
const (
	FaultWriteGroup       = "write.group"
	FaultWriteGroupCommit = "write.group.commit"
)

// writeGroups gathers concurrent placements and payments into shared
// write transactions (txGroups), on SQLite: there every write waits for
// the one write connection, and a commit (its WAL append) was half of a
// placement's time on it. Each member runs in a savepoint of its own
// (runWrites), so one's refusal rolls back what it wrote and is its own
// answer. PostgreSQL writes Options.Writers transactions at once instead,
// and a group there would hold the row locks of all its members until it
// commits, taken in no order two groups share.
type writeGroups = txGroups[*writeCall]

// writeCall is one placement or payment waiting for its group: fn is its
// transaction's work.
type writeCall struct {
	groupCall
	fn func(tx *gorm.DB) error
}

func newWriteGroups(max int) *writeGroups {
	return newTxGroups[*writeCall](max, FaultWriteGroup, FaultWriteGroupCommit)
}

// WriteGroupStats says how many shared transactions of placements and
// payments committed and how many writes they answered, since the store
// opened.
func (s *Store) WriteGroupStats() (groups, writes int64) {
	return s.shared.stats()
}

// writeShared is write for a placement or a payment: through a group when
// the store has them, alone otherwise, or when the group could not commit.
// fn may therefore run twice, the first run rolled back: it must start
// from its inputs, not from what a run before left in them.
func (s *Store) writeShared(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if s.shared == nil {
		return s.write(ctx, fn)
	}
	c := &writeCall{groupCall: newGroupCall(ctx), fn: fn}
	ctx, alone, err := inGroup(s, s.shared, c, s.runWrites)
	if alone {
		return s.write(ctx, fn)
	}
	return err
}

// runWrites runs each call's fn inside tx in a savepoint of its own, in
// the order they joined. A call whose fn fails is rolled back to its
// savepoint and answers its error; the others go on. A call whose context
// ended before its turn is answered so and not run; one whose ctx ended
// as it ran is rolled back to its savepoint and answered so too: its
// caller may have stopped waiting, and a write it was not told of must not
// commit (a placement's remote locks would never be sent). A call whose
// write stays is kept (txGroups.keep): it waits for the commit. What a
// call adds to the rollups (rollup) counts only once its savepoint is
// released. An error of the savepoints themselves fails the group, whose
// calls then go alone.
func (s *Store) runWrites(tx *gorm.DB, calls []*writeCall) error {
	group, _ := tx.Statement.Context.Value(rollupCtxKey{}).(*rollup)
	for i, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			continue
		}
		own := newRollup()
		fnErr, err := inSavepoint(tx, fmt.Sprintf("w%d", i), func() error {
			err := c.fn(tx.WithContext(context.WithValue(tx.Statement.Context, rollupCtxKey{}, own)))
			if err == nil && (c.ctx.Err() != nil || !s.shared.keep(&c.groupCall)) {
				err = c.ctx.Err()
			}
			return err
		})
		switch {
		case err != nil:
			return errors.Join(fnErr, err) // the savepoint's own statements: the group fails
		case fnErr != nil:
			c.err = fnErr
		case group != nil:
			group.merge(own)
		}
	}
	return nil
}
