package models

import "gorm.io/gorm"

// SearchPlans are the query plans of Search's reads of q, by kind (a
// declared type's by its type), one line a step. On PostgreSQL sequential
// and bitmap scans and sorts are off while it explains, so that a plan
// shows whether an index can serve the read in its order, not what the
// planner picks for a table of a few rows.
func (s *Store) SearchPlans(q string) (map[string][]string, error) {
	out := map[string][]string{}
	for _, r := range s.searchReads(q, SearchLimit) {
		name := string(r.group.Kind)
		if r.group.Type != "" {
			name = string(r.group.Type)
		}
		if s.Dialect != Postgres {
			plan, err := s.plan(r.sql, r.args...)
			if err != nil {
				return nil, err
			}
			out[name] = plan
			continue
		}
		var plan []string
		err := s.R.Transaction(func(tx *gorm.DB) error {
			for _, off := range []string{"enable_seqscan", "enable_bitmapscan", "enable_sort"} {
				if err := tx.Exec("SET LOCAL " + off + " = off").Error; err != nil {
					return err
				}
			}
			return tx.Raw("EXPLAIN "+r.sql, r.args...).Scan(&plan).Error
		})
		if err != nil {
			return nil, err
		}
		out[name] = plan
	}
	return out, nil
}
