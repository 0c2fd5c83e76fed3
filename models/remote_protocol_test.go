package models_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// protocolAnswers are 2xx answers that do not prove themselves the
// service's answer to the call, and what a person reads of each on the
// task's attempt: the body's first 200 bytes, or "empty body".
var protocolAnswers = []struct {
	name string
	body string
	seen string
}{
	{"no echo", `{"code":"DONE","page":"` + strings.Repeat("x", 300) + `"}`,
		`{"code":"DONE","page":"` + strings.Repeat("x", 200-len(`{"code":"DONE","page":"`)) + "…"},
	{"another key's echo", `{"idempotency_key":"uh1-00000000000000000000000000000000"}`,
		`{"idempotency_key":"uh1-00000000000000000000000000000000"}`},
	{"empty body", "", "empty body"},
}

// A release answered 200 without the echo of its key, with another key's,
// or with nothing, is not done: each try is RETRY REMOTE_PROTOCOL on the
// schedule, the MaxFailures-th sends the task to MANUAL as
// RETRY_EXHAUSTED keeping REMOTE_PROTOCOL, the body's head on the
// attempts; no RELEASE row is written and the hold does not move. Breaks
// if any 2xx counted as done in a strict type.
func TestRemoteUnprovenReleaseRetriedThenManual(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for i, a := range protocolAnswers {
			path := releasePaths[i%len(releasePaths)]
			t.Run(a.name+" "+path, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.placeClosed(t, "o-pr", "card-1", 2)
				e.svc.Next(models.MaxFailures, remotetest.Answer{Status: http.StatusOK, Body: a.body})
				for n := 1; n <= models.MaxFailures; n++ {
					res := e.tryCard(t, path)
					if n < models.MaxFailures && (res.Outcome != models.OutcomeRetry || res.Class != models.ClassRemoteProtocol) {
						t.Fatalf("try %d = %+v, want RETRY REMOTE_PROTOCOL", n, res)
					}
					if n == models.MaxFailures && res.Outcome != models.OutcomeManual {
						t.Fatalf("try %d = %+v, want MANUAL", n, res)
					}
					e.clock.Advance(models.RetryDelay(n))
				}
				task := e.cardTask(t, "o-pr")
				if task.Status != models.TaskManual || task.ErrorClass != models.ClassRetryExhausted ||
					task.LastErrorClass != models.ClassRemoteProtocol || task.Failures != models.MaxFailures {
					t.Fatalf("task after %d unproven answers: %+v", models.MaxFailures, task)
				}
				as := e.attempts(t, task.ID)
				if len(as) != models.MaxFailures || as[len(as)-1].Outcome != models.OutcomeManual ||
					as[len(as)-1].ErrorClass != models.ClassRemoteProtocol || !strings.Contains(as[len(as)-1].Error, a.seen) {
					t.Fatalf("last of %d attempts = %+v; want MANUAL REMOTE_PROTOCOL holding %q", len(as), as[len(as)-1], a.seen)
				}
				if rows := e.flows(t, "o-pr", models.FlowRelease); len(rows) != 0 {
					t.Fatalf("an unproven release wrote %+v", rows)
				}
				if h := e.hold(t, "o-pr"); h.Released != 0 {
					t.Fatalf("hold after unproven releases: %+v, want none released", h)
				}
				e.wantStock(t, "card-1", remotetest.Stock{Available: 8, Held: 2})
			})
		}
	})
}

// A deduct answered 200 without the echo is retried as REMOTE_PROTOCOL,
// and done once the service's own answer comes. Breaks if the unproven
// answer were recorded as the deduct.
func TestRemoteUnprovenDeductRetried(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-pd", "card-1", 2) })
		if _, err := e.s.PayOrder(e.ctx, "o-pd", "txn-pd"); err != nil {
			t.Fatal(err)
		}
		e.svc.Next(1, remotetest.Answer{Status: http.StatusOK, Body: `{"code":"DONE"}`})
		if res := e.tryCard(t, "batch"); res.Outcome != models.OutcomeRetry || res.Class != models.ClassRemoteProtocol {
			t.Fatalf("unproven deduct = %+v, want RETRY REMOTE_PROTOCOL", res)
		}
		if rows := e.flows(t, "o-pd", models.FlowDeduct); len(rows) != 0 {
			t.Fatalf("an unproven deduct wrote %+v", rows)
		}
		e.clock.Advance(models.RetryDelay(1))
		if res := e.tryCard(t, "single"); res.Outcome != models.OutcomeDone {
			t.Fatalf("retry = %+v, want DONE", res)
		}
		if rows := e.flows(t, "o-pd", models.FlowDeduct); len(rows) != 1 || rows[0].Answer != "200" {
			t.Fatalf("DEDUCT rows %+v, want one answered 200", rows)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 8, Spent: 2})
	})
}

// A lock whose answer does not prove itself aborts the placement as
// ErrRemoteProtocol: the order CLOSED PLACE_ABORTED, and the release goes
// out as the compensation (whatever answered may have applied the lock).
// Breaks if the placement stood, or reported the service as down or as
// refusing.
func TestRemoteUnprovenLockAbortsPlacement(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, a := range protocolAnswers {
			t.Run(a.name, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.svc.Next(1, remotetest.Answer{Status: http.StatusOK, Body: a.body})
				err := e.place("o-pl", "card-1", 3)
				if !errors.Is(err, models.ErrRemoteProtocol) || !strings.Contains(err.Error(), a.seen) {
					t.Fatalf("place = %v, want REMOTE_PROTOCOL with %q", err, a.seen)
				}
				wantAborted(t, e, "o-pl")
				if o := e.order(t, "o-pl"); o.LocksAnsweredAt != nil {
					t.Fatalf("an unproven lock was recorded answered: %+v", o)
				}
				got := e.drain(t, "w-r")
				if got[models.OutcomeDone] != 2 || len(got) != 1 {
					t.Fatalf("worker = %v, want 2 DONE (sku and card)", got)
				}
				e.wantOneRelease(t, "o-pl", 3, "200")
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
			})
		}
	})
}

// A type declared strict: false keeps taking any 2xx as done: against a
// service that echoes nothing, a placement stands and its release is
// DONE. Breaks if strictness were not the type's own.
func TestRemoteUnstrictTakesUnechoedAnswers(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{unstrict: true})
		e.placeClosed(t, "o-us", "card-1", 2)
		if res := e.tryCard(t, "batch"); res.Outcome != models.OutcomeDone {
			t.Fatalf("release = %+v, want DONE", res)
		}
		e.wantOneRelease(t, "o-us", 2, "200")
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
	})
}
