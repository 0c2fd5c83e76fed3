package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// closeKillOrders are the orders the test places and closes. Enough that
// with closeKillClients closing at once the server commits many groups
// before it is killed, few enough for a quick run under -race.
const (
	closeKillOrders  = 400
	closeKillClients = 32
)

// killAtGroupCommit, in the environment of unhold serve run by the tests,
// makes it kill itself with SIGKILL inside the first shared transaction of
// at least that many closes, or placements and payments, once they are
// written and before the commit (models.FaultCloseGroupCommit,
// models.FaultWriteGroupCommit).
const killAtGroupCommit = "UNHOLD_TEST_KILL_AT_GROUP_COMMIT"

// killAtGroupOf is that fault: it waits a moment first, as a slow commit
// would, so that a close answered before its group committed would have
// its 200 on the wire when the process dies.
func killAtGroupOf(n int64) models.FaultFunc {
	return func(point string, t *models.ReleaseTask) error {
		if (point == models.FaultCloseGroupCommit || point == models.FaultWriteGroupCommit) && t.Qty >= n {
			time.Sleep(50 * time.Millisecond)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		return nil
	}
}

// unhold serve, with closes pouring in, is killed with SIGKILL inside a
// group of several closes, before its commit: every close answered 200 is
// CLOSED with its task and its order.closed event; an order is CLOSED only
// with them; none of the dying group's closes was answered. A second
// server then closes the rest and releases everything, and the books add
// up. Breaks if a close were answered before its group committed, or if a
// group's closes committed apart from their tasks or events.
func TestCloseGroupKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills unhold serve")
	}
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		ctx := context.Background()
		dsn := modelstest.MigratedDSN(t, d)
		s, err := models.Open(ctx, dsn, models.Options{Logger: modelstest.QuietLog()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.SetStock(ctx, "sku-1", closeKillOrders, 0, "test"); err != nil {
			t.Fatal(err)
		}
		nos := make([]string, closeKillOrders)
		for i := range nos {
			nos[i] = fmt.Sprintf("o-%04d", i)
			req := models.PlaceRequest{OrderNo: nos[i], UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}}
			if _, _, err := s.PlaceOrder(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
		token := killToken(t, dsn)

		srv := startServeProcess(t, dsn, killAtGroupCommit+"=4")
		answered := make([]bool, len(nos))
		client := &http.Client{Timeout: 30 * time.Second}
		pourUntilKilled(t, srv, nos, 0, answered, http.StatusOK, func(no string) (int, error) {
			return closeOverAPI(client, srv.url, token, no)
		})

		got := 0
		for i, no := range nos {
			c, err := s.OrderChain(ctx, no)
			if err != nil {
				t.Fatal(err)
			}
			events := 0
			for _, e := range c.Events {
				if e.Type == models.EventOrderClosed {
					events++
				}
			}
			switch {
			case answered[i] && c.Order.Status != models.OrderClosed:
				t.Fatalf("%s was answered 200 and is %s after the kill", no, c.Order.Status)
			case c.Order.Status == models.OrderClosed && (len(c.Tasks) != 1 || events != 1):
				t.Fatalf("%s is CLOSED with %d tasks and %d order.closed events, want 1 and 1", no, len(c.Tasks), events)
			case c.Order.Status == models.OrderPending && (len(c.Tasks) != 0 || events != 0):
				t.Fatalf("%s is PENDING with %d tasks and %d order.closed events", no, len(c.Tasks), events)
			}
			if answered[i] {
				got++
			}
		}
		if got == len(nos) {
			t.Fatalf("every close was answered: the kill did not land among them")
		}
		t.Logf("%d of %d closes answered before the kill", got, len(nos))

		srv = startServeProcess(t, dsn, "")
		for _, no := range nos {
			if code, err := closeOverAPI(client, srv.url, token, no); err != nil || code != http.StatusOK {
				t.Fatalf("close %s after the restart = %d, %v", no, code, err)
			}
		}
		waitAllDone(t, s)
		srv.kill()
		modelstest.CheckInvariants(t, s)
	})
}

// unhold serve on SQLite, with placements pouring in, is killed with
// SIGKILL inside a shared transaction of several placements, before its
// commit: every placement answered 201 is there, PENDING, with its hold
// and its stock; none of the dying group's was answered; and the books add
// up, with nothing half placed. A second server places the rest. Breaks
// if a placement were answered before its group committed, or committed
// apart from its hold or its stock.
func TestWriteGroupKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills unhold serve")
	}
	t.Parallel()
	ctx := context.Background()
	dsn := modelstest.MigratedDSN(t, models.SQLite)
	s, err := models.Open(ctx, dsn, models.Options{Logger: modelstest.QuietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.SetStock(ctx, "sku-1", closeKillOrders, 0, "test"); err != nil {
		t.Fatal(err)
	}
	token := killToken(t, dsn)
	nos := make([]string, closeKillOrders)
	for i := range nos {
		nos[i] = fmt.Sprintf("o-%04d", i)
	}

	srv := startServeProcess(t, dsn, killAtGroupCommit+"=4")
	answered := make([]bool, len(nos))
	client := &http.Client{Timeout: 30 * time.Second}
	// The first ones one at a time, each a group of one, which commits.
	const first = 20
	for i := range first {
		if code, err := placeOverAPI(client, srv.url, token, nos[i]); err != nil || code != http.StatusCreated {
			t.Fatalf("place %s alone = %d, %v", nos[i], code, err)
		}
		answered[i] = true
	}
	pourUntilKilled(t, srv, nos, first, answered, http.StatusCreated, func(no string) (int, error) {
		return placeOverAPI(client, srv.url, token, no)
	})

	got := 0
	for i, no := range nos {
		c, err := s.OrderChain(ctx, no)
		switch {
		case errors.Is(err, models.ErrNotFound):
			if answered[i] {
				t.Fatalf("%s was answered 201 and is not there after the kill", no)
			}
			continue
		case err != nil:
			t.Fatal(err)
		case c.Order.Status != models.OrderPending || len(c.Holds) != 1 || c.Holds[0].Qty != 1:
			t.Fatalf("%s is %s with holds %+v, want PENDING holding 1", no, c.Order.Status, c.Holds)
		}
		got++
	}
	if got == len(nos) {
		t.Fatalf("every placement is there: the kill did not land among them")
	}
	modelstest.CheckInvariants(t, s)
	t.Logf("%d of %d placements made before the kill", got, len(nos))

	srv = startServeProcess(t, dsn, "")
	for _, no := range nos {
		if code, err := placeOverAPI(client, srv.url, token, no); err != nil || (code != http.StatusCreated && code != http.StatusConflict) {
			t.Fatalf("place %s after the restart = %d, %v", no, code, err)
		}
	}
	srv.kill()
	modelstest.CheckInvariants(t, s)
	if sku, err := s.GetSKU(ctx, "sku-1"); err != nil || sku.Available != 0 || sku.Locked != closeKillOrders {
		t.Fatalf("sku-1 after every placement = %+v, %v; want all %d locked", sku, err, closeKillOrders)
	}
}

// killToken adds an admin API token to the database at dsn.
func killToken(t *testing.T, dsn string) string {
	t.Helper()
	var tok strings.Builder
	if err := run(context.Background(), []string{"token", "add", "--role", "admin", "kill", "-db", dsn},
		func(string) string { return "" }, nil, &tok, io.Discard); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(tok.String())
}

// pourUntilKilled sends send(no) for each of nos[from:] from
// closeKillClients clients at once until srv dies, and checks it died of
// the SIGKILL of a group's commit. answered[i] is set for each nos[i]
// answered want.
func pourUntilKilled(t *testing.T, srv *serveProcess, nos []string, from int, answered []bool, want int, send func(no string) (int, error)) {
	t.Helper()
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for range closeKillClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(nos) {
					return
				}
				code, err := send(nos[i])
				if err != nil {
					return // the server is gone
				}
				if code != want {
					t.Errorf("%s = %d, want %d", nos[i], code, want)
					return
				}
				answered[i] = true
			}
		})
	}
	select {
	case <-srv.done:
	case <-time.After(time.Minute):
		t.Fatal("no shared transaction of 4 in a minute: the server was not killed")
	}
	if ws, ok := srv.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("unhold serve ended %s, want killed by SIGKILL at a group's commit", srv.cmd.ProcessState)
	}
	wg.Wait()
}

// overAPI sends body to path with the admin token and returns the status.
func overAPI(c *http.Client, base, token, path, body string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

func closeOverAPI(c *http.Client, base, token, no string) (int, error) {
	return overAPI(c, base, token, "/api/v1/orders/"+no+"/close", `{"reason":"USER_CANCEL"}`)
}

func placeOverAPI(c *http.Client, base, token, no string) (int, error) {
	return overAPI(c, base, token, "/api/v1/orders", `{"order_no":"`+no+`","user_id":"u1","items":[{"sku_id":"sku-1","qty":1}]}`)
}

// serveProcess is unhold serve as a process of its own (this test binary,
// see TestMain), to be killed.
type serveProcess struct {
	*chaosWorker
	url string
}

// startServeProcess runs unhold serve on dsn with env added to its
// environment (none when empty).
func startServeProcess(t *testing.T, dsn, env string) *serveProcess {
	t.Helper()
	var extra []string
	if env != "" {
		extra = []string{env}
	}
	// A short lease: the killed server's worker held some, and the next
	// one takes them over once they expire.
	w, line := startChild(t, t.TempDir(), "serve", extra, "serve", "-db", dsn, "-addr", "127.0.0.1:0", "-log-format", "json",
		"-lease", chaosLease.String(), "-sweep-every", "1s")
	p := &serveProcess{chaosWorker: w}
	t.Cleanup(p.kill)
	if p.url = regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line); p.url == "" {
		t.Fatalf("unhold serve said %q", line)
	}
	return p
}

// kill sends SIGKILL and waits for the process to end.
func (p *serveProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}
