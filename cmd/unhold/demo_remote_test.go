package main

import (
	"context"
	"net"
	"net/url"
	"reflect"
	"testing"
	"time"

	"unhold/config"
	"unhold/jobs"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote/remotetest"
)

// serve --demo adds gift wrap and a remote gift-card type served on the
// loopback, but only where the resources file has not declared the names.
func TestDemoAddsItsTypesUnlessDeclared(t *testing.T) {
	t.Parallel()
	log := modelstest.QuietLog()
	plain, d, err := demoRemote(config.Config{}, log)
	if err != nil || d != nil || len(plain.Resources) != 0 {
		t.Fatalf("without --demo: %v, service %v, types %v", err, d, plain.Resources)
	}
	own := config.DeclaredResource{Type: demoGiftCard, Kind: config.KindCounter, Label: config.ResourceLabel{ZH: "卡", EN: "Card"}}
	cfg, d, err := demoRemote(config.Config{Demo: true, Resources: []config.DeclaredResource{own}}, log)
	if err != nil || d != nil {
		t.Fatalf("with giftcard declared: %v, service %v", err, d)
	}
	if len(cfg.Resources) != 2 || !reflect.DeepEqual(cfg.Resources[0], own) || cfg.Resources[1].Type != demoGiftWrap {
		t.Fatalf("with giftcard declared, types = %+v", cfg.Resources)
	}
}

// The demo shop places orders holding gift wrap and gift cards against its
// flaky service: placements aborted, calls retried and answered twice.
// Once the outbox is drained every gift-card hold has been released or
// deducted exactly once, at the service as in unhold's ledger, and a
// service started again agrees with it after replaying the ledger.
func TestDemoGiftCardsReleasedOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a demo shop of 900 orders against a flaky service: tens of seconds")
	}
	t.Parallel()
	ctx := context.Background()
	log := modelstest.QuietLog()
	dsn := modelstest.MigratedDSN(t, models.SQLite)
	cfg, d, err := demoRemote(config.Config{Demo: true, DB: dsn}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("the gift-card service listens on %s, want 127.0.0.1", d.url)
	}
	opt, err := storeOptions(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	s, err := models.Open(ctx, dsn, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for typ, kind := range map[models.ResourceType]models.ResourceKind{demoGiftWrap: models.KindCounter, demoGiftCard: models.KindRemote} {
		if r := s.Resource(typ); r == nil || r.Kind() != kind {
			t.Fatalf("%s is not registered as a %s type", typ, kind)
		}
	}
	if err := d.replay(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := demoShop(ctx, dsn, opt, 900, demoTestEnd(), log); err != nil {
		t.Fatal(err)
	}
	count := func(query string, args ...any) int64 {
		t.Helper()
		var n int64
		if err := s.R.Raw(query, args...).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	for what, n := range map[string]int64{
		"gift-wrap holds":    count(`SELECT COUNT(*) FROM order_holds WHERE resource_type = ?`, demoGiftWrap),
		"placements aborted": count(`SELECT COUNT(*) FROM orders WHERE close_reason = ?`, models.TriggerPlaceAborted),
		"gift-card deducts":  count(`SELECT COUNT(*) FROM release_tasks WHERE resource_type = ? AND op = 'DEDUCT'`, demoGiftCard),
		"gift-card retries": count(`SELECT COUNT(*) FROM task_attempts a JOIN release_tasks t ON t.id = a.task_id
			WHERE t.resource_type = ? AND a.outcome = ?`, demoGiftCard, models.OutcomeRetry),
	} {
		if n == 0 {
			t.Errorf("the demo has no %s", what)
		}
	}

	// Drain what is left, without faults, at a time when every retry is due.
	d.svc.SetFaults(remotetest.Faults{})
	later := opt
	later.Now = func() time.Time { return time.Now().Add(30 * 24 * time.Hour) }
	ls, err := models.Open(ctx, dsn, later)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	jobs.NewWorker(ls, "drain", 100, 30*time.Second, log).Drain(ctx)
	if n := count(`SELECT COUNT(*) FROM release_tasks WHERE resource_type = ? AND status <> ?`, demoGiftCard, models.TaskDone); n != 0 {
		t.Fatalf("%d gift-card tasks not DONE after the drain", n)
	}
	if n := count(`SELECT COUNT(*) FROM order_holds h JOIN orders o ON o.order_no = h.order_no
		WHERE h.resource_type = ? AND o.status <> ? AND h.released + h.deducted <> h.qty`, demoGiftCard, models.OrderPending); n != 0 {
		t.Fatalf("%d gift-card holds of finished orders not released or deducted in full", n)
	}
	if _, err := ls.RunReconciliation(ctx, models.ReconByCLI, "test"); err != nil {
		t.Fatal(err)
	}
	open, err := ls.ListDiffs(ctx, models.DiffFilter{Resource: demoGiftCard, Statuses: []string{models.DiffOpen}})
	if err != nil || len(open) != 0 {
		t.Fatalf("open gift-card tickets %+v, %v", open, err)
	}

	// What the service holds and has spent of each card is what unhold's
	// ledger says: every lock that took was released or deducted once.
	stocks := map[string]remotetest.Stock{}
	for i := range demoGiftCards {
		key := demoCardKey(i)
		st := d.svc.Stock(key)
		stocks[key] = st
		held := count(`SELECT COALESCE(SUM(h.qty - h.released - h.deducted), 0) FROM order_holds h
			JOIN orders o ON o.order_no = h.order_no WHERE h.resource_type = ? AND h.biz_key = ? AND o.status = ?`,
			demoGiftCard, key, models.OrderPending)
		spent := count(`SELECT COALESCE(SUM(qty), 0) FROM remote_flows WHERE resource_type = ? AND biz_key = ? AND type = 'DEDUCT'`,
			demoGiftCard, key)
		if st.Held != held || st.Spent != spent || st.Available+st.Held+st.Spent != demoCardBalance {
			t.Errorf("%s at the service %+v; the ledger says held %d, spent %d of %d", key, st, held, spent, demoCardBalance)
		}
	}

	// A demo served again replays the ledger into its new service.
	again, err := startDemoService(log)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.replay(ctx, s); err != nil {
		t.Fatal(err)
	}
	for key, want := range stocks {
		if got := again.svc.Stock(key); got != want {
			t.Errorf("%s after the replay %+v, want %+v", key, got, want)
		}
	}
}
