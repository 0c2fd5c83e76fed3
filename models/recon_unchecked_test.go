package models_test

import (
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

// holdsOverride answers GET /holds/{key} in place of the fake service:
// status and body, or ok false to let the service answer.
type holdsOverride func(key string) (status int, body string, ok bool)

// newSkipEnv is newRemoteEnv whose GET /holds answers an override may
// replace while it is set.
func newSkipEnv(t *testing.T, d models.Dialect, override *atomic.Pointer[holdsOverride]) remoteEnv {
	t.Helper()
	svc := remotetest.New(remotetest.Options{Seed: 7})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := override.Load(); o != nil && strings.HasPrefix(r.URL.Path, "/holds/") {
			if status, body, ok := (*o)(strings.TrimPrefix(r.URL.Path, "/holds/")); ok {
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
				return
			}
		}
		svc.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(giftCard), URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, remoteStoreOptions(clock, client, nil))
	e := remoteEnv{bundle: bundle{s: s, clock: clock, ctx: t.Context(), svc: svc}, client: client}
	must(t, func() error { _, err := s.SetStock(e.ctx, "sku-1", 10, 0, "test"); return err })
	for _, k := range []string{"card-1", "card-2", "card-3"} {
		svc.SetAvailable(k, 10)
	}
	return e
}

// coverage is run's coverage of the gift card as "compared=n reason=n…"
// (reasons with a count only), " not offered" added when it has no HELD
// check.
func coverage(t *testing.T, run *models.ReconRun) string {
	t.Helper()
	for _, c := range run.Coverage {
		if c.ResourceType != giftCard {
			continue
		}
		s := fmt.Sprintf("compared=%d", c.Compared)
		for _, r := range models.SkipReasons {
			if n := c.SkippedBy(r); n > 0 {
				s += fmt.Sprintf(" %s=%d", r, n)
			}
		}
		if !c.HeldOffered {
			s += " not offered"
		}
		return s
	}
	return "none"
}

// unchecked lists the gift card's UNCHECKED tickets as
// "key/status/streak/reasons/note".
func unchecked(t *testing.T, e remoteEnv) []string {
	t.Helper()
	var ts []models.DiffTicket
	must(t, func() error {
		return e.s.R.Where("kind = ? AND resource_type = ?", models.TicketUnchecked, giftCard).Order("biz_key").Find(&ts).Error
	})
	var out []string
	for _, d := range ts {
		out = append(out, fmt.Sprintf("%s/%s/%d/%s/%s", d.BizKey, d.Status, d.Streak, d.Reasons, d.Note))
	}
	return out
}

// A service answering GET /holds for another key, with junk, and not at
// all leaves each key unchecked for its reason: every run is PARTIAL with
// the counts, never DONE. The third run in a row opens an UNCHECKED ticket
// per key; a fourth keeps them open, the ACKED one ACKED, though one key
// also has a diff of its own (its DIFF ticket beside); correct answers
// then close them, saying so, and the run is DONE. Breaks if a skipped key
// read as checked (DONE), if the streak did not count, or if the diff
// tickets' automatic closes (gone, grouped) took the UNCHECKED tickets.
func TestReconPartialOpensAndClosesUnchecked(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		var override atomic.Pointer[holdsOverride]
		e := newSkipEnv(t, d, &override)
		must(t, func() error { return e.place("o-1", "card-1", 3) })
		must(t, func() error { return e.place("o-2", "card-2", 2) })
		must(t, func() error { return e.place("o-3", "card-3", 1) })
		e.clock.Advance(time.Minute)
		bad := holdsOverride(func(key string) (int, string, bool) {
			switch key {
			case "card-1":
				return http.StatusOK, `{"key":"card-9","held":3}`, true
			case "card-2":
				return http.StatusOK, `<html>junk</html>`, true
			}
			return http.StatusServiceUnavailable, `{"code":"BUSY"}`, true
		})
		override.Store(&bad)
		const skipped = "compared=0 NO_ANSWER=1 OTHER_KEY=1 UNPARSEABLE=1"
		for i := 1; i <= 3; i++ {
			run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
			if err != nil || run.Status != models.ReconPartial || coverage(t, run) != skipped {
				t.Fatalf("run %d = %+v, %v; want PARTIAL with %s", i, run, err, skipped)
			}
			if n := len(unchecked(t, e)); (i < 3 && n != 0) || (i == 3 && (n != 3 || run.Opened != 3)) {
				t.Fatalf("after run %d (opened %d): UNCHECKED tickets %v", i, run.Opened, unchecked(t, e))
			}
		}
		// An UNCHECKED ticket is no diff: not counted among the open diffs
		// (their alert says "missed or double release"), not listed by sign.
		open, err := e.s.OpenDiffCounts(e.ctx)
		if err != nil || open[giftCard] != 0 {
			t.Fatalf("open diffs with only UNCHECKED tickets: %v, %v; want 0", open, err)
		}
		for _, sign := range []int{1, -1} {
			if ts, err := e.s.ListDiffs(e.ctx, models.DiffFilter{Sign: sign}); err != nil || len(ts) != 0 {
				t.Fatalf("tickets of sign %d: %+v, %v; want none", sign, ts, err)
			}
		}
		var card2 []models.DiffTicket
		must(t, func() error {
			return e.s.R.Where("kind = ? AND biz_key = 'card-2'", models.TicketUnchecked).Find(&card2).Error
		})
		must(t, func() error { return e.s.AckDiff(e.ctx, card2[0].ID, "ops", "looking") })
		must(t, func() error {
			return e.s.W.Exec("UPDATE order_holds SET released = 1 WHERE order_no = 'o-1' AND resource_type = ?", giftCard).Error
		})
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconPartial || run.Closed != 0 {
			t.Fatalf("fourth run = %+v, %v; want PARTIAL closing nothing", run, err)
		}
		want := []string{
			"card-1/OPEN/4/OTHER_KEY/",
			"card-2/ACKED/4/UNPARSEABLE/looking",
			"card-3/OPEN/4/NO_ANSWER/",
		}
		if got := unchecked(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the fourth run UNCHECKED tickets %v, want %v", got, want)
		}
		must(t, func() error {
			return e.s.W.Exec("UPDATE order_holds SET released = 0 WHERE order_no = 'o-1' AND resource_type = ?", giftCard).Error
		})
		override.Store(nil)
		run, err = e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconDone || coverage(t, run) != "compared=3" {
			t.Fatalf("run with correct answers = %+v, %v; want DONE comparing 3", run, err)
		}
		note := fmt.Sprintf("compared in run %d: closed automatically", run.ID)
		want = []string{
			"card-1/RESOLVED/4/OTHER_KEY/" + note,
			"card-2/RESOLVED/4/UNPARSEABLE/looking / " + note,
			"card-3/RESOLVED/4/NO_ANSWER/" + note,
		}
		if got := unchecked(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after the run that compared them UNCHECKED tickets %v, want %v", got, want)
		}
		// Opened once each (recon.ticket_opened), not again when updated.
		var opened int64
		must(t, func() error {
			return e.s.R.Raw(`SELECT COUNT(*) FROM events WHERE type = ? AND data LIKE '%"kind":"UNCHECKED"%'`,
				models.EventTicketOpened).Scan(&opened).Error
		})
		if opened != 3 {
			t.Fatalf("%d recon.ticket_opened events of UNCHECKED tickets, want 3", opened)
		}
		var streaks int64
		must(t, func() error { return e.s.R.Table("recon_unchecked").Count(&streaks).Error })
		if streaks != 0 {
			t.Fatalf("%d streaks left after every key was compared", streaks)
		}
	})
}

// A key with a call that may be under way (an order placed within its
// locks' call window) is skipped as UNKNOWN_OUTCOME: the run is PARTIAL.
// A service that offers no GET /holds is declared, not skipped: the run
// is DONE and says the HELD check is not offered. Breaks if a busy key
// read as checked, or a 404 made the run PARTIAL.
func TestReconPartialBusyKeyDoneWithoutHolds(t *testing.T) {
	t.Parallel()
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		e := newRemoteEnv(t, d, remoteOpts{})
		must(t, func() error { return e.place("o-b", "card-1", 3) })
		run, err := e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconPartial || coverage(t, run) != "compared=0 UNKNOWN_OUTCOME=1" {
			t.Fatalf("run with a busy key = %+v, %v; want PARTIAL, UNKNOWN_OUTCOME 1", run, err)
		}
		e = newRemoteEnv(t, d, remoteOpts{noHolds: true})
		must(t, func() error { return e.place("o-n", "card-1", 3) })
		e.clock.Advance(time.Minute)
		run, err = e.s.RunReconciliation(e.ctx, models.ReconByCLI, "test")
		if err != nil || run.Status != models.ReconDone || coverage(t, run) != "compared=0 not offered" {
			t.Fatalf("run without GET /holds = %+v, %v; want DONE, not offered", run, err)
		}
	})
}
