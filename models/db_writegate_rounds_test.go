package models

import (
	"context"
	"testing"
	"time"
)

// With several turns (PostgreSQL's Writers), turns go in rounds of one
// line: while the worker waits no request joins the requests' round, the
// worker's round starts once the requests in it have left, and no request
// writes during it; pools of the worker write at once when no request
// waits, as requests do when the worker does not.
func TestWriteGateRounds(t *testing.T) {
	t.Parallel()
	g := newWriteGate(nil, time.Minute, 2)
	worker := ReleasePriority(context.Background())
	request := context.Background()
	queued := func(line, n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			g.mu.Lock()
			got := len(g.lines[line])
			g.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("line %d holds %d writers, want %d", line, got, n)
			}
		}
	}
	enter := func(ctx context.Context) chan error {
		got := make(chan error, 1)
		go func() { got <- g.enter(ctx) }()
		return got
	}
	in := func(name string, c chan error) {
		t.Helper()
		select {
		case err := <-c:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s got no turn", name)
		}
	}
	out := func(name string, c chan error) {
		t.Helper()
		select {
		case err := <-c:
			t.Fatalf("%s got a turn (%v); want it to wait", name, err)
		case <-time.After(20 * time.Millisecond):
		}
	}

	r1, r2 := enter(request), enter(request)
	in("first request", r1)
	in("second request, beside the first", r2)
	w1 := enter(worker)
	queued(1, 1)
	r3 := enter(request)
	queued(0, 1)
	g.leave() // the first request
	out("worker, while a request writes", w1)
	out("third request, while the worker waits", r3)
	g.leave() // the second request
	in("worker, once the requests left", w1)
	out("third request, during the worker's round", r3)
	w2 := enter(worker)
	queued(1, 1)
	g.leave() // the worker
	in("third request, the round after the worker's", r3)
	out("second pool, while a request writes", w2)
	g.leave() // the third request
	in("second pool", w2)
	w3 := enter(worker)
	in("third pool, beside the second with no request waiting", w3)
	g.leave()
	g.leave()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held != 0 || len(g.lines[0])+len(g.lines[1]) != 0 {
		t.Fatalf("after everyone left: %d turns held, %d and %d waiting", g.held, len(g.lines[0]), len(g.lines[1]))
	}
}
