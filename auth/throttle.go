package auth

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"gorm.io/gorm"

	"unhold/models"
)

// Login throttling lives in the database (login_throttle), so it holds
// across instances and restarts. Three keys count each attempt, each
// before its password is checked (reserve), so that however many attempts
// run at once, none gets past a limit:
//
//   - "pair:<addr>|<name as typed>" counts failures against one name from
//     one address (an IPv6 address by its /64), whether or not the name
//     exists, so a lock never tells which names do. The failure that
//     reaches AccountFailures locks the name at that address for BaseLock,
//     each further one doubles it (up to MaxLock); a locked pair refuses
//     attempts without checking or counting them. The count starts over
//     once a Window has passed since its first failure, or since the last
//     lock ended, and a success from the address deletes it. Failures from
//     one address never stop the right password from another.
//   - "user:<name as typed>" counts attempts against a name from every
//     address: past NameFailures in a Window the name is refused until the
//     window ends, so never for longer than a Window, and a slow guesser
//     never reaches it. A success takes its own attempt back off. An
//     address the name signed in from within KnownFor is not refused by
//     it: otherwise NameFailures guesses at the start of every window,
//     from a few addresses, would keep the user out for good.
//   - "known:<addr>|<name>" says the name signed in from the address; its
//     locked_until is when that stops counting (KnownFor after the last
//     success), so PruneSessions keeps it until then.
//   - "ip:<addr>" counts every attempt from an address, successful or not;
//     past IPAttempts in a Window the address is refused until the window
//     ends.

// ThrottlePolicy tunes login throttling; zero fields are the defaults.
type ThrottlePolicy struct {
	AccountFailures int           // failures against a name from one address that lock it there; default 5
	NameFailures    int           // failures against a name from anywhere that lock it until the window ends; default 100
	Window          time.Duration // how long failures are remembered; default 15m
	BaseLock        time.Duration // first lock of a name at an address; default 1m, doubling per further failure
	MaxLock         time.Duration // longest lock of a name at an address; default 1h
	IPAttempts      int           // attempts one address may make per Window; default 30
	KnownFor        time.Duration // how long an address a name signed in from passes the name-wide lock; default 30 days
}

// Throttle policy defaults.
const (
	DefaultAccountFailures = 5
	DefaultNameFailures    = 100
	DefaultThrottleWindow  = 15 * time.Minute
	DefaultBaseLock        = time.Minute
	DefaultMaxLock         = time.Hour
	DefaultIPAttempts      = 30
	DefaultKnownFor        = 30 * 24 * time.Hour
)

func (p ThrottlePolicy) withDefaults() ThrottlePolicy {
	if p.AccountFailures <= 0 {
		p.AccountFailures = DefaultAccountFailures
	}
	if p.NameFailures <= 0 {
		p.NameFailures = DefaultNameFailures
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
	if p.KnownFor <= 0 {
		p.KnownFor = DefaultKnownFor
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
	NotedUntil  *time.Time // the lock end whose first refusal is audited
}

func userKey(name string) string { return "user:" + name }

// pairKey is the key of a name at an address. No ipKey holds a '|', so
// the name is everything after the first one.
func pairKey(name, ip string) string {
	addr := ""
	if ip != "" {
		addr = ipKey(ip)
	}
	return "pair:" + addr + "|" + name
}

// knownKey is the key that says name signed in from ip.
func knownKey(name, ip string) string { return "known:" + ipKey(ip) + "|" + name }

// pairName is the name of a pairKey.
func pairName(key string) string {
	_, name, _ := strings.Cut(key, "|")
	return name
}

// ipKey is the throttle key of an address: an IPv4 address itself, an IPv6
// one by its /64, which one host usually holds whole (and could otherwise
// walk through for fresh attempts).
func ipKey(ip string) string {
	if a := net.ParseIP(ip); a != nil && a.To4() == nil {
		return "ip:" + a.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return "ip:" + ip
}

// over tells whether the row's window and lock have both ended at now, so
// that it counts from zero again.
func (r throttleRow) over(now time.Time, p ThrottlePolicy) bool {
	return !r.WindowStart.Add(p.Window).After(now) && (r.LockedUntil == nil || !r.LockedUntil.After(now))
}

// noted tells whether the refusals of the row's current lock are audited.
func (r throttleRow) noted() bool {
	return r.LockedUntil != nil && r.NotedUntil != nil && r.NotedUntil.Equal(*r.LockedUntil)
}

// throttleKeys are the rows an attempt counts in, in one lock order.
func throttleKeys(name, ip string) []string {
	keys := []string{pairKey(name, ip), userKey(name)}
	if ip != "" {
		keys = append(keys, ipKey(ip))
	}
	sort.Strings(keys)
	return keys
}

// refusal says whether rows (by key, each already reset when over) refuse
// an attempt at now: how long to wait, why, and the refusing rows. known
// is whether name signed in from ip lately; the name-wide lock does not
// refuse it.
func refusal(rows map[string]*throttleRow, name, ip string, known bool, now time.Time, p ThrottlePolicy) (time.Duration, string, []*throttleRow) {
	var wait time.Duration
	var why string
	var by []*throttleRow
	if pair := rows[pairKey(name, ip)]; pair != nil && pair.LockedUntil != nil && pair.LockedUntil.After(now) {
		wait, why = pair.LockedUntil.Sub(now), fmt.Sprintf("name locked at this address after %d failures", pair.Failures)
		by = append(by, pair)
	}
	if all := rows[userKey(name)]; !known && all != nil && all.LockedUntil != nil && all.LockedUntil.After(now) {
		by = append(by, all)
		if w := all.LockedUntil.Sub(now); w > wait {
			wait, why = w, fmt.Sprintf("name locked after %d failures from all addresses", all.Failures)
		}
	}
	if addr := rows[ipKey(ip)]; ip != "" && addr != nil && addr.Failures >= p.IPAttempts {
		if w := addr.WindowStart.Add(p.Window).Sub(now); w > 0 {
			by = append(by, addr)
			if w > wait {
				wait, why = w, fmt.Sprintf("%d attempts from %s", addr.Failures, ip)
			}
		}
	}
	return wait, why, by
}

// readThrottle reads the rows of keys as they stand, each reset when over.
func (s *Store) readThrottle(db *gorm.DB, keys []string, now time.Time, lock bool) (map[string]*throttleRow, error) {
	rows := map[string]*throttleRow{}
	for _, k := range keys {
		q := `SELECT * FROM login_throttle WHERE key = ?`
		if lock {
			q += s.db.ForUpdate()
		}
		var found []throttleRow
		if err := db.Raw(q, k).Scan(&found).Error; err != nil {
			return nil, err
		}
		r := throttleRow{Key: k, WindowStart: now}
		if len(found) == 1 && !found[0].over(now, s.throttle) {
			r = found[0]
		}
		rows[k] = &r
	}
	return rows, nil
}

// reserveLogin counts a login attempt for the account name (as typed) and
// the address ip, in one write transaction, or refuses it with a
// *ThrottledError. A refused attempt is not counted; the first refusal of
// each lock writes a "throttled" audit row, and later ones are answered
// from a plain read, writing nothing, so a flood of refused attempts
// neither grows the audit log nor holds SQLite's one writer.
func (s *Store) reserveLogin(ctx context.Context, name, ip string, audit func(outcome, detail string) *models.AuditEntry) error {
	p := s.throttle
	keys := throttleKeys(name, ip)
	now := s.db.Now()
	rows, err := s.readThrottle(s.db.R.WithContext(ctx), keys, now, false)
	if err != nil {
		return fmt.Errorf("read login throttle: %w", err)
	}
	known, err := s.knownAddress(ctx, name, ip, now)
	if err != nil {
		return fmt.Errorf("read login throttle: %w", err)
	}
	if wait, _, by := refusal(rows, name, ip, known, now, p); wait > 0 && allNoted(by) {
		return &ThrottledError{RetryAfter: wait}
	}
	var refused *ThrottledError
	err = s.write(ctx, func(tx *gorm.DB) error {
		refused = nil
		now := s.db.Now()
		for _, k := range keys {
			// Insert first, so that the row exists to be locked (as
			// models.Store.ClaimJob does).
			err := tx.Exec(`INSERT INTO login_throttle (key, failures, window_start) VALUES (?, 0, ?) ON CONFLICT (key) DO NOTHING`,
				k, now).Error
			if err != nil {
				return err
			}
		}
		rows, err := s.readThrottle(tx, keys, now, true)
		if err != nil {
			return err
		}
		if wait, why, by := refusal(rows, name, ip, known, now, p); wait > 0 {
			refused = &ThrottledError{RetryAfter: wait}
			if allNoted(by) {
				return nil // a concurrent refusal audited this lock
			}
			for _, r := range by {
				err := tx.Exec(`UPDATE login_throttle SET noted_until = ? WHERE key = ?`, r.LockedUntil, r.Key).Error
				if err != nil {
					return err
				}
			}
			return models.AuditIn(tx, audit("throttled", fmt.Sprintf("%s; retry after %s; later refusals of this lock are not recorded",
				why, wait.Round(time.Second))), now)
		}
		pair, all, addr := rows[pairKey(name, ip)], rows[userKey(name)], rows[ipKey(ip)]
		pair.Failures++
		if pair.Failures >= p.AccountFailures {
			// The lock is taken now, before the password is checked, so no
			// concurrent attempt gets past it; a success deletes it. The
			// window starts over when the lock ends, so a failure after it
			// doubles the lock however long it was.
			until := now.Add(p.lockFor(pair.Failures))
			pair.LockedUntil, pair.WindowStart = &until, until
		}
		all.Failures++
		if all.Failures >= p.NameFailures {
			// Until the window ends and no longer: the name-wide lock only
			// slows a guesser with many addresses down.
			until := all.WindowStart.Add(p.Window)
			all.LockedUntil = &until
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

// knownAddress tells whether name signed in from ip within KnownFor of
// now. A plain read is enough: a success that lands meanwhile only lets in
// an attempt that would have been let in a moment later.
func (s *Store) knownAddress(ctx context.Context, name, ip string, now time.Time) (bool, error) {
	if ip == "" {
		return false, nil
	}
	var until []time.Time
	err := s.db.R.WithContext(ctx).Raw(`SELECT locked_until FROM login_throttle WHERE key = ? AND locked_until IS NOT NULL`,
		knownKey(name, ip)).Scan(&until).Error
	if err != nil {
		return false, err
	}
	return len(until) == 1 && until[0].After(now), nil
}

// allNoted tells whether every refusing row's lock is already audited.
func allNoted(by []*throttleRow) bool {
	for _, r := range by {
		if !r.noted() {
			return false
		}
	}
	return true
}

// settleLogin records in tx that the attempt reserved for name from ip
// succeeded at now: the name's failures at the address are forgotten, the
// attempt no longer counts against the name everywhere, and the address is
// known to the name for KnownFor.
func settleLogin(tx *gorm.DB, name, ip string, now time.Time, p ThrottlePolicy) error {
	if err := tx.Exec(`DELETE FROM login_throttle WHERE key = ?`, pairKey(name, ip)).Error; err != nil {
		return err
	}
	if ip != "" {
		err := tx.Exec(`INSERT INTO login_throttle (key, failures, window_start, locked_until) VALUES (?, 0, ?, ?)
			ON CONFLICT (key) DO UPDATE SET window_start = excluded.window_start, locked_until = excluded.locked_until`,
			knownKey(name, ip), now, now.Add(p.KnownFor)).Error
		if err != nil {
			return err
		}
	}
	return tx.Exec(`UPDATE login_throttle SET failures = failures - 1 WHERE key = ? AND failures > 0`, userKey(name)).Error
}

// liftLocks deletes, in tx, every throttle row of name: at every address
// and from all of them.
func liftLocks(tx *gorm.DB, name string) error {
	var keys []string
	pattern := "pair:%|" + strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(name)
	if err := tx.Raw(`SELECT key FROM login_throttle WHERE key LIKE ? ESCAPE '!'`, pattern).Scan(&keys).Error; err != nil {
		return err
	}
	drop := []string{userKey(name)}
	for _, k := range keys {
		if pairName(k) == name { // not a name that ends in "|" + name
			drop = append(drop, k)
		}
	}
	return tx.Exec(`DELETE FROM login_throttle WHERE key IN ?`, drop).Error
}
