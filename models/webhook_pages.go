package models

import (
	"context"
	"fmt"
	"time"
)

// WebhookLastDelivered is when a delivery of subscription id last got
// through (nil: none did, or none delivered is kept: see
// WebhookDeliveredKeep), for the admin pages.
func (s *Store) WebhookLastDelivered(ctx context.Context, id int64) (*time.Time, error) {
	var rows []struct{ DeliveredAt time.Time }
	err := s.R.WithContext(ctx).Raw(`SELECT delivered_at FROM webhook_deliveries
		WHERE subscription_id = ? AND status = 'DELIVERED' ORDER BY delivered_at DESC LIMIT 1`, id).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("last delivery of webhook %d: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	t := rows[0].DeliveredAt.UTC()
	return &t, nil
}
