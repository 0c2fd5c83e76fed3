package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gorm.io/gorm"

	"unhold/models"
	"unhold/models/modelstest"
)

// Multi-instance sizes: 3,000 tasks over three worker pools, each an
// unhold worker process of its own on one PostgreSQL schema. That is
// fifteen claims of the default batch of 200, five per process, enough
// for claims that collide (taken without a row lock, say) to show as a
// task released twice or a process left with less than its share.
const (
	multiTasks   = 3_000
	multiWorkers = 3
	multiSKUs    = 100
)

// Three unhold worker processes on one PostgreSQL schema drain a backlog
// of 3,000 release tasks: every task is DONE, released exactly once (one
// RELEASE ledger row each, no DUPLICATE attempt), the books reconcile, the
// stock is all back, and each process did a real share of the work. Then
// a close committed by none of them wakes them at once.
func TestMultiInstanceWorkersShareTheBacklog(t *testing.T) {
	t.Parallel()
	// The test is about sharing and exactly once, not durability: without
	// a disk flush per commit the run is bound by the CPU, not by the
	// flushes of thousands of release transactions.
	dsn := modelstest.MigratedDSN(t, models.Postgres) + "&synchronous_commit=off"
	ctx := context.Background()
	s, err := models.Open(ctx, dsn, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	closedBacklog(t, s)
	modelstest.CheckInvariants(t, s)
	modelstest.CheckLedgerChains(t, s)
	t.Logf("%d closed orders with one due task each in %s", multiTasks, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	// Started together: one that came up a second after the others would
	// find most of the backlog released already.
	var workers []*workerProcess
	for i := range multiWorkers {
		workers = append(workers, startWorker(t, dsn, fmt.Sprintf("mi-w%d", i+1)))
	}
	for _, w := range workers {
		w.waitRunning(t)
	}
	waitAllDone(t, s)
	t.Logf("%d processes released %d tasks in %s", multiWorkers, multiTasks, time.Since(start).Round(time.Millisecond))

	// A close committed outside every worker's process wakes them through
	// PostgreSQL: their sweep runs only hourly.
	start = time.Now()
	req := models.PlaceRequest{OrderNo: "mi-late", UserID: "mi-u0", Items: []models.Item{{SkuID: multiSKU(0), Qty: 1}}}
	if _, _, err := s.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CloseOrder(ctx, "mi-late", models.TriggerUserCancel, "test"); err != nil {
		t.Fatal(err)
	}
	for waited := 0; ; waited++ {
		c, err := s.OrderChain(ctx, "mi-late")
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Tasks) == 1 && c.Tasks[0].Status == models.TaskDone {
			break
		}
		if waited == 100 {
			t.Fatalf("a close elsewhere was not released within 5 s: %+v", c.Tasks)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("a close elsewhere released %s after it was placed", time.Since(start).Round(time.Millisecond))
	var cpu time.Duration
	for _, w := range workers {
		w.stop(t)
		cpu += w.cmd.ProcessState.UserTime() + w.cmd.ProcessState.SystemTime()
	}
	t.Logf("the worker processes used %s of CPU", cpu.Round(time.Millisecond))

	r := s.R.WithContext(ctx)
	count := func(what string, q string, want int64) {
		t.Helper()
		var got int64
		if err := r.Raw(q).Scan(&got).Error; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	count("tasks not DONE", "SELECT COUNT(*) FROM release_tasks WHERE status <> 'DONE'", 0)
	count("RELEASE ledger rows", "SELECT COUNT(*) FROM inventory_flows WHERE type = 'RELEASE'", multiTasks+1)
	count("orders without exactly one RELEASE row", `SELECT COUNT(*) FROM orders o WHERE (SELECT COUNT(*)
		FROM inventory_flows f WHERE f.order_no = o.order_no AND f.type = 'RELEASE') <> 1`, 0)
	count("DUPLICATE attempts", "SELECT COUNT(*) FROM task_attempts WHERE outcome = 'DUPLICATE'", 0)
	count("attempts that were not DONE", "SELECT COUNT(*) FROM task_attempts WHERE outcome <> 'DONE'", 0)
	count("stock still locked", "SELECT COALESCE(SUM(locked), 0) FROM inventory", 0)
	count("stock available", "SELECT COALESCE(SUM(available), 0) FROM inventory", multiTasks)
	modelstest.CheckInvariants(t, s)
	modelstest.CheckLedgerChains(t, s)

	var shares []struct {
		Worker string
		N      int64
	}
	if err := r.Raw("SELECT worker, COUNT(*) AS n FROM task_attempts WHERE outcome = 'DONE' GROUP BY worker ORDER BY worker").
		Scan(&shares).Error; err != nil {
		t.Fatal(err)
	}
	t.Logf("releases by worker: %+v", shares)
	if len(shares) != multiWorkers {
		t.Fatalf("releases by %d workers, want all %d: %+v", len(shares), multiWorkers, shares)
	}
	for _, sh := range shares {
		if sh.N < multiTasks/10 {
			t.Errorf("worker %s released %d of %d tasks, less than a tenth: %+v", sh.Worker, sh.N, multiTasks, shares)
		}
	}
}

// closedBacklog writes, set-based in one transaction, what placing and
// closing multiTasks one-unit orders over multiSKUs SKUs through the
// domain would: the orders CLOSED, their holds, the LOCK ledger rows
// chained per SKU, the stock moved to locked, and one due release task per
// order. One order at a time through PlaceOrder and CloseOrder would take
// tens of seconds on a loaded machine.
func closedBacklog(t *testing.T, s *models.Store) {
	t.Helper()
	ctx := context.Background()
	per := int64(multiTasks / multiSKUs)
	for k := range multiSKUs {
		if _, err := s.SetStock(ctx, multiSKU(k), per, 0, "test"); err != nil {
			t.Fatal(err)
		}
	}
	now := s.Now()
	// Order i holds one unit of SKU i % multiSKUs and is the j-th order of
	// that SKU, j = i / multiSKUs: its LOCK row moves the SKU from
	// per - j available and j locked to per - j - 1 and j + 1. (CREATE
	// TABLE AS takes no parameters.)
	tempTable := fmt.Sprintf(`CREATE TEMP TABLE mi_orders ON COMMIT DROP AS
			SELECT 'mi-' || lpad(i::text, 6, '0') AS order_no, 'mi-u' || (i %% 50) AS user_id,
				'mi-sku-' || lpad((i %% %[2]d)::text, 3, '0') AS sku_id, i / %[2]d AS j
			FROM generate_series(0, %[1]d - 1) AS i`, multiTasks, multiSKUs)
	stmts := []string{
		`INSERT INTO orders (order_no, user_id, status, pay_deadline, close_reason, version, created_at, updated_at, closed_at)
			SELECT order_no, user_id, 'CLOSED', @now, 'USER_CANCEL', 1, @now, @now, @now FROM mi_orders`,
		`INSERT INTO order_holds (order_no, resource_type, biz_key, qty) SELECT order_no, 'inventory', sku_id, 1 FROM mi_orders`,
		`INSERT INTO inventory_flows (order_no, sku_id, type, epoch, trigger_type, qty,
				avail_before, avail_after, held_before, held_after, spent_before, spent_after, actor, created_at)
			SELECT order_no, sku_id, 'LOCK', 0, 'PLACE', 1, @per - j, @per - j - 1, j, j + 1, 0, 0, 'user:' || user_id, @now
			FROM mi_orders ORDER BY sku_id, j`,
		`UPDATE inventory SET available = available - m.n, locked = locked + m.n, updated_at = @now
			FROM (SELECT sku_id, COUNT(*) AS n FROM mi_orders GROUP BY sku_id) m WHERE inventory.sku_id = m.sku_id`,
		`INSERT INTO release_tasks (order_no, resource_type, biz_key, qty, status, trigger_type, next_at, created_at, updated_at)
			SELECT order_no, 'inventory', sku_id, 1, 'PENDING', 'USER_CANCEL', @now, @now, @now FROM mi_orders ORDER BY order_no`,
	}
	args := map[string]any{"per": per, "now": now}
	err := s.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec(tempTable).Error; err != nil {
			return fmt.Errorf("mi_orders: %w", err)
		}
		for _, q := range stmts {
			var vals []any
			if strings.Contains(q, "@") {
				vals = append(vals, args)
			}
			if err := tx.Exec(q, vals...).Error; err != nil {
				return fmt.Errorf("%.60s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func multiSKU(k int) string { return fmt.Sprintf("mi-sku-%03d", k) }

// workerProcess is one unhold worker started from the test binary (see
// TestMain), logging to a file of its own.
type workerProcess struct {
	id    string
	cmd   *exec.Cmd
	log   string
	first chan string // its first line on stdout; closed if it exits first
	done  chan struct{}
}

// startWorker runs "unhold worker" with one pool named id on dsn;
// waitRunning waits until it says it runs.
func startWorker(t *testing.T, dsn, id string) *workerProcess {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProcess{id: id, log: filepath.Join(t.TempDir(), id+".log"), first: make(chan string, 1), done: make(chan struct{})}
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(exe, "worker", "-db", dsn, "-worker-id", id, "-pools", "1", "-sweep-every", "1h", "-log-format", "json")
	w.cmd.Stderr = logf
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case w.first <- sc.Text():
			default:
			}
		}
		close(w.first)
		_ = w.cmd.Wait()
		logf.Close()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Kill()
		<-w.done
	})
	return w
}

// waitRunning waits until the worker says it runs.
func (w *workerProcess) waitRunning(t *testing.T) {
	t.Helper()
	select {
	case _, ok := <-w.first:
		if !ok {
			t.Fatalf("unhold worker %s exited at start:\n%s", w.id, w.tail())
		}
	case <-time.After(time.Minute):
		t.Fatalf("unhold worker %s did not start:\n%s", w.id, w.tail())
	}
}

// stop ends the worker as a deploy would (SIGTERM) and checks that it
// exited cleanly.
func (w *workerProcess) stop(t *testing.T) {
	t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatalf("unhold worker %s did not stop on SIGTERM", w.id)
	}
	if code := w.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("unhold worker %s exited with %d:\n%s", w.id, code, w.tail())
	}
}

// tail is the end of the worker's log, for a failure message.
func (w *workerProcess) tail() string {
	b, _ := os.ReadFile(w.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitAllDone waits until no task is left undone; it fails when nothing
// moves for half a minute or a task goes MANUAL.
func waitAllDone(t *testing.T, s *models.Store) {
	t.Helper()
	last, moved := int64(-1), time.Now()
	for {
		var open, manual int64
		r := s.R.WithContext(context.Background())
		if err := r.Raw("SELECT COUNT(*) FROM release_tasks WHERE status <> 'DONE'").Scan(&open).Error; err != nil {
			t.Fatal(err)
		}
		if err := r.Raw("SELECT COUNT(*) FROM release_tasks WHERE status = 'MANUAL'").Scan(&manual).Error; err != nil {
			t.Fatal(err)
		}
		switch {
		case manual > 0:
			t.Fatalf("%d tasks went MANUAL", manual)
		case open == 0:
			return
		case open != last:
			last, moved = open, time.Now()
		case time.Since(moved) > 30*time.Second:
			t.Fatalf("%d tasks not done, and nothing moved for 30 s", open)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
