package models

import (
	"context"
	"fmt"
)

// Counts is how many orders and release tasks are in each status.
type Counts struct {
	Orders map[OrderStatus]int64
	Tasks  map[TaskStatus]int64
}

// StatusCounts counts orders and release tasks by status.
func (s *Store) StatusCounts(ctx context.Context) (Counts, error) {
	c := Counts{Orders: map[OrderStatus]int64{}, Tasks: map[TaskStatus]int64{}}
	type row struct {
		Status string
		N      int64
	}
	for _, table := range []string{"orders", "release_tasks"} {
		var rows []row
		if err := s.R.WithContext(ctx).Raw("SELECT status, COUNT(*) AS n FROM " + table + " GROUP BY status").Scan(&rows).Error; err != nil {
			return c, fmt.Errorf("count %s: %w", table, err)
		}
		for _, r := range rows {
			if table == "orders" {
				c.Orders[OrderStatus(r.Status)] = r.N
			} else {
				c.Tasks[TaskStatus(r.Status)] = r.N
			}
		}
	}
	return c, nil
}
