package models

// ReadSnapshot lets the tests look inside a snapshot read.
var ReadSnapshot = (*Store).readSnapshot

const MaxLostPerTx = maxLostPerTx

// PendingHeldPlan is the query plan of expectedHeld's PENDING read, one
// line a step.
func (s *Store) PendingHeldPlan(types []ResourceType, keys []string) ([]string, error) {
	var steps []struct{ Detail string }
	if err := s.R.Raw("EXPLAIN QUERY PLAN "+s.pendingHeldSQL(), types, keys).Scan(&steps).Error; err != nil {
		return nil, err
	}
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.Detail
	}
	return out, nil
}

// ClassOf lets the tests classify an error as a failed try is classified.
var ClassOf = classOf
