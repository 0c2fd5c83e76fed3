package models

import (
	"context"
	"fmt"
	"sort"
	"time"

	"gorm.io/gorm"
)

// Login throttling lives in the database (login_throttle), so it holds
// across instances and restarts. Two keys count each attempt:
//
//   - "user:<name as typed>" counts failures against one account, whether
//     or not the name exists, so a lock never tells which names do. An
//     attempt is counted as a failure before its password is checked
//     (reserve), and a success deletes the row (settle): however many
//     attempts run at once, no more than AccountFailures get to a password
//     check before the lock. The failure that reaches AccountFailures locks
//     the account for BaseLock, each further one doubles it (up to MaxLock);
//     a locked account refuses attempts without checking or counting them.
//     The count starts over once a Window has passed since its first
//     failure, or since the last lock ended.
//   - "ip:<addr>" counts every attempt from an address, successful or not;
//     past IPAttempts in a Window the address is refused until the window
//     ends.

// ThrottlePolicy tunes login throttling; zero fields are the defaults.
type ThrottlePolicy struct {
	AccountFailures int           // failures that lock an account; default 5
	Window          time.Duration // how long failures are remembered; default 15m
	BaseLock        time.Duration // first lock; default 1m, doubling per further failure
	MaxLock         time.Duration // longest lock; default 1h
	IPAttempts      int           // attempts one address may make per Window; default 30
}

// Throttle policy defaults.
const (
	DefaultAccountFailures = 5
	DefaultThrottleWindow  = 15 * time.Minute
	DefaultBaseLock        = time.Minute
	DefaultMaxLock         = time.Hour
	DefaultIPAttempts      = 30
)

func (p ThrottlePolicy) withDefaults() ThrottlePolicy {
	if p.AccountFailures <= 0 {
		p.AccountFailures = DefaultAccountFailures
	}
	if p.Window <= 0 {
		p.Window = DefaultThrottleWindow
	}
	if p.BaseLock <= 0 {
		p.BaseLock = DefaultBaseLock
	}
	if p.MaxLock <= 0 {
		p.MaxLock = DefaultMaxLock
	}
	if p.MaxLock < p.BaseLock {
		p.MaxLock = p.BaseLock
	}
	if p.IPAttempts <= 0 {
		p.IPAttempts = DefaultIPAttempts
	}
	return p
}

// lockFor is the lock after failures failures: BaseLock at
// AccountFailures, doubling with each one more, capped at MaxLock.
func (p ThrottlePolicy) lockFor(failures int) time.Duration {
	d := p.BaseLock
	for i := p.AccountFailures; i < failures && d < p.MaxLock; i++ {
		d *= 2
	}
	return min(d, p.MaxLock)
}

// ThrottledError is a login refused by throttling; it is
// ErrLoginThrottled to errors.Is.
type ThrottledError struct {
	RetryAfter time.Duration // until the account's lock or the address's window ends
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%s: try again in %s", ErrLoginThrottled.Message, e.RetryAfter.Round(time.Second))
}

// Unwrap makes a ThrottledError ErrLoginThrottled, with its code.
func (e *ThrottledError) Unwrap() error { return ErrLoginThrottled }

// throttleRow is one login_throttle row.
type throttleRow struct {
	Key         string
	Failures    int
	WindowStart time.Time
	LockedUntil *time.Time
}

func userKey(name string) string { return "user:" + name }
func ipKey(ip string) string     { return "ip:" + ip }

// over tells whether the row's window and lock have both ended at now, so
// that it counts from zero again.
func (r throttleRow) over(now time.Time, p ThrottlePolicy) bool {
	return !r.WindowStart.Add(p.Window).After(now) && (r.LockedUntil == nil || !r.LockedUntil.After(now))
}

// reserveLogin counts a login attempt for the account name (as typed) and
// the address ip, in one write transaction, or refuses it with a
// *ThrottledError and a "throttled" audit row. A refused attempt is not
// counted.
func (s *Store) reserveLogin(ctx context.Context, name, ip string, audit func(outcome, detail string) *AuditEntry) error {
	p := s.throttle
	var refused *ThrottledError
	err := s.write(ctx, func(tx *gorm.DB) error {
		refused = nil
		now := s.Now()
		keys := []string{userKey(name)}
		if ip != "" {
			keys = append(keys, ipKey(ip))
		}
		sort.Strings(keys) // one lock order for every transaction
		rows := map[string]*throttleRow{}
		for _, k := range keys {
			// Insert first, so that the row exists to be locked (see ClaimJob).
			err := tx.Exec(`INSERT INTO login_throttle (key, failures, window_start) VALUES (?, 0, ?) ON CONFLICT (key) DO NOTHING`,
				k, now).Error
			if err != nil {
				return err
			}
			var r throttleRow
			if err := tx.Raw(`SELECT * FROM login_throttle WHERE key = ?`+s.forUpdate(), k).Scan(&r).Error; err != nil {
				return err
			}
			if r.over(now, p) {
				r = throttleRow{Key: k, WindowStart: now}
			}
			rows[k] = &r
		}
		acct, addr := rows[userKey(name)], rows[ipKey(ip)]
		var wait time.Duration
		var why string
		if acct.LockedUntil != nil && acct.LockedUntil.After(now) {
			wait, why = acct.LockedUntil.Sub(now), fmt.Sprintf("account locked after %d failures", acct.Failures)
		}
		if addr != nil && addr.Failures >= p.IPAttempts {
			if w := addr.WindowStart.Add(p.Window).Sub(now); w > wait {
				wait, why = w, fmt.Sprintf("%d attempts from %s", addr.Failures, ip)
			}
		}
		if wait > 0 {
			refused = &ThrottledError{RetryAfter: wait}
			return auditIn(tx, audit("throttled", fmt.Sprintf("%s; retry after %s", why, wait.Round(time.Second))), now)
		}
		acct.Failures++
		if acct.Failures >= p.AccountFailures {
			// The lock is taken now, before the password is checked, so no
			// concurrent attempt gets past it; a success deletes it. The
			// window starts over when the lock ends, so a failure after it
			// doubles the lock however long it was.
			until := now.Add(p.lockFor(acct.Failures))
			acct.LockedUntil, acct.WindowStart = &until, until
		}
		if addr != nil {
			addr.Failures++
			if addr.Failures >= p.IPAttempts {
				until := addr.WindowStart.Add(p.Window)
				addr.LockedUntil = &until
			}
		}
		for _, k := range keys {
			r := rows[k]
			err := tx.Exec(`UPDATE login_throttle SET failures = ?, window_start = ?, locked_until = ? WHERE key = ?`,
				r.Failures, r.WindowStart, r.LockedUntil, k).Error
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if refused != nil {
		return refused
	}
	return nil
}
