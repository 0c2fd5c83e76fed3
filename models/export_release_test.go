package models

import (
	"context"
	"strings"

	"gorm.io/gorm"
)

// OrdersListPlan is the query plan of ListOrders' page for q, one line a
// step: EXPLAIN QUERY PLAN on SQLite, EXPLAIN on PostgreSQL.
func (s *Store) OrdersListPlan(q OrderQuery) ([]string, error) {
	sql := s.R.ToSQL(func(tx *gorm.DB) *gorm.DB {
		var rows []Order
		return ordersPage(orderFilters(tx.WithContext(context.Background()).Table("orders"), q), q, DefaultPageSize).Scan(&rows)
	})
	if s.Dialect == SQLite {
		return s.plan(sql)
	}
	var lines []string
	if err := s.R.Raw("EXPLAIN " + sql).Scan(&lines).Error; err != nil {
		return nil, err
	}
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines, nil
}
