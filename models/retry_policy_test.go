package models_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// A gift card release the service answers 503 (REMOTE_BUSY) every time
// waits its policy's steps and goes MANUAL after its tries: the most
// specific policy applies (type and class, type, class, default), and a
// policy of another class leaves the default's 1s, 5s, 30s ... 8 tries.
// Breaks if the worker kept one schedule for every failure.
func TestRetryPolicyOfTypeAndClass(t *testing.T) {
	t.Parallel()
	busyCard := models.RetryPolicy{Type: giftCard, Class: models.ClassRemoteBusy,
		Steps: []time.Duration{10 * time.Second, time.Minute}, Tries: 3}
	tests := []struct {
		name   string
		retry  []models.RetryPolicy
		policy string
		waits  []time.Duration // the wait after each failure but the last, which sends the task to MANUAL
	}{
		{"type and class", []models.RetryPolicy{busyCard,
			{Type: giftCard, Steps: []time.Duration{time.Second}, Tries: 5},
			{Class: models.ClassRemoteBusy, Steps: []time.Duration{time.Second}, Tries: 6}},
			"giftcard/REMOTE_BUSY", []time.Duration{10 * time.Second, time.Minute}},
		{"the last step repeats", []models.RetryPolicy{{Type: giftCard, Class: models.ClassRemoteBusy,
			Steps: []time.Duration{2 * time.Second, 7 * time.Second}, Tries: 4}},
			"giftcard/REMOTE_BUSY", []time.Duration{2 * time.Second, 7 * time.Second, 7 * time.Second}},
		{"type", []models.RetryPolicy{{Type: giftCard, Steps: []time.Duration{7 * time.Second}, Tries: 2},
			{Class: models.ClassRemoteBusy, Steps: []time.Duration{time.Second}, Tries: 6}},
			"giftcard/*", []time.Duration{7 * time.Second}},
		{"class: MANUAL at the first failure", []models.RetryPolicy{{Class: models.ClassRemoteBusy, Steps: []time.Duration{time.Second}, Tries: 1}},
			"*/REMOTE_BUSY", nil},
		{"another class's policy leaves the default", []models.RetryPolicy{{Type: giftCard, Class: models.ClassTimeout,
			Steps: []time.Duration{time.Hour}, Tries: 1}, {Type: models.ResInventory, Steps: []time.Duration{time.Hour}, Tries: 1}},
			"default", []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute,
				30 * time.Minute, 30 * time.Minute}},
	}
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{retry: tt.retry})
				e.placeClosed(t, "o-rp", "card-1", 2)
				tries := len(tt.waits) + 1
				e.svc.Next(tries, remotetest.Answer{Status: http.StatusServiceUnavailable})
				for n := 1; n <= tries; n++ {
					res := e.tryCard(t, releasePaths[n%2])
					task := e.cardTask(t, "o-rp")
					if n == tries {
						if res.Outcome != models.OutcomeManual || task.Status != models.TaskManual ||
							task.ErrorClass != models.ClassRetryExhausted || task.LastErrorClass != models.ClassRemoteBusy {
							t.Fatalf("try %d of %d = %+v, task %+v; want MANUAL RETRY_EXHAUSTED after REMOTE_BUSY", n, tries, res, task)
						}
						break
					}
					wait := tt.waits[n-1]
					if res.Outcome != models.OutcomeRetry || task.Status != models.TaskRetry || !task.NextAt.Equal(e.clock.Now().Add(wait)) {
						t.Fatalf("try %d = %+v, next at %s; want RETRY in %s", n, res, task.NextAt.Sub(e.clock.Now()), wait)
					}
					if got := e.s.RetryOf(task); got != (models.RetryStanding{Policy: tt.policy, Tries: tries, Try: n + 1}) {
						t.Fatalf("after try %d: %+v, want try %d of %d on %s", n, got, n+1, tries, tt.policy)
					}
					e.clock.Advance(wait - time.Microsecond)
					if due := claimAll(t, e.bundle, "w-early"); len(due) != 0 {
						t.Fatalf("try %d's retry was due before its wait of %s", n, wait)
					}
					e.clock.Advance(time.Microsecond)
				}
				task := e.cardTask(t, "o-rp")
				if got := e.s.RetryOf(task); got != (models.RetryStanding{Policy: tt.policy, Tries: tries}) {
					t.Fatalf("MANUAL task's standing %+v, want %d tries of %s", got, tries, tt.policy)
				}
				if as := e.attempts(t, task.ID); len(as) != tries {
					t.Fatalf("%d attempts, want %d", len(as), tries)
				}
				e.wantStock(t, "card-1", remotetest.Stock{Available: 8, Held: 2})
			})
		}
	})
}

// A store refuses policies the worker could not follow: no tries, no
// steps, steps out of order, a type it does not have, two of one kind.
func TestRetryPolicyRefused(t *testing.T) {
	t.Parallel()
	steps := []time.Duration{time.Second}
	tests := []struct {
		name  string
		def   models.RetryPolicy
		retry []models.RetryPolicy
	}{
		{"no tries", models.RetryPolicy{}, []models.RetryPolicy{{Class: models.ClassTimeout, Steps: steps}}},
		{"no steps", models.RetryPolicy{}, []models.RetryPolicy{{Class: models.ClassTimeout, Tries: 2}}},
		{"unsorted steps", models.RetryPolicy{Steps: []time.Duration{time.Minute, time.Second}, Tries: 2}, nil},
		{"zero step", models.RetryPolicy{}, []models.RetryPolicy{{Type: models.ResBalance, Steps: []time.Duration{0}, Tries: 2}}},
		{"unknown type", models.RetryPolicy{}, []models.RetryPolicy{{Type: "seats", Steps: steps, Tries: 2}}},
		{"unknown class", models.RetryPolicy{}, []models.RetryPolicy{{Class: "SLOW", Steps: steps, Tries: 2}}},
		{"twice", models.RetryPolicy{}, []models.RetryPolicy{{Class: models.ClassTimeout, Steps: steps, Tries: 2},
			{Class: models.ClassTimeout, Steps: steps, Tries: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := t.TempDir() + "/r.db"
			s, err := models.Open(t.Context(), path, models.Options{RetryDefault: tt.def, Retry: tt.retry, Logger: modelstest.QuietLog()})
			if err == nil {
				_ = s.Close()
				t.Fatal("Open took the policies")
			}
			if !errors.Is(err, models.ErrInvalid) {
				t.Fatalf("Open: %v, want ErrInvalid", err)
			}
		})
	}
}

// The default policy is today's schedule.
func TestRetryPolicyDefault(t *testing.T) {
	t.Parallel()
	p := models.DefaultRetryPolicy
	if p.Name() != "default" || p.Tries != 8 || !slices.Equal(p.Steps,
		[]time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 5 * time.Minute, 30 * time.Minute}) {
		t.Fatalf("default %+v", p)
	}
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 3: 30 * time.Second, 5: 30 * time.Minute, 9: 30 * time.Minute} {
		if got := p.Delay(n); got != want {
			t.Errorf("Delay(%d) = %s, want %s", n, got, want)
		}
	}
}

// A task that failed more often than a limit lowered since (a restart with
// fewer tries) is on its last try, which its next failure ends MANUAL; it
// does not read "try 9 of 3".
func TestRetryOfPastALoweredLimit(t *testing.T) {
	t.Parallel()
	s := modelstest.Open(t, models.SQLite, models.Options{RetryDefault: models.RetryPolicy{Steps: []time.Duration{time.Second}, Tries: 3}})
	for failures, want := range map[int]int{0: 1, 2: 3, 8: 3} {
		task := models.ReleaseTask{ResourceType: models.ResInventory, Status: models.TaskRetry, Failures: failures}
		if got := s.RetryOf(task); got != (models.RetryStanding{Policy: "default", Tries: 3, Try: want}) {
			t.Errorf("after %d failures: %+v, want try %d of 3", failures, got, want)
		}
	}
}
