package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"unhold/models"
	"unhold/remote"
)

// call is a valid lock of one gift card in the first cycle.
var call = remote.Call{OrderNo: "O-1", Key: "GC-1", Qty: 2, Trigger: "PLACE"}

func client(t *testing.T, url string, timeout time.Duration, token string) *remote.Client {
	t.Helper()
	c, err := remote.New(remote.Config{Type: "giftcard", URL: url, Timeout: timeout, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The classes are models' classes, spelled the same, and only a rejection
// is permanent.
func TestClassesAreModelsClasses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		got       remote.Class
		want      models.ErrorClass
		retryable bool
	}{
		{remote.ClassBusy, models.ClassRemoteBusy, true},
		{remote.ClassRejected, models.ClassRemoteRejected, false},
		{remote.ClassTimeout, models.ClassTimeout, true},
		{remote.ClassConnection, models.ClassConnection, true},
		{remote.ClassProtocol, models.ClassRemoteProtocol, true},
	} {
		e := &remote.Error{Class: c.got}
		if e.ErrorClass() != string(c.want) || e.Retryable() != c.retryable {
			t.Errorf("%s: ErrorClass %q retryable %v; want %q, %v", c.got, e.ErrorClass(), e.Retryable(), c.want, c.retryable)
		}
	}
}

// Every answer and every way of getting none comes back as done, done
// before, or an error of the documented class keeping the service's word.
func TestAnswers(t *testing.T) {
	t.Parallel()
	answer := func(status int, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	long := strings.Repeat("库存不足 ", 100_000) // 1.3 MB, past the body bound
	cases := []struct {
		name      string
		handler   http.HandlerFunc
		refused   bool // nothing listens
		timeout   time.Duration
		wantDup   bool
		wantClass remote.Class // "": done
		wantCode  string
		wantMsg   string // the error's message, exactly
	}{
		{name: "200", handler: answer(200, `{"code":"DONE"}`)},
		{name: "204", handler: answer(204, "")},
		{name: "409 ALREADY_DONE", handler: answer(409, `{"code":"ALREADY_DONE"}`), wantDup: true},
		{name: "409 other", handler: answer(409, `{"code":"LOCKED","message":"held by O-2"}`),
			wantClass: remote.ClassRejected, wantCode: "LOCKED", wantMsg: "held by O-2"},
		{name: "409 text", handler: answer(409, "ALREADY_DONE"), wantClass: remote.ClassRejected, wantMsg: "ALREADY_DONE"},
		{name: "422", handler: answer(422, `{"code":"SHORT","message":"2 asked, 1 available"}`),
			wantClass: remote.ClassRejected, wantCode: "SHORT", wantMsg: "2 asked, 1 available"},
		{name: "400 text", handler: answer(400, "bad qty\n\tline two"), wantClass: remote.ClassRejected, wantMsg: "bad qty line two"},
		{name: "401 empty", handler: answer(401, ""), wantClass: remote.ClassRejected, wantMsg: "Unauthorized"},
		{name: "404", handler: answer(404, "404 page not found"), wantClass: remote.ClassRejected, wantMsg: "404 page not found"},
		{name: "302 not followed", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, wantClass: remote.ClassRejected, wantMsg: "Found"},
		{name: "408", handler: answer(408, ""), wantClass: remote.ClassBusy, wantMsg: "Request Timeout"},
		{name: "425", handler: answer(425, ""), wantClass: remote.ClassBusy, wantMsg: "Too Early"},
		{name: "429", handler: answer(429, `{"code":"RATE","message":"slow down"}`), wantClass: remote.ClassBusy,
			wantCode: "RATE", wantMsg: "slow down"},
		{name: "500", handler: answer(500, "panic: nil map"), wantClass: remote.ClassBusy, wantMsg: "panic: nil map"},
		{name: "503", handler: answer(503, `{"code":"BUSY"}`), wantClass: remote.ClassBusy, wantCode: "BUSY",
			wantMsg: "Service Unavailable"},
		{name: "slow", timeout: 50 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		}, wantClass: remote.ClassTimeout, wantMsg: "no answer within 50ms"},
		{name: "dropped", handler: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			_ = conn.Close()
		}, wantClass: remote.ClassConnection, wantMsg: "no answer"},
		{name: "refused", refused: true, wantClass: remote.ClassConnection, wantMsg: "no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := "http://" + closedAddr(t)
			if !c.refused {
				srv := httptest.NewServer(c.handler)
				t.Cleanup(srv.Close)
				url = srv.URL
			}
			res, err := client(t, url, c.timeout, "").Lock(context.Background(), call)
			if c.wantClass == "" {
				if err != nil || res.Duplicate != c.wantDup || res.IdempotencyKey == "" {
					t.Fatalf("got %+v, %v; want done, duplicate %v", res, err, c.wantDup)
				}
				return
			}
			var e *remote.Error
			if !errors.As(err, &e) {
				t.Fatalf("got %+v, %v; want a *remote.Error", res, err)
			}
			if e.Class != c.wantClass || e.Code != c.wantCode || e.Message != c.wantMsg || e.Op != remote.OpLock {
				t.Errorf("got class %s code %q message %q op %s; want %s %q %q lock", e.Class, e.Code, e.Message, e.Op,
					c.wantClass, c.wantCode, c.wantMsg)
			}
		})
	}
	t.Run("long", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(answer(422, long))
		t.Cleanup(srv.Close)
		_, err := client(t, srv.URL, 0, "").Lock(context.Background(), call)
		var e *remote.Error
		if !errors.As(err, &e) || e.Class != remote.ClassRejected || len(e.Message) > 512 ||
			!strings.HasPrefix(e.Message, "库存不足 库存不足") || !strings.HasSuffix(e.Message, "…") {
			t.Fatalf("got %v; want REMOTE_REJECTED with the body clipped to 512 bytes and marked", err)
		}
	})
}

// In strict mode an answer that would count as done — a 2xx, a 409
// ALREADY_DONE — is done only when it is a JSON object echoing the
// request's idempotency key; otherwise it is a REMOTE_PROTOCOL failure
// saying why and keeping the body's first 200 bytes. Unstrict, each is
// done as before.
func TestStrictAnswers(t *testing.T) {
	t.Parallel()
	long := `{"code":"DONE","note":"` + strings.Repeat("礼", 100) + `"}`
	cases := []struct {
		name    string
		status  int
		body    string // "$k" is the request's key
		cut     bool   // the connection closes before the whole body
		wantDup bool
		wantErr error // nil: done in strict mode too
		wantMsg string
		wantCls remote.Class // when not ClassProtocol
	}{
		{name: "echo", status: 200, body: `{"code":"DONE","idempotency_key":"$k"}`},
		{name: "409 echo", status: 409, body: `{"code":"ALREADY_DONE","idempotency_key":"$k"}`, wantDup: true},
		{name: "no echo", status: 200, body: `{"code":"DONE"}`, wantErr: remote.ErrNoEcho, wantMsg: `{"code":"DONE"}`},
		{name: "null echo", status: 200, body: `{"idempotency_key":null}`, wantErr: remote.ErrNoEcho,
			wantMsg: `{"idempotency_key":null}`},
		{name: "other key", status: 201, body: `{"idempotency_key":"uh1-00000000000000000000000000000000"}`,
			wantErr: remote.ErrOtherKey, wantMsg: `{"idempotency_key":"uh1-00000000000000000000000000000000"}`},
		{name: "empty", status: 200, body: "", wantErr: remote.ErrUnparseable, wantMsg: "empty body"},
		{name: "204", status: 204, body: "", wantErr: remote.ErrUnparseable, wantMsg: "empty body"},
		{name: "junk", status: 200, body: "<html>\n<p>It works!</p>", wantErr: remote.ErrUnparseable,
			wantMsg: "<html> <p>It works!</p>"},
		{name: "array", status: 200, body: `["$k"]`, wantErr: remote.ErrUnparseable},
		{name: "key not text", status: 200, body: `{"idempotency_key":7}`, wantErr: remote.ErrUnparseable},
		{name: "409 no echo", status: 409, body: `{"code":"ALREADY_DONE"}`, wantDup: true, wantErr: remote.ErrNoEcho,
			wantMsg: `{"code":"ALREADY_DONE"}`},
		{name: "long", status: 200, body: long, wantErr: remote.ErrNoEcho, wantMsg: long[:200] + "…"},
		{name: "cut short", status: 200, body: `{"idempotency_key":"$k"}`, cut: true, wantErr: io.ErrUnexpectedEOF,
			wantCls: remote.ClassConnection, wantMsg: "no answer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := strings.ReplaceAll(c.body, "$k", r.Header.Get("Idempotency-Key"))
				if c.cut {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)+10))
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, body)
			}))
			t.Cleanup(srv.Close)
			for _, strict := range []bool{false, true} {
				cl, err := remote.New(remote.Config{Type: "giftcard", URL: srv.URL, Strict: strict})
				if err != nil {
					t.Fatal(err)
				}
				res, err := cl.Release(context.Background(), call)
				if !strict || c.wantErr == nil {
					if err != nil || res.Duplicate != c.wantDup || res.Status != c.status {
						t.Errorf("strict %v: got %+v, %v; want done %d, duplicate %v", strict, res, err, c.status, c.wantDup)
					}
					continue
				}
				wantCls, wantStatus := c.wantCls, c.status
				if wantCls == "" {
					wantCls = remote.ClassProtocol
				} else {
					wantStatus = 0
				}
				var e *remote.Error
				if !errors.As(err, &e) || !errors.Is(err, c.wantErr) || e.Class != wantCls || e.Status != wantStatus ||
					e.Op != remote.OpRelease || (c.wantMsg != "" && e.Message != c.wantMsg) || !e.Retryable() {
					t.Errorf("strict: got %+v, %#v; want %s %d, %v, message %q", res, err, wantCls, wantStatus, c.wantErr, c.wantMsg)
				}
			}
		})
	}
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// A call is a POST of the documented body to {url}/{op}, with the key in
// the header too and the token when there is one.
func TestRequests(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, path, ctype, idem, auth string
		authSet                         bool
		body                            map[string]any
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{method: r.Method, path: r.URL.Path, ctype: r.Header.Get("Content-Type"),
			idem: r.Header.Get("Idempotency-Key"), auth: r.Header.Get("Authorization")}
		_, s.authSet = r.Header["Authorization"]
		if err := json.NewDecoder(r.Body).Decode(&s.body); err != nil {
			t.Errorf("body: %v", err)
		}
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	withToken := client(t, srv.URL+"/", 0, "s3cret")
	noToken := client(t, srv.URL, 0, "")
	late := remote.Call{OrderNo: "O-7", Key: "GC 1/é", Qty: 3, Epoch: 1, Trigger: "LATE_PAYMENT"}
	steps := []struct {
		do   func() (remote.Result, error)
		op   remote.Op
		c    remote.Call
		auth string
	}{
		{func() (remote.Result, error) { return withToken.Lock(ctx, call) }, remote.OpLock, call, "Bearer s3cret"},
		{func() (remote.Result, error) { return withToken.Deduct(ctx, call) }, remote.OpDeduct, call, "Bearer s3cret"},
		{func() (remote.Result, error) { return noToken.Release(ctx, late) }, remote.OpRelease, late, ""},
	}
	for i, s := range steps {
		res, err := s.do()
		key := remote.IdempotencyKey(s.c.OrderNo, "giftcard", s.c.Key, s.op, s.c.Epoch)
		if err != nil || res.IdempotencyKey != key || res.Status != 200 || res.Duplicate {
			t.Fatalf("%s: %+v, %v; want done with key %s", s.op, res, err, key)
		}
		mu.Lock()
		g := got[i]
		mu.Unlock()
		want := map[string]any{"idempotency_key": key, "order_no": s.c.OrderNo, "type": "giftcard", "key": s.c.Key,
			"qty": float64(s.c.Qty), "epoch": float64(s.c.Epoch), "trigger": s.c.Trigger}
		if g.method != http.MethodPost || g.path != "/"+string(s.op) || g.ctype != "application/json" || g.idem != key ||
			g.auth != s.auth || g.authSet != (s.auth != "") || len(g.body) != len(want) {
			t.Errorf("%s: saw %+v; want POST /%s, JSON, key %s, auth %q", s.op, g, s.op, key, s.auth)
		}
		for k, v := range want {
			if g.body[k] != v {
				t.Errorf("%s: body %s = %v, want %v", s.op, k, g.body[k], v)
			}
		}
	}
}

// A call that the service could only refuse, or for another type, is not
// sent; a caller's own key is sent as it is.
func TestCallsChecked(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	c := client(t, srv.URL, 0, "")
	bad := map[string]func(*remote.Call){
		"other type":  func(c *remote.Call) { c.Type = "coupon" },
		"no order":    func(c *remote.Call) { c.OrderNo = "" },
		"no key":      func(c *remote.Call) { c.Key = "" },
		"zero qty":    func(c *remote.Call) { c.Qty = 0 },
		"epoch -1":    func(c *remote.Call) { c.Epoch = -1 },
		"no trigger":  func(c *remote.Call) { c.Trigger = "" },
		"header key":  func(c *remote.Call) { c.IdempotencyKey = "k\r\nX-Evil: 1" },
		"long key":    func(c *remote.Call) { c.IdempotencyKey = strings.Repeat("k", 256) },
		"unicode key": func(c *remote.Call) { c.IdempotencyKey = "键" },
	}
	for name, spoil := range bad {
		cl := call
		spoil(&cl)
		_, err := c.Release(context.Background(), cl)
		var e *remote.Error
		if !errors.As(err, &e) || e.Class != remote.ClassRejected || !strings.HasPrefix(e.Message, "not sent: ") {
			t.Errorf("%s: got %v; want REMOTE_REJECTED, not sent", name, err)
		}
	}
	own := call
	own.IdempotencyKey, own.Type = "order-O-1-release", "giftcard"
	if res, err := c.Release(context.Background(), own); err != nil || res.IdempotencyKey != own.IdempotencyKey {
		t.Fatalf("own key: %+v, %v", res, err)
	}
	if len(keys) != 1 || keys[0] != own.IdempotencyKey {
		t.Fatalf("the service saw keys %q; want only %q", keys, own.IdempotencyKey)
	}
}

// A caller that gives up gets its context's error back: a stopping
// process is not the service's failure.
func TestCallerGivesUp(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // the server notices a gone client only after the body
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	c := client(t, srv.URL, time.Minute, "")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Release(ctx, call)
	var e *remote.Error
	if !errors.As(err, &e) || !errors.Is(err, context.Canceled) || e.Class != remote.ClassConnection {
		t.Errorf("cancelled: got %v; want CONNECTION wrapping context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Release(ctx, call)
	if !errors.As(err, &e) || !errors.Is(err, context.DeadlineExceeded) || e.Class != remote.ClassTimeout {
		t.Errorf("caller's deadline: got %v; want TIMEOUT wrapping context.DeadlineExceeded", err)
	}
}

// The key is a function of its five inputs only, differs when any of them
// does, and is header-safe; its derivation is the documented one.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	base := remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1001", remote.OpLock, 0)
	if base != "uh1-8f318ed1edafc48d1c97f20c09483bc2" {
		t.Errorf("key = %s; docs/remote-resources.md gives uh1-8f318ed1edafc48d1c97f20c09483bc2", base)
	}
	if again := remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1001", remote.OpLock, 0); again != base {
		t.Errorf("the same inputs gave %s, then %s", base, again)
	}
	others := []string{
		remote.IdempotencyKey("O-20261201-0008", "giftcard", "GC-1001", remote.OpLock, 0),
		remote.IdempotencyKey("O-20261201-0007", "coupon", "GC-1001", remote.OpLock, 0),
		remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1002", remote.OpLock, 0),
		remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1001", remote.OpDeduct, 0),
		remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1001", remote.OpRelease, 0),
		remote.IdempotencyKey("O-20261201-0007", "giftcard", "GC-1001", remote.OpLock, 1),
		// Fields run together the same way must not collide.
		remote.IdempotencyKey("O-20261201-0007g", "iftcard", "GC-1001", remote.OpLock, 0),
		remote.IdempotencyKey("O-20261201-0007", "giftcardGC-1001", "", remote.OpLock, 0),
	}
	seen := map[string]int{base: -1}
	format := regexp.MustCompile(`^uh1-[0-9a-f]{32}$`)
	for i, k := range others {
		if j, dup := seen[k]; dup {
			t.Errorf("inputs %d and %d share key %s", i, j, k)
		}
		seen[k] = i
		if !format.MatchString(k) {
			t.Errorf("key %q is not uh1- and 32 hex digits", k)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	bad := []remote.Config{
		{Type: "", URL: "http://127.0.0.1:9400"},
		{Type: " ", URL: "http://127.0.0.1:9400"},
		{Type: "giftcard", URL: ""},
		{Type: "giftcard", URL: "127.0.0.1:9400"},
		{Type: "giftcard", URL: "ftp://127.0.0.1"},
		{Type: "giftcard", URL: "http://"},
		{Type: "giftcard", URL: "http://u:p@127.0.0.1"},
		{Type: "giftcard", URL: "http://127.0.0.1?x=1"},
		{Type: "giftcard", URL: "http://127.0.0.1#x"},
		{Type: "giftcard", URL: "http://127.0.0.1", Timeout: -time.Second},
		{Type: "giftcard", URL: "http://127.0.0.1", Token: "a\nb"},
		{Type: "giftcard", URL: "http://127.0.0.1", Token: "a b"},
	}
	for _, cfg := range bad {
		if _, err := remote.New(cfg); err == nil {
			t.Errorf("New(%+v) passed; want an error", cfg)
		}
	}
	if _, err := remote.New(remote.Config{Type: "giftcard", URL: "https://gift.example:9400/api/"}); err != nil {
		t.Errorf("a base URL with a path: %v", err)
	}
}

// GET /holds/{key}: the escaped key, the answer checked, 404 as ErrNoHolds.
func TestHolds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		status    int
		body      string
		want      int64
		wantErr   error
		wantClass remote.Class
	}{
		{name: "held", status: 200, body: `{"key":"GC 1/é","held":3,"spent":9}`, want: 3},
		{name: "none held", status: 200, body: `{"key":"GC 1/é","held":0}`},
		{name: "not offered", status: 404, body: "404 page not found", wantErr: remote.ErrNoHolds},
		{name: "busy", status: 503, wantClass: remote.ClassBusy},
		{name: "refused", status: 403, wantClass: remote.ClassRejected},
		{name: "not JSON", status: 200, body: "<html>", wantClass: remote.ClassProtocol, wantErr: remote.ErrUnparseable},
		{name: "other key", status: 200, body: `{"key":"GC-2","held":3}`, wantClass: remote.ClassProtocol, wantErr: remote.ErrOtherKey},
		{name: "no key", status: 200, body: `{"held":3}`, wantClass: remote.ClassProtocol, wantErr: remote.ErrNoEcho},
		{name: "no held", status: 200, body: `{"key":"GC 1/é"}`, wantClass: remote.ClassProtocol, wantErr: remote.ErrUnparseable},
		{name: "negative", status: 200, body: `{"key":"GC 1/é","held":-1}`, wantClass: remote.ClassProtocol, wantErr: remote.ErrUnparseable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.EscapedPath() != "/holds/GC%201%2F%C3%A9" ||
					r.Header.Get("Authorization") != "Bearer tok" {
					t.Errorf("saw %s %s auth %q", r.Method, r.URL.EscapedPath(), r.Header.Get("Authorization"))
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			t.Cleanup(srv.Close)
			h, err := client(t, srv.URL, 0, "tok").Holds(context.Background(), "GC 1/é")
			var e *remote.Error
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("got %+v, %v; want %v", h, err, c.wantErr)
			}
			switch {
			case c.wantClass != "":
				if !errors.As(err, &e) || e.Class != c.wantClass {
					t.Errorf("got %+v, %v; want class %s", h, err, c.wantClass)
				}
			case c.wantErr != nil:
			case err != nil || h.Key != "GC 1/é" || h.Held != c.want:
				t.Errorf("got %+v, %v; want held %d", h, err, c.want)
			}
		})
	}
}
