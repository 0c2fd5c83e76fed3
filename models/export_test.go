package models

// ReadSnapshot lets the tests look inside a snapshot read.
var ReadSnapshot = (*Store).readSnapshot

const MaxLostPerTx = maxLostPerTx

// PendingHeldPlan is the query plan of expectedHeld's PENDING read, one
// line a step.
func (s *Store) PendingHeldPlan(types []ResourceType, keys []string) ([]string, error) {
	return s.plan(s.pendingHeldSQL(), types, keys)
}

// ClassOf lets the tests classify an error as a failed try is classified.
var ClassOf = classOf

// ClaimPlans are the query plans of ClaimTasks' choice of tasks and of its
// read of expired leases, one line a step.
func (s *Store) ClaimPlans(n int) (claim, expired []string, err error) {
	if claim, err = s.plan(s.claimableSQL(), s.Now(), n); err != nil {
		return nil, nil, err
	}
	expired, err = s.plan(s.expiredLeasesSQL(), s.Now(), n)
	return claim, expired, err
}

func (s *Store) plan(q string, args ...any) ([]string, error) {
	var steps []struct{ Detail string }
	if err := s.R.Raw("EXPLAIN QUERY PLAN "+q, args...).Scan(&steps).Error; err != nil {
		return nil, err
	}
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.Detail
	}
	return out, nil
}

// LatePayOrder is the order a late payment takes tasks' holds and lines
// deducted at payment in, as "TYPE key" (latePaySteps).
func LatePayOrder(tasks []ReleaseTask, lines []Hold) []string {
	var out []string
	for _, st := range latePaySteps(tasks, lines) {
		if st.task != nil {
			out = append(out, string(st.task.ResourceType)+" "+st.task.BizKey)
		} else {
			out = append(out, string(st.line.ResourceType)+" "+st.line.BizKey)
		}
	}
	return out
}

// CloseGroupForming is how many closes have joined the group that is
// forming (its leader waits for the write turn, or is held at
// FaultCloseGroup); 0 when none is.
func (s *Store) CloseGroupForming() int {
	s.closes.mu.Lock()
	defer s.closes.mu.Unlock()
	if s.closes.forming == nil {
		return 0
	}
	return len(s.closes.forming.members)
}

// WriteGroupForming is CloseGroupForming for the shared transactions of
// placements and payments.
func (s *Store) WriteGroupForming() int {
	s.shared.mu.Lock()
	defer s.shared.mu.Unlock()
	if s.shared.forming == nil {
		return 0
	}
	return len(s.shared.forming.members)
}
