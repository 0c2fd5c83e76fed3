package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
)

// listenBench is one schema seen by two instances: a runs a worker woken
// only by its listener (no sweep), b closes orders.
type listenBench struct {
	ctx   context.Context
	a, b  *models.Store
	app   string // the listener connection's application_name
	wakes atomic.Int64
	logs  *modelstest.LogBuffer
}

func startListening(t *testing.T) *listenBench {
	t.Helper()
	dsn := modelstest.MigratedDSN(t, models.Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	lb := &listenBench{ctx: ctx, logs: &modelstest.LogBuffer{}}
	for _, s := range []**models.Store{&lb.a, &lb.b} {
		st, err := models.Open(ctx, dsn, models.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		*s = st
	}
	if _, err := lb.a.SetStock(ctx, "sku-1", 100, 0, "test"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	lb.app = "listen_" + strings.TrimPrefix(u.Path, "/")
	q.Set("application_name", lb.app)
	u.RawQuery = q.Encode()

	w := jobs.NewWorker(lb.a, "w-a", 10, 30*time.Second, modelstest.QuietLog())
	log := slog.New(slog.NewTextHandler(lb.logs, nil))
	var done sync.WaitGroup
	done.Add(2)
	go func() { defer done.Done(); w.Run(ctx) }()
	go func() {
		defer done.Done()
		jobs.ListenDue(ctx, u.String(), func() { lb.wakes.Add(1); w.Wake() }, log)
	}()
	t.Cleanup(func() { cancel(); done.Wait() })
	lb.listenerPID(t, 0)
	return lb
}

// listenerPID waits until a listener connection other than not has run
// LISTEN, and returns its backend pid.
func (lb *listenBench) listenerPID(t *testing.T, not int64) int64 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var pid int64
		err := lb.b.W.Raw(`SELECT pid FROM pg_stat_activity WHERE application_name = ? AND pid <> ?
			AND query LIKE 'LISTEN%'`, lb.app, not).Scan(&pid).Error
		if err != nil {
			t.Fatal(err)
		}
		if pid != 0 {
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	var seen []string
	lb.b.W.Raw("SELECT application_name || ' | ' || pid || ' | ' || left(query, 50) FROM pg_stat_activity").Scan(&seen)
	t.Fatalf("no listener connection %q listening; wakes %d; log:\n%s\n%q", lb.app, lb.wakes.Load(), lb.logs.String(), seen)
	return 0
}

// closeAndWait closes a new order through b and waits up to a second for
// a's worker to release its task.
func (lb *listenBench) closeAndWait(t *testing.T, no string) {
	t.Helper()
	req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
	if _, _, err := lb.b.PlaceOrder(lb.ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := lb.b.CloseOrder(lb.ctx, no, models.TriggerUserCancel, "u1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		c, err := lb.b.OrderChain(lb.ctx, no)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Tasks) == 1 && c.Tasks[0].Status == models.TaskDone {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("order %s closed through another store: its task was not released within 1 s (wakes %d)", no, lb.wakes.Load())
}

// A close committed through another store wakes the listening instance's
// worker at once: no sweep runs here, only the notification can.
// Notifications for another schema on the same database do not wake it.
func TestListenDueWakesOnCloseElsewhere(t *testing.T) {
	t.Parallel()
	lb := startListening(t)
	lb.closeAndWait(t, "o-1")
	lb.closeAndWait(t, "o-2")

	before := lb.wakes.Load()
	if err := lb.b.W.Exec("SELECT pg_notify(?, 'another_schema')", jobs.DueChannel).Error; err != nil {
		t.Fatal(err)
	}
	// The notification for this schema, sent after the other one, arrives
	// after it: once it woke, the other had its chance to.
	if err := lb.b.W.Exec("SELECT pg_notify(?, current_schema())", jobs.DueChannel).Error; err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for lb.wakes.Load() == before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := lb.wakes.Load() - before; got != 1 {
		t.Fatalf("a notification for another schema and one for ours: %d wakes, want 1", got)
	}
}

// A listener whose connection the server kills reconnects, logs the outage
// once, and wakes the worker on the next close again.
func TestListenDueReconnects(t *testing.T) {
	t.Parallel()
	lb := startListening(t)
	lb.closeAndWait(t, "o-1")
	pid := lb.listenerPID(t, 0)
	if err := lb.b.W.Exec("SELECT pg_terminate_backend(?)", pid).Error; err != nil {
		t.Fatal(err)
	}
	lb.listenerPID(t, pid)
	lb.closeAndWait(t, "o-2")
	logs := lb.logs.String()
	if n := strings.Count(logs, "level=WARN"); n != 1 {
		t.Errorf("one outage logged %d warnings, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs, "listening again") {
		t.Errorf("the reconnect was not logged:\n%s", logs)
	}
	modelstest.CheckInvariants(t, lb.b)
}

// The triggers notify when a task becomes due (a close, a lease handed
// back, a rerun) and stay silent on every other write of a task: a claim,
// a DONE, a failure that goes MANUAL or retries later, a close whose
// release is delayed. Each step's notifications are counted up to a marker
// sent after it; notifications arrive in commit order.
func TestDueNotifyOnlyWhenTaskBecomesDue(t *testing.T) {
	t.Parallel()
	dsn := modelstest.MigratedDSN(t, models.Postgres)
	ctx := context.Background()
	s, err := models.Open(ctx, dsn, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for sku, delay := range map[string]int64{"sku-1": 0, "sku-slow": 60} {
		if _, err := s.SetStock(ctx, sku, 10, delay, "test"); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+jobs.DueChannel); err != nil {
		t.Fatal(err)
	}
	marker := 0
	notified := func() int {
		t.Helper()
		marker++
		mark := fmt.Sprintf("marker %d", marker)
		if err := s.W.Exec("SELECT pg_notify(?, ?)", jobs.DueChannel, mark).Error; err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			got, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil {
				t.Fatalf("waiting for %s: %v", mark, err)
			}
			switch got.Payload {
			case mark:
				return n
			case schema:
				n++
			}
		}
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if err := s.W.Exec(q, args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	claim := func() models.ReleaseTask {
		t.Helper()
		tasks, err := s.ClaimTasks(ctx, "w", 10, time.Minute)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("claim = %d tasks, %v; want 1", len(tasks), err)
		}
		return tasks[0]
	}
	place := func(no, sku string) {
		t.Helper()
		req := models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: sku, Qty: 1}}}
		if _, _, err := s.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	closeOrder := func(no string) {
		t.Helper()
		if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
	}
	var task models.ReleaseTask
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"place", func() { place("o-1", "sku-1") }, 0},
		{"close", func() { closeOrder("o-1") }, 1},
		{"claim", func() { task = claim() }, 0},
		{"lease handed back", func() {
			if err := s.ReturnLease(ctx, task); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"claim and release DONE", func() {
			if r, err := s.ReleaseTask(ctx, claim(), "w"); err != nil || r.Outcome != models.OutcomeDone {
				t.Fatalf("release = %+v, %v", r, err)
			}
		}, 0},
		{"close with a release delay", func() { place("o-2", "sku-slow"); closeOrder("o-2") }, 0},
		{"the delay over, a sweep's claim", func() {
			exec("UPDATE release_tasks SET next_at = next_at - interval '1 hour' WHERE order_no = 'o-2'")
			task = claim()
		}, 0},
		{"a failure retried later", func() {
			exec(`UPDATE release_tasks SET status = 'RETRY', failures = 1, next_at = now() + interval '1 minute',
				lease_token = '', lease_until = NULL WHERE id = ?`, task.ID)
		}, 0},
		{"a failure gone MANUAL", func() {
			exec("UPDATE release_tasks SET status = 'MANUAL', next_at = now() WHERE id = ?", task.ID)
		}, 0},
		{"rerun", func() {
			if _, err := s.Rerun(ctx, "o-2", models.ResInventory, "ops", "test"); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, st := range steps {
		st.do()
		if got := notified(); got != st.want {
			t.Errorf("%s: %d notifications, want %d", st.name, got, st.want)
		}
	}
}
