package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"unhold/config"
	"unhold/models"
	"unhold/remote/remotetest"
)

// The demo shop's own resource types, added by serve --demo unless the
// resources file declares types of these names: a declared counter, and a
// remote type kept by a flaky gift-card service this process serves.
const (
	demoGiftWrap models.ResourceType = "gift_wrap"
	demoGiftCard models.ResourceType = "giftcard"
)

// demoGiftCards are the gift cards the demo service knows, each with
// demoCardBalance (in cents) to lock from.
const (
	demoGiftCards   = 8
	demoCardBalance = 100_000_000
)

// The demo service fails often enough that the dashboard shows each way a
// call can fail: a slow answer past the call's timeout (TIMEOUT), a 503
// (REMOTE_BUSY), and a connection dropped after the call was applied
// (CONNECTION, then 409 ALREADY_DONE on the retry: a DUPLICATE). The
// timeout is short so that seeding the demo does not wait long on them.
const demoRemoteTimeout = 500 * time.Millisecond

var demoRemoteFaults = remotetest.Faults{
	SlowRate:       0.08,
	Delay:          3 * demoRemoteTimeout,
	BusyRate:       0.05,
	DropRate:       0.02,
	DropAfterApply: true,
}

// demoCardKey is the key of the demo's i-th gift card.
func demoCardKey(i int) string { return fmt.Sprintf("GC-%04d", 1001+i) }

// demoService is the demo's gift-card service: a remotetest.Service served
// on the loopback, on a port of its own, until Close.
type demoService struct {
	svc  *remotetest.Service
	srv  *http.Server
	url  string
	done chan struct{}
}

// startDemoService serves a gift-card service holding nothing, with every
// card's balance available and no faults yet (see replay).
func startDemoService(log *slog.Logger) (*demoService, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo gift-card service: %w", err)
	}
	svc := remotetest.New(remotetest.Options{Seed: 2026})
	for i := range demoGiftCards {
		svc.SetAvailable(demoCardKey(i), demoCardBalance)
	}
	d := &demoService{
		svc: svc,
		srv: &http.Server{
			Handler:           svc,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
		url:  "http://" + ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(d.done)
		if err := d.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("demo gift-card service stopped", slog.Any("err", err))
		}
	}()
	return d, nil
}

// Close stops the service once its calls in flight (a slow one sleeps
// past its caller's timeout) have finished.
func (d *demoService) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*demoRemoteFaults.Delay)
	defer cancel()
	err := d.srv.Shutdown(ctx)
	<-d.done
	return err
}

// withDemoTypes is cfg with the demo's types added where its resources
// file does not declare them; giftcard's service is at url.
func withDemoTypes(cfg config.Config, url string) config.Config {
	has := func(t models.ResourceType) bool {
		return slices.ContainsFunc(cfg.Resources, func(r config.DeclaredResource) bool { return r.Type == t })
	}
	rs := slices.Clone(cfg.Resources)
	if !has(demoGiftWrap) {
		rs = append(rs, config.DeclaredResource{Type: demoGiftWrap, Kind: config.KindCounter,
			Label: config.ResourceLabel{ZH: "礼品包装", EN: "Gift wrap"}})
	}
	if !has(demoGiftCard) {
		rs = append(rs, config.DeclaredResource{Type: demoGiftCard, Kind: config.KindRemote,
			Label: config.ResourceLabel{ZH: "礼品卡", EN: "Gift card"}, URL: url, Timeout: demoRemoteTimeout, Strict: true})
	}
	cfg.Resources = rs
	return cfg
}

// demoRemote starts the demo's gift-card service when --demo asks for the
// demo and the resources file does not declare a giftcard type of its
// own, and returns cfg with the demo's types; the service is nil when
// not started.
func demoRemote(cfg config.Config, log *slog.Logger) (config.Config, *demoService, error) {
	if !cfg.Demo {
		return cfg, nil, nil
	}
	if slices.ContainsFunc(cfg.Resources, func(r config.DeclaredResource) bool { return r.Type == demoGiftCard }) {
		return withDemoTypes(cfg, ""), nil, nil
	}
	d, err := startDemoService(log)
	if err != nil {
		return cfg, nil, err
	}
	return withDemoTypes(cfg, d.url), d, nil
}

// replay gives the service, which forgets everything when the process
// ends, back the calls the database's ledger says were sent to it, in
// their order and with their idempotency keys, and then turns its faults
// on. A demo database served again then agrees with its service: holds
// still locked stay locked, and a retry of a call done before is answered
// 409 ALREADY_DONE as it would have been.
func (d *demoService) replay(ctx context.Context, s *models.Store) error {
	var rows []struct {
		OrderNo, BizKey, Type, TriggerType, IdempotencyKey string
		Epoch                                              int
		Qty                                                int64
	}
	err := s.R.WithContext(ctx).Raw(`SELECT order_no, biz_key, type, trigger_type, idempotency_key, epoch, qty
		FROM remote_flows WHERE resource_type = ? ORDER BY id`, demoGiftCard).Scan(&rows).Error
	if err != nil {
		return fmt.Errorf("demo gift-card service: %w", err)
	}
	for _, r := range rows {
		body, _ := json.Marshal(map[string]any{ // strings and integers always marshal
			"idempotency_key": r.IdempotencyKey, "order_no": r.OrderNo, "type": demoGiftCard, "key": r.BizKey,
			"qty": r.Qty, "epoch": r.Epoch, "trigger": r.TriggerType,
		})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url+"/"+strings.ToLower(r.Type), bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("demo gift-card service: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", r.IdempotencyKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("demo gift-card service: replay: %w", err)
		}
		res.Body.Close()
	}
	d.svc.SetFaults(demoRemoteFaults)
	return nil
}
