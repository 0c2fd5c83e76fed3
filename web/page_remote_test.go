package web_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// rmCard is the remote type of these tests, kept by a fake service.
const rmCard models.ResourceType = "giftcard"

// rmBundle is setup with a remote type, giftcard, whose service (returned
// too) holds 1000 of card-1 and is served over real HTTP.
func rmBundle(t *testing.T, d models.Dialect) (bundle, *remotetest.Service) {
	t.Helper()
	svc := remotetest.New(remotetest.Options{})
	svc.SetAvailable("card-1", 1000)
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client, err := remote.New(remote.Config{Type: string(rmCard), URL: srv.URL, Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now,
		Remote: []models.RemoteType{{Type: rmCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
	return newBundle(s, clock), svc
}

// rmWork claims and runs every due task once.
func rmWork(t *testing.T, b bundle) {
	t.Helper()
	tasks, err := b.s.ClaimTasks(b.ctx, "w1", 10, time.Minute)
	try(t, "claim", err)
	if len(tasks) == 0 {
		t.Fatal("no task was due")
	}
	_, err = b.s.ReleaseBatch(b.ctx, tasks, "w1")
	try(t, "release", err)
}

// rmFlowRows are the texts of a chain page's ledger rows.
func rmFlowRows(body string) []string {
	var rows []string
	for _, part := range strings.Split(body, `data-testid="event-flow"`)[1:] {
		rows = append(rows, markupText(testidElement(`<tr data-testid="event-flow"`+part, "event-flow")))
	}
	return rows
}

// A remote type's chain shows each ledger row with its quantity and the
// service's answer — SENT for a lock, 200 for a deduct — not as a counter
// row or a status change; a deduct task, in the chain, the task list and
// its own page, carries a badge a release task does not; a placement
// whose lock was refused shows its PLACE_ABORTED close and note.
func TestOrderChainRemoteHold(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, svc := rmBundle(t, d)
			hold := func(no string, qty int64) models.PlaceRequest {
				return models.PlaceRequest{OrderNo: no, UserID: "u1", Holds: []models.HoldRequest{{Type: rmCard, Key: "card-1", Qty: qty}}}
			}
			_, _, err := b.s.PlaceOrder(b.ctx, hold("gc-paid", 300))
			try(t, "place gc-paid", err)
			_, err = b.s.PayOrder(b.ctx, "gc-paid", "wx-1")
			try(t, "pay gc-paid", err)
			svc.Next(1, remotetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"code":"BUSY","message":"busy"}`})
			rmWork(t, b)
			b.clock.Advance(time.Hour)
			rmWork(t, b)
			_, _, err = b.s.PlaceOrder(b.ctx, hold("gc-closed", 200))
			try(t, "place gc-closed", err)
			_, err = b.s.CloseOrder(b.ctx, "gc-closed", models.TriggerUserCancel, "u1")
			try(t, "close gc-closed", err)
			rmWork(t, b)
			svc.Next(1, remotetest.Answer{Status: http.StatusUnprocessableEntity, Body: `{"code":"SHORT","message":"card-1 is short"}`})
			if _, _, err = b.s.PlaceOrder(b.ctx, hold("gc-aborted", 100)); !errors.Is(err, models.ErrRemoteRejected) {
				t.Fatalf("place gc-aborted = %v, want REMOTE_REJECTED", err)
			}
			rmWork(t, b) // the empty rollback of the lock that did not take
			if st := svc.Stock("card-1"); st != (remotetest.Stock{Available: 700, Spent: 300}) {
				t.Fatalf("card-1 at the service = %+v", st)
			}

			paid := getPage(t, b, "/orders/gc-paid", false, http.StatusOK)
			rows := rmFlowRows(paid)
			lock := regexp.MustCompile(`账本 锁定 #\d+ 礼品卡 card-1 下单 · × 300 远程调用：已发送 user:u1$`)
			deduct := regexp.MustCompile(`账本 扣减 #\d+ 礼品卡 card-1 支付 · × 300 远程调用：200 worker:w1 · attempt 2$`)
			if len(rows) != 2 || !lock.MatchString(rows[0]) || !deduct.MatchString(rows[1]) {
				t.Errorf("gc-paid ledger rows = %q", rows)
			}
			res := testidElement(paid, "resource-giftcard-card-1")
			if got := markupText(testidElement(res, "task-op")); got != "扣减" {
				t.Errorf("gc-paid's task badge = %q in %s", got, markupText(res))
			}
			if got := strings.Count(testidElement(paid, "timeline"), `data-testid="task-op"`); got != 2 {
				t.Errorf("gc-paid's timeline marks %d attempts as a deduct's, want 2 (RETRY, DONE)", got)
			}
			en := rmFlowRows(getPage(t, b, "/orders/gc-paid", true, http.StatusOK))
			if len(en) != 2 || !strings.HasSuffix(en[0], "remote call: SENT user:u1") || !strings.HasSuffix(en[1], "remote call: 200 worker:w1 · attempt 2") {
				t.Errorf("gc-paid ledger rows in English = %q", en)
			}

			closed := getPage(t, b, "/orders/gc-closed", false, http.StatusOK)
			rows = rmFlowRows(closed)
			if len(rows) != 2 || !strings.HasSuffix(rows[1], "用户取消 · × 200 远程调用：200 worker:w1") {
				t.Errorf("gc-closed ledger rows = %q", rows)
			}
			if strings.Contains(closed, `data-testid="task-op"`) {
				t.Error("a release task carries the deduct badge")
			}

			aborted := getPage(t, b, "/orders/gc-aborted", false, http.StatusOK)
			if tl := markupText(testidElement(aborted, "timeline")); !strings.Contains(tl, "关单 下单中止") {
				t.Errorf("gc-aborted timeline = %q", tl)
			}
			if note := markupText(testidElement(aborted, "order-note")); !strings.HasPrefix(note, "placement aborted: ") || !strings.Contains(note, "card-1 is short") {
				t.Errorf("gc-aborted note = %q", note)
			}
			rows = rmFlowRows(aborted)
			if len(rows) != 2 || !strings.Contains(rows[1], "释放 #") ||
				!strings.HasSuffix(rows[1], " 礼品卡 card-1 下单中止 · × 100 远程调用：200 worker:w1") {
				t.Errorf("gc-aborted ledger rows = %q", rows)
			}

			var tasks []models.ReleaseTask
			try(t, "read tasks", b.s.R.Order("id").Find(&tasks).Error)
			if len(tasks) != 3 || tasks[0].Op != models.FlowDeduct {
				t.Fatalf("tasks = %+v", tasks)
			}
			list := getPage(t, b, "/tasks", false, http.StatusOK)
			if got := strings.Count(list, `data-testid="task-op"`); got != 1 {
				t.Errorf("the task list marks %d tasks as deducts, want 1", got)
			}
			one := getPage(t, b, "/tasks/"+strconv.FormatInt(tasks[0].ID, 10), true, http.StatusOK)
			if got := markupText(testidElement(one, "task-op")); got != "DEDUCT" {
				t.Errorf("the deduct task's page badge = %q", got)
			}
			other := getPage(t, b, "/tasks/"+strconv.FormatInt(tasks[1].ID, 10), true, http.StatusOK)
			if strings.Contains(other, `data-testid="task-op"`) {
				t.Error("a release task's page carries the deduct badge")
			}
		})
	}
}

// A remote type's page and GET /api/v1/resources show its service: the
// URL, the timeout, whether a token is sent (never the token), and a type
// declared strict: false marked 未验证应答 / unverified answers where a
// strict one is verified. Breaks if strictness were not shown, or shown
// for the wrong type.
func TestRemoteTypeShowsUnverifiedAnswers(t *testing.T) {
	t.Parallel()
	const voucher models.ResourceType = "voucher"
	open := func(t *testing.T, d models.Dialect) bundle {
		srv := httptest.NewServer(remotetest.New(remotetest.Options{NoEcho: true, Token: "s3cret"}))
		t.Cleanup(srv.Close)
		strict, err := remote.New(remote.Config{Type: string(rmCard), URL: srv.URL, Strict: true})
		try(t, "client", err)
		loose, err := remote.New(remote.Config{Type: string(voucher), URL: srv.URL + "/v1", Timeout: 1500 * time.Millisecond,
			Token: "s3cret"})
		try(t, "client", err)
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now, Remote: []models.RemoteType{
			{Type: rmCard, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: strict},
			{Type: voucher, Label: models.Label{Zh: "代金券", En: "Voucher"}, Client: loose}}})
		return newBundle(s, clock)
	}
	eachEngineWith(t, open, func(t *testing.T, b bundle) {
		rec := b.call("GET", "/resources/voucher", "")
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /resources/voucher = %d %s", rec.Code, body)
		}
		if got, _ := testidText(body, "res-unverified"); got != "未验证应答" {
			t.Errorf("voucher's answers %q, want 未验证应答", got)
		}
		if got, _ := testidText(body, "res-remote-timeout"); got != "1.5s" {
			t.Errorf("voucher's timeout %q, want 1.5s", got)
		}
		if got, _ := testidText(body, "res-remote-url"); !strings.HasSuffix(got, "/v1") {
			t.Errorf("voucher's URL %q, want the declared one", got)
		}
		if strings.Contains(body, "s3cret") {
			t.Error("the page shows the token")
		}
		body = b.call("GET", "/resources/giftcard", "").Body.String()
		if _, ok := testidText(body, "res-unverified"); ok {
			t.Error("a strict type is marked unverified")
		}
		if _, ok := testidText(body, "res-verified"); !ok {
			t.Error("a strict type is not shown verified")
		}

		rec = b.call("GET", "/api/v1/resources", "")
		if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "s3cret") {
			t.Fatalf("GET /api/v1/resources = %d %s; want 200 without the token", rec.Code, rec.Body)
		}
		type service struct {
			URL               string `json:"url"`
			TimeoutMS         int64  `json:"timeout_ms"`
			Token             bool   `json:"token"`
			UnverifiedAnswers bool   `json:"unverified_answers"`
		}
		v := decodeStrict[struct {
			Types []struct {
				Type    models.ResourceType `json:"type"`
				Kind    models.ResourceKind `json:"kind"`
				Service *service            `json:"service"`
			} `json:"types"`
		}](t, rec)
		services := map[models.ResourceType]*service{}
		for _, tv := range v.Types {
			if tv.Kind == models.KindRemote {
				services[tv.Type] = tv.Service
			}
		}
		gc, vc := services[rmCard], services[voucher]
		if len(services) != 2 || gc == nil || vc == nil || gc.UnverifiedAnswers || !vc.UnverifiedAnswers ||
			gc.Token || !vc.Token || vc.TimeoutMS != 1500 {
			t.Fatalf("remote types in the API: %+v; want giftcard verified, voucher unverified with a token and 1500 ms", services)
		}
	})
}
