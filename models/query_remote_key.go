package models

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"unhold/remote"
)

// RemoteKeyStatus is one key of a remote type as unhold sees it: what its
// ledger of calls says the service holds, and who holds the key now.
type RemoteKeyStatus struct {
	Key string
	// LedgerHeld is what was locked less what was deducted or released,
	// by the calls the service answered (remote_flows).
	LedgerHeld int64
	KeyHolding
}

// Expected is what the service should hold of the key: what PENDING
// orders hold plus what unfinished release tasks will give back, as
// reconciliation expects it.
func (k RemoteKeyStatus) Expected() int64 { return k.HeldQty + k.TaskQty }

// remote is the remote type t, or ErrNotFound.
func (s *Store) remote(t ResourceType) (*remoteResource, error) {
	r, ok := s.remotes[t]
	if !ok {
		return nil, fmt.Errorf("%w: %s is not a remote type", ErrNotFound, t)
	}
	return r, nil
}

// RemoteKeyOf reads one key of a remote type, in one snapshot: its ledger
// of calls' sum and who holds it now. A key unhold never called about
// reads as holding nothing: its service may know it all the same.
func (s *Store) RemoteKeyOf(ctx context.Context, t ResourceType, key string) (*RemoteKeyStatus, error) {
	if _, err := s.remote(t); err != nil {
		return nil, err
	}
	if !ValidKey(key) {
		return nil, fmt.Errorf("%w: %s key %q", ErrNotFound, t, key)
	}
	out := RemoteKeyStatus{Key: key}
	err := s.readSnapshot(ctx, func(tx *gorm.DB) error {
		var rows []struct {
			K    string
			Held int64
		}
		if err := tx.Raw(ledgerHeldSQL+" AND biz_key = ? GROUP BY biz_key", t, key).Scan(&rows).Error; err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		if len(rows) == 1 {
			out.LedgerHeld = rows[0].Held
		}
		var err error
		out.KeyHolding, err = s.keyHolding(tx, t, key)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", t, key, err)
	}
	return &out, nil
}

// HoldsAnswer is what a remote type's service answered, asked now, how
// much of one key it holds (GET /holds/{key}), beside what unhold expects.
type HoldsAnswer struct {
	AskedAt time.Time `json:"asked_at"`
	// Held is the service's answer; nil when there is none, and then
	// NotOffered or Skip says why, as reconciliation would.
	Held *int64 `json:"held,omitempty"`
	// NotOffered: the service answered 404, it offers no GET /holds.
	NotOffered bool `json:"not_offered,omitempty"`
	// Skip is why there is no answer: NO_ANSWER (a timeout, a lost
	// connection, 408, 425, 429 or 5xx), REFUSED (another 4xx),
	// OTHER_KEY or UNPARSEABLE; Error is what the client said.
	Skip  SkipReason `json:"skip,omitempty"`
	Error string     `json:"error,omitempty"`
	// Expected is what unhold expects the service to hold, read after
	// the answer; Busy says a call of the key may be under way or done
	// unseen, so a difference may be no diff (reconciliation's
	// UNKNOWN_OUTCOME).
	Expected int64 `json:"expected"`
	Busy     bool  `json:"busy,omitempty"`
}

// AskHolds asks t's service now how much of key it holds, with the
// reconciliation's client, timeout and reading of answers, then reads
// what unhold expects; the question is audited (actor, the answer) in
// any case. Only an error of unhold's own database is returned: the
// service's silence or junk is the answer's Skip.
func (s *Store) AskHolds(ctx context.Context, t ResourceType, key, actor string) (HoldsAnswer, error) {
	r, err := s.remote(t)
	if err != nil {
		return HoldsAnswer{}, err
	}
	if !ValidKey(key) {
		return HoldsAnswer{}, fmt.Errorf("%w: %s key %q", ErrNotFound, t, key)
	}
	a := HoldsAnswer{AskedAt: s.Now()}
	skipped := map[string]SkipReason{}
	held, err := r.holds(ctx, []string{key}, skipped)
	switch h, ok := held[key]; {
	case errors.Is(err, remote.ErrNoHolds):
		a.NotOffered = true
	case ok:
		a.Held = &h
	default:
		a.Skip = skipped[key]
		if err != nil {
			a.Error = clip(err.Error(), maxErrorLen)
		}
	}
	v, err := r.view(ctx, []string{key})
	if err != nil {
		return HoldsAnswer{}, err
	}
	a.Expected, a.Busy = v.expected[key], v.busy[key]
	err = s.write(ctx, func(tx *gorm.DB) error {
		return auditIn(tx, &AuditEntry{Actor: actor, Action: "ask_holds", Target: string(t) + ":" + key,
			Outcome: a.outcome(), Detail: a.detail()}, s.Now())
	})
	if err != nil {
		return HoldsAnswer{}, fmt.Errorf("audit the question of %s %s: %w", t, key, err)
	}
	return a, nil
}

// outcome is the audit row's outcome: ok when the service answered.
func (a HoldsAnswer) outcome() string {
	switch {
	case a.Held != nil:
		return "ok"
	case a.NotOffered:
		return "not_offered"
	}
	return string(a.Skip)
}

// detail is the audit row's detail: the answer beside the expectation.
func (a HoldsAnswer) detail() string {
	d := fmt.Sprintf("expected %d", a.Expected)
	if a.Held != nil {
		d = fmt.Sprintf("held %d, %s", *a.Held, d)
	}
	if a.Busy {
		d += ", a call under way"
	}
	if a.Error != "" {
		d += ": " + a.Error
	}
	return d
}
