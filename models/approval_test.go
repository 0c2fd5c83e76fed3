package models_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// eachEngineWith is eachEngine with the store's options.
func eachEngineWith(t *testing.T, opt models.Options, fn func(t *testing.T, b bundle)) {
	t.Helper()
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, d, opt))
		})
	}
}

// Who decides in these tests.
var (
	alice = models.Decider{Name: "alice"}
	bob   = models.Decider{Name: "bob"}
	carol = models.Decider{Name: "carol"}
	root  = models.Decider{Name: "root", Admin: true}
	boss  = models.Decider{Name: "boss", Admin: true}
)

// balanceTask closes order no, which froze amount of u1's balance (and
// held one sku-1), and puts its balance task in status st by hand, as a
// failed release would; the stock task is released. It returns the
// balance task.
func (b bundle) balanceTask(t *testing.T, no string, amount int64, st models.TaskStatus) models.ReleaseTask {
	t.Helper()
	must(t, func() error { _, err := b.s.SetStock(b.ctx, "sku-1", 100, 0, "test"); return err })
	must(t, func() error { _, err := b.s.Credit(b.ctx, "u1", models.AssetBalance, amount, "test"); return err })
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
		Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: amount}}}
	if _, _, err := b.s.PlaceOrder(b.ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.CloseOrder(b.ctx, no, models.TriggerTimeout, "system"); err != nil {
		t.Fatal(err)
	}
	must(t, func() error {
		return b.s.W.Exec(`UPDATE release_tasks SET status = ?, error_class = 'NOT_FOUND', failures = 1, last_error = 'gone',
			next_at = ? WHERE order_no = ? AND resource_type = 'balance'`, st, b.clock.Now().Add(time.Hour), no).Error
	})
	b.drain(t, "w1")
	return b.balanceOf(t, no)
}

// balanceOf reads order no's balance task.
func (b bundle) balanceOf(t *testing.T, no string) models.ReleaseTask {
	t.Helper()
	var tk models.ReleaseTask
	must(t, func() error {
		return b.s.R.Where("order_no = ? AND resource_type = 'balance'", no).Take(&tk).Error
	})
	return tk
}

// balanceReleases counts the RELEASE rows of order no's balance.
func (b bundle) balanceReleases(t *testing.T, no string) int64 {
	t.Helper()
	var n int64
	must(t, func() error {
		return b.s.R.Raw(`SELECT COUNT(*) FROM account_flows WHERE order_no = ? AND asset = 'BALANCE' AND type = 'RELEASE'`, no).
			Scan(&n).Error
	})
	return n
}

// request opens a request and fails the test if it cannot.
func (b bundle) request(t *testing.T, id int64, action models.ApprovalAction, by models.Decider) *models.ApprovalRequest {
	t.Helper()
	r, err := b.s.RequestApproval(b.ctx, id, action, by, "customer asked, ticket 7")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A rerun approved by another operator makes the task due in the
// approval's transaction; the worker then releases it once. Audited on
// the task and the request at each step.
func TestApprovalRerunUntilDone(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		r := b.request(t, tk.ID, models.ApprovalRerun, alice)
		if r.Status != models.ApprovalPending || r.Amount != 300 || r.TaskStatus != models.TaskManual || r.TaskFailures != 1 ||
			!r.ExpiresAt.Equal(b.clock.Now().Add(models.ApprovalTTL)) {
			t.Fatalf("request = %+v", r)
		}
		if _, err := b.s.RequestApproval(b.ctx, tk.ID, models.ApprovalRerun, carol, "again"); !errors.Is(err, models.ErrRequestOpen) {
			t.Fatalf("a second open request: %v, want ErrRequestOpen", err)
		}
		if n, err := b.s.PendingApprovals(b.ctx); err != nil || n != 1 {
			t.Fatalf("pending = %d, %v", n, err)
		}
		got, err := b.s.ApproveRequest(b.ctx, r.ID, bob, "checked the ledger")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.ApprovalApproved || got.DecidedBy != "bob" || got.DecisionReason != "checked the ledger" {
			t.Fatalf("approved = %+v", got)
		}
		now := b.balanceOf(t, "o-1")
		if now.Status != models.TaskPending || now.Trigger != models.TriggerRerun || now.RerunBy != "alice" {
			t.Fatalf("task after approval: %+v", now)
		}
		b.drain(t, "w1")
		if st := b.balanceOf(t, "o-1").Status; st != models.TaskDone {
			t.Fatalf("task after the worker: %s", st)
		}
		if n := b.balanceReleases(t, "o-1"); n != 1 {
			t.Fatalf("%d RELEASE rows, want 1", n)
		}
		var actions []string
		for _, e := range b.auditOf(t, models.TaskTarget(tk.ID)) {
			actions = append(actions, e.Actor+" "+e.Action+" "+e.Outcome)
		}
		want := []string{"alice request_rerun ok", "bob approve_request ok", "bob rerun ok"}
		if !reflect.DeepEqual(actions, want) {
			t.Fatalf("task audit = %q", actions)
		}
		hist, err := b.s.ApprovalHistory(b.ctx, r.ID)
		if err != nil || len(hist) != 2 || hist[0].Action != "request_rerun" || hist[1].Action != "approve_request" {
			t.Fatalf("request history = %+v, %v", hist, err)
		}
		if n, err := b.s.PendingApprovals(b.ctx); err != nil || n != 0 {
			t.Fatalf("pending after = %d, %v", n, err)
		}
	})
}

// The requester can neither approve nor reject their own request: refused
// with OWN_REQUEST, audited on the request, and nothing else changes.
func TestApprovalOwnRequestRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		r := b.request(t, tk.ID, models.ApprovalRerun, alice)
		before := b.allTasks(t)
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, alice, "looks fine to me"); !errors.Is(err, models.ErrOwnRequest) {
			t.Fatalf("own approval: %v, want ErrOwnRequest", err)
		}
		if _, err := b.s.RejectRequest(b.ctx, r.ID, alice, "changed my mind"); !errors.Is(err, models.ErrOwnRequest) {
			t.Fatalf("own rejection: %v, want ErrOwnRequest", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused approval changed tasks")
		}
		got, err := b.s.ApprovalByID(b.ctx, r.ID)
		if err != nil || got.Status != models.ApprovalPending || got.DecidedBy != "" {
			t.Fatalf("request after refusals = %+v, %v", got, err)
		}
		hist, err := b.s.ApprovalHistory(b.ctx, r.ID)
		if err != nil || len(hist) != 3 || hist[1].Outcome != "refused" || hist[2].Outcome != "refused" || hist[1].Detail != "own request" {
			t.Fatalf("request history = %+v, %v", hist, err)
		}
		if n := b.balanceReleases(t, "o-1"); n != 0 {
			t.Fatalf("%d RELEASE rows, want 0", n)
		}
	})
}

// An approval after the worker released the task (it was RETRY, and its
// retry came due) is refused with TASK_CHANGED saying what changed; the
// request is closed STALE and nothing is released twice.
func TestApprovalAfterTaskDone(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskRetry)
		r := b.request(t, tk.ID, models.ApprovalRerun, alice)
		// balanceTask drained before the request; the retry is due now.
		must(t, func() error {
			return b.s.W.Exec(`UPDATE release_tasks SET next_at = ? WHERE id = ?`, b.clock.Now(), tk.ID).Error
		})
		b.drain(t, "w2")
		if st := b.balanceOf(t, "o-1").Status; st != models.TaskDone {
			t.Fatalf("task after the worker: %s", st)
		}
		before := b.allTasks(t)
		got, err := b.s.ApproveRequest(b.ctx, r.ID, bob, "ok")
		if !errors.Is(err, models.ErrTaskChanged) {
			t.Fatalf("approval of a DONE task: %v, want ErrTaskChanged", err)
		}
		want := fmt.Sprintf("task %d is DONE since", tk.ID)
		if msg := err.Error(); !strings.Contains(msg, want) || !strings.Contains(msg, "nothing to approve") {
			t.Fatalf("message %q does not say %q", msg, want)
		}
		if got == nil || got.Status != models.ApprovalStale {
			t.Fatalf("request = %+v, want STALE", got)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused approval changed tasks")
		}
		b.drain(t, "w1")
		if n := b.balanceReleases(t, "o-1"); n != 1 {
			t.Fatalf("%d RELEASE rows, want 1", n)
		}
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, carol, "ok"); !errors.Is(err, models.ErrRequestClosed) {
			t.Fatalf("approval of a closed request: %v, want ErrRequestClosed", err)
		}
	})
}

// A request whose task the worker tried again meanwhile (still MANUAL, one
// more failure) is refused too: the requester saw another task.
func TestApprovalAfterAnotherTry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		r := b.request(t, tk.ID, models.ApprovalRerun, alice)
		must(t, func() error {
			return b.s.W.Exec(`UPDATE release_tasks SET attempts = attempts + 1, failures = failures + 1 WHERE id = ?`, tk.ID).Error
		})
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, bob, "ok"); !errors.Is(err, models.ErrTaskChanged) ||
			!strings.Contains(err.Error(), "tried again since the request") {
			t.Fatalf("approval after another try: %v, want ErrTaskChanged", err)
		}
		if st := b.balanceOf(t, "o-1").Status; st != models.TaskManual {
			t.Fatalf("task is %s, want MANUAL", st)
		}
	})
}

// Two operators approve one request at once, many times: one wins, the
// other is told it was decided; the task is made due once and released
// once.
func TestApprovalRace(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		for i := range 5 {
			no := fmt.Sprintf("o-%d", i)
			tk := b.balanceTask(t, no, 100, models.TaskManual)
			r := b.request(t, tk.ID, models.ApprovalRerun, alice)
			start := make(chan struct{})
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for j, by := range []models.Decider{bob, carol} {
				wg.Go(func() {
					<-start
					_, errs[j] = b.s.ApproveRequest(b.ctx, r.ID, by, "ok")
				})
			}
			close(start)
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, models.ErrRequestClosed):
					t.Fatalf("the losing approval: %v, want ErrRequestClosed", err)
				}
			}
			if won != 1 {
				t.Fatalf("%d approvals won, want 1: %v", won, errs)
			}
			reruns := 0
			for _, e := range b.auditOf(t, models.TaskTarget(tk.ID)) {
				if e.Action == "rerun" && e.Outcome == "ok" {
					reruns++
				}
			}
			if reruns != 1 {
				t.Fatalf("%d reruns audited, want 1", reruns)
			}
			b.drain(t, "w1")
			if n := b.balanceReleases(t, no); n != 1 {
				t.Fatalf("%d RELEASE rows, want 1", n)
			}
		}
	})
}

// Every direct path refuses a task that needs approval, and changes
// nothing: RerunTask, Rerun (order and type), RerunTasks (which leaves it
// out and says so), AbandonTask.
func TestApprovalDirectPathsRefused(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		before := b.allTasks(t)
		if err := b.s.RerunTask(b.ctx, tk.ID, "ops", "x"); !errors.Is(err, models.ErrNeedsApproval) {
			t.Fatalf("RerunTask: %v", err)
		}
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResBalance, "ops", "x"); !errors.Is(err, models.ErrNeedsApproval) {
			t.Fatalf("Rerun: %v", err)
		}
		f := models.TaskFilter{Type: models.ResBalance, Statuses: []models.TaskStatus{models.TaskManual}}
		r, err := b.s.RerunTasks(b.ctx, f, []int64{tk.ID}, "ops", "x")
		if !errors.Is(err, models.ErrNeedsApproval) || !reflect.DeepEqual(r.NeedApproval, []int64{tk.ID}) {
			t.Fatalf("RerunTasks: %+v, %v", r, err)
		}
		if err := b.s.AbandonTask(b.ctx, tk.ID, "root", "x"); !errors.Is(err, models.ErrNeedsApproval) {
			t.Fatalf("AbandonTask: %v", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("a refused direct path changed tasks")
		}
		refused := 0
		for _, e := range b.auditOf(t, models.TaskTarget(tk.ID)) {
			if e.Outcome == "refused" {
				refused++
			}
		}
		if refused != 2 { // RerunTask and AbandonTask; the others audit their own targets
			t.Fatalf("%d refusals audited on the task, want 2", refused)
		}
		// A stock task needs none.
		must(t, func() error {
			return b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL' WHERE order_no = 'o-1' AND resource_type = 'inventory'`).Error
		})
		if _, err := b.s.Rerun(b.ctx, "o-1", models.ResInventory, "ops", "x"); err != nil {
			t.Fatalf("stock rerun: %v", err)
		}
		var stock models.ReleaseTask
		must(t, func() error {
			return b.s.R.Where("order_no = 'o-1' AND resource_type = 'inventory'").Take(&stock).Error
		})
		if _, err := b.s.RequestApproval(b.ctx, stock.ID, models.ApprovalRerun, alice, "x"); !errors.Is(err, models.ErrNoApproval) {
			t.Fatalf("request for a task needing none: %v", err)
		}
	})
}

// Below the threshold a balance task acts as before; at it, it needs
// approval. A bulk rerun makes the small one due and leaves the big one.
func TestApprovalThreshold(t *testing.T) {
	eachEngineWith(t, models.Options{ApprovalThreshold: 250}, func(t *testing.T, b bundle) {
		small := b.balanceTask(t, "o-s", 249, models.TaskManual)
		big := b.balanceTask(t, "o-b", 250, models.TaskManual)
		if b.s.NeedsApproval(small) || !b.s.NeedsApproval(big) {
			t.Fatal("the threshold is not the smallest amount that needs approval")
		}
		f := models.TaskFilter{Type: models.ResBalance, Statuses: []models.TaskStatus{models.TaskManual}}
		r, err := b.s.RerunTasks(b.ctx, f, []int64{small.ID, big.ID}, "ops", "x")
		if err != nil || !reflect.DeepEqual(r.Made, []int64{small.ID}) || !reflect.DeepEqual(r.NeedApproval, []int64{big.ID}) {
			t.Fatalf("bulk = %+v, %v", r, err)
		}
		if st := b.balanceOf(t, "o-b").Status; st != models.TaskManual {
			t.Fatalf("big task is %s, want MANUAL", st)
		}
		if _, err := b.s.RequestApproval(b.ctx, small.ID, models.ApprovalRerun, alice, "x"); !errors.Is(err, models.ErrNoApproval) {
			t.Fatalf("request below the threshold: %v, want ErrNoApproval", err)
		}
		if err := b.s.AbandonTask(b.ctx, small.ID, "root", "settled by hand"); !errors.Is(err, models.ErrTaskNotAbandonable) {
			t.Fatalf("abandon of the made-due task: %v", err) // it is PENDING now
		}
	})
}

// A request can be approved until 24 h after it was made, not at 24 h:
// then it reads EXPIRED, an approval closes it so and acts on nothing,
// and a new request can be made.
func TestApprovalExpiry(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		r := b.request(t, tk.ID, models.ApprovalRerun, alice)
		b.clock.Advance(models.ApprovalTTL - time.Microsecond)
		if got, err := b.s.ApprovalByID(b.ctx, r.ID); err != nil || got.Status != models.ApprovalPending {
			t.Fatalf("just before the edge: %+v, %v", got, err)
		}
		b.clock.Advance(time.Microsecond)
		if got, err := b.s.ApprovalByID(b.ctx, r.ID); err != nil || got.Status != models.ApprovalExpired {
			t.Fatalf("at the edge: %+v, %v", got, err)
		}
		list, err := b.s.ListApprovals(b.ctx, models.ApprovalFilter{Status: models.ApprovalExpired})
		if err != nil || len(list) != 1 || list[0].ID != r.ID {
			t.Fatalf("expired list = %+v, %v", list, err)
		}
		if list, _ := b.s.ListApprovals(b.ctx, models.ApprovalFilter{Status: models.ApprovalPending}); len(list) != 0 {
			t.Fatalf("pending list = %+v", list)
		}
		before := b.allTasks(t)
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, bob, "ok"); !errors.Is(err, models.ErrRequestExpired) {
			t.Fatalf("approval at the edge: %v, want ErrRequestExpired", err)
		}
		if !reflect.DeepEqual(b.allTasks(t), before) {
			t.Fatal("an expired approval changed tasks")
		}
		again := b.request(t, tk.ID, models.ApprovalRerun, alice)
		if again.ID == r.ID {
			t.Fatal("the new request is the expired one")
		}
		if _, err := b.s.ApproveRequest(b.ctx, again.ID, bob, "ok"); err != nil {
			t.Fatal(err)
		}
	})
}

// An abandon is requested and approved by admins only, as it is done
// directly; the approval ends the task ABANDONED and releases nothing. A
// rejection closes a request and does nothing to the task.
func TestApprovalAbandonNeedsAdmins(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		if _, err := b.s.RequestApproval(b.ctx, tk.ID, models.ApprovalAbandon, alice, "x"); !errors.Is(err, models.ErrApproverRole) {
			t.Fatalf("an operator's abandon request: %v, want ErrApproverRole", err)
		}
		r := b.request(t, tk.ID, models.ApprovalAbandon, root)
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, bob, "ok"); !errors.Is(err, models.ErrApproverRole) {
			t.Fatalf("an operator's approval of an abandon: %v, want ErrApproverRole", err)
		}
		rr := b.request(t, tk.ID, models.ApprovalRerun, alice)
		if got, err := b.s.RejectRequest(b.ctx, rr.ID, bob, "not this one"); err != nil || got.Status != models.ApprovalRejected {
			t.Fatalf("rejection: %+v, %v", got, err)
		}
		if _, err := b.s.RejectRequest(b.ctx, rr.ID, carol, "no"); !errors.Is(err, models.ErrRequestClosed) {
			t.Fatalf("second rejection: %v, want ErrRequestClosed", err)
		}
		if _, err := b.s.ApproveRequest(b.ctx, r.ID, boss, "settled by hand"); err != nil {
			t.Fatal(err)
		}
		if st := b.balanceOf(t, "o-1").Status; st != models.TaskAbandoned {
			t.Fatalf("task is %s, want ABANDONED", st)
		}
		if n := b.balanceReleases(t, "o-1"); n != 0 {
			t.Fatalf("%d RELEASE rows, want 0", n)
		}
	})
}

// Bad input is refused with a code and changes nothing.
func TestApprovalBadInput(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		for name, err := range map[string]error{
			"no reason": func() error {
				_, err := b.s.RequestApproval(b.ctx, tk.ID, models.ApprovalRerun, alice, " ")
				return err
			}(),
			"bad action":     func() error { _, err := b.s.RequestApproval(b.ctx, tk.ID, "delete", alice, "x"); return err }(),
			"bad task id":    func() error { _, err := b.s.RequestApproval(b.ctx, 0, models.ApprovalRerun, alice, "x"); return err }(),
			"bad request id": func() error { _, err := b.s.ApproveRequest(b.ctx, -1, bob, "x"); return err }(),
		} {
			if !errors.Is(err, models.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if _, err := b.s.ApproveRequest(b.ctx, 999, bob, "x"); !errors.Is(err, models.ErrNotFound) {
			t.Errorf("missing request: %v, want ErrNotFound", err)
		}
		if list, err := b.s.ListApprovals(b.ctx, models.ApprovalFilter{}); err != nil || len(list) != 0 {
			t.Fatalf("requests = %+v, %v", list, err)
		}
	})
}

// Migration 00033 keeps one PENDING request per task and action, and goes
// down and up again.
func TestMigration33ApprovalRequests(t *testing.T) {
	eachEngine(t, func(t *testing.T, b bundle) {
		tk := b.balanceTask(t, "o-1", 300, models.TaskManual)
		insert := func(status string) error {
			return b.s.W.Exec(`INSERT INTO approval_requests (task_id, order_no, resource_type, biz_key, action, amount, reason,
				requested_by, requested_at, expires_at, status, task_status, task_attempts, task_failures, task_updated_at)
				VALUES (?, 'o-1', 'balance', 'u1', 'rerun', 300, 'x', 'alice', ?, ?, ?, 'MANUAL', 1, 1, ?)`,
				tk.ID, b.clock.Now(), b.clock.Now(), status, b.clock.Now()).Error
		}
		must(t, func() error { return insert("PENDING") })
		must(t, func() error { return insert("REJECTED") })
		if err := insert("PENDING"); err == nil {
			t.Fatal("a second PENDING request for one task and action was accepted")
		}
		if err := insert("MAYBE"); err == nil {
			t.Fatal("a request of status MAYBE was accepted")
		}
		if err := downTo(t, b, 31); err != nil {
			t.Fatalf("down: %v", err)
		}
		if _, err := b.s.Migrate(b.ctx); err != nil {
			t.Fatalf("up again: %v", err)
		}
		if list, err := b.s.ListApprovals(b.ctx, models.ApprovalFilter{}); err != nil || len(list) != 0 {
			t.Fatalf("after down and up: %+v, %v", list, err)
		}
	})
}
