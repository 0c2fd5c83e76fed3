package remotetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/remote"
	"unhold/remote/remotetest"
)

// start serves a new fake and gives a client of it with a fresh connection
// pool, so that which connection a dropped call used is known.
func start(t *testing.T, opts remotetest.Options) (*remotetest.Service, *remote.Client, string) {
	t.Helper()
	svc := remotetest.New(opts)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	return svc, newClient(t, srv.URL, opts.Token, 0), srv.URL
}

func newClient(t *testing.T, url, token string, timeout time.Duration) *remote.Client {
	t.Helper()
	c, err := remote.New(remote.Config{Type: "giftcard", URL: url, Token: token, Timeout: timeout, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lock(order string, qty int64, epoch int) remote.Call {
	return remote.Call{OrderNo: order, Key: "GC-1", Qty: qty, Epoch: epoch, Trigger: "PLACE"}
}

// want is what a call should come to: done, done before, or refused with
// a class and the service's code.
type want struct {
	dup   bool
	class remote.Class
	code  string
}

func check(t *testing.T, name string, res remote.Result, err error, w want) {
	t.Helper()
	if w.class == "" {
		if err != nil || res.Duplicate != w.dup {
			t.Errorf("%s: got %+v, %v; want done, duplicate %v", name, res, err, w.dup)
		}
		return
	}
	var e *remote.Error
	if !errors.As(err, &e) || e.Class != w.class || e.Code != w.code {
		t.Errorf("%s: got %+v, %v; want %s %s", name, res, err, w.class, w.code)
	}
}

// One order's calls, in turn: each answer and the stock after it. A key is
// answered ALREADY_DONE again only for the same call; a refused call is
// not remembered, so its key may be tried again.
func TestProtocol(t *testing.T) {
	t.Parallel()
	svc, c, _ := start(t, remotetest.Options{})
	svc.SetAvailable("GC-1", 1)
	withKey := func(call remote.Call, op remote.Op) remote.Call {
		call.IdempotencyKey = remote.IdempotencyKey(call.OrderNo, "giftcard", call.Key, op, call.Epoch)
		return call
	}
	rerun := lock("O-1", 2, 0)
	rerun.Trigger = "RERUN"
	steps := []struct {
		name  string
		op    remote.Op
		call  remote.Call
		setup func()
		want  want
		stock remotetest.Stock
	}{
		{name: "short lock", op: remote.OpLock, call: lock("O-1", 2, 0),
			want: want{class: remote.ClassRejected, code: "SHORT"}, stock: remotetest.Stock{Available: 1}},
		{name: "same key after a restock", op: remote.OpLock, call: lock("O-1", 2, 0), setup: func() { svc.SetAvailable("GC-1", 5) },
			stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "lock again", op: remote.OpLock, call: lock("O-1", 2, 0), want: want{dup: true},
			stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "lock again for another reason", op: remote.OpLock, call: rerun, want: want{dup: true},
			stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "same key, other qty", op: remote.OpLock, call: withKey(lock("O-1", 3, 0), remote.OpLock),
			want: want{class: remote.ClassRejected, code: "KEY_REUSED"}, stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "same key, other operation", op: remote.OpRelease, call: withKey(lock("O-1", 2, 0), remote.OpLock),
			want: want{class: remote.ClassRejected, code: "KEY_REUSED"}, stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "second lock of the hold", op: remote.OpLock, call: withKey(lock("O-1", 1, 0), "other"),
			want: want{class: remote.ClassRejected, code: "LOCKED"}, stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "deduct more than held", op: remote.OpDeduct, call: lock("O-1", 3, 0),
			want: want{class: remote.ClassRejected, code: "NOT_HELD"}, stock: remotetest.Stock{Available: 3, Held: 2}},
		{name: "deduct", op: remote.OpDeduct, call: lock("O-1", 2, 0), stock: remotetest.Stock{Available: 3, Spent: 2}},
		{name: "release what was spent", op: remote.OpRelease, call: lock("O-1", 2, 0),
			want: want{class: remote.ClassRejected, code: "NOT_HELD"}, stock: remotetest.Stock{Available: 3, Spent: 2}},
		{name: "late payment's lock", op: remote.OpLock, call: lock("O-1", 2, 1), stock: remotetest.Stock{Available: 1, Held: 2, Spent: 2}},
		{name: "its release", op: remote.OpRelease, call: lock("O-1", 2, 1), stock: remotetest.Stock{Available: 3, Spent: 2}},
		{name: "its release again", op: remote.OpRelease, call: lock("O-1", 2, 1), want: want{dup: true},
			stock: remotetest.Stock{Available: 3, Spent: 2}},
	}
	do := map[remote.Op]func(context.Context, remote.Call) (remote.Result, error){
		remote.OpLock: c.Lock, remote.OpDeduct: c.Deduct, remote.OpRelease: c.Release,
	}
	for _, s := range steps {
		if s.setup != nil {
			s.setup()
		}
		res, err := do[s.op](context.Background(), s.call)
		check(t, s.name, res, err, s.want)
		if got := svc.Stock("GC-1"); got != s.stock {
			t.Errorf("%s: stock %+v, want %+v", s.name, got, s.stock)
		}
	}
	if n := svc.Calls(remote.IdempotencyKey("O-1", "giftcard", "GC-1", remote.OpLock, 0)); n != 6 {
		t.Errorf("O-1's lock key was seen %d times, want 6", n)
	}
}

// A release for a lock the service never got is done and remembered: the
// lock that comes late is refused, and the key's amounts never move.
func TestEmptyRollback(t *testing.T) {
	t.Parallel()
	svc, c, _ := start(t, remotetest.Options{})
	svc.SetAvailable("GC-1", 5)
	steps := []struct {
		name string
		do   func(context.Context, remote.Call) (remote.Result, error)
		call remote.Call
		want want
	}{
		{"release first", c.Release, lock("O-9", 2, 0), want{}},
		{"release again", c.Release, lock("O-9", 2, 0), want{dup: true}},
		{"the late lock", c.Lock, lock("O-9", 2, 0), want{class: remote.ClassRejected, code: "RELEASED_BEFORE_LOCK"}},
		{"another epoch's lock", c.Lock, lock("O-9", 2, 1), want{}},
	}
	for _, s := range steps {
		res, err := s.do(context.Background(), s.call)
		check(t, s.name, res, err, s.want)
	}
	if got, w := svc.Stock("GC-1"), (remotetest.Stock{Available: 3, Held: 2}); got != w {
		t.Errorf("stock %+v, want %+v: only epoch 1's lock holds", got, w)
	}
}

// Each fault knob, on a service of its own: what the caller gets, whether
// the call was applied, and that a retry with the same key is seen again
// and applied at most once.
func TestFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		arrange func(*remotetest.Service)
		timeout time.Duration
		want    want
		applied bool // the first call moved the stock
		retry   want // the same call again, faults off
	}{
		{name: "fixed 503s", arrange: func(s *remotetest.Service) { s.Next(1, remotetest.Answer{Status: 503}) },
			want: want{class: remote.ClassBusy}},
		{name: "fixed 422", arrange: func(s *remotetest.Service) {
			s.Next(1, remotetest.Answer{Status: 422, Body: `{"code":"FROZEN","message":"card frozen"}`})
		}, want: want{class: remote.ClassRejected, code: "FROZEN"}},
		{name: "fixed ALREADY_DONE", arrange: func(s *remotetest.Service) {
			s.Next(1, remotetest.Answer{Status: 409, Body: `{"code":"ALREADY_DONE","idempotency_key":"` +
				remote.IdempotencyKey("O-1", "giftcard", "GC-1", remote.OpLock, 0) + `"}`})
		}, want: want{dup: true}},
		{name: "fixed 200 without the echo", arrange: func(s *remotetest.Service) {
			s.Next(1, remotetest.Answer{Status: 200, Body: `{"code":"DONE"}`})
		}, want: want{class: remote.ClassProtocol}},
		{name: "fixed drop", arrange: func(s *remotetest.Service) { s.Next(1, remotetest.Answer{Drop: true}) },
			want: want{class: remote.ClassConnection}},
		{name: "busy", arrange: func(s *remotetest.Service) { s.SetFaults(remotetest.Faults{BusyRate: 1}) },
			want: want{class: remote.ClassBusy, code: "BUSY"}},
		{name: "drop before", arrange: func(s *remotetest.Service) { s.SetFaults(remotetest.Faults{DropRate: 1}) },
			want: want{class: remote.ClassConnection}},
		{name: "drop after apply", arrange: func(s *remotetest.Service) {
			s.SetFaults(remotetest.Faults{DropRate: 1, DropAfterApply: true})
		}, want: want{class: remote.ClassConnection}, applied: true, retry: want{dup: true}},
		{name: "slow", timeout: 50 * time.Millisecond, arrange: func(s *remotetest.Service) {
			s.SetFaults(remotetest.Faults{SlowRate: 1, Delay: 300 * time.Millisecond})
		}, want: want{class: remote.ClassTimeout}, applied: true, retry: want{dup: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			svc, _, url := start(t, remotetest.Options{})
			svc.SetAvailable("GC-1", 5)
			c.arrange(svc)
			cl := newClient(t, url, "", c.timeout)
			res, err := cl.Lock(context.Background(), lock("O-1", 2, 0))
			check(t, "first", res, err, c.want)
			held := remotetest.Stock{Available: 3, Held: 2}
			if c.applied {
				// A slow call is applied after its caller gave up.
				for end := time.Now().Add(5 * time.Second); svc.Stock("GC-1") != held && time.Now().Before(end); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			if got := svc.Stock("GC-1"); (got == held) != c.applied {
				t.Fatalf("after the first call stock is %+v; applied should be %v", got, c.applied)
			}
			svc.SetFaults(remotetest.Faults{})
			// The retry's client waits as long as a busy machine may take:
			// only the first call's timeout is part of the case (a 50 ms one
			// timed out the retry itself under -race with the suite running).
			res, err = newClient(t, url, "", 5*time.Second).Lock(context.Background(), lock("O-1", 2, 0))
			check(t, "retry", res, err, c.retry)
			key := remote.IdempotencyKey("O-1", "giftcard", "GC-1", remote.OpLock, 0)
			if got, n := svc.Stock("GC-1"), svc.Calls(key); got != held || n != 2 {
				t.Errorf("after the retry: stock %+v, key seen %d times; want %+v, 2", got, n, held)
			}
		})
	}
}

// Every answer to a call echoes its idempotency key, refusals included;
// with NoEcho none does, which a strict client does not take as done and
// an unstrict one does.
func TestEcho(t *testing.T) {
	t.Parallel()
	key := remote.IdempotencyKey("O-1", "giftcard", "GC-1", remote.OpLock, 0)
	svc, c, url := start(t, remotetest.Options{})
	svc.SetAvailable("GC-1", 1)
	for _, s := range []struct {
		name string
		call remote.Call
		want want
	}{
		{"short", lock("O-1", 2, 0), want{class: remote.ClassRejected, code: "SHORT"}},
		{"done", lock("O-1", 1, 0), want{}},
		{"done before", lock("O-1", 1, 0), want{dup: true}},
	} {
		res, err := c.Lock(context.Background(), s.call)
		check(t, s.name, res, err, s.want)
	}
	rel := lock("O-2", 1, 0)
	if res, err := c.Release(context.Background(), rel); err != nil {
		t.Errorf("empty rollback: %+v, %v", res, err)
	}
	// The raw answers: each names the key it answers.
	for _, op := range []string{"lock", "release"} {
		req, _ := http.NewRequest(http.MethodPost, url+"/"+op, strings.NewReader(`{"idempotency_key":"`+key+
			`","order_no":"O-1","type":"giftcard","key":"GC-1","qty":1,"epoch":0,"trigger":"PLACE"}`))
		req.Header.Set("Idempotency-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Code           string `json:"code"`
			IdempotencyKey string `json:"idempotency_key"`
		}
		err = json.NewDecoder(resp.Body).Decode(&a)
		_ = resp.Body.Close()
		if err != nil || a.IdempotencyKey != key {
			t.Errorf("%s with the lock's key: %d %+v, %v; want the key echoed", op, resp.StatusCode, a, err)
		}
	}

	quiet, strict, quietURL := start(t, remotetest.Options{NoEcho: true})
	quiet.SetAvailable("GC-1", 5)
	_, err := strict.Lock(context.Background(), lock("O-1", 1, 0))
	if !errors.Is(err, remote.ErrNoEcho) {
		t.Errorf("strict client, NoEcho: got %v; want ErrNoEcho", err)
	}
	unstrict, err := remote.New(remote.Config{Type: "giftcard", URL: quietURL})
	if err != nil {
		t.Fatal(err)
	}
	res, err := unstrict.Lock(context.Background(), lock("O-1", 1, 0))
	check(t, "unstrict client, NoEcho", res, err, want{dup: true})
}

// Fixed answers queue up and come first; rates are drawn per request from
// the seed, and so repeat.
func TestFaultRates(t *testing.T) {
	t.Parallel()
	count := func(seed uint64) (busy int) {
		svc, c, _ := start(t, remotetest.Options{Seed: seed})
		svc.Next(2, remotetest.Answer{Status: 500})
		svc.Next(1, remotetest.Answer{Status: 200, Body: `{"key":"GC-1","held":7}`})
		for i, want := range []int64{-500, -500, 7} {
			h, err := c.Holds(context.Background(), "GC-1")
			var e *remote.Error
			if want < 0 && (!errors.As(err, &e) || e.Status != 500) || want >= 0 && (err != nil || h.Held != want) {
				t.Fatalf("fixed answer %d: %+v, %v; want %d", i, h, err, want)
			}
		}
		svc.SetFaults(remotetest.Faults{BusyRate: 0.3})
		for range 200 {
			if _, err := c.Holds(context.Background(), "GC-1"); err != nil {
				busy++
			}
		}
		return busy
	}
	a, b := count(7), count(7)
	if a != b || a < 30 || a > 90 {
		t.Errorf("BusyRate 0.3 answered %d and %d of 200 busy with one seed; want the same, near 60", a, b)
	}
}

func TestTokenAndHolds(t *testing.T) {
	t.Parallel()
	svc, c, url := start(t, remotetest.Options{Token: "s3cret"})
	svc.SetAvailable("GC 1/é", 4)
	call := remote.Call{OrderNo: "O-1", Key: "GC 1/é", Qty: 3, Trigger: "PLACE"}
	_, err := newClient(t, url, "wrong", 0).Lock(context.Background(), call)
	check(t, "wrong token", remote.Result{}, err, want{class: remote.ClassRejected, code: "UNAUTHORIZED"})
	if _, err := c.Lock(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	h, err := c.Holds(context.Background(), "GC 1/é")
	if err != nil || h.Held != 3 {
		t.Errorf("holds: %+v, %v; want 3 held", h, err)
	}
	if h, err := c.Holds(context.Background(), "never-set"); err != nil || h.Held != 0 {
		t.Errorf("holds of an unknown key: %+v, %v; want 0 held", h, err)
	}
	_, none, _ := start(t, remotetest.Options{NoHolds: true})
	if _, err := none.Holds(context.Background(), "GC-1"); !errors.Is(err, remote.ErrNoHolds) {
		t.Errorf("a service without /holds: %v; want ErrNoHolds", err)
	}
}

// What is not the protocol is refused with nothing done.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	svc, _, url := start(t, remotetest.Options{})
	svc.SetAvailable("GC-1", 5)
	const body = `{"idempotency_key":"k1","order_no":"O-1","type":"giftcard","key":"GC-1","qty":1,"epoch":0,"trigger":"PLACE"}`
	cases := []struct {
		name, method, path, key, body string
		want                          int
	}{
		{"valid", http.MethodPost, "/lock", "k1", body, 200},
		{"no header key", http.MethodPost, "/lock", "", strings.Replace(body, "k1", "k2", 1), 400},
		{"header and body differ", http.MethodPost, "/lock", "k3", strings.Replace(body, "k1", "k4", 1), 400},
		{"a field missing", http.MethodPost, "/lock", "k5", strings.Replace(body, `,"epoch":0`, "", 1), 400},
		{"an unknown field", http.MethodPost, "/lock", "k6", strings.Replace(body, `"epoch":0`, `"epoch":0,"x":1`, 1), 400},
		{"zero qty", http.MethodPost, "/lock", "k7", strings.Replace(body, `"qty":1`, `"qty":0`, 1), 400},
		{"not JSON", http.MethodPost, "/lock", "k8", "qty=1", 400},
		{"GET a call", http.MethodGet, "/lock", "", "", 405},
		{"POST holds", http.MethodPost, "/holds/GC-1", "", "", 405},
		{"unknown operation", http.MethodPost, "/freeze", "k9", body, 404},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.key != "" {
			req.Header.Set("Idempotency-Key", c.key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if got, want := svc.Stock("GC-1"), (remotetest.Stock{Available: 4, Held: 1}); got != want {
		t.Errorf("stock %+v, want %+v: only the valid call applied", got, want)
	}
}

// Concurrent callers: no key is oversold, and one call sent by many at
// once is done once.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	svc, c, _ := start(t, remotetest.Options{})
	svc.SetAvailable("GC-1", 50)
	var mu sync.Mutex
	outcomes := map[string]int{}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			order := "O-" + string(rune('A'+i%60)) + string(rune('a'+i/60))
			if i >= 80 {
				order = "O-same" // 20 callers send one call
			}
			res, err := c.Lock(context.Background(), lock(order, 1, 0))
			var e *remote.Error
			out := "done"
			switch {
			case errors.As(err, &e):
				out = e.Code
			case err != nil:
				out = err.Error()
			case res.Duplicate:
				out = "dup"
			}
			mu.Lock()
			outcomes[out]++
			mu.Unlock()
		})
	}
	wg.Wait()
	// 80 distinct orders and one shared: 81 locks wanted, 50 available.
	// The shared call is done once and a duplicate or SHORT for the rest.
	if outcomes["done"] != 50 || outcomes["done"]+outcomes["SHORT"]+outcomes["dup"] != 100 {
		t.Errorf("outcomes %v; want 50 done, the rest SHORT or dup", outcomes)
	}
	if got, want := svc.Stock("GC-1"), (remotetest.Stock{Held: 50}); got != want {
		t.Errorf("stock %+v, want %+v", got, want)
	}
}
