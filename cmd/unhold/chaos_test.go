package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// Chaos run sizes: chaosOrders orders, each holding chaosItems SKUs, a
// coupon, a frozen balance and an activity's quota, make a release task
// per hold (several per order: placing and closing, not releasing, is
// what costs the set-up its time). The run ends after chaosLeasedKills kills
// that each caught a worker holding leases. Eight such kills are enough:
// a release committed apart from its task's DONE is caught by about every
// other one, and a lost try never rescued, left uncounted or counted
// twice by the first.
const (
	chaosItems       = 5
	chaosStock       = 100 // per SKU: more than the 30 orders on each
	chaosCredit      = 20  // balance per user: more than the 6 orders of each
	chaosActivity    = "chaos-act"
	chaosLeasedKills = 8
	chaosMaxKills    = 3 * chaosLeasedKills
	// chaosLease is short so a dead worker's tasks come back soon, and
	// long enough that a claim (its timeout is the lease) still counts a
	// dead worker's hundred lost tries in time under -race on a busy
	// machine: at 2 s, claims timed out over and over.
	chaosLease = 5 * time.Second
	chaosStall = time.Minute
)

// chaosOrders is how many orders an engine's run places. The backlog
// outlasts the kills, so they land on fresh tasks and no retry's backoff
// slows the last worker down: over eight kills, two SQLite workers
// release 2,000 to 3,000 tasks, two on PostgreSQL 500 to 1,100. What is
// left after the kills only costs the last worker time.
var chaosOrders = map[models.Dialect]int{models.SQLite: 600, models.Postgres: 250}

// TestChaosWorkersKilled closes thousands of release tasks' orders while no
// worker runs, then starts real unhold worker processes and kills them with
// SIGKILL at random moments in the middle of their batches, restarting
// them, until 8 kills have caught a worker holding leases; a last worker
// then finishes. Nothing may be lost or released twice: every task DONE,
// one RELEASE ledger row per task, every hold back to zero, reconciliation
// clean, and each task a dead worker held counted as one CRASHED try.
// UNHOLD_CHAOS_SEED replays a run's kill delays (not its timing).
func TestChaosWorkersKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes tens of seconds")
	}
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("UNHOLD_CHAOS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("UNHOLD_CHAOS_SEED: %v", err)
		}
	}
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d (replay the kill delays with UNHOLD_CHAOS_SEED=%d)", seed, seed)
			c := newChaosRun(t, d, rand.New(rand.NewPCG(seed, 0)))
			c.fill(t)
			c.killLoop(t)
			c.finish(t)
			c.check(t)
		})
	}
}

// chaosRun is one engine's run: the shop, the worker processes (this test
// binary run as unhold, see TestMain) and what the kills left leased.
type chaosRun struct {
	ctx           context.Context
	rng           *rand.Rand
	s             *models.Store
	exe, dir, dsn string
	orders        int
	live          []*chaosWorker
	all           []*chaosWorker

	started     int
	kills       int
	leasedKills int
	// deadLeases is, per task, the workers that died holding its lease:
	// each of those tries must come back as one CRASHED attempt.
	deadLeases map[int64][]string
}

// chaosWorker is one unhold worker process.
type chaosWorker struct {
	id   string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has exited and been reaped
}

func newChaosRun(t *testing.T, d models.Dialect, rng *rand.Rand) *chaosRun {
	t.Helper()
	dsn := modelstest.MigratedDSN(t, d)
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	s, err := models.Open(ctx, dsn, models.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &chaosRun{ctx: ctx, rng: rng, s: s, deadLeases: map[int64][]string{},
		exe: exe, dir: t.TempDir(), dsn: dsn, orders: chaosOrders[d]}
	// Registered after the database's cleanups, so it runs before them.
	t.Cleanup(func() {
		for _, w := range c.all {
			_ = w.cmd.Process.Kill()
			<-w.done
		}
		if t.Failed() {
			c.logErrors(t)
		}
	})
	return c
}

// tasks is how many release tasks the run's orders make.
func (c *chaosRun) tasks() int64 { return int64(c.orders * (chaosItems + 3)) }

// fill makes the shop and places and closes every order while no worker
// runs, so that every task is due when the first worker starts.
func (c *chaosRun) fill(t *testing.T) {
	t.Helper()
	start := time.Now()
	ctx, s := c.ctx, c.s
	for k := range benchSKUs {
		if _, err := s.SetStock(ctx, benchSKU(k), chaosStock, 0, "chaos"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Credit(ctx, benchUser(k), models.AssetBalance, chaosCredit, "chaos"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.SetActivity(ctx, chaosActivity, int64(c.orders), "chaos"); err != nil {
		t.Fatal(err)
	}
	var b benchRun
	err := b.each(ctx, 4, c.orders, nil, func(i int) error {
		user := benchUser(i % benchSKUs)
		coupon, err := s.CreateCoupon(ctx, user, models.CouponPlatform, s.Now().Add(30*24*time.Hour), "chaos")
		if err != nil {
			return err
		}
		items := make([]models.Item, chaosItems)
		for k := range items {
			items[k] = models.Item{SkuID: benchSKU((i*chaosItems + k) % benchSKUs), Qty: 1}
		}
		no := benchOrder(i)
		_, _, err = s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: user, Items: items, CouponIDs: []int64{coupon.ID},
			Freeze: []models.Freeze{{Asset: models.AssetBalance, Amount: 1}}, ActivityID: chaosActivity})
		if err != nil {
			return err
		}
		_, err = s.CloseOrder(ctx, no, models.TriggerUserCancel, "chaos")
		return err
	})
	if err != nil {
		t.Fatalf("place and close: %v", err)
	}
	var due int64
	if err := s.R.Model(&models.ReleaseTask{}).Where("status = ?", models.TaskPending).Count(&due).Error; err != nil {
		t.Fatal(err)
	}
	if due != c.tasks() {
		t.Fatalf("%d tasks due after the closes, want %d", due, c.tasks())
	}
	t.Logf("%d orders placed and closed, %d tasks due, in %s", c.orders, due, time.Since(start).Round(time.Millisecond))
}

// start runs one unhold worker process with two pools and a short lease,
// and waits until it says it runs.
func (c *chaosRun) start(t *testing.T) *chaosWorker {
	t.Helper()
	c.started++
	id := fmt.Sprintf("chaos-%03d", c.started)
	w := startWorkerProcess(t, c.dir, id, "-db", c.dsn, "-worker-id", id,
		"-pools", "2", "-worker-batch", "50", "-lease", chaosLease.String(), "-sweep-every", "1s")
	c.all = append(c.all, w)
	c.live = append(c.live, w)
	return w
}

// ownerLike matches the lease owners of w's pools ("<id>-1", "<id>-2").
func (w *chaosWorker) ownerLike() string { return w.id + "-%" }

// killLoop keeps one or two workers running and kills one at a time with
// SIGKILL, a random 20–300 ms after it was seen holding leases, until
// chaosLeasedKills kills have caught one holding leases.
func (c *chaosRun) killLoop(t *testing.T) {
	t.Helper()
	start := time.Now()
	for c.leasedKills < chaosLeasedKills {
		if c.kills == chaosMaxKills {
			t.Fatalf("only %d of %d kills caught a worker holding leases", c.leasedKills, c.kills)
		}
		for want := 1 + c.rng.IntN(2); len(c.live) < want; {
			c.start(t)
		}
		delay := time.Duration(20+c.rng.IntN(281)) * time.Millisecond
		// The victim is the first live worker seen holding leases: on
		// SQLite one process may win the write lock claim after claim
		// while the other waits, and a victim drawn at random could then
		// sit idle until the backlog is gone.
		i := c.waitLeasing(t)
		if i < 0 {
			i = c.rng.IntN(len(c.live))
			t.Logf("no worker held a lease for 30 s (left: %s); killing %s anyway", c.progress(t), c.live[i].id)
		}
		victim := c.live[i]
		c.live = append(c.live[:i], c.live[i+1:]...)
		time.Sleep(delay)
		if err := victim.cmd.Process.Kill(); err != nil {
			t.Fatalf("kill %s: %v", victim.id, err)
		}
		<-victim.done
		c.kills++
		held := c.deadLeased(t, victim)
		if len(held) > 0 {
			c.leasedKills++
		}
		for _, id := range held {
			c.deadLeases[id.ID] = append(c.deadLeases[id.ID], id.LeaseOwner)
		}
		t.Logf("kill %d: %s after %s, died holding %d leases; %s", c.kills, victim.id, delay, len(held), c.progress(t))
	}
	t.Logf("%d kills (%d holding leases, %d tasks' tries lost) in %s", c.kills, c.leasedKills, c.lostTries(),
		time.Since(start).Round(time.Millisecond))
}

// waitLeasing waits until a live worker holds at least one task's lease,
// for at most 30 s (none holds any while only retries not yet due are
// left), and returns its index in c.live, or -1.
func (c *chaosRun) waitLeasing(t *testing.T) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for i, w := range c.live {
			// The condition of the partial index of leased tasks keeps
			// this poll off the backlog's rows.
			var n int64
			err := c.s.R.WithContext(c.ctx).Model(&models.ReleaseTask{}).
				Where("status IN ('PENDING','RETRY') AND lease_until IS NOT NULL AND lease_owner LIKE ?", w.ownerLike()).
				Count(&n).Error
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				return i
			}
			select {
			case <-w.done:
				t.Fatalf("unhold worker %s exited on its own; see its log", w.id)
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1
}

// deadLeased lists the waiting tasks whose lease a dead worker still holds.
// On PostgreSQL the rows are read FOR UPDATE: a COMMIT the worker sent just
// before it died may still be running in its backend, and the read must
// wait for it to land or roll back.
func (c *chaosRun) deadLeased(t *testing.T, w *chaosWorker) []models.ReleaseTask {
	t.Helper()
	q := `SELECT id, lease_owner FROM release_tasks
		WHERE status IN ('PENDING','RETRY') AND lease_owner LIKE ? AND lease_until IS NOT NULL ORDER BY id`
	db := c.s.R
	if c.s.Dialect == models.Postgres {
		q += " FOR UPDATE"
		db = c.s.W
	}
	var held []models.ReleaseTask
	if err := db.WithContext(c.ctx).Raw(q, w.ownerLike()).Scan(&held).Error; err != nil {
		t.Fatal(err)
	}
	return held
}

func (c *chaosRun) lostTries() int {
	n := 0
	for _, owners := range c.deadLeases {
		n += len(owners)
	}
	return n
}

// progress says how many tasks are DONE and how many wait, by failures.
func (c *chaosRun) progress(t *testing.T) string {
	t.Helper()
	var rows []struct {
		Status   string
		Failures int
		N        int64
	}
	err := c.s.R.WithContext(c.ctx).Model(&models.ReleaseTask{}).
		Select("status, CASE WHEN status = 'DONE' THEN 0 ELSE failures END AS failures, COUNT(*) AS n").
		Group("1, 2").Order("1, 2").Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, r := range rows {
		if r.Status == string(models.TaskDone) {
			parts = append(parts, fmt.Sprintf("%d DONE", r.N))
		} else {
			parts = append(parts, fmt.Sprintf("%d %s after %d failures", r.N, r.Status, r.Failures))
		}
	}
	return strings.Join(parts, ", ")
}

// finish lets a last worker release everything, then stops it with
// SIGTERM. Every worker stopped so must exit cleanly (under -race: with no
// race found). The others stop first: on SQLite, two processes take turns
// at the write lock through its busy handler, slower than one alone.
func (c *chaosRun) finish(t *testing.T) {
	t.Helper()
	start := time.Now()
	if len(c.live) == 0 {
		c.start(t)
	}
	c.stop(t, c.live[:len(c.live)-1])
	c.live = c.live[len(c.live)-1:]
	// Slow is no failure (under -race on a busy machine a release can take
	// tens of milliseconds); standing still is: a retry is due at most 30 s
	// after a task's third lost try.
	last, lastMove := int64(-1), time.Now()
	for {
		var open, manual int64
		if err := c.s.R.WithContext(c.ctx).Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).
			Count(&open).Error; err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if err := c.s.R.WithContext(c.ctx).Model(&models.ReleaseTask{}).Where("status = ?", models.TaskManual).
			Count(&manual).Error; err != nil {
			t.Fatal(err)
		}
		if manual > 0 {
			t.Fatalf("tasks went MANUAL: %s", c.progress(t))
		}
		if open != last {
			last, lastMove = open, time.Now()
		} else if time.Since(lastMove) > chaosStall {
			t.Fatalf("nothing released for %s: %s", chaosStall, c.progress(t))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the last worker finished in %s", time.Since(start).Round(time.Millisecond))
	c.stop(t, c.live)
	c.live = nil
}

// stop stops workers with SIGTERM and waits for each to exit cleanly.
func (c *chaosRun) stop(t *testing.T, ws []*chaosWorker) {
	t.Helper()
	for _, w := range ws {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range ws {
		select {
		case <-w.done:
		case <-time.After(time.Minute):
			t.Fatalf("unhold worker %s did not stop on SIGTERM", w.id)
		}
		if code := w.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("unhold worker %s exited with %d", w.id, code)
		}
	}
}

// check asserts what the kills must not have broken.
func (c *chaosRun) check(t *testing.T) {
	t.Helper()
	ctx, r := c.ctx, c.s.R.WithContext(c.ctx)
	// Reconciliation finds nothing, every change has its ledger row, and
	// every hold of a CLOSED order with no task left open is fully released.
	modelstest.CheckInvariants(t, c.s)

	count := func(what string, want int64, q string, args ...any) {
		t.Helper()
		var got int64
		if err := r.Raw(q, args...).Scan(&got).Error; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	// One RELEASE ledger row per task of each type, and none besides.
	for _, l := range []struct {
		res          models.ResourceType
		ledger, same string
	}{
		{models.ResInventory, "inventory_flows", "f.sku_id = t.biz_key"},
		{models.ResCoupon, "coupon_flows", "CAST(f.coupon_id AS TEXT) = t.biz_key"},
		{models.ResBalance, "account_flows", "f.uid = t.biz_key AND f.asset = 'BALANCE'"},
		{models.ResQuota, "quota_flows", "f.activity_id = t.biz_key"},
	} {
		count(string(l.res)+" tasks without exactly one RELEASE row", 0, fmt.Sprintf(`SELECT COUNT(*) FROM release_tasks t
			WHERE t.resource_type = ? AND (SELECT COUNT(*) FROM %s f
				WHERE f.order_no = t.order_no AND %s AND f.type = 'RELEASE') <> 1`, l.ledger, l.same), l.res)
		tasks := int64(c.orders)
		if l.res == models.ResInventory {
			tasks *= chaosItems
		}
		count(l.ledger+" RELEASE rows", tasks, "SELECT COUNT(*) FROM "+l.ledger+" WHERE type = 'RELEASE'")
	}
	count("orders not CLOSED", 0, "SELECT COUNT(*) FROM orders WHERE status <> ?", models.OrderClosed)
	count("tasks DONE", c.tasks(), "SELECT COUNT(*) FROM release_tasks WHERE status = ?", models.TaskDone)
	// Everything held is back, nothing more.
	count("stock available", benchSKUs*chaosStock, "SELECT COALESCE(SUM(available), 0) FROM inventory")
	count("stock locked", 0, "SELECT COALESCE(SUM(locked), 0) FROM inventory")
	count("balance available", benchSKUs*chaosCredit, "SELECT COALESCE(SUM(available), 0) FROM accounts WHERE asset = 'BALANCE'")
	count("balance frozen", 0, "SELECT COALESCE(SUM(frozen), 0) FROM accounts")
	count("coupons not UNUSED", 0, "SELECT COUNT(*) FROM user_coupons WHERE status <> 'UNUSED'")
	count("quota available", int64(c.orders), "SELECT available FROM activity_quotas WHERE activity_id = ?", chaosActivity)
	count("quota locked", 0, "SELECT locked FROM activity_quotas WHERE activity_id = ?", chaosActivity)
	// A release and its task's DONE commit together: a ledger row found
	// already there would mean one landed without the other.
	count("DUPLICATE attempts", 0, "SELECT COUNT(*) FROM task_attempts WHERE outcome = ?", models.OutcomeDuplicate)

	run, err := c.s.RunReconciliation(ctx, models.ReconByCLI, "chaos")
	if err != nil {
		t.Fatal(err)
	}
	if run.Found != 0 || run.Opened != 0 {
		t.Errorf("reconciliation run: %d diffs, %d tickets opened; want none", run.Found, run.Opened)
	}
	open, err := c.s.OpenDiffCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for res, n := range open {
		if n != 0 {
			t.Errorf("%d open %s reconciliation tickets, want none", n, res)
		}
	}

	// Each try a dead worker held is one CRASHED failure of its task, in
	// that worker's name.
	var crashed []struct {
		TaskID int64
		Worker string
	}
	if err := r.Raw("SELECT task_id, worker FROM task_attempts WHERE error_class = ?", models.ClassCrashed).
		Scan(&crashed).Error; err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, a := range crashed {
		got[fmt.Sprint(a.TaskID, " ", a.Worker)]++
	}
	missing := 0
	for id, owners := range c.deadLeases {
		for _, o := range owners {
			if got[fmt.Sprint(id, " ", o)] != 1 {
				missing++
			}
		}
	}
	if missing > 0 || len(crashed) < c.leasedKills || len(crashed) < c.lostTries() {
		t.Errorf("%d CRASHED attempts for %d tries lost in %d kills holding leases; %d lost tries without exactly one",
			len(crashed), c.lostTries(), c.leasedKills, missing)
	}
	t.Logf("%d CRASHED attempts, %d tries lost in the kills; tasks by failures at the end: %s",
		len(crashed), c.lostTries(), c.failures(t))
}

// failures counts the tasks by how many failed tries they had.
func (c *chaosRun) failures(t *testing.T) string {
	t.Helper()
	var rows []struct{ Failures, N int64 }
	if err := c.s.R.WithContext(c.ctx).Model(&models.ReleaseTask{}).Select("failures, COUNT(*) AS n").
		Group("failures").Order("failures").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%d: %d", r.Failures, r.N))
	}
	return strings.Join(parts, ", ")
}

// logErrors shows the workers' logged errors of a failed run (the logs
// are gone with the temp dir).
func (c *chaosRun) logErrors(t *testing.T) {
	for _, w := range c.all {
		b, err := os.ReadFile(w.log)
		if err != nil {
			continue
		}
		n := 0
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, `"level":"ERROR"`) && n < 5 {
				t.Logf("%s: %s", w.id, strings.TrimSpace(line))
				n++
			}
		}
	}
}
