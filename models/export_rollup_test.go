package models

import (
	"context"

	"gorm.io/gorm"
)

// RollUpPlanted adds to the rollups what a test planted as rows for order
// (its attempts, and its released tasks' latency), as the releases that
// write such rows would have.
func (s *Store) RollUpPlanted(ctx context.Context, order string) error {
	return s.write(ctx, func(tx *gorm.DB) error {
		r := tx.Statement.Context.Value(rollupCtxKey{}).(*rollup)
		var tasks []ReleaseTask
		if err := tx.Where("order_no = ?", order).Find(&tasks).Error; err != nil {
			return err
		}
		r.addReleased(tasks)
		var as []TaskAttempt
		if err := tx.Where("order_no = ?", order).Find(&as).Error; err != nil {
			return err
		}
		for _, a := range as {
			r.attempts[attemptKey{minute: minuteOf(a.FinishedAt), outcome: a.Outcome, typ: a.ResourceType, class: a.ErrorClass}]++
		}
		return nil
	})
}
