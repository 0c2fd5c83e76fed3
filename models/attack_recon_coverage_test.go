package models_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// Attack (issue 22, "never clean by silence"): a service that answers GET
// /holds for some keys and 404 for one — say it 404s a key it does not
// know, as many REST services do — evidently offers the endpoint. Yet one
// 404 anywhere in the run makes remoteResource.holds return ErrNoHolds and
// throws the other keys' answers away: the type is recorded "HELD check
// not offered", the run ends DONE, and card-1's real difference (the
// service says it holds 9 where unhold expects 3) is never reported.
// A hostile or sloppy service hides every HELD diff by 404-ing one key.
// Wants: the 404-ed key skipped (the run PARTIAL) and card-1's HELD diff
// found.
func TestAttack22HoldsNotFoundHalfWayReadsClean(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var override atomic.Pointer[holdsOverride]
		e := newSkipEnv(t, d, &override)
		must(t, func() error { return e.place("o-1", "card-1", 3) })
		must(t, func() error { return e.place("o-2", "card-2", 2) })
		must(t, func() error { return e.place("o-3", "card-3", 1) })
		e.clock.Advance(time.Minute)
		half := holdsOverride(func(key string) (int, string, bool) {
			switch key {
			case "card-1":
				return http.StatusOK, `{"key":"card-1","held":9}`, true
			case "card-3":
				return http.StatusNotFound, `{"code":"NO_SUCH_KEY"}`, true
			}
			return 0, "", false
		})
		override.Store(&half)
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		must(t, func() error {
			return e.s.R.Model(&models.DiffTicket{}).Where("biz_key = 'card-1' AND status <> 'RESOLVED' AND kind = 'DIFF'").
				Count(&held).Error
		})
		if run.Status != models.ReconPartial || held == 0 {
			t.Fatalf("run %s, coverage %q, open diff tickets of card-1: %d; want PARTIAL (card-3 skipped) "+
				"and card-1's HELD diff (service 9, expected 3) reported", run.Status, coverage(t, run), held)
		}
	})
}

// Attack (issue 22): a type whose keys a run never read — the run's time
// for services ran out on an earlier type's slow GET /holds, so the type's
// own read of its keys, made on that time, failed — was recorded as read
// by no one and the run was PARTIAL, but none of its keys got a streak
// (keepStreaks only lengthened streaks that already existed), so run after
// run it never got an UNCHECKED ticket; unhold_recon_skipped_keys read 0
// for it (ReconCoverage.Skipped counted none of its keys) and
// unhold_recon_unchecked_since_timestamp_seconds had no value
// (UncheckedSince reads the streaks): the alert stayed quiet forever. Here
// giftcard's service hangs on GET /holds, and voucher's card is never
// compared run after run. Wants: each run skips voucher's key as NO_ANSWER
// (not asked: unhold's own reads do not run on the services' time), and
// after -recon-unchecked-after such runs the key has an UNCHECKED ticket
// and counts as unchecked since the first.
func TestAttack22TimedOutTypeNeverUnchecked(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		const voucher models.ResourceType = "voucher"
		hang := remotetest.New(remotetest.Options{Seed: 7})
		hsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/holds/") {
				<-r.Context().Done()
				return
			}
			hang.ServeHTTP(w, r)
		}))
		t.Cleanup(hsrv.Close)
		vsvc := remotetest.New(remotetest.Options{Seed: 8})
		vsrv := httptest.NewServer(vsvc)
		t.Cleanup(vsrv.Close)
		gc, err := remote.New(remote.Config{Type: string(giftCard), URL: hsrv.URL, Timeout: 10 * time.Second, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		vc, err := remote.New(remote.Config{Type: string(voucher), URL: vsrv.URL, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		clock := modelstest.NewClock()
		// Two runs make a streak: each run waits out the hang, so no more
		// than the streak needs.
		const after = 2
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Logger: modelstest.QuietLog(), ReconUncheckedAfter: after, Remote: []models.RemoteType{
			{Type: giftCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: gc},
			{Type: voucher, Label: models.Label{Zh: "券", En: "Voucher"}, Client: vc}}})
		ctx := t.Context()
		hang.SetAvailable("card-1", 10)
		vsvc.SetAvailable("v-1", 10)
		must(t, func() error { _, err := s.SetStock(ctx, "sku-1", 10, 0, "test"); return err })
		_, _, err = s.PlaceOrder(ctx, models.PlaceRequest{OrderNo: "o-v", UserID: "u1", Items: []models.Item{{SkuID: "sku-1", Qty: 1}},
			Holds: []models.HoldRequest{{Type: giftCard, Key: "card-1", Qty: 1}, {Type: voucher, Key: "v-1", Qty: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		for i := 1; i <= after; i++ {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			run, err := s.RunReconciliation(rctx, models.ReconByCron, "test")
			cancel()
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			var vcov models.ReconCoverage
			for _, c := range run.Coverage {
				if c.ResourceType == voucher {
					vcov = c
				}
			}
			if run.Status != models.ReconPartial || vcov.NoAnswer != 1 || vcov.Compared != 0 {
				t.Fatalf("run %d: %s, voucher coverage %+v; want PARTIAL, voucher's key skipped as NO_ANSWER", i, run.Status, vcov)
			}
			clock.Advance(time.Hour)
		}
		var tickets int64
		must(t, func() error {
			return s.R.Model(&models.DiffTicket{}).Where("kind = ? AND resource_type = ? AND status <> 'RESOLVED'",
				models.TicketUnchecked, voucher).Count(&tickets).Error
		})
		since, err := s.UncheckedSince(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := since[voucher]; tickets == 0 || !ok {
			t.Fatalf("after %d runs that never read voucher's keys: %d UNCHECKED tickets of voucher, unchecked since %v; "+
				"want v-1's ticket and a time (the alert's input)", after, tickets, since)
		}
	})
}

// A service that 404s more than a wave of keys before it answers one: the
// 404s are quick answers, not failures, so they do not stop the questions
// as a wave of timeouts does. Were they to, the keys after them would go
// unasked, every key asked would have got a 404, and the type would read
// "HELD check not offered", DONE — card-z's diff hidden by 404-ing the
// keys that sort before it. Breaks if a 404 counted toward a failed wave.
func TestAttack22HoldsNotFoundWaveStillAsksTheRest(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var override atomic.Pointer[holdsOverride]
		e := newSkipEnv(t, d, &override)
		must(t, func() error { _, err := e.s.SetStock(e.ctx, "sku-1", 30, 0, "test"); return err })
		for i := range 20 {
			key := fmt.Sprintf("card-a%02d", i)
			e.svc.SetAvailable(key, 10)
			must(t, func() error { return e.place("o-"+key, key, 1) })
		}
		e.svc.SetAvailable("card-z", 10)
		must(t, func() error { return e.place("o-z", "card-z", 3) })
		e.clock.Advance(time.Minute)
		front := holdsOverride(func(key string) (int, string, bool) {
			switch {
			case key == "card-z":
				return http.StatusOK, `{"key":"card-z","held":9}`, true
			case strings.HasPrefix(key, "card-a"):
				return http.StatusNotFound, `{"code":"NO_SUCH_KEY"}`, true
			}
			return 0, "", false
		})
		override.Store(&front)
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil {
			t.Fatal(err)
		}
		var held int64
		must(t, func() error {
			return e.s.R.Model(&models.DiffTicket{}).Where("biz_key = 'card-z' AND status <> 'RESOLVED' AND kind = 'DIFF'").
				Count(&held).Error
		})
		if run.Status != models.ReconPartial || coverage(t, run) != "compared=1 REFUSED=20" || held == 0 {
			t.Fatalf("run %s, coverage %q, open diff tickets of card-z: %d; want PARTIAL, compared=1 REFUSED=20, "+
				"and card-z's HELD diff (service 9, expected 3)", run.Status, coverage(t, run), held)
		}
	})
}
