package auth_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
)

// attempt logs in and returns the wait when throttled, and the error.
func (b bundle) attempt(name, pw, ip string) (time.Duration, error) {
	_, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: name, Password: pw, IP: ip})
	var te *auth.ThrottledError
	if errors.As(err, &te) {
		return te.RetryAfter, err
	}
	return 0, err
}

// wantBad checks that a login is refused as bad credentials, not throttled.
func (b bundle) wantBad(t *testing.T, name, pw, ip string) {
	t.Helper()
	if _, err := b.attempt(name, pw, ip); !errors.Is(err, auth.ErrBadCredentials) {
		t.Fatalf("login %s at %s = %v, want BAD_CREDENTIALS", name, b.clock.Now().Format(time.TimeOnly), err)
	}
}

// wantThrottled checks that a login is refused by throttling, with wait.
func (b bundle) wantThrottled(t *testing.T, name, pw, ip string, wait time.Duration) {
	t.Helper()
	got, err := b.attempt(name, pw, ip)
	var me *models.Error
	if !errors.Is(err, auth.ErrLoginThrottled) || !errors.As(err, &me) || me.Code != "LOGIN_THROTTLED" || got != wait {
		t.Fatalf("login %s at %s = %v (retry after %s), want LOGIN_THROTTLED after %s",
			name, b.clock.Now().Format(time.TimeOnly), err, got, wait)
	}
}

// wantOK checks that a login succeeds.
func (b bundle) wantOK(t *testing.T, name, pw, ip string) {
	t.Helper()
	if _, err := b.attempt(name, pw, ip); err != nil {
		t.Fatalf("login %s from %q at %s = %v, want a session", name, ip, b.clock.Now().Format(time.TimeOnly), err)
	}
}

// Five failures lock the account for a minute, even against the right
// password; after the lock one more try is allowed, and a failure doubles
// the lock. A name that does not exist behaves the same, so a lock does
// not tell which names exist. A success clears the count.
func TestThrottleLocksAccount(t *testing.T) {
	for _, name := range []string{"alice", "ghost"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachEngine(t, func(t *testing.T, b bundle) {
				b.addUser(t, "alice", auth.RoleViewer)
				for range 5 {
					b.wantBad(t, name, "wrong password", "")
				}
				b.wantThrottled(t, name, goodPW, "", time.Minute)
				if f, th := b.audits(t, "action = 'login' AND outcome = 'failed'"), b.audits(t, "action = 'login' AND outcome = 'throttled'"); f != 5 || th != 1 {
					t.Fatalf("audit: %d failed, %d throttled; want 5 and 1", f, th)
				}
				b.clock.Advance(30 * time.Second)
				b.wantThrottled(t, name, goodPW, "", 30*time.Second)
				if th := b.audits(t, "action = 'login' AND outcome = 'throttled'"); th != 1 {
					t.Fatalf("a second refusal of the same lock was audited: %d throttled rows", th)
				}
				b.clock.Advance(30 * time.Second)
				b.wantBad(t, name, "wrong password", "")
				b.wantThrottled(t, name, goodPW, "", 2*time.Minute)
				if th := b.audits(t, "action = 'login' AND outcome = 'throttled'"); th != 2 {
					t.Fatalf("the first refusal of a new lock was not audited: %d throttled rows", th)
				}
				b.clock.Advance(2 * time.Minute)
				b.wantBad(t, name, "wrong password", "")
				b.wantThrottled(t, name, goodPW, "", 4*time.Minute)
				b.clock.Advance(4 * time.Minute)
				if name == "ghost" {
					b.wantBad(t, name, goodPW, "")
					b.wantThrottled(t, name, goodPW, "", 8*time.Minute)
					return
				}
				b.wantOK(t, name, goodPW, "")
				for range 4 {
					b.wantBad(t, name, "wrong password", "")
				}
				b.wantOK(t, name, goodPW, "") // the count started over at the success
			})
		})
	}
}

// The lock is capped at MaxLock; failures start a new count once the
// window has passed since the first one, or since the last lock ended.
func TestThrottleCapAndWindow(t *testing.T) {
	t.Parallel()
	opt := auth.Options{Throttle: auth.ThrottlePolicy{
		AccountFailures: 2, Window: 10 * time.Minute, BaseLock: time.Minute, MaxLock: 3 * time.Minute}}
	eachEngineWith(t, opt, func(t *testing.T, b bundle) {
		const name = "ghost"
		b.wantBad(t, name, "x", "")
		b.clock.Advance(10 * time.Minute) // the first failure is forgotten
		b.wantBad(t, name, "x", "")
		b.wantBad(t, name, "x", "")
		b.wantThrottled(t, name, "x", "", time.Minute)
		for _, lock := range []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute} {
			b.clock.Advance(lock)
			b.wantBad(t, name, "x", "")
		}
		b.wantThrottled(t, name, "x", "", 3*time.Minute)
		b.clock.Advance(3*time.Minute + 10*time.Minute) // lock over, and a window after it
		b.wantBad(t, name, "x", "")
		b.wantBad(t, name, "x", "")
		b.wantThrottled(t, name, "x", "", time.Minute)
	})
}

// An address may make IPAttempts attempts in a window, successful or not,
// for any names; then it waits until the window ends. Other addresses are
// not affected.
func TestThrottleIP(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, auth.Options{Throttle: auth.ThrottlePolicy{IPAttempts: 3}}, func(t *testing.T, b bundle) {
		b.addUser(t, "alice", auth.RoleViewer)
		const ip = "203.0.113.5"
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "alice", Password: goodPW, IP: ip}); err != nil {
			t.Fatal(err)
		}
		b.wantBad(t, "bob", "x", ip)
		b.clock.Advance(time.Minute)
		b.wantBad(t, "carl", "x", ip)
		b.wantThrottled(t, "alice", goodPW, ip, 14*time.Minute)
		b.wantBad(t, "dora", "x", "203.0.113.6")
		b.clock.Advance(14 * time.Minute)
		if _, _, err := b.a.Login(b.ctx, auth.LoginRequest{Name: "alice", Password: goodPW, IP: ip}); err != nil {
			t.Fatalf("login after the window = %v", err)
		}
	})
}

// IPv6 addresses count by their /64: one host cannot walk its prefix for
// fresh attempts; another /64 is not affected.
func TestThrottleIPv6Prefix(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, auth.Options{Throttle: auth.ThrottlePolicy{IPAttempts: 3}}, func(t *testing.T, b bundle) {
		for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:2:ffff::9"} {
			b.wantBad(t, "bob", "x", ip)
		}
		b.wantThrottled(t, "carl", "x", "2001:db8:1:2:abcd::1", 15*time.Minute)
		b.wantBad(t, "carl", "x", "2001:db8:1:3::1")
		b.wantBad(t, "dora", "x", "198.51.100.1")
	})
}

// Concurrent wrong passwords against one account: no more than
// AccountFailures of them reach a password check, and the refusals of the
// lock are audited once.
func TestThrottleConcurrent(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		b.addUser(t, "alice", auth.RoleViewer)
		errs := make([]error, 20)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i] = b.attempt("alice", "wrong password", "") })
		}
		wg.Wait()
		bad, throttled := 0, 0
		for _, err := range errs {
			switch {
			case errors.Is(err, auth.ErrBadCredentials):
				bad++
			case errors.Is(err, auth.ErrLoginThrottled):
				throttled++
			default:
				t.Fatalf("attempt = %v", err)
			}
		}
		failed := b.audits(t, "action = 'login' AND outcome = 'failed'")
		if bad > 5 || failed > 5 || bad+throttled != 20 || b.audits(t, "action = 'login' AND outcome = 'throttled'") != 1 {
			t.Fatalf("%d bad credentials (%d audited failed), %d throttled; want at most 5 checked", bad, failed, throttled)
		}
	})
}

// Failures from one address lock the name there only: the right password
// from another address still signs in, and the locked address stays
// refused until its lock ends. A name that does not exist locks the same.
func TestThrottlePerAddress(t *testing.T) {
	for _, name := range []string{"alice", "ghost"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eachEngine(t, func(t *testing.T, b bundle) {
				b.addUser(t, "alice", auth.RoleViewer)
				for range 5 {
					b.wantBad(t, name, "wrong password", "127.0.0.1")
				}
				if name == "ghost" {
					b.wantBad(t, name, goodPW, "127.0.0.2")
				} else {
					b.wantOK(t, name, goodPW, "127.0.0.2")
				}
				b.wantThrottled(t, name, goodPW, "127.0.0.1", time.Minute)
				b.clock.Advance(time.Minute)
				if name == "alice" {
					b.wantOK(t, name, goodPW, "127.0.0.1")
				}
			})
		})
	}
}

// Failures from many addresses lock the name everywhere once they reach
// NameFailures in a window, but only until that window ends: never longer
// than the window, however the guessing goes on meanwhile.
func TestThrottleNameCeiling(t *testing.T) {
	t.Parallel()
	opt := auth.Options{Throttle: auth.ThrottlePolicy{NameFailures: 6}}
	eachEngineWith(t, opt, func(t *testing.T, b bundle) {
		b.addUser(t, "alice", auth.RoleViewer)
		start := b.clock.Now()
		for i := range 6 {
			b.wantBad(t, "alice", "wrong password", fmt.Sprintf("10.0.0.%d", i+1))
			b.clock.Advance(time.Minute)
		}
		b.wantThrottled(t, "alice", goodPW, "10.0.1.1", 9*time.Minute)
		for i := range 8 { // refused without being counted: the lock does not grow
			b.wantThrottled(t, "alice", "wrong password", fmt.Sprintf("10.0.2.%d", i+1), 9*time.Minute-time.Duration(i)*time.Minute)
			b.clock.Advance(time.Minute)
		}
		if locked := b.clock.Now().Sub(start); locked != 14*time.Minute {
			t.Fatalf("clock at %s", locked)
		}
		b.wantThrottled(t, "alice", goodPW, "10.0.1.1", time.Minute)
		b.clock.Advance(time.Minute)
		b.wantOK(t, "alice", goodPW, "10.0.1.1")
		if th := b.audits(t, "action = 'login' AND outcome = 'throttled'"); th != 1 {
			t.Fatalf("%d throttled audit rows for one lock, want 1", th)
		}
	})
}

// A guesser who tries once each time the lock of their address ends keeps
// that address locked (up to MaxLock) for good, but never the name: the
// right password from another address signs in all along, and a guess
// rate under NameFailures a window never locks the name anywhere.
func TestThrottleSlowGuesser(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: about a hundred argon2id logins per engine")
	}
	eachEngineWith(t, auth.Options{Throttle: auth.ThrottlePolicy{NameFailures: 10}}, func(t *testing.T, b bundle) {
		b.addUser(t, "alice", auth.RoleViewer)
		for range 5 {
			b.wantBad(t, "alice", "wrong password", "127.0.0.1")
		}
		for hour := range 12 {
			wait, err := b.attempt("alice", "wrong password", "127.0.0.1")
			if !errors.Is(err, auth.ErrLoginThrottled) {
				t.Fatalf("guess at the locked address = %v", err)
			}
			b.clock.Advance(wait)
			b.wantBad(t, "alice", "wrong password", "127.0.0.1")
			if hour%3 == 0 {
				b.wantOK(t, "alice", goodPW, "127.0.0.2")
			}
		}
		if wait, _ := b.attempt("alice", goodPW, "127.0.0.1"); wait != time.Hour {
			t.Fatalf("the guessing address waits %s, want the MaxLock of an hour", wait)
		}
		// 9 guesses from 9 addresses every 15 minutes, for two hours.
		for i := range 8 * 9 {
			b.wantBad(t, "alice", "wrong password", fmt.Sprintf("10.1.0.%d", i))
			b.clock.Advance(100 * time.Second)
		}
		b.wantOK(t, "alice", goodPW, "127.0.0.2")
	})
}
