package models

import (
	"strings"

	"gorm.io/gorm"
)

// KeySumsPlan is the query plan of the ledger sums of some keys of the
// counter type t, one line a step. On PostgreSQL, scans of the whole table
// and bitmap reads are turned off for it, so the plan says which index
// the planner can answer from, whatever the few rows of a test make
// cheapest.
func (s *Store) KeySumsPlan(t ResourceType, keys []string) ([]string, error) {
	c, err := s.counterOf(t)
	if err != nil {
		return nil, err
	}
	if s.Dialect == SQLite {
		return s.plan(c.keySumsSQL(), c.keysArgs(keys)...)
	}
	var lines []string
	err = s.R.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SET LOCAL enable_seqscan = off").Error; err != nil {
			return err
		}
		if err := tx.Exec("SET LOCAL enable_bitmapscan = off").Error; err != nil {
			return err
		}
		return tx.Raw("EXPLAIN "+c.keySumsSQL(), c.keysArgs(keys)...).Scan(&lines).Error
	})
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines, err
}
