package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// remoteKillLease is the workers' lease: short, so the dead worker's
// tasks come back soon, and long enough for a claim under -race.
const remoteKillLease = 5 * time.Second

// killOnRelease is the gift card service as the test serves it: the first
// release carrying idemKey is applied by the service, and then, before
// its answer is written, the worker process that sent it is killed with
// SIGKILL — it dies after its call landed and before it recorded
// anything. Every other request is the service's alone.
type killOnRelease struct {
	svc     *remotetest.Service
	idemKey string

	mu     sync.Mutex
	victim *chaosWorker // the worker to kill; nil once killed
	killed chan struct{}
}

func (k *killOnRelease) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/release" || r.Header.Get("Idempotency-Key") != k.idemKey {
		k.svc.ServeHTTP(w, r)
		return
	}
	k.mu.Lock()
	victim := k.victim
	k.victim = nil
	k.mu.Unlock()
	if victim == nil {
		k.svc.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	k.svc.ServeHTTP(rec, r)
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-victim.done:
	case <-time.After(time.Minute):
	}
	close(k.killed)
	// The caller is dead; what is written here goes nowhere.
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// TestRemoteWorkerKilledAfterCall kills a real unhold worker process
// between the service applying its release of a gift card and the worker
// recording it. A second worker takes the task once the dead one's lease
// has expired: the try counts as CRASHED, the retry sends the same
// idempotency key, the service answers 409 ALREADY_DONE, and unhold
// records one RELEASE row (DUPLICATE); the card is given back once and
// reconciliation (unhold reconcile) is clean. Breaks if the retry's key
// differed (the service releases again, or refuses), if the crashed try
// were not counted, or if anything were recorded before the answer.
func TestRemoteWorkerKilledAfterCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills unhold worker processes")
	}
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const no, card = "o-kill", "card-1"
		ctx := context.Background()
		svc := remotetest.New(remotetest.Options{})
		svc.SetAvailable(card, 10)
		relKey := remote.IdempotencyKey(no, "giftcard", card, remote.OpRelease, 0)
		kill := &killOnRelease{svc: svc, idemKey: relKey, killed: make(chan struct{})}
		srv := httptest.NewServer(kill)
		t.Cleanup(srv.Close)

		dir := t.TempDir()
		resources := filepath.Join(dir, "resources.yaml")
		yaml := fmt.Sprintf("resources:\n  - type: giftcard\n    kind: remote\n    label: {zh: 礼品卡, en: Gift card}\n    url: %s\n    timeout: 2s\n", srv.URL)
		if err := os.WriteFile(resources, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		client, err := remote.New(remote.Config{Type: "giftcard", URL: srv.URL, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		dsn := modelstest.MigratedDSN(t, d)
		s, err := models.Open(ctx, dsn, models.Options{Logger: modelstest.QuietLog(),
			Remote: []models.RemoteType{{Type: "giftcard", Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); err != nil {
			t.Fatal(err)
		}
		_, _, err = s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: no, UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
			Holds: []models.HoldRequest{{Type: "giftcard", Key: card, Qty: 3}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := svc.Stock(card); got != (remotetest.Stock{Available: 7, Held: 3}) {
			t.Fatalf("after the placement the service has %+v", got)
		}

		var workers []*chaosWorker
		t.Cleanup(func() {
			for _, w := range workers {
				_ = w.cmd.Process.Kill()
				<-w.done
			}
			if t.Failed() {
				for _, w := range workers {
					b, _ := os.ReadFile(w.log)
					t.Logf("log of %s:\n%s", w.id, b)
				}
			}
		})
		start := func(id string) *chaosWorker {
			w := startWorkerProcess(t, dir, id, "-db", dsn, "-resources", resources, "-worker-id", id, "-pools", "1",
				"-worker-batch", "10", "-lease", remoteKillLease.String(), "-sweep-every", "1s")
			workers = append(workers, w)
			return w
		}
		// The victim is named before the close makes the task due.
		kill.mu.Lock()
		kill.victim = start("k1")
		kill.mu.Unlock()
		if _, err := s.CloseOrder(ctx, no, models.TriggerUserCancel, "u1"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-kill.killed:
		case <-time.After(time.Minute):
			t.Fatal("the worker never sent the release")
		}
		// Dead after the call landed: the card is back at the service,
		// and unhold has recorded nothing of it.
		if got := svc.Stock(card); got != (remotetest.Stock{Available: 10}) {
			t.Fatalf("after the killed call the service has %+v", got)
		}
		task := cardTask(t, s, no)
		if task.Status != models.TaskPending || task.LeaseUntil == nil || !strings.HasPrefix(task.LeaseOwner, "k1") {
			t.Fatalf("after the kill the task is %+v, want PENDING, leased by the dead worker", task)
		}
		if n := remoteRows(t, s, no, "RELEASE"); len(n) != 0 {
			t.Fatalf("the dead worker recorded %v", n)
		}

		start("k2")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var open int64
			if err := s.R.Model(&models.ReleaseTask{}).Where("status <> ?", models.TaskDone).Count(&open).Error; err != nil {
				t.Fatal(err)
			}
			if open == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d tasks not DONE: %+v", open, cardTask(t, s, no))
			}
			time.Sleep(100 * time.Millisecond)
		}

		if n := svc.Calls(relKey); n < 2 {
			t.Fatalf("the service saw the release's key %d times, want the retry to send it again", n)
		}
		if rows := remoteRows(t, s, no, "RELEASE"); len(rows) != 1 || rows[0] != "409 ALREADY_DONE "+relKey {
			t.Fatalf("RELEASE rows %v, want one answered 409 ALREADY_DONE under %s", rows, relKey)
		}
		var as []models.TaskAttempt
		if err := s.R.Where("task_id = ?", cardTask(t, s, no).ID).Order("id").Find(&as).Error; err != nil {
			t.Fatal(err)
		}
		if len(as) != 2 || as[0].ErrorClass != models.ClassCrashed || !strings.HasPrefix(as[0].Worker, "k1") ||
			as[1].Outcome != models.OutcomeDuplicate {
			t.Fatalf("attempts %+v, want one CRASHED try of k1, then a DUPLICATE", as)
		}
		if got := svc.Stock(card); got != (remotetest.Stock{Available: 10}) {
			t.Fatalf("at the end the service has %+v, want the card given back once", got)
		}
		if sku, err := s.GetSKU(ctx, "sku-1"); err != nil || sku.Available != 10 || sku.Locked != 0 {
			t.Fatalf("sku-1 = %+v, %v", sku, err)
		}
		var out bytes.Buffer
		if err := run(ctx, []string{"reconcile", "-db", dsn, "-resources", resources, "-log-format", "json"},
			func(string) string { return "" }, nil, &out, io.Discard); err != nil {
			t.Fatalf("unhold reconcile: %v\n%s", err, out.String())
		}
		modelstest.CheckInvariants(t, s)
	})
}

// startWorkerProcess runs "unhold worker" (this test binary, see TestMain) with
// args, logging to dir/id.log, and waits until it says it runs.
func startWorkerProcess(t *testing.T, dir, id string, args ...string) *chaosWorker {
	t.Helper()
	w, line := startChild(t, dir, id, nil, append([]string{"worker", "-log-format", "json"}, args...)...)
	if !strings.Contains(line, "unhold worker running") {
		t.Fatalf("unhold worker %s said %q; see its log", id, line)
	}
	return w
}

// startChild runs this test binary as unhold with args (the subcommand
// first) and env added to its environment, its stderr in dir/id.log, and
// returns it with the first line it printed on stdout, which it waits a
// minute for.
func startChild(t *testing.T, dir, id string, env []string, args ...string) (*chaosWorker, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	w := &chaosWorker{id: id, log: filepath.Join(dir, id+".log"), done: make(chan struct{})}
	logf, err := os.Create(w.log)
	if err != nil {
		t.Fatal(err)
	}
	w.cmd = exec.Command(exe, args...)
	if env != nil {
		w.cmd.Env = append(os.Environ(), env...)
	}
	w.cmd.Stderr = logf
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatalf("start unhold %s %s: %v", args[0], id, err)
	}
	first := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		first <- line
		_, _ = io.Copy(io.Discard, r)
		_ = w.cmd.Wait()
		logf.Close()
		close(w.done)
	}()
	select {
	case line := <-first:
		return w, line
	case <-time.After(time.Minute):
		t.Fatalf("unhold %s %s did not start", args[0], id)
	}
	return nil, ""
}

// cardTask is order no's gift card task.
func cardTask(t *testing.T, s *models.Store, no string) models.ReleaseTask {
	t.Helper()
	var tasks []models.ReleaseTask
	if err := s.R.Where("order_no = ? AND resource_type = 'giftcard'", no).Find(&tasks).Error; err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("order %s has %d gift card tasks, want 1", no, len(tasks))
	}
	return tasks[0]
}

// remoteRows are order no's gift card ledger rows of type typ, each as
// its answer and idempotency key.
func remoteRows(t *testing.T, s *models.Store, no, typ string) []string {
	t.Helper()
	var rows []string
	err := s.R.Raw(`SELECT answer || ' ' || idempotency_key FROM remote_flows
		WHERE order_no = ? AND resource_type = 'giftcard' AND type = ? ORDER BY id`, no, typ).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
