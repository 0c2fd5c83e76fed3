package web_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// partialAnswer is POST /api/v1/reconcile's answer with the run kept as
// it came, to read what it says it could not check (partialRun).
type partialAnswer struct {
	Run       json.RawMessage     `json:"run"`
	Unchecked string              `json:"unchecked"`
	Tickets   []models.DiffTicket `json:"tickets"`
	OpenDiffs map[string]int64    `json:"open_diffs"`
}

// partialRun is the part of a run that says what it could not check.
type partialRun struct {
	Status   string `json:"status"`
	Coverage []struct {
		Resource  string           `json:"resource"`
		Compared  int64            `json:"compared"`
		Skipped   int64            `json:"skipped"`
		SkippedBy map[string]int64 `json:"skipped_by"`
	} `json:"coverage"`
}

// A service that answers GET /holds for another key and then not at all
// leaves both gift cards unchecked: the API answers PARTIAL with the
// counts by reason and says so in words; the page's run history, the
// overview's tile, and the ticket list and page (UNCHECKED, opened at
// once with -recon-unchecked-after 1) say it in Chinese and English; the
// unresolved diffs by sign do not count UNCHECKED tickets. Breaks if a run
// that skipped keys read as DONE anywhere, the kind of an UNCHECKED ticket
// were not shown, or it counted as a missed release.
func TestReconPartialAPIAndPage(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T, d models.Dialect, svc *remotetest.Service) bundle {
		srv := httptest.NewServer(svc)
		t.Cleanup(srv.Close)
		client, err := remote.New(remote.Config{Type: string(giftCards), URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, ReconUncheckedAfter: 1, Logger: modelstest.QuietLog(),
			Remote: []models.RemoteType{{Type: giftCards, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
		return newBundle(s, clock)
	}
	modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
		svc := remotetest.New(remotetest.Options{})
		b := open(t, d, svc)
		for i, key := range []string{"GC-1", "GC-2"} {
			svc.SetAvailable(key, 10)
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: "o-" + key, UserID: "u1",
				Holds: []models.HoldRequest{{Type: giftCards, Key: key, Qty: int64(i + 1)}}})
			try(t, "place "+key, err)
		}
		b.clock.Advance(time.Minute)
		svc.Next(1, remotetest.Answer{Status: http.StatusOK, Body: `{"key":"GC-9","held":1}`})
		svc.Next(1, remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY"}`})
		got := must[partialAnswer](t, b, http.StatusOK, http.MethodPost, "/api/v1/reconcile", "")
		const words = "giftcard 2 keys not checked (no answer 1, answered for another key 1)"
		var run partialRun
		try(t, "decode the run", json.Unmarshal(got.Run, &run))
		if run.Status != models.ReconPartial || got.Unchecked != words || len(run.Coverage) != 1 ||
			run.Coverage[0].Skipped != 2 || run.Coverage[0].SkippedBy["NO_ANSWER"] != 1 || run.Coverage[0].SkippedBy["OTHER_KEY"] != 1 {
			t.Fatalf("run %+v saying %q, want PARTIAL saying %q", run, got.Unchecked, words)
		}
		if len(got.Tickets) != 2 || got.Tickets[0].Kind != models.TicketUnchecked {
			t.Fatalf("tickets opened = %+v, want two UNCHECKED", got.Tickets)
		}

		zh := getPageBoth(t, b, "/recon", "", http.StatusOK)
		requireText(t, zh, "run-partial", "部分完成：礼品卡 2 个键未核对（对方未应答 1，答非所问 1）")
		requireText(t, zh, "run-coverage-giftcard", "礼品卡：核对 0 个键，未核对 2 个")
		requireText(t, zh, "ticket-kind", "未核对")
		// Not a diff: the unresolved diffs by sign count none.
		requireElement(t, zh, "recon-summary-empty", true)
		en := getPage(t, b, "/recon", true, http.StatusOK)
		requireText(t, en, "run-partial", "Partial: Gift card 2 keys not checked (no answer 1, answered for another key 1)")

		other := got.Tickets[0]
		if other.Reasons != string(models.SkipOtherKey) {
			other = got.Tickets[1]
		}
		page := getPageBoth(t, b, "/recon/diffs/"+strconv.FormatInt(other.ID, 10), "", http.StatusOK)
		requireText(t, page, "diff-streak", "连续 1 次未核对：答非所问")
		ov := getPageBoth(t, b, "/", "", http.StatusOK)
		requireText(t, ov, "ov-diffs-partial", "最近一次对账部分完成：2 个键未核对")
	})
}
