package models

import (
	"context"
	"strings"

	"gorm.io/gorm"
)

// OrdersCountPlan is the query plan of ListOrders' count for q, as
// OrdersListPlan gives the page's.
func (s *Store) OrdersCountPlan(q OrderQuery) ([]string, error) {
	sql := s.R.ToSQL(func(tx *gorm.DB) *gorm.DB {
		var n int64
		return orderCount(tx.WithContext(context.Background()), q, OrderCountCap+1).Scan(&n)
	})
	return s.explain(sql)
}

// HeldKeysPlan is the query plan of the read of what the orders nos held.
func (s *Store) HeldKeysPlan(nos []string) ([]string, error) {
	sql := s.R.ToSQL(func(tx *gorm.DB) *gorm.DB {
		var rows []HeldKey
		return tx.WithContext(context.Background()).Raw(heldKeysSQL(), nos).Scan(&rows)
	})
	return s.explain(sql)
}

// explain is the plan of sql, one line a step: EXPLAIN QUERY PLAN on
// SQLite, EXPLAIN on PostgreSQL.
func (s *Store) explain(sql string) ([]string, error) {
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
