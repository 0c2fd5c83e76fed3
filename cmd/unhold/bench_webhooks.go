package main

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// benchSubscriber is unhold bench's webhook subscriber (-webhook-delay):
// it answers 200 after its delay, so the bench shows that a slow
// subscriber does not slow releases, and counts the requests it answered.
type benchSubscriber struct {
	delay time.Duration
	got   atomic.Int64
	srv   *http.Server
	url   string
}

// startBenchSubscriber serves on a loopback port of its own.
func startBenchSubscriber(delay time.Duration) (*benchSubscriber, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sb := &benchSubscriber{delay: delay, url: "http://" + ln.Addr().String() + "/hook"}
	sb.srv = &http.Server{Handler: sb, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := sb.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ln.Close()
		}
	}()
	return sb, nil
}

func (sb *benchSubscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-time.After(sb.delay):
	case <-r.Context().Done():
		return
	}
	sb.got.Add(1)
	w.WriteHeader(http.StatusOK)
}

// Close stops it; a request still waiting is cut off.
func (sb *benchSubscriber) Close() error { return sb.srv.Close() }
