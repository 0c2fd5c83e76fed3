package models

import (
	"context"

	"gorm.io/gorm"
)

// EmitEvent writes one event of order no, as its fact's transaction
// would, and sequences it (PostgreSQL), so readers see it.
func (s *Store) EmitEvent(ctx context.Context, t EventType, no string) error {
	err := s.write(ctx, func(tx *gorm.DB) error {
		return emitEvents(tx, []newEvent{{Type: t, OrderNo: no, At: s.Now(), Data: map[string]string{"order_no": no}}})
	})
	if err != nil {
		return err
	}
	_, err = s.SequenceEvents(ctx)
	return err
}

// RetryWait is retryWait, for the tests of the schedule.
var RetryWait = retryWait
