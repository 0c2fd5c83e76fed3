package models

import (
	"context"
	"fmt"
)

// OpenTicket is a reconciliation ticket not yet RESOLVED (OPEN or ACKED)
// of one check of one key.
type OpenTicket struct {
	ID    int64
	Type  ResourceType `gorm:"column:resource_type"`
	Key   string       `gorm:"column:biz_key"`
	Check string       `gorm:"column:check_name"`
}

// OpenTickets reads the unresolved tickets of the given keys, so a page
// that finds a key does not reconcile can link to the ticket that tracks
// it. It reads the partial index of unresolved tickets by (resource_type,
// biz_key, check_name); a key without a ticket (no run has looked since it
// went wrong) has none in the answer.
func (s *Store) OpenTickets(ctx context.Context, keys []ResourceKey) ([]OpenTicket, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var types []ResourceType
	var bizKeys []string
	want := map[ResourceKey]bool{}
	for _, k := range keys {
		want[k] = true
		types = append(types, k.Type)
		bizKeys = append(bizKeys, k.Key)
	}
	var rows []OpenTicket
	err := s.R.WithContext(ctx).Raw(`SELECT id, resource_type, biz_key, check_name FROM recon_diffs
		WHERE status <> 'RESOLVED' AND resource_type IN ? AND biz_key IN ? ORDER BY id`, types, bizKeys).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("open tickets: %w", err)
	}
	out := rows[:0]
	for _, r := range rows {
		if want[ResourceKey{r.Type, r.Key}] {
			out = append(out, r)
		}
	}
	return out, nil
}
