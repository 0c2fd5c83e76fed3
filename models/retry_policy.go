package models

import (
	"fmt"
	"slices"
	"time"
)

// RetryPolicy is how a retryable failure of one resource type and error
// class is retried: the wait after the 1st, 2nd, ... failure (the last
// step repeats) and how many failures in a row, counted since the task's
// last rerun, send the task to MANUAL (class RETRY_EXHAUSTED). The
// permanent classes go MANUAL at once whatever a policy says.
type RetryPolicy struct {
	// Type and Class are what the policy applies to; "" is any.
	Type  ResourceType
	Class ErrorClass
	Steps []time.Duration
	Tries int
}

// DefaultRetryPolicy is the policy of a store whose options name none:
// RetrySchedule and MaxFailures.
var DefaultRetryPolicy = RetryPolicy{Steps: RetrySchedule, Tries: MaxFailures}

// Delay is the wait after the n-th failure in a row (n from 1).
func (p RetryPolicy) Delay(n int) time.Duration {
	n = min(max(n, 1), len(p.Steps))
	return p.Steps[n-1]
}

// Name says which policy this is, as the task page shows it:
// "giftcard/REMOTE_BUSY", "giftcard/*", "*/REMOTE_BUSY", or "default".
func (p RetryPolicy) Name() string {
	if p.Type == "" && p.Class == "" {
		return "default"
	}
	t, c := string(p.Type), string(p.Class)
	if t == "" {
		t = "*"
	}
	if c == "" {
		c = "*"
	}
	return t + "/" + c
}

// check refuses a policy the worker could not follow; the resources file's
// reader says the same to a person, naming the entry.
func (p RetryPolicy) check() error {
	if p.Tries < 1 {
		return fmt.Errorf("%w: retry policy %s: tries must be at least 1", ErrInvalid, p.Name())
	}
	if len(p.Steps) == 0 {
		return fmt.Errorf("%w: retry policy %s: no steps", ErrInvalid, p.Name())
	}
	for i, d := range p.Steps {
		if d <= 0 || (i > 0 && d < p.Steps[i-1]) {
			return fmt.Errorf("%w: retry policy %s: steps must be positive and sorted", ErrInvalid, p.Name())
		}
	}
	return nil
}

// retryPolicies are a store's policies by what they apply to.
type retryPolicies map[ResourceType]map[ErrorClass]RetryPolicy

// newRetryPolicies checks def and list and indexes them; def applies to
// any type and class whatever its own say, and a zero def is
// DefaultRetryPolicy.
func newRetryPolicies(def RetryPolicy, list []RetryPolicy) (retryPolicies, error) {
	if def.Tries == 0 && len(def.Steps) == 0 {
		def = DefaultRetryPolicy
	}
	def.Type, def.Class = "", ""
	ps := retryPolicies{"": {"": def}}
	for _, p := range list {
		if p.Class != "" && !slices.Contains(ErrorClasses, p.Class) {
			return nil, fmt.Errorf("%w: retry policy %s: unknown class", ErrInvalid, p.Name())
		}
		if _, dup := ps[p.Type][p.Class]; dup {
			return nil, fmt.Errorf("%w: retry policy %s given twice", ErrInvalid, p.Name())
		}
		if ps[p.Type] == nil {
			ps[p.Type] = map[ErrorClass]RetryPolicy{}
		}
		ps[p.Type][p.Class] = p
	}
	for _, byClass := range ps {
		for _, p := range byClass {
			if err := p.check(); err != nil {
				return nil, err
			}
		}
	}
	return ps, nil
}

// of is the most specific policy for a failure of class c of a task of
// type t: type and class, then type, then class, then the default.
func (ps retryPolicies) of(t ResourceType, c ErrorClass) RetryPolicy {
	for _, k := range [...]struct {
		t ResourceType
		c ErrorClass
	}{{t, c}, {t, ""}, {"", c}, {"", ""}} {
		if p, ok := ps[k.t][k.c]; ok {
			return p
		}
	}
	return DefaultRetryPolicy
}

// RetryStanding is where a task stands on its retry policy, as the task page
// and the API say it: "try 3 of 8 (policy: giftcard/REMOTE_BUSY)".
type RetryStanding struct {
	// Policy is the policy's Name: the one of the task's last failure,
	// or, before any, of its type.
	Policy string `json:"policy"`
	Tries  int    `json:"tries"`
	// Try is the number of the task's next try, counted like Tries (from
	// its last rerun); 0 when no try is due (DONE, MANUAL ...).
	Try int `json:"try,omitempty"`
}

// RetryOf is where t stands on its retry policy. A task whose retries ran
// out is shown against the policy of its last failure's class.
func (s *Store) RetryOf(t ReleaseTask) RetryStanding {
	class := t.ErrorClass
	if class == ClassRetryExhausted {
		class = t.LastErrorClass
	}
	p := s.retry.of(t.ResourceType, class)
	r := RetryStanding{Policy: p.Name(), Tries: p.Tries}
	if t.Status == TaskPending || t.Status == TaskRetry {
		// A task that failed more often than a limit lowered since (a
		// restart with fewer tries) goes MANUAL at its next failure: that
		// try is its last, not "try 9 of 3".
		r.Try = min(t.Failures+1, p.Tries)
	}
	return r
}

// Permanent says whether a failure of class c goes MANUAL at once, since
// no retry can fix it (classOf): a retry policy cannot change that.
func (c ErrorClass) Permanent() bool {
	return c == ClassLockedShort || c == ClassStateMismatch || c == ClassNotFound || c == ClassRemoteRejected
}
