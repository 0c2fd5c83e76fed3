package models_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// These tests put the remote type giftcard behind a remotetest.Service
// over real HTTP and make the service misbehave: slow, busy, refusing,
// dropping connections, answering "done before", edited by hand, down.
// Whatever it does, each hold must be released (or deducted) exactly once
// at the service, unhold must record one ledger row per call it saw
// answered, and reconciliation must find exactly the differences that are
// real.

// remoteEnv is a store with the remote type giftcard, its fake service,
// and a client of that service of the test's own.
type remoteEnv struct {
	bundle
	client *remote.Client
}

// remoteOpts are what a test changes in a remoteEnv.
type remoteOpts struct {
	timeout time.Duration // the client's timeout; 0: remote.DefaultTimeout
	noHolds bool          // the service answers 404 on GET /holds/{key}
	// unstrict: the service echoes no idempotency key and the type is
	// declared strict: false
	unstrict bool
	faults   models.FaultFunc
	retry    []models.RetryPolicy // the store's retry policies besides the default
}

// newRemoteEnv opens a store on d with sku-1 (10 in stock) and the
// service holding card-1 … card-3 (10 available each).
func newRemoteEnv(t *testing.T, d models.Dialect, o remoteOpts) remoteEnv {
	t.Helper()
	svc := remotetest.New(remotetest.Options{NoHolds: o.noHolds, Seed: 7, NoEcho: o.unstrict})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL, Timeout: o.timeout, Strict: !o.unstrict})
	if err != nil {
		t.Fatal(err)
	}
	clock := modelstest.NewClock()
	opt := remoteStoreOptions(clock, client, o.faults)
	opt.Retry = o.retry
	s := modelstest.Open(t, d, opt)
	e := remoteEnv{bundle: bundle{s: s, clock: clock, ctx: t.Context(), svc: svc}, client: client}
	must(t, func() error { _, err := s.SetStock(e.ctx, "sku-1", 10, 0, "test"); return err })
	for _, k := range []string{"card-1", "card-2", "card-3"} {
		svc.SetAvailable(k, 10)
	}
	return e
}

func remoteStoreOptions(clock *modelstest.Clock, client *remote.Client, faults models.FaultFunc) models.Options {
	return models.Options{Now: clock.Now, Faults: faults, Logger: modelstest.QuietLog(),
		Remote: []models.RemoteType{{Type: giftCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}}
}

// place places order no holding 1 of sku-1 and qty of the gift card key.
func (e remoteEnv) place(no, key string, qty int64) error {
	_, _, err := e.s.PlaceOrder(e.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
		Items: []models.Item{{SkuID: "sku-1", Qty: 1}}, Holds: []models.HoldRequest{{Type: giftCard, Key: key, Qty: qty}}})
	return err
}

// placeClosed places order no (see place) and closes it at the user's
// request, so its gift card's release task is due.
func (e remoteEnv) placeClosed(t *testing.T, no, key string, qty int64) {
	t.Helper()
	must(t, func() error { return e.place(no, key, qty) })
	if _, err := e.s.CloseOrder(e.ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
}

// tryCard claims every due task and tries them by path ("batch": one
// ReleaseBatch, "single": ReleaseTask each), and returns the result of
// the gift card's task, which must be among them.
func (e remoteEnv) tryCard(t *testing.T, path string) models.ReleaseResult {
	t.Helper()
	tasks := claimAll(t, e.bundle, "w-r")
	var results []models.ReleaseResult
	if path == "batch" {
		var err error
		if results, err = e.s.ReleaseBatch(e.ctx, tasks, "w-r"); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, tk := range tasks {
			res, err := e.s.ReleaseTask(e.ctx, tk, "w-r")
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
		}
	}
	for i, tk := range tasks {
		if tk.ResourceType == giftCard {
			return results[i]
		}
	}
	t.Fatalf("no gift card task among the %d claimed", len(tasks))
	return models.ReleaseResult{}
}

// cardTask is order no's gift card task.
func (e remoteEnv) cardTask(t *testing.T, no string) models.ReleaseTask {
	t.Helper()
	var tasks []models.ReleaseTask
	must(t, func() error {
		return e.s.R.Where("order_no = ? AND resource_type = ?", no, giftCard).Find(&tasks).Error
	})
	if len(tasks) != 1 {
		t.Fatalf("order %s has %d gift card tasks, want 1", no, len(tasks))
	}
	return tasks[0]
}

// attempts are task id's attempt rows, oldest first.
func (e remoteEnv) attempts(t *testing.T, id int64) []models.TaskAttempt {
	t.Helper()
	var as []models.TaskAttempt
	must(t, func() error { return e.s.R.Where("task_id = ?", id).Order("id").Find(&as).Error })
	return as
}

// flowRow is one row of the remote ledger.
type flowRow struct {
	Type, Answer, IdempotencyKey string
	Qty                          int64
}

// flows are order no's gift card ledger rows of type typ.
func (e remoteEnv) flows(t *testing.T, no string, typ models.FlowType) []flowRow {
	t.Helper()
	var rows []flowRow
	must(t, func() error {
		return e.s.R.Raw(`SELECT type, answer, idempotency_key, qty FROM remote_flows
			WHERE order_no = ? AND resource_type = ? AND type = ? ORDER BY id`, no, giftCard, typ).Scan(&rows).Error
	})
	return rows
}

// hold is order no's gift card hold.
func (e remoteEnv) hold(t *testing.T, no string) models.Hold {
	t.Helper()
	var hs []models.Hold
	must(t, func() error {
		return e.s.R.Where("order_no = ? AND resource_type = ?", no, giftCard).Find(&hs).Error
	})
	if len(hs) != 1 {
		t.Fatalf("order %s has %d gift card holds, want 1", no, len(hs))
	}
	return hs[0]
}

func (e remoteEnv) order(t *testing.T, no string) models.Order {
	t.Helper()
	var o models.Order
	must(t, func() error { return e.s.R.Where("order_no = ?", no).Take(&o).Error })
	return o
}

// wantStock asserts the service's amounts of key.
func (e remoteEnv) wantStock(t *testing.T, key string, want remotetest.Stock) {
	t.Helper()
	if got := e.svc.Stock(key); got != want {
		t.Fatalf("the service has %s %+v, want %+v", key, got, want)
	}
}

// waitStock waits, at most 5 s, until the service's amounts of key are
// want: a slow call is applied after its caller gave up.
func (e remoteEnv) waitStock(t *testing.T, key string, want remotetest.Stock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.svc.Stock(key) != want {
		if time.Now().After(deadline) {
			t.Fatalf("the service has %s %+v, still not %+v", key, e.svc.Stock(key), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// relKey is the idempotency key of order no's release of key.
func relKey(no, key string) string {
	return remote.IdempotencyKey(no, string(giftCard), key, remote.OpRelease, 0)
}

// wantOutcomes asserts the outcomes and classes of a task's attempts.
func wantOutcomes(t *testing.T, as []models.TaskAttempt, want ...string) {
	t.Helper()
	var got []string
	for _, a := range as {
		s := a.Outcome
		if a.ErrorClass != "" {
			s += "/" + string(a.ErrorClass)
		}
		got = append(got, s)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("attempts %v, want %v", got, want)
	}
}

// wantOneRelease asserts that order no's gift card has one RELEASE row,
// with the given answer, and its hold is released.
func (e remoteEnv) wantOneRelease(t *testing.T, no string, qty int64, answer string) {
	t.Helper()
	rows := e.flows(t, no, models.FlowRelease)
	h := e.hold(t, no)
	if len(rows) != 1 || rows[0].Answer != answer || rows[0].Qty != qty || rows[0].IdempotencyKey != relKey(no, h.BizKey) {
		t.Fatalf("RELEASE rows of %s: %+v, want one of %d answered %q", no, rows, qty, answer)
	}
	if h.Released != qty || h.Deducted != 0 {
		t.Fatalf("hold of %s: %+v, want %d released", no, h, qty)
	}
}

var releasePaths = []string{"batch", "single"}

// A release slower than the client's timeout fails as TIMEOUT, but the
// service did it all the same; the retry sends the same key, is answered
// 409 ALREADY_DONE and counts as a DUPLICATE: one RELEASE row, the card
// given back once. Breaks if the retry's key differed (the service would
// release twice, or refuse a second release of what it no longer holds),
// or if ALREADY_DONE were taken for a failure, or its recording wrote no
// hold.released event.
func TestRemoteSlowReleaseRetriedAsDuplicate(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, path := range releasePaths {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{timeout: 500 * time.Millisecond})
				e.placeClosed(t, "o-slow", "card-1", 3)
				e.svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 1500 * time.Millisecond})
				if res := e.tryCard(t, path); res.Outcome != models.OutcomeRetry || res.Class != models.ClassTimeout {
					t.Fatalf("slow release = %+v, want RETRY TIMEOUT", res)
				}
				e.svc.SetFaults(remotetest.Faults{})
				e.waitStock(t, "card-1", remotetest.Stock{Available: 10})
				if rows := e.flows(t, "o-slow", models.FlowRelease); len(rows) != 0 {
					t.Fatalf("a timed-out release wrote %+v", rows)
				}
				e.clock.Advance(models.RetryDelay(1))
				if res := e.tryCard(t, path); res.Outcome != models.OutcomeDuplicate {
					t.Fatalf("retry = %+v, want DUPLICATE", res)
				}
				if n := e.svc.Calls(relKey("o-slow", "card-1")); n != 2 {
					t.Fatalf("the service saw the release's key %d times, want 2", n)
				}
				e.wantOneRelease(t, "o-slow", 3, "409 ALREADY_DONE")
				// Recorded now, the release is a fact we learn of now: one event.
				var card []models.Event
				for _, ev := range orderEvents(t, e.bundle, "o-slow") {
					if ev.Type == models.EventHoldReleased && dataOf(t, ev)["key"] == "card-1" {
						card = append(card, ev)
					}
				}
				if len(card) != 1 {
					t.Fatalf("%d hold.released events for the ALREADY_DONE release, want 1", len(card))
				}
				wantOutcomes(t, e.attempts(t, e.cardTask(t, "o-slow").ID), "RETRY/TIMEOUT", "DUPLICATE")
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A 503 is REMOTE_BUSY, retried on the schedule; nothing was done, so
// the retry is DONE. Breaks if a 5xx were taken as permanent or as done.
func TestRemoteBusyRetried(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, path := range releasePaths {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.placeClosed(t, "o-busy", "card-1", 2)
				e.svc.Next(2, remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY","message":"维护中 maintenance"}`})
				for n := 1; n <= 2; n++ {
					res := e.tryCard(t, path)
					if res.Outcome != models.OutcomeRetry || res.Class != models.ClassRemoteBusy || !strings.Contains(res.Err, "maintenance") {
						t.Fatalf("try %d against a 503 = %+v, want RETRY REMOTE_BUSY with the message", n, res)
					}
					e.wantStock(t, "card-1", remotetest.Stock{Available: 8, Held: 2})
					// Not due before its wait is over.
					if tasks := claimAll(t, e.bundle, "w-early"); len(tasks) != 0 {
						t.Fatalf("claimed %d tasks before the retry was due", len(tasks))
					}
					e.clock.Advance(models.RetryDelay(n))
				}
				if res := e.tryCard(t, path); res.Outcome != models.OutcomeDone {
					t.Fatalf("retry = %+v, want DONE", res)
				}
				if n := e.svc.Calls(relKey("o-busy", "card-1")); n != 3 {
					t.Fatalf("the service saw the release's key %d times, want 3", n)
				}
				e.wantOneRelease(t, "o-busy", 2, "200")
				wantOutcomes(t, e.attempts(t, e.cardTask(t, "o-busy").ID), "RETRY/REMOTE_BUSY", "RETRY/REMOTE_BUSY", "DONE")
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A 422 is REMOTE_REJECTED: MANUAL at the first failure, the service's
// message on the attempt and on the task, the hold still held (and so no
// reconciliation diff); an operator's rerun sends the same key and
// releases it. Breaks if a refusal were retried on the schedule, or its
// message lost.
func TestRemoteRejectedGoesManual(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, path := range releasePaths {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.placeClosed(t, "o-rej", "card-1", 4)
				const msg = "卡已冻结 card frozen by risk control"
				e.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"FROZEN","message":"` + msg + `"}`})
				res := e.tryCard(t, path)
				if res.Outcome != models.OutcomeManual || res.Class != models.ClassRemoteRejected {
					t.Fatalf("refused release = %+v, want MANUAL REMOTE_REJECTED", res)
				}
				task := e.cardTask(t, "o-rej")
				if task.Status != models.TaskManual || task.Failures != 1 || task.ErrorClass != models.ClassRemoteRejected ||
					!strings.Contains(task.LastError, msg) || !strings.Contains(task.LastError, "FROZEN") {
					t.Fatalf("task after a 422: %+v", task)
				}
				as := e.attempts(t, task.ID)
				wantOutcomes(t, as, "MANUAL/REMOTE_REJECTED")
				if !strings.Contains(as[0].Error, msg) || !strings.Contains(as[0].Error, "422") {
					t.Fatalf("attempt error %q lacks the service's status and message", as[0].Error)
				}
				if rows := e.flows(t, "o-rej", models.FlowRelease); len(rows) != 0 {
					t.Fatalf("a refused release wrote %+v", rows)
				}
				e.wantStock(t, "card-1", remotetest.Stock{Available: 6, Held: 4})
				reconcileClean(t, e.bundle)
				if _, err := e.s.Rerun(e.ctx, "o-rej", giftCard, "ops", "风控已解冻 unfrozen"); err != nil {
					t.Fatal(err)
				}
				if res := e.tryCard(t, path); res.Outcome != models.OutcomeDone {
					t.Fatalf("rerun = %+v, want DONE", res)
				}
				if n := e.svc.Calls(relKey("o-rej", "card-1")); n != 2 {
					t.Fatalf("the service saw the release's key %d times, want 2", n)
				}
				e.wantOneRelease(t, "o-rej", 4, "200")
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A connection closed without an answer is CONNECTION, retried: before
// the service applied the call the retry is DONE; after, it is a
// DUPLICATE. Either way one RELEASE row and the card given back once.
// Breaks if a dropped connection were taken as done (no retry: the card
// stays held) or as permanent.
func TestRemoteDroppedConnection(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, c := range []struct {
			name       string
			afterApply bool
			heldAfter  int64
			outcome    string
			answer     string
		}{
			{"before apply", false, 5, models.OutcomeDone, "200"},
			{"after apply", true, 0, models.OutcomeDuplicate, "409 ALREADY_DONE"},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.placeClosed(t, "o-drop", "card-1", 5)
				// Every request dropped: the client may resend one on a
				// fresh connection, which must be dropped too.
				e.svc.SetFaults(remotetest.Faults{DropRate: 1, DropAfterApply: c.afterApply})
				res := e.tryCard(t, "batch")
				if res.Outcome != models.OutcomeRetry || res.Class != models.ClassConnection {
					t.Fatalf("dropped release = %+v, want RETRY CONNECTION", res)
				}
				e.svc.SetFaults(remotetest.Faults{})
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10 - c.heldAfter, Held: c.heldAfter})
				e.clock.Advance(models.RetryDelay(1))
				if res := e.tryCard(t, "single"); res.Outcome != c.outcome {
					t.Fatalf("retry = %+v, want %s", res, c.outcome)
				}
				e.wantOneRelease(t, "o-drop", 5, c.answer)
				wantOutcomes(t, e.attempts(t, e.cardTask(t, "o-drop").ID), "RETRY/CONNECTION", c.outcome)
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// The first try of a release that another process already made (it died
// before recording it) is answered 409 ALREADY_DONE: a DUPLICATE whose
// RELEASE row is still written and whose hold still moves, since nothing
// recorded it before. Breaks if a DUPLICATE from the service were taken
// for the ledger's own duplicate (no row, the hold left open: LEDGER_HELD
// and the invariants would fail).
func TestRemoteAlreadyDoneOnFirstTry(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, path := range releasePaths {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{})
				e.placeClosed(t, "o-dup", "card-1", 3)
				res, err := e.client.Release(e.ctx, remote.Call{OrderNo: "o-dup", Key: "card-1", Qty: 3, Trigger: "USER_CANCEL"})
				if err != nil || res.Duplicate {
					t.Fatalf("the other process's release = %+v, %v", res, err)
				}
				if got := e.tryCard(t, path); got.Outcome != models.OutcomeDuplicate {
					t.Fatalf("release = %+v, want DUPLICATE", got)
				}
				e.wantOneRelease(t, "o-dup", 3, "409 ALREADY_DONE")
				if task := e.cardTask(t, "o-dup"); task.Status != models.TaskDone {
					t.Fatalf("task %+v, want DONE", task)
				}
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A lock the service refuses aborts the placement: ErrRemoteRejected,
// the order CLOSED PLACE_ABORTED with a note, every hold released by the
// worker — the SKU back in stock, the card's release an empty rollback —
// and reconciliation clean. Breaks if the order stayed PENDING (its SKU
// held until the pay deadline) or the lock's refusal were reported as
// the service being down.
func TestRemotePlacementLockRefused(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		e.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"SHORT","message":"卡余额不足 not enough"}`})
		err := e.place("o-ref", "card-1", 3)
		if !errors.Is(err, models.ErrRemoteRejected) || !strings.Contains(err.Error(), "not enough") {
			t.Fatalf("place = %v, want REMOTE_REJECTED with the service's message", err)
		}
		wantAborted(t, e, "o-ref")
		sku, err := e.s.GetSKU(e.ctx, "sku-1")
		if err != nil || sku.Locked != 1 {
			t.Fatalf("before the worker sku-1 = %+v, %v; want 1 locked", sku, err)
		}
		got := e.drain(t, "w-r")
		if got[models.OutcomeDone] != 2 || len(got) != 1 {
			t.Fatalf("worker = %v, want 2 DONE (sku and card)", got)
		}
		if sku, _ := e.s.GetSKU(e.ctx, "sku-1"); sku.Available != 10 || sku.Locked != 0 {
			t.Fatalf("sku-1 = %+v, want 10 available again", sku)
		}
		if n := e.svc.Calls(relKey("o-ref", "card-1")); n != 1 {
			t.Fatalf("the service saw %d releases, want 1 (the empty rollback)", n)
		}
		e.wantOneRelease(t, "o-ref", 3, "200")
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
		reconcileClean(t, e.bundle)
	})
}

// wantAborted asserts order no was closed PLACE_ABORTED with its note and
// one release task per hold.
func wantAborted(t *testing.T, e remoteEnv, no string) {
	t.Helper()
	o := e.order(t, no)
	if o.Status != models.OrderClosed || o.CloseReason != string(models.TriggerPlaceAborted) ||
		!strings.HasPrefix(o.Note, "placement aborted: ") {
		t.Fatalf("order %s = %s %q %q, want CLOSED PLACE_ABORTED with a note", no, o.Status, o.CloseReason, o.Note)
	}
	if task := e.cardTask(t, no); task.Op != models.FlowRelease || task.Trigger != models.TriggerPlaceAborted {
		t.Fatalf("card task of %s = %+v, want a RELEASE of trigger PLACE_ABORTED", no, task)
	}
}

// A lock slower than the timeout aborts the placement as
// ErrRemoteUnavailable, and whether the slow lock lands before the
// release or after it, the card ends up not held: a release after the
// lock gives it back; one before it is an empty rollback, and the late
// lock is then refused. Breaks if the abort did not release the remote
// hold, or released it under another key than the service will find.
func TestRemotePlacementLockTimesOut(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, landed := range []bool{false, true} {
			t.Run(fmt.Sprintf("lock landed before the release %v", landed), func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{timeout: 500 * time.Millisecond})
				e.svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 1500 * time.Millisecond})
				err := e.place("o-to", "card-1", 3)
				e.svc.SetFaults(remotetest.Faults{})
				if !errors.Is(err, models.ErrRemoteUnavailable) {
					t.Fatalf("place = %v, want REMOTE_UNAVAILABLE", err)
				}
				wantAborted(t, e, "o-to")
				if landed {
					e.waitStock(t, "card-1", remotetest.Stock{Available: 7, Held: 3})
				}
				if got := e.drain(t, "w-r"); got[models.OutcomeDone] != 2 || len(got) != 1 {
					t.Fatalf("worker = %v, want 2 DONE", got)
				}
				// The slow lock has come and gone by now: refused after the
				// empty rollback, or given back by the release.
				time.Sleep(700 * time.Millisecond)
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				e.wantOneRelease(t, "o-to", 3, "200")
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A payment leaves a DEDUCT task (trigger PAY) that the worker sends;
// a 503 on it is retried; the card ends up spent at the service, the
// hold deducted, a DEDUCT row written. A deduct the service refuses goes
// MANUAL, and a rerun deducts it. Breaks if the deduction were retried
// under another key (spent twice), or a refusal were left to the schedule.
func TestRemotePaymentDeducts(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-pay", "card-1", 3) })
		must(t, func() error { return e.place("o-pay2", "card-2", 2) })
		for _, no := range []string{"o-pay", "o-pay2"} {
			if res, err := e.s.PayOrder(e.ctx, no, "txn-"+no); err != nil || res.Status != models.OrderPaid {
				t.Fatalf("pay %s = %+v, %v", no, res, err)
			}
			if task := e.cardTask(t, no); task.Op != models.FlowDeduct || task.Trigger != models.TriggerPay ||
				task.Status != models.TaskPending {
				t.Fatalf("task after paying %s = %+v, want a PENDING DEDUCT of trigger PAY", no, task)
			}
		}
		e.clock.Advance(time.Minute) // past the placement's call window: HELD is checked
		reconcileClean(t, e.bundle)
		// o-pay's deduct is busy once, o-pay2's refused: the claim takes
		// them in order of creation.
		e.svc.Next(1, remotetest.Answer{Status: http.StatusServiceUnavailable})
		e.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"NOT_HELD","message":"hold expired"}`})
		tasks := claimAll(t, e.bundle, "w-r")
		if len(tasks) != 2 {
			t.Fatalf("claimed %d tasks, want 2", len(tasks))
		}
		// One at a time, so that the fixed answers go to the order meant.
		res := make([]models.ReleaseResult, 2)
		for i, tk := range tasks {
			if res[i], _ = e.s.ReleaseTask(e.ctx, tk, "w-r"); res[i].Outcome == "" {
				t.Fatalf("task %d gave no outcome", tk.ID)
			}
		}
		if res[0].Class != models.ClassRemoteBusy || res[0].Outcome != models.OutcomeRetry ||
			res[1].Class != models.ClassRemoteRejected || res[1].Outcome != models.OutcomeManual {
			t.Fatalf("deducts = %+v, want RETRY REMOTE_BUSY then MANUAL REMOTE_REJECTED", res)
		}
		reconcileClean(t, e.bundle)
		e.clock.Advance(models.RetryDelay(1))
		if got := e.drain(t, "w-r"); got[models.OutcomeDone] != 1 || len(got) != 1 {
			t.Fatalf("retry = %v, want one DONE", got)
		}
		if _, err := e.s.Rerun(e.ctx, "o-pay2", giftCard, "ops", "hold restored"); err != nil {
			t.Fatal(err)
		}
		if got := e.drain(t, "w-r"); got[models.OutcomeDone] != 1 || len(got) != 1 {
			t.Fatalf("rerun = %v, want one DONE", got)
		}
		for _, c := range []struct {
			no, key string
			qty     int64
			calls   int
		}{{"o-pay", "card-1", 3, 2}, {"o-pay2", "card-2", 2, 2}} {
			dk := remote.IdempotencyKey(c.no, string(giftCard), c.key, remote.OpDeduct, 0)
			if n := e.svc.Calls(dk); n != c.calls {
				t.Fatalf("the service saw %s's deduct %d times, want %d", c.no, n, c.calls)
			}
			rows := e.flows(t, c.no, models.FlowDeduct)
			if len(rows) != 1 || rows[0].Answer != "200" || rows[0].Qty != c.qty || rows[0].IdempotencyKey != dk {
				t.Fatalf("DEDUCT rows of %s: %+v", c.no, rows)
			}
			if h := e.hold(t, c.no); h.Deducted != c.qty || h.Released != 0 {
				t.Fatalf("hold of %s = %+v, want %d deducted", c.no, h, c.qty)
			}
			e.wantStock(t, c.key, remotetest.Stock{Available: 10 - c.qty, Spent: c.qty})
		}
		reconcileClean(t, e.bundle)
	})
}

// FaultAfterCall failing is a worker dying after the service answered and
// before unhold recorded it: the try fails, the retry sends the same key
// (the service sees it twice) and finds it done; the card is given back
// once. Breaks if the answer were recorded before the fault point, or the
// retry used a fresh key.
func TestRemoteFaultAfterCall(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for _, path := range releasePaths {
			t.Run(path, func(t *testing.T) {
				t.Parallel()
				var fired atomic.Int32
				faults := func(point string, tk *models.ReleaseTask) error {
					if point == models.FaultAfterCall && tk.ResourceType == giftCard && fired.Add(1) == 1 {
						return errors.New("injected: died after the call")
					}
					return nil
				}
				e := newRemoteEnv(t, d, remoteOpts{faults: faults})
				e.placeClosed(t, "o-fac", "card-1", 2)
				res := e.tryCard(t, path)
				if res.Outcome != models.OutcomeRetry || !strings.Contains(res.Err, "died after the call") {
					t.Fatalf("try = %+v, want RETRY with the fault's error", res)
				}
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				if rows := e.flows(t, "o-fac", models.FlowRelease); len(rows) != 0 {
					t.Fatalf("the failed try wrote %+v", rows)
				}
				e.clock.Advance(models.RetryDelay(1))
				if res := e.tryCard(t, path); res.Outcome != models.OutcomeDuplicate {
					t.Fatalf("retry = %+v, want DUPLICATE", res)
				}
				if n := e.svc.Calls(relKey("o-fac", "card-1")); n != 2 {
					t.Fatalf("the service saw the release's key %d times, want 2", n)
				}
				e.wantOneRelease(t, "o-fac", 2, "409 ALREADY_DONE")
				e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// Two stores on one database (two instances of unhold), two workers each,
// drain the releases of many orders at once while the service answers
// some calls 503: each release reaches the service once per recorded try
// and is done once — one RELEASE row per order, the cards all given back
// — and reconciliation is clean. Breaks if two workers could claim one
// task (a second call, a DUPLICATE, Calls above the tries) or a batch
// lost a call's answer (a call without its attempt).
func TestRemoteTwoInstancesDrain(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const orders, keys = 60, 6
		svc := remotetest.New(remotetest.Options{Seed: 11})
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		clock := modelstest.NewClock()
		dsn := modelstest.MigratedDSN(t, d)
		var stores []*models.Store
		for range 2 {
			s, err := models.Open(t.Context(), dsn, remoteStoreOptions(clock, client, nil))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			stores = append(stores, s)
		}
		e := remoteEnv{bundle: bundle{s: stores[0], clock: clock, ctx: t.Context(), svc: svc}, client: client}
		must(t, func() error { _, err := e.s.SetStock(e.ctx, "sku-1", orders, 0, "test"); return err })
		for k := range keys {
			svc.SetAvailable(fmt.Sprintf("card-%d", k), 100)
		}
		for i := range orders {
			e.placeClosed(t, fmt.Sprintf("o-%02d", i), fmt.Sprintf("card-%d", i%keys), int64(1+i%3))
		}
		svc.SetFaults(remotetest.Faults{BusyRate: 0.3})
		for round := 0; ; round++ {
			if round == 3 {
				svc.SetFaults(remotetest.Faults{})
			}
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			for i, s := range stores {
				for p := range 2 {
					worker := fmt.Sprintf("s%d-w%d", i, p)
					wg.Go(func() { errs <- drainTwoWays(t.Context(), s, worker) })
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			var left int64
			must(t, func() error {
				return e.s.R.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&left).Error
			})
			if left == 0 {
				break
			}
			if round == 10 {
				t.Fatalf("%d tasks not DONE after %d rounds", left, round)
			}
			clock.Advance(models.RetrySchedule[len(models.RetrySchedule)-1])
		}
		var dups int64
		must(t, func() error {
			return e.s.R.Model(&models.TaskAttempt{}).Where("outcome = ?", models.OutcomeDuplicate).Count(&dups).Error
		})
		if dups != 0 {
			t.Fatalf("%d DUPLICATE tries: some release was tried twice", dups)
		}
		for i := range orders {
			no, key := fmt.Sprintf("o-%02d", i), fmt.Sprintf("card-%d", i%keys)
			rows := e.flows(t, no, models.FlowRelease)
			if len(rows) != 1 || rows[0].Answer != "200" {
				t.Fatalf("RELEASE rows of %s: %+v, want one answered 200", no, rows)
			}
			as := e.attempts(t, e.cardTask(t, no).ID)
			if n := svc.Calls(remote.IdempotencyKey(no, string(giftCard), key, remote.OpRelease, 0)); n != len(as) {
				t.Fatalf("the service saw %s's release %d times; unhold recorded %d tries", no, n, len(as))
			}
		}
		for k := range keys {
			e.wantStock(t, fmt.Sprintf("card-%d", k), remotetest.Stock{Available: 100})
		}
		clock.Advance(time.Minute)
		reconcileClean(t, e.bundle)
	})
}

// drainTwoWays claims and releases due tasks of s until none is due,
// alternating batches and single releases; a batch that did not commit
// is released task by task, as the worker does.
func drainTwoWays(ctx context.Context, s *models.Store, worker string) error {
	for n := 0; ; n++ {
		tasks, err := s.ClaimTasks(ctx, worker, 5, time.Minute)
		if err != nil || len(tasks) == 0 {
			return err
		}
		if n%2 == 0 {
			_, err := s.ReleaseBatch(ctx, tasks, worker)
			if err == nil {
				continue
			}
			if !errors.Is(err, models.ErrBatchNotCommitted) {
				return err
			}
		}
		for _, tk := range tasks {
			if _, err := s.ReleaseTask(ctx, tk, worker); err != nil {
				return err
			}
		}
	}
}

// heldDiffs are the HELD and LEDGER_HELD diffs of the gift card type.
func heldDiffs(diffs []models.Diff) []models.Diff {
	var out []models.Diff
	for _, d := range diffs {
		if d.Resource == giftCard {
			out = append(out, d)
		}
	}
	return out
}

// A hand edit at the service (SetHeld) is a HELD diff with the amounts;
// an UPDATE of order_holds behind unhold's back is a LEDGER_HELD diff
// (the ledger of calls no longer matches the holds). Breaks if either
// check were missing or compared the wrong amounts.
func TestRemoteReconcileFindsEdits(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-a", "card-1", 3) })
		must(t, func() error { return e.place("o-b", "card-2", 2) })
		e.clock.Advance(time.Minute)
		reconcileClean(t, e.bundle)
		e.svc.SetHeld("card-1", 5)
		must(t, func() error {
			return e.s.W.Exec("UPDATE order_holds SET released = qty WHERE order_no = 'o-b' AND resource_type = ?", giftCard).Error
		})
		diffs, err := e.s.Reconcile(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []models.Diff{
			{Resource: giftCard, Key: "card-1", Check: models.CheckHeld, Expected: 3, Actual: 5},
			{Resource: giftCard, Key: "card-2", Check: models.CheckHeld, Expected: 0, Actual: 2},
			{Resource: giftCard, Key: "card-2", Check: models.CheckLedgerHeld, Expected: 0, Actual: 2},
		}
		if got := heldDiffs(diffs); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("diffs %+v, want %+v", got, want)
		}
	})
}

// A service without GET /holds (404) gives no HELD check: a hand edit at
// it goes unseen, and nothing fails; the own-ledger check still runs.
// Breaks if a 404 were taken for a failed service (an error) or for held 0.
func TestRemoteReconcileWithoutHolds(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{noHolds: true})
		must(t, func() error { return e.place("o-n", "card-1", 3) })
		e.clock.Advance(time.Minute)
		e.svc.SetHeld("card-1", 9)
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconDone || run.Found != 0 {
			t.Fatalf("run = %+v, %v; want DONE with nothing found", run, err)
		}
		must(t, func() error {
			return e.s.W.Exec("UPDATE order_holds SET released = 1 WHERE order_no = 'o-n' AND resource_type = ?", giftCard).Error
		})
		diffs, err := e.s.Reconcile(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []models.Diff{{Resource: giftCard, Key: "card-1", Check: models.CheckLedgerHeld, Expected: 2, Actual: 3}}
		if got := heldDiffs(diffs); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("diffs %+v, want %+v", got, want)
		}
	})
}

// A service down while reconciliation runs: the run finishes PARTIAL (it
// could not look), and the open HELD ticket of its key stays open (it was
// not compared, so it is not "gone"); once the service answers again and
// agrees, the next run closes it. Breaks if a failed service failed the
// run, or its keys' tickets were auto-closed as if checked.
func TestRemoteReconcileServiceDown(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{timeout: 300 * time.Millisecond})
		must(t, func() error { return e.place("o-d", "card-1", 3) })
		e.clock.Advance(time.Minute)
		e.svc.SetHeld("card-1", 4)
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Opened != 1 {
			t.Fatalf("first run = %+v, %v; want one ticket opened", run, err)
		}
		e.svc.SetHeld("card-1", 3) // fixed, but the service is down
		for _, down := range []remotetest.Faults{{BusyRate: 1}, {DropRate: 1}, {SlowRate: 1, Delay: time.Second}} {
			e.svc.SetFaults(down)
			run, err = e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
			if err != nil || run.Status != models.ReconPartial || run.Closed != 0 {
				t.Fatalf("run with the service down (%+v) = %+v, %v; want PARTIAL closing nothing", down, run, err)
			}
			open := openHeld(t, e)
			if len(open) != 1 || open[0].LastRunID != run.ID || open[0].Actual != 4 {
				t.Fatalf("open HELD tickets %+v, want the one, seen by run %d", open, run.ID)
			}
		}
		e.svc.SetFaults(remotetest.Faults{})
		// Closed: the HELD ticket, and the UNCHECKED one the three runs
		// that could not ask opened.
		run, err = e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Closed != 2 || len(openHeld(t, e)) != 0 {
			t.Fatalf("run with the service back = %+v, %v; want the tickets closed", run, err)
		}
	})
}

// openHeld lists the unresolved HELD tickets.
func openHeld(t *testing.T, e remoteEnv) []models.DiffTicket {
	t.Helper()
	ts, err := e.s.ListDiffs(e.ctx, models.DiffFilter{Statuses: []string{models.DiffOpen, models.DiffAcked}, Resource: giftCard})
	if err != nil {
		t.Fatal(err)
	}
	var out []models.DiffTicket
	for _, tk := range ts {
		if tk.CheckName == models.CheckHeld {
			out = append(out, tk)
		}
	}
	return out
}

// Reconciliation runs over and over (RunReconciliation and Reconcile in
// turn) while orders are closed and paid and two workers release and
// deduct, the service slow or busy now and then: unhold's records agree
// with the service but for calls under way, so a diff found then is a
// phantom — none may be found, no ticket opened. (Calls whose answer was
// lost, and aborted placements, are left to tests of their own.) After the drain, reconciliation is
// clean. Breaks if the HELD check compared a key whose call was under way
// (a release landed between unhold's read and the service's answer).
func TestRemoteReconcileNoPhantomWhileReleasing(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const orders, keys = 60, 4
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { _, err := e.s.SetStock(e.ctx, "sku-1", 200, 0, "test"); return err })
		card := func(i int) string { return fmt.Sprintf("card-r%d", i%keys) }
		for k := range keys {
			e.svc.SetAvailable(card(k), 1000)
		}
		for i := range orders {
			must(t, func() error { return e.place(fmt.Sprintf("o-%02d", i), card(i), int64(1+i%3)) })
		}
		// Past the placements' call window, so their keys are compared.
		e.clock.Advance(time.Minute)
		e.svc.SetFaults(remotetest.Faults{SlowRate: 0.3, Delay: 15 * time.Millisecond, BusyRate: 0.1})

		var stop atomic.Bool
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		report := func(err error) {
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}
		// The shop: close or pay each order.
		shop := make(chan struct{})
		go func() {
			defer close(shop)
			for i := range orders {
				no := fmt.Sprintf("o-%02d", i)
				var err error
				if i%3 == 0 {
					_, err = e.s.PayOrder(e.ctx, no, "txn-"+no)
				} else {
					_, err = e.s.CloseOrder(e.ctx, no, models.TriggerUserCancel, "u1")
				}
				if err != nil {
					report(fmt.Errorf("settle %s: %w", no, err))
					return
				}
			}
		}()
		for w := range 2 {
			wg.Go(func() {
				worker := fmt.Sprintf("w-%d", w)
				for !stop.Load() {
					tasks, err := e.s.ClaimTasks(e.ctx, worker, 4, time.Hour)
					if err != nil {
						report(err)
						return
					}
					if len(tasks) == 0 {
						time.Sleep(2 * time.Millisecond)
						continue
					}
					if w == 0 {
						if _, err := e.s.ReleaseBatch(e.ctx, tasks, worker); err == nil || !errors.Is(err, models.ErrBatchNotCommitted) {
							report(err)
							continue
						}
					}
					for _, tk := range tasks {
						if _, err := e.s.ReleaseTask(e.ctx, tk, worker); err != nil {
							report(err)
						}
					}
				}
			})
		}
		var found []models.Diff
		runs := 0
		recon := make(chan struct{})
		go func() {
			defer close(recon)
			for !stop.Load() {
				runs++
				if runs%2 == 0 {
					diffs, err := e.s.Reconcile(e.ctx)
					report(err)
					found = append(found, diffs...)
					continue
				}
				run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
				if err != nil {
					report(err)
					continue
				}
				if run.Found > 0 {
					found = append(found, models.Diff{Check: fmt.Sprintf("run %d found %d", run.ID, run.Found)})
				}
			}
		}()
		<-shop
		// The shop is done: retries may now be made due by the clock.
		for round := 0; ; round++ {
			var left, due int64
			must(t, func() error {
				return e.s.R.Model(&models.ReleaseTask{}).Where("status IN ('PENDING','RETRY')").Count(&left).Error
			})
			if left == 0 {
				break
			}
			if round == 3000 {
				t.Fatalf("%d tasks still waiting", left)
			}
			must(t, func() error {
				return e.s.R.Model(&models.ReleaseTask{}).
					Where("status IN ('PENDING','RETRY') AND (next_at <= ? OR lease_until IS NOT NULL)", e.clock.Now()).Count(&due).Error
			})
			if due == 0 {
				e.clock.Advance(models.RetryDelay(1))
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		<-recon
		for _, err := range errs {
			t.Error(err)
		}
		if len(found) > 0 {
			t.Fatalf("%d reconciliation runs found diffs while releases ran: %+v", runs, found)
		}
		// Keys busy run after run may get UNCHECKED tickets; no diff.
		tickets, err := e.s.ListDiffs(e.ctx, models.DiffFilter{})
		if err != nil || slices.ContainsFunc(tickets, func(d models.DiffTicket) bool { return d.Kind != models.TicketUnchecked }) {
			t.Fatalf("tickets %+v, %v; want no DIFF ticket ever opened", tickets, err)
		}
		t.Logf("%d reconciliation runs while releasing", runs)
		e.svc.SetFaults(remotetest.Faults{})
		var manual int64
		must(t, func() error {
			return e.s.R.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&manual).Error
		})
		if manual != 0 {
			t.Fatalf("%d tasks not DONE", manual)
		}
		reconcileClean(t, e.bundle)
	})
}

// An order holding two gift cards whose first lock is refused while the
// other lands: the placement is aborted, and the worker gives back the
// card that was locked (a real release) and sends an empty rollback for
// the other; both cards end up as they were. The LOCK rows carry the
// keys the locks were sent with. Breaks if an aborted placement released
// only the holds whose locks were refused, or none of a type.
func TestRemotePlacementOneOfTwoLocksRefused(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		e.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"SHORT"}`})
		_, _, err := e.s.PlaceOrder(e.ctx, models.PlaceRequest{OrderNo: "o-two", UserID: "u1",
			Holds: []models.HoldRequest{{Type: giftCard, Key: "card-1", Qty: 2}, {Type: giftCard, Key: "card-2", Qty: 4}}})
		if !errors.Is(err, models.ErrRemoteRejected) {
			t.Fatalf("place = %v, want REMOTE_REJECTED", err)
		}
		locked := 0
		for _, k := range []string{"card-1", "card-2"} {
			lk := remote.IdempotencyKey("o-two", string(giftCard), k, remote.OpLock, 0)
			if n := e.svc.Calls(lk); n != 1 {
				t.Fatalf("the service saw %s's lock %d times, want 1", k, n)
			}
			if e.svc.Stock(k).Held > 0 {
				locked++
			}
		}
		if locked != 1 {
			t.Fatalf("%d cards locked at the service, want the one whose lock was not refused", locked)
		}
		var locks []flowRow
		must(t, func() error {
			return e.s.R.Raw(`SELECT type, answer, idempotency_key, qty FROM remote_flows WHERE order_no = 'o-two' AND type = 'LOCK'
				ORDER BY biz_key`).Scan(&locks).Error
		})
		if len(locks) != 2 || locks[0].IdempotencyKey != remote.IdempotencyKey("o-two", string(giftCard), "card-1", remote.OpLock, 0) ||
			locks[1].IdempotencyKey != remote.IdempotencyKey("o-two", string(giftCard), "card-2", remote.OpLock, 0) ||
			locks[0].Answer != "SENT" {
			t.Fatalf("LOCK rows %+v", locks)
		}
		if got := e.drain(t, "w-r"); got[models.OutcomeDone] != 2 || len(got) != 1 {
			t.Fatalf("worker = %v, want 2 DONE", got)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
		e.wantStock(t, "card-2", remotetest.Stock{Available: 10})
		reconcileClean(t, e.bundle)
	})
}

// A deduction whose answer is lost after the service did it (the
// FaultAfterCall point failing) is retried under the same key and found
// done: one DEDUCT row, the hold deducted, the card spent once. Breaks if
// a DUPLICATE from the service left a DEDUCT task's hold undeducted.
func TestRemoteDeductFaultAfterCall(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var fired atomic.Int32
		faults := func(point string, tk *models.ReleaseTask) error {
			if point == models.FaultAfterCall && tk.Op == models.FlowDeduct && fired.Add(1) == 1 {
				return errors.New("injected: died after the deduct")
			}
			return nil
		}
		e := newRemoteEnv(t, d, remoteOpts{faults: faults})
		must(t, func() error { return e.place("o-dd", "card-1", 3) })
		if _, err := e.s.PayOrder(e.ctx, "o-dd", "txn-dd"); err != nil {
			t.Fatal(err)
		}
		if res := e.tryCard(t, "batch"); res.Outcome != models.OutcomeRetry {
			t.Fatalf("deduct = %+v, want RETRY", res)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 7, Spent: 3})
		e.clock.Advance(models.RetryDelay(1))
		if res := e.tryCard(t, "single"); res.Outcome != models.OutcomeDuplicate {
			t.Fatalf("retry = %+v, want DUPLICATE", res)
		}
		dk := remote.IdempotencyKey("o-dd", string(giftCard), "card-1", remote.OpDeduct, 0)
		if n := e.svc.Calls(dk); n != 2 {
			t.Fatalf("the service saw the deduct's key %d times, want 2", n)
		}
		rows := e.flows(t, "o-dd", models.FlowDeduct)
		if len(rows) != 1 || rows[0].Answer != "409 ALREADY_DONE" || rows[0].IdempotencyKey != dk {
			t.Fatalf("DEDUCT rows %+v", rows)
		}
		if h := e.hold(t, "o-dd"); h.Deducted != 3 || h.Released != 0 {
			t.Fatalf("hold %+v, want 3 deducted", h)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 7, Spent: 3})
		e.clock.Advance(time.Minute)
		reconcileClean(t, e.bundle)
	})
}

// A worker whose call outlasts its lease loses the task to another, which
// calls again under the same key: whichever call the service did first,
// the first worker can no longer record (LEASE_LOST), its try counts as
// CRASHED, and one RELEASE row is written. Breaks if the lease's fence
// let a worker record a call after its lease was taken over.
func TestRemoteLeaseLostDuringCall(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		e.placeClosed(t, "o-ll", "card-1", 2)
		var tasks []models.ReleaseTask
		for _, tk := range claimAll(t, e.bundle, "w-slow") {
			if tk.ResourceType == giftCard {
				tasks = append(tasks, tk)
			}
		}
		if len(tasks) != 1 {
			t.Fatalf("claimed %d gift card tasks, want 1", len(tasks))
		}
		e.svc.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 400 * time.Millisecond})
		type result struct {
			res models.ReleaseResult
			err error
		}
		slow := make(chan result, 1)
		go func() {
			res, err := e.s.ReleaseTask(e.ctx, tasks[0], "w-slow")
			slow <- result{res, err}
		}()
		// Wait for the slow call to reach the service, then let the lease
		// run out and another worker take the task.
		rk := relKey("o-ll", "card-1")
		for e.svc.Calls(rk) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		e.svc.SetFaults(remotetest.Faults{})
		e.clock.Advance(2 * time.Minute)
		got := e.drain(t, "w-fast")
		first := <-slow
		if first.err != nil || first.res.Outcome != models.OutcomeLeaseLost {
			t.Fatalf("the slow worker's try = %+v, %v; want LEASE_LOST", first.res, first.err)
		}
		if got[models.OutcomeDone]+got[models.OutcomeDuplicate] != 2 {
			t.Fatalf("the other worker did %v, want the sku and the card released", got)
		}
		if n := e.svc.Calls(rk); n != 2 {
			t.Fatalf("the service saw the release's key %d times, want 2", n)
		}
		rows := e.flows(t, "o-ll", models.FlowRelease)
		if len(rows) != 1 {
			t.Fatalf("RELEASE rows %+v, want 1", rows)
		}
		as := e.attempts(t, e.cardTask(t, "o-ll").ID)
		if len(as) != 2 || as[0].ErrorClass != models.ClassCrashed || as[0].Worker != "w-slow" || as[1].Worker != "w-fast" {
			t.Fatalf("attempts %+v, want the slow worker's CRASHED try, then the other's", as)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
		reconcileClean(t, e.bundle)
	})
}

// A batch that answered its calls but did not commit (its context ran out
// inside the transaction) leaves every task leased, each keeping its
// service's answer: released alone, as the worker then does, the remote
// task is recorded without a second call. Breaks if the answer were lost
// with the transaction (a second call: Calls 2 and a DUPLICATE).
func TestRemoteBatchNotCommittedKeepsAnswers(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var stall atomic.Bool
		faults := func(point string, tk *models.ReleaseTask) error {
			if point == models.FaultAfterLedger && tk.ResourceType == models.ResInventory && stall.CompareAndSwap(true, false) {
				time.Sleep(1500 * time.Millisecond)
			}
			return nil
		}
		e := newRemoteEnv(t, d, remoteOpts{faults: faults})
		e.placeClosed(t, "o-nc", "card-1", 2)
		tasks := claimAll(t, e.bundle, "w-r")
		if len(tasks) != 2 {
			t.Fatalf("claimed %d tasks, want 2", len(tasks))
		}
		stall.Store(true)
		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		defer cancel()
		if _, err := e.s.ReleaseBatch(ctx, tasks, "w-r"); !errors.Is(err, models.ErrBatchNotCommitted) {
			t.Fatalf("batch = %v, want ErrBatchNotCommitted", err)
		}
		if n := e.svc.Calls(relKey("o-nc", "card-1")); n != 1 {
			t.Fatalf("the service saw the release %d times, want 1", n)
		}
		for _, tk := range tasks {
			res, err := e.s.ReleaseTask(e.ctx, tk, "w-r")
			if err != nil || res.Outcome != models.OutcomeDone {
				t.Fatalf("task %d alone = %+v, %v; want DONE", tk.ID, res, err)
			}
		}
		if n := e.svc.Calls(relKey("o-nc", "card-1")); n != 1 {
			t.Fatalf("the service saw the release %d times, want 1", n)
		}
		e.wantOneRelease(t, "o-nc", 2, "200")
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
		reconcileClean(t, e.bundle)
	})
}

// In one batch of two orders' releases, the first gift card's call fails
// after the service answered (FaultAfterCall): that task alone is a
// failed try, the other card and both SKUs are released in the same
// batch, each result in its task's place. Breaks if a failed call's
// result were put on another task, or failed its batch.
func TestRemoteBatchWithOneFailedCall(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var fired atomic.Int32
		faults := func(point string, tk *models.ReleaseTask) error {
			if point == models.FaultAfterCall && tk.OrderNo == "o-f1" && fired.Add(1) == 1 {
				return errors.New("injected: lost the answer")
			}
			return nil
		}
		e := newRemoteEnv(t, d, remoteOpts{faults: faults})
		e.placeClosed(t, "o-f1", "card-1", 1)
		e.placeClosed(t, "o-f2", "card-2", 2)
		tasks := claimAll(t, e.bundle, "w-r")
		res, err := e.s.ReleaseBatch(e.ctx, tasks, "w-r")
		if err != nil || len(res) != len(tasks) {
			t.Fatalf("batch = %+v, %v", res, err)
		}
		for i, tk := range tasks {
			want := models.OutcomeDone
			if tk.OrderNo == "o-f1" && tk.ResourceType == giftCard {
				want = models.OutcomeRetry
			}
			if res[i].Outcome != want {
				t.Fatalf("task %d (%s %s) = %+v, want %s", tk.ID, tk.OrderNo, tk.ResourceType, res[i], want)
			}
		}
		e.wantOneRelease(t, "o-f2", 2, "200")
		if rows := e.flows(t, "o-f1", models.FlowRelease); len(rows) != 0 {
			t.Fatalf("the failed call wrote %+v", rows)
		}
		e.clock.Advance(models.RetryDelay(1))
		if got := e.drain(t, "w-r"); got[models.OutcomeDuplicate] != 1 || len(got) != 1 {
			t.Fatalf("retry = %v, want one DUPLICATE", got)
		}
		e.wantStock(t, "card-1", remotetest.Stock{Available: 10})
		e.wantStock(t, "card-2", remotetest.Stock{Available: 10})
		reconcileClean(t, e.bundle)
	})
}

// A key of the longest kind placement accepts, with every punctuation
// mark it allows (64 characters of letters, digits and -_.:), goes
// through lock, GET /holds/{key} and release and comes back as itself:
// reconciliation compares it, and finds a hand edit of it. Breaks if the
// client and the service disagreed on the key's path (the holds answer
// would name another key, and the service's check fail every run).
func TestRemoteOddKey(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		key := "GC:01.x_y-Z" + strings.Repeat("9", 53)
		e.svc.SetAvailable(key, 5)
		must(t, func() error { return e.place("o-odd", key, 2) })
		e.clock.Advance(time.Minute)
		reconcileClean(t, e.bundle)
		e.svc.SetHeld(key, 1)
		diffs, err := e.s.Reconcile(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []models.Diff{{Resource: giftCard, Key: key, Check: models.CheckHeld, Expected: 2, Actual: 1}}
		if fmt.Sprint(diffs) != fmt.Sprint(want) {
			t.Fatalf("diffs %+v, want %+v", diffs, want)
		}
		e.svc.SetHeld(key, 2)
		if _, err := e.s.CloseOrder(e.ctx, "o-odd", models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		if got := e.drain(t, "w-r"); got[models.OutcomeDone] != 2 {
			t.Fatalf("worker = %v, want 2 DONE", got)
		}
		e.wantStock(t, key, remotetest.Stock{Available: 5})
		reconcileClean(t, e.bundle)
	})
}

// A placement whose lock was refused is closed, and its release task due
// at once; until the worker has run, the service holds nothing of it and
// unhold's expectation still counts the task. Asked then, reconciliation
// must not report the key: the release that will make them agree is the
// empty rollback of a lock that never landed. Breaks if the HELD check
// compared a key whose aborted placement's release is still to be sent.
func TestRemoteReconcileAfterAbortedPlacement(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-held", "card-1", 2) })
		e.svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"SHORT"}`})
		if err := e.place("o-ref", "card-1", 3); !errors.Is(err, models.ErrRemoteRejected) {
			t.Fatalf("place = %v, want REMOTE_REJECTED", err)
		}
		// Past the placements' call window: nothing is on its way.
		e.clock.Advance(time.Minute)
		diffs, err := e.s.Reconcile(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(diffs) != 0 {
			t.Fatalf("before the aborted placement's release ran, reconciliation found %+v", diffs)
		}
		e.drain(t, "w-r")
		reconcileClean(t, e.bundle)
	})
}

// A release the service applied but whose answer was lost (the connection
// dropped after the apply, or the answer came after the timeout) leaves
// its task waiting for a retry that will find it done; until then the
// service holds nothing of it, and unhold's expectation still counts the
// task. Asked then, reconciliation must not report the key: nothing is
// wrong, the retry's DUPLICATE makes them agree. Breaks if the HELD check
// compared a key whose last call's outcome unhold does not know.
func TestRemoteReconcileAfterUnansweredRelease(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		for name, lost := range map[string]remotetest.Faults{
			"dropped after the apply":    {DropRate: 1, DropAfterApply: true},
			"answered after the timeout": {SlowRate: 1, Delay: 1500 * time.Millisecond},
		} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				e := newRemoteEnv(t, d, remoteOpts{timeout: 500 * time.Millisecond})
				e.placeClosed(t, "o-lost", "card-1", 3)
				e.svc.SetFaults(lost)
				if res := e.tryCard(t, "single"); res.Outcome != models.OutcomeRetry {
					t.Fatalf("release = %+v, want RETRY", res)
				}
				e.svc.SetFaults(remotetest.Faults{})
				e.waitStock(t, "card-1", remotetest.Stock{Available: 10})
				e.clock.Advance(time.Minute)
				diffs, err := e.s.Reconcile(e.ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(diffs) != 0 {
					t.Fatalf("while the release waits for its retry, reconciliation found %+v", diffs)
				}
				if res := e.tryCard(t, "single"); res.Outcome != models.OutcomeDuplicate {
					t.Fatalf("retry = %+v, want DUPLICATE", res)
				}
				reconcileClean(t, e.bundle)
			})
		}
	})
}

// A batch whose first card's call failed (recorded at once: a retry, its
// lease ended) and whose transaction then did not commit leaves the
// worker to try each task alone, as jobs.Worker does. The failed task is
// no longer this worker's: trying it must not call the service again
// before finding its lease gone. Breaks if ReleaseTask calls the service
// for a task whose lease has ended (a call on behalf of no one, which
// another worker holding the task may be making at the same time).
func TestRemoteNoCallAfterLeaseEnded(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var stall, fail atomic.Bool
		faults := func(point string, tk *models.ReleaseTask) error {
			switch {
			case point == models.FaultAfterCall && tk.OrderNo == "o-l1" && fail.CompareAndSwap(true, false):
				return errors.New("injected: lost the answer")
			case point == models.FaultAfterLedger && tk.ResourceType == models.ResInventory && stall.CompareAndSwap(true, false):
				time.Sleep(1500 * time.Millisecond)
			}
			return nil
		}
		e := newRemoteEnv(t, d, remoteOpts{faults: faults})
		e.placeClosed(t, "o-l1", "card-1", 1)
		e.placeClosed(t, "o-l2", "card-2", 2)
		tasks := claimAll(t, e.bundle, "w-r")
		stall.Store(true)
		fail.Store(true)
		ctx, cancel := context.WithTimeout(e.ctx, time.Second)
		defer cancel()
		if _, err := e.s.ReleaseBatch(ctx, tasks, "w-r"); !errors.Is(err, models.ErrBatchNotCommitted) {
			t.Fatalf("batch = %v, want ErrBatchNotCommitted", err)
		}
		if task := e.cardTask(t, "o-l1"); task.Status != models.TaskRetry || task.LeaseUntil != nil {
			t.Fatalf("the failed call's task = %+v, want RETRY without a lease", task)
		}
		for _, tk := range tasks {
			res, err := e.s.ReleaseTask(e.ctx, tk, "w-r")
			if err != nil {
				t.Fatal(err)
			}
			if tk.OrderNo == "o-l1" && tk.ResourceType == giftCard && res.Outcome != models.OutcomeLeaseLost {
				t.Fatalf("the failed task alone = %+v, want LEASE_LOST", res)
			}
		}
		for no, want := range map[string]int{"o-l1": 1, "o-l2": 1} {
			if n := e.svc.Calls(relKey(no, e.hold(t, no).BizKey)); n != want {
				t.Fatalf("the service saw %s's release %d times, want %d", no, n, want)
			}
		}
	})
}

// A HELD ticket is open; on the next run the service answers GET /holds
// with a 404 (a deploy under way, a proxy that lost the route). The key
// was not compared, so its ticket must stay open, as it does when the
// service is down; it is not "gone". Breaks if a 404 on /holds closes the
// open HELD tickets of the type as if their diffs had gone.
func TestRemoteReconcileHolds404KeepsTickets(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-4", "card-1", 3) })
		e.clock.Advance(time.Minute)
		e.svc.SetHeld("card-1", 1)
		if run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test"); err != nil || run.Opened != 1 {
			t.Fatalf("first run = %+v, %v; want one ticket opened", run, err)
		}
		e.svc.Next(1, remotetest.Answer{Status: http.StatusNotFound, Body: `{"code":"NOT_FOUND"}`})
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconDone {
			t.Fatalf("run with /holds answering 404 = %+v, %v", run, err)
		}
		if open := openHeld(t, e); len(open) != 1 || run.Closed != 0 {
			t.Fatalf("after a run that could not ask the service, open HELD tickets %+v (run closed %d), want the one still open",
				open, run.Closed)
		}
	})
}

// Gift cards are many, and each card a key: a shop's remote ledger grows
// a key per card ever used. Reconciliation asks about every key in it, and
// must still run once those are more than one SQL statement can bind
// (SQLite binds at most 32,766 parameters, PostgreSQL 65,535). Breaks if
// all of a type's keys go into one IN list: the run fails on every
// reconciliation from then on.
func TestRemoteReconcileManyKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("tens of thousands of ledger rows: a minute under -race on SQLite")
	}
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		keys, series := 17_000, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?) SELECT n FROM g`
		if d == models.Postgres {
			keys, series = 33_000, `SELECT generate_series(1, ?::int) AS n`
		}
		// Each key locked and released by an order of its own: held 0
		// by the ledger, by the orders and at the service.
		must(t, func() error {
			return e.s.W.Exec(`INSERT INTO remote_flows (order_no, resource_type, biz_key, type, epoch, trigger_type, qty,
				idempotency_key, answer, actor, created_at)
				SELECT 'o-' || g.n, ?, 'card-m' || g.n, t.type, 0, 'PLACE', 1, 'uh1-test', '200', 'test', ?
				FROM (`+series+`) g CROSS JOIN (SELECT 'LOCK' AS type UNION ALL SELECT 'RELEASE') t`,
				giftCard, e.clock.Now(), keys).Error
		})
		diffs, err := e.s.Reconcile(e.ctx)
		if err != nil {
			t.Fatalf("reconcile over %d keys: %v", keys, err)
		}
		if len(diffs) != 0 {
			t.Fatalf("reconcile over %d keys found %d diffs, first %+v", keys, len(diffs), diffs[0])
		}
	})
}
