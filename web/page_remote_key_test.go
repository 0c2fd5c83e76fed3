package web_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/remote"
	"unhold/remote/remotetest"
)

// cardService is a fake gift card service whose GET /holds, counted in
// asked, hangs until the client gives up (its timeout, 200ms) while hang
// is set.
type cardService struct {
	*remotetest.Service
	hang  atomic.Bool
	asked atomic.Int64
}

func newCardService() *cardService {
	return &cardService{Service: remotetest.New(remotetest.Options{})}
}

// cardKeyShop is a store with the remote type giftcard behind svc; with GC-1 held by o-1 (30, PENDING), released for o-2 (5,
// done) and still to release for o-3 (2, its task PENDING): unhold expects
// the service to hold 32, and its ledger of calls says 32.
func cardKeyShop(svc *cardService) func(*testing.T, models.Dialect) bundle {
	return func(t *testing.T, d models.Dialect) bundle {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/holds/") {
				svc.asked.Add(1)
				if svc.hang.Load() {
					<-r.Context().Done()
					return
				}
			}
			svc.Service.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		client, err := remote.New(remote.Config{Type: string(giftCards), URL: srv.URL, Strict: true, Timeout: 200 * time.Millisecond})
		try(t, "client", err)
		clock := modelstest.NewClock()
		s := modelstest.Open(t, d, models.Options{Now: clock.Now,
			Remote: []models.RemoteType{{Type: giftCards, Label: models.Label{Zh: "礼品卡", En: "Gift card"}, Client: client}}})
		b := newBundle(s, clock)
		svc.SetAvailable("GC-1", 100)
		for _, o := range []struct {
			no, qty string
		}{{"o-1", "30"}, {"o-2", "5"}, {"o-3", "2"}} {
			rec := b.call("POST", "/api/v1/orders",
				`{"order_no":"`+o.no+`","user_id":"u1","holds":[{"type":"giftcard","key":"GC-1","qty":`+o.qty+`}]}`)
			if rec.Code != http.StatusCreated {
				t.Fatalf("place %s = %d %s", o.no, rec.Code, rec.Body)
			}
		}
		_, err = s.CloseOrder(b.ctx, "o-2", models.TriggerUserCancel, "u1")
		try(t, "close o-2", err)
		drain(t, b)
		_, err = s.CloseOrder(b.ctx, "o-3", models.TriggerUserCancel, "u1")
		try(t, "close o-3", err)
		// Past the placements' call window: no lock may still be on its way.
		clock.Advance(time.Minute)
		return b
	}
}

// A remote key's page shows unhold's ledger of calls for it, what it
// expects the service to hold and why (the open holds, the unfinished
// task), each linking to its order or task. Breaks if the page were the
// 404 it was, or summed another key's calls.
func TestRemoteKeyPage(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, cardKeyShop(newCardService()), func(t *testing.T, b bundle) {
		body := getPage(t, b, "/resources/giftcard/GC-1", true, http.StatusOK)
		requireText(t, body, "rkey-ledger-held", "32")
		requireText(t, body, "rkey-expected", "32")
		requireElement(t, body, "rkey-ledger-ok", true)
		if !strings.Contains(testidElement(body, "res-holds"), `href="/orders/o-1"`) {
			t.Errorf("the holds do not link o-1:\n%s", testidElement(body, "res-holds"))
		}
		if tasks := testidElement(body, "res-tasks"); !strings.Contains(tasks, `href="/orders/o-3"`) || !strings.Contains(tasks, `href="/tasks/`) {
			t.Errorf("the tasks do not link o-3's task:\n%s", tasks)
		}
		if rows := strings.Count(testidElement(body, "ledger-rows"), `data-testid="ledger-row"`); rows != 4 {
			t.Errorf("%d ledger rows, want 4 (three locks, one release)", rows)
		}
		requireElement(t, body, "rkey-ask-form", true)
		requireElement(t, body, "rkey-answer", false)
		// Where the key is shown, it links its page: the order's chain and
		// the task's page, and the chain's ledger rows open on the key's.
		keyLink := `href="/resources/giftcard/GC-1`
		chain := getPage(t, b, "/orders/o-3", false, http.StatusOK)
		if !strings.Contains(chain, keyLink+`"`) || !strings.Contains(chain, keyLink+`?after=`) {
			t.Errorf("the order chain does not link the key and its ledger rows")
		}
		id := tkTaskOf(t, b, "o-3", giftCards)
		if task := getPage(t, b, "/tasks/"+strconv.FormatInt(id, 10), false, http.StatusOK); !strings.Contains(task, keyLink+`"`) {
			t.Errorf("the task page does not link the key")
		}
		for _, m := range regexp.MustCompile(`href="(/resources/giftcard/GC-1[^"#]*)`).FindAllStringSubmatch(chain, -1) {
			if rec := servePage(b, html.UnescapeString(m[1]), "", ""); rec.Code != http.StatusOK {
				t.Errorf("the chain links %s, which answers %d", m[1], rec.Code)
			}
		}
		// A key unhold never called about holds nothing by its ledger, and
		// its service may still be asked.
		other := getPage(t, b, "/resources/giftcard/GC-9", false, http.StatusOK)
		requireText(t, other, "rkey-ledger-held", "0")
		requireElement(t, other, "res-ledger-empty", true)
	})
}

// The ask button asks the service now and shows its answer beside what
// unhold expects; an answer that is not one — a 500, a hang past the
// timeout, junk, a refusal, a 404 — shows as what it is, never as 0, and
// every question is audited. Breaks if a failed question read as "holds 0".
func TestRemoteKeyAsk(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer *remotetest.Answer
		held   int64 // set with SetHeld when not 0
		hang   bool
		want   string // the element that must show: rkey-agrees, rkey-differs, rkey-skip, rkey-not-offered
		text   string // rkey-service-held's English text
	}{
		{"agrees", nil, 0, false, "rkey-agrees", "32"},
		{"differs", nil, 40, false, "rkey-differs", "40"},
		{"500", &remotetest.Answer{Status: http.StatusInternalServerError, Body: `{"code":"OOPS"}`}, 0, false, "rkey-skip", "no answer"},
		{"timeout", nil, 0, true, "rkey-skip", "no answer"},
		{"junk", &remotetest.Answer{Status: http.StatusOK, Body: "<html>It works!</html>"}, 0, false, "rkey-skip", "unparseable answer"},
		{"another key", &remotetest.Answer{Status: http.StatusOK, Body: `{"key":"GC-2","held":32}`}, 0, false, "rkey-skip", "answered for another key"},
		{"refused", &remotetest.Answer{Status: http.StatusForbidden, Body: `{"code":"NO"}`}, 0, false, "rkey-skip", "refused"},
		{"not offered", &remotetest.Answer{Status: http.StatusNotFound}, 0, false, "rkey-not-offered", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A service per engine: the engines run at once, and one's
			// queued answer must not meet the other's placements.
			modelstest.EachEngine(t, func(t *testing.T, d models.Dialect) {
				svc := newCardService()
				b := cardKeyShop(svc)(t, d)
				if tt.held != 0 {
					svc.SetHeld("GC-1", tt.held)
				}
				if tt.answer != nil {
					svc.Next(1, *tt.answer)
				}
				svc.hang.Store(tt.hang)
				rec := postForm(b, "/resources/giftcard/GC-1/holds", url.Values{}, true)
				body := wantPage(t, rec, "ask", http.StatusOK)
				requireElement(t, body, tt.want, true)
				requireText(t, body, "rkey-answer-expected", "32")
				held, _ := testidText(body, "rkey-service-held")
				if tt.text != "" && !strings.HasPrefix(strings.TrimSpace(markupText(held)), tt.text) {
					t.Errorf("the service holds %q, want %q", markupText(held), tt.text)
				}
				if tt.want == "rkey-skip" && testidElement(body, "rkey-error") == "" {
					t.Error("a failed question does not say what the client said")
				}
				var audits []models.AuditEntry
				try(t, "audit", b.s.R.Where("action = 'ask_holds'").Find(&audits).Error)
				if len(audits) != 1 || audits[0].Target != "giftcard:GC-1" || audits[0].Actor != "root" {
					t.Fatalf("audit rows %+v, want one by root about giftcard:GC-1", audits)
				}
				// Ops other than admins read it, linked to the key's page.
				op := b.as(b.mustSignIn("otto", auth.RoleOperator))
				entry := getPage(t, op, "/audit/"+strconv.FormatInt(audits[0].ID, 10), true, http.StatusOK)
				if !strings.Contains(entry, `href="/resources/giftcard/GC-1"`) {
					t.Errorf("the audit entry does not link the key:\n%s", markupText(entry))
				}
			})
		})
	}
}

// A viewer sees a remote key's page and its ledger but cannot ask its
// service: no button, and the POST is refused before any call.
func TestRemoteKeyAskViewer(t *testing.T) {
	t.Parallel()
	svc := newCardService()
	eachEngineWith(t, cardKeyShop(svc), func(t *testing.T, b bundle) {
		viewer := b.as(b.mustSignIn("vera", auth.RoleViewer))
		body := getPage(t, viewer, "/resources/giftcard/GC-1", true, http.StatusOK)
		requireText(t, body, "rkey-ledger-held", "32")
		requireElement(t, body, "rkey-ask-form", false)
		requireElement(t, body, "need-operator", true)
		asked := svc.asked.Load()
		if rec := postForm(viewer, "/resources/giftcard/GC-1/holds", url.Values{}, true); rec.Code != http.StatusForbidden {
			t.Fatalf("a viewer's question = %d, want 403", rec.Code)
		}
		if svc.asked.Load() != asked {
			t.Error("a viewer's refused question reached the service")
		}
		var n int64
		try(t, "audit", b.s.R.Model(&models.AuditEntry{}).Where("action = 'ask_holds'").Count(&n).Error)
		if n != 0 {
			t.Errorf("%d ask_holds audit rows after a refused question", n)
		}
	})
}
