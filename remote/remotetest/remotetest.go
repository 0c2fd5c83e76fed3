// Package remotetest is a fake of the service docs/remote-resources.md
// describes, for tests and the demo shop: an http.Handler that keeps holds
// per key in memory and honours the protocol — idempotency keys, the empty
// rollback and the refusal of a lock that comes after it, short locks — and
// fails on request: slow answers, 503s, dropped connections, fixed answers.
//
// It is written from the document, not from the client in package remote,
// so that a test of one against the other checks both against the text.
package remotetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure a Service.
type Options struct {
	// Token, when set, must come as "Authorization: Bearer <Token>" on
	// every request; a request without it is answered 401.
	Token string
	// NoHolds makes GET /holds/{key} answer 404, as a service that does
	// not offer it.
	NoHolds bool
	// Seed seeds the draws of Faults' rates, so that a run repeats.
	Seed uint64
	// NoEcho leaves idempotency_key out of the answers to lock, deduct
	// and release, as a service written before the protocol asked for it
	// (a type declared strict: false).
	NoEcho bool
}

// Faults are the failures a Service injects, each drawn for each request
// on its own. A zero Faults injects none.
type Faults struct {
	// SlowRate is the fraction of requests answered only after Delay. A
	// slow call is applied after the delay even when its caller has gone,
	// as a slow service would.
	SlowRate float64
	Delay    time.Duration
	// BusyRate is the fraction of requests answered 503 with nothing done.
	BusyRate float64
	// DropRate is the fraction of requests whose connection is closed
	// without an answer: before anything is done, or, with DropAfterApply,
	// after the call was applied, so the caller cannot tell the two apart.
	DropRate       float64
	DropAfterApply bool
}

// Answer is a fixed answer for Next: Status with Body (sent as JSON), or a
// dropped connection. Nothing is applied.
type Answer struct {
	Status int
	Body   string
	Drop   bool
}

// Stock is one key's amounts: free to lock, held for orders, spent.
type Stock struct {
	Available, Held, Spent int64
}

// holdID names one order's hold of a key in one epoch: one lock, and the
// deductions and releases of what it locked.
type holdID struct {
	orderNo, key string
	epoch        int
}

// request is a call as the service compares it with an earlier one of the
// same idempotency key. The trigger is left out: it says why the call was
// made, and a rerun may send the same operation for another reason.
type request struct {
	op, orderNo, typ, key string
	qty                   int64
	epoch                 int
}

// Service is the fake. Make it with New; it is safe for concurrent use.
type Service struct {
	opts Options

	mu     sync.Mutex
	rng    *rand.Rand
	faults Faults
	next   []Answer
	calls  map[string]int     // requests seen per Idempotency-Key header
	done   map[string]request // idempotency key → the call it did
	stock  map[string]*Stock  // per key
	holds  map[holdID]int64   // per hold locked, what it still holds
	empty  map[holdID]bool    // holds released before any lock: no lock may follow
}

// New makes a Service holding nothing, with no faults.
func New(opts Options) *Service {
	return &Service{
		opts:  opts,
		rng:   rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		calls: map[string]int{},
		done:  map[string]request{},
		stock: map[string]*Stock{},
		holds: map[holdID]int64{},
		empty: map[holdID]bool{},
	}
}

// SetAvailable sets how much of key is free to lock.
func (s *Service) SetAvailable(key string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stockOf(key).Available = n
}

// SetHeld sets how much of key is held, as a hand edit behind its
// callers' backs would: the orders' holds are left as they were, so a
// reconciliation of what the service holds must find the difference.
func (s *Service) SetHeld(key string, n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stockOf(key).Held = n
}

// Stock is key's amounts now.
func (s *Service) Stock(key string) Stock {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.stockOf(key)
}

// Calls is how many requests came with idempotency key k, whatever they
// were answered, dropped ones included: a caller's retry shows as a second.
func (s *Service) Calls(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[k]
}

// SetFaults replaces the faults injected from the next request on.
func (s *Service) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
}

// Next makes the next n requests, after those already queued, get a.
// It panics on an answer that is neither a drop nor a valid status.
func (s *Service) Next(n int, a Answer) {
	if !a.Drop && (a.Status < 200 || a.Status > 599) {
		panic(fmt.Sprintf("remotetest: Next with status %d", a.Status))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.next = append(s.next, a)
	}
}

func (s *Service) stockOf(key string) *Stock {
	st := s.stock[key]
	if st == nil {
		st = &Stock{}
		s.stock[key] = st
	}
	return st
}

// fate is what the faults decided for one request.
type fate struct {
	fixed            *Answer
	slow, busy, drop bool
	delay            time.Duration
	dropAfterApply   bool
}

// draw counts the request and decides its fate.
func (s *Service) draw(r *http.Request) fate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		s.calls[k]++
	}
	if len(s.next) > 0 {
		a := s.next[0]
		s.next = s.next[1:]
		return fate{fixed: &a}
	}
	f := s.faults
	return fate{
		slow:           s.rng.Float64() < f.SlowRate,
		busy:           s.rng.Float64() < f.BusyRate,
		drop:           s.rng.Float64() < f.DropRate,
		delay:          f.Delay,
		dropAfterApply: f.DropAfterApply,
	}
}

// ServeHTTP answers POST /lock, /deduct, /release and GET /holds/{key}.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := s.draw(r)
	switch {
	case f.fixed != nil && f.fixed.Drop:
		drop(w)
		return
	case f.fixed != nil:
		writeRaw(w, f.fixed.Status, f.fixed.Body)
		return
	}
	if f.slow {
		time.Sleep(f.delay)
	}
	switch {
	case f.busy:
		write(w, http.StatusServiceUnavailable, "BUSY", "injected: the service is busy")
		return
	case f.drop && !f.dropAfterApply:
		drop(w)
		return
	}
	if s.opts.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Token {
		write(w, http.StatusUnauthorized, "UNAUTHORIZED", "no or wrong bearer token")
		return
	}
	var status int
	var body string
	switch op := strings.TrimPrefix(r.URL.Path, "/"); {
	case op == "lock" || op == "deduct" || op == "release":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			write(w, http.StatusMethodNotAllowed, "METHOD", "use POST")
			return
		}
		status, body = s.call(w, r, op)
	case strings.HasPrefix(op, "holds/") && len(op) > len("holds/") && !s.opts.NoHolds:
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			write(w, http.StatusMethodNotAllowed, "METHOD", "use GET")
			return
		}
		status, body = s.holdsOf(strings.TrimPrefix(op, "holds/"))
	default:
		write(w, http.StatusNotFound, "NOT_FOUND", "no such endpoint")
		return
	}
	if f.drop {
		drop(w)
		return
	}
	writeRaw(w, status, body)
}

// maxBody bounds a call's body: the protocol's is a few hundred bytes.
const maxBody = 64 << 10

// call parses, checks and applies one call, and says what to answer.
func (s *Service) call(w http.ResponseWriter, r *http.Request, op string) (int, string) {
	var c struct {
		IdempotencyKey *string `json:"idempotency_key"`
		OrderNo        *string `json:"order_no"`
		Type           *string `json:"type"`
		Key            *string `json:"key"`
		Qty            *int64  `json:"qty"`
		Epoch          *int    `json:"epoch"`
		Trigger        *string `json:"trigger"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return answer(http.StatusBadRequest, "BAD_BODY", "the body is not the protocol's JSON: "+err.Error())
	}
	if c.IdempotencyKey == nil || c.OrderNo == nil || c.Type == nil || c.Key == nil || c.Qty == nil ||
		c.Epoch == nil || c.Trigger == nil {
		return answer(http.StatusBadRequest, "BAD_BODY",
			"the body needs idempotency_key, order_no, type, key, qty, epoch and trigger")
	}
	// Every answer from here on echoes the call's key, so that the caller
	// can tell it is the answer to its own call.
	reply := func(status int, code, message string) (int, string) {
		if s.opts.NoEcho {
			return answer(status, code, message)
		}
		return echo(status, code, message, *c.IdempotencyKey)
	}
	switch {
	case *c.IdempotencyKey == "" || r.Header.Get("Idempotency-Key") != *c.IdempotencyKey:
		return reply(http.StatusBadRequest, "KEY_MISMATCH", "the Idempotency-Key header and idempotency_key differ or are empty")
	case *c.OrderNo == "" || *c.Type == "" || *c.Key == "" || *c.Trigger == "":
		return reply(http.StatusBadRequest, "BAD_BODY", "order_no, type, key and trigger must not be empty")
	case *c.Qty <= 0 || *c.Epoch < 0:
		return reply(http.StatusBadRequest, "BAD_BODY", "qty must be positive and epoch not negative")
	}
	req := request{op: op, orderNo: *c.OrderNo, typ: *c.Type, key: *c.Key, qty: *c.Qty, epoch: *c.Epoch}
	id := holdID{orderNo: req.orderNo, key: req.key, epoch: req.epoch}

	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.done[*c.IdempotencyKey]; ok {
		if prev != req {
			return reply(http.StatusUnprocessableEntity, "KEY_REUSED", "this idempotency key was used for another call")
		}
		return reply(http.StatusConflict, "ALREADY_DONE", "done before with this idempotency key")
	}
	st := s.stockOf(req.key)
	held, locked := s.holds[id]
	code := "DONE"
	switch op {
	case "lock":
		switch {
		case s.empty[id]:
			return reply(http.StatusConflict, "RELEASED_BEFORE_LOCK",
				fmt.Sprintf("order %s released %s (epoch %d) before locking it: no lock may follow", req.orderNo, req.key, req.epoch))
		case locked:
			return reply(http.StatusConflict, "LOCKED",
				fmt.Sprintf("order %s has locked %s (epoch %d) already", req.orderNo, req.key, req.epoch))
		case st.Available < req.qty:
			return reply(http.StatusUnprocessableEntity, "SHORT",
				fmt.Sprintf("%d of %s asked, %d available", req.qty, req.key, st.Available))
		}
		st.Available -= req.qty
		st.Held += req.qty
		s.holds[id] = req.qty
	case "deduct":
		if held < req.qty {
			return reply(http.StatusUnprocessableEntity, "NOT_HELD",
				fmt.Sprintf("order %s holds %d of %s (epoch %d), not %d", req.orderNo, held, req.key, req.epoch, req.qty))
		}
		st.Held -= req.qty
		st.Spent += req.qty
		s.holds[id] = held - req.qty
	case "release":
		switch {
		case !locked:
			// The empty rollback: nothing to give back, and it is done.
			s.empty[id] = true
			code = "EMPTY_ROLLBACK"
		case held < req.qty:
			return reply(http.StatusUnprocessableEntity, "NOT_HELD",
				fmt.Sprintf("order %s holds %d of %s (epoch %d), not %d", req.orderNo, held, req.key, req.epoch, req.qty))
		default:
			st.Held -= req.qty
			st.Available += req.qty
			s.holds[id] = held - req.qty
		}
	}
	s.done[*c.IdempotencyKey] = req
	return reply(http.StatusOK, code, "")
}

// holdsOf answers GET /holds/{key}: every key is known, one never set
// holding 0.
func (s *Service) holdsOf(key string) (int, string) {
	s.mu.Lock()
	st := *s.stockOf(key)
	s.mu.Unlock()
	b, _ := json.Marshal(struct { // strings and integers always marshal
		Key       string `json:"key"`
		Held      int64  `json:"held"`
		Available int64  `json:"available"`
		Spent     int64  `json:"spent"`
	}{key, st.Held, st.Available, st.Spent})
	return http.StatusOK, string(b)
}

// answer is a status with the protocol's {"code", "message"} body.
func answer(status int, code, message string) (int, string) {
	b, _ := json.Marshal(struct { // strings always marshal
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	}{code, message})
	return status, string(b)
}

// echo is answer with the call's idempotency key echoed.
func echo(status int, code, message, key string) (int, string) {
	b, _ := json.Marshal(struct { // strings always marshal
		Code           string `json:"code"`
		Message        string `json:"message,omitempty"`
		IdempotencyKey string `json:"idempotency_key"`
	}{code, message, key})
	return status, string(b)
}

func write(w http.ResponseWriter, status int, code, message string) {
	status, body := answer(status, code, message)
	writeRaw(w, status, body)
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// drop closes the request's connection without an answer. Where the
// connection cannot be taken over (HTTP/2), aborting the handler resets
// the stream instead.
func drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}
