package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
)

// hookURL is a subscriber's URL on the loopback, which needs no DNS.
const hookURL = "http://127.0.0.1:9/hook"

// newHook makes a subscription to every event type, as an admin would.
func newHook(t *testing.T, b bundle, u string) models.WebhookSubscription {
	t.Helper()
	sub, _, err := b.s.CreateWebhook(b.ctx, models.NewWebhook{URL: u}, "root")
	try(t, "create webhook", err)
	return sub
}

// hookEvents writes one event of typ for each order number, as the
// facts' transactions do, and fans them out to the subscriptions.
func hookEvents(t *testing.T, b bundle, typ models.EventType, nos ...string) {
	t.Helper()
	var q strings.Builder
	var args []any
	for i, no := range nos {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, ?, ?)")
		args = append(args, typ, no, b.clock.Now(), `{"order_no":"`+no+`"}`)
	}
	try(t, "events", b.s.W.Exec("INSERT INTO events (type, order_no, occurred_at, data) VALUES "+q.String(), args...).Error)
	_, err := b.s.FanOutWebhooks(b.ctx)
	try(t, "fan out", err)
}

// sendOnce claims the due deliveries and records result for each, as the
// sender would after one try.
func sendOnce(t *testing.T, b bundle, result models.DeliveryResult) []models.WebhookSend {
	t.Helper()
	sends, err := b.s.ClaimDeliveries(b.ctx, "w-test", 100, time.Minute, nil)
	try(t, "claim", err)
	for _, w := range sends {
		_, err := b.s.RecordDelivery(b.ctx, w, result, 0)
		try(t, "record", err)
	}
	return sends
}

// countHooks counts the subscription rows.
func countHooks(t *testing.T, b bundle) int64 {
	t.Helper()
	var n int64
	try(t, "count webhooks", b.s.R.Raw("SELECT COUNT(*) FROM webhook_subscriptions").Scan(&n).Error)
	return n
}

// hookRowOf is the list row of subscription id, or "".
func hookRowOf(body string, id int64) string {
	i := strings.Index(body, `data-webhook-id="`+strconv.FormatInt(id, 10)+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	return body[start : i+strings.Index(body[i:], "</tr>")]
}

// deliveryRowOf is the row of delivery id on a subscription's page, or "".
func deliveryRowOf(body string, id int64) string {
	i := strings.Index(body, `data-delivery-id="`+strconv.FormatInt(id, 10)+`"`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<tr")
	return body[start : i+strings.Index(body[i:], "</tr>")]
}

// The list shows each subscription's state: a paused one red, with who
// paused it and since when; one whose deliveries fail, since when; its
// backlog, the age of its oldest waiting delivery, its FAILED count and
// when one last got through. Each row links its page.
func TestWebhooksListShowsPausedRed(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		body := getPageBoth(t, b, "/webhooks", "UTC", http.StatusOK)
		requireElement(t, body, "webhooks-empty", true)

		live, paused := newHook(t, b, hookURL), newHook(t, b, "http://127.0.0.1:9/paused")
		hookEvents(t, b, models.EventOrderClosed, "o-1", "o-2")
		sendOnce(t, b, models.DeliveryResult{Status: http.StatusNoContent}) // both subscriptions' o-1 and o-2
		deliveredAt := b.clock.Now()
		b.clock.Advance(time.Hour)
		hookEvents(t, b, models.EventOrderClosed, "o-3")
		b.clock.Advance(10 * time.Minute)
		_, err := b.s.PauseWebhook(b.ctx, paused.ID, "alice")
		try(t, "pause", err)
		pausedAt := b.clock.Now()
		b.clock.Advance(5 * time.Minute)

		body = getPageBoth(t, b, "/webhooks", "UTC", http.StatusOK)
		row := hookRowOf(body, paused.ID)
		if row == "" {
			t.Fatalf("the paused subscription is not listed:\n%s", body)
		}
		if tag := testidTag(row, "webhook-paused"); !strings.Contains(tag, `class="bad"`) {
			t.Errorf("the paused subscription's status is not red: %q", tag)
		}
		checkText(t, row, "webhook-paused-reason", "paused by alice")
		if !strings.Contains(testidElement(row, "webhook-paused"), pausedAt.UTC().Format("2006-01-02 15:04:05")) {
			t.Errorf("the paused status does not say since when (%s):\n%s", pausedAt.UTC(), testidElement(row, "webhook-paused"))
		}
		checkText(t, row, "webhook-backlog", "1")
		if !strings.Contains(testidElement(row, "webhook-oldest"), "15 分钟前") {
			t.Errorf("oldest waiting = %q, want 15 minutes ago", testidElement(row, "webhook-oldest"))
		}
		if got := mustHref(t, row, "webhook-link"); got != "/webhooks/"+strconv.FormatInt(paused.ID, 10) {
			t.Errorf("row links %q", got)
		}

		row = hookRowOf(body, live.ID)
		requireElement(t, row, "webhook-paused", false)
		checkText(t, row, "webhook-active", "推送中")
		checkText(t, row, "webhook-url", hookURL)
		checkText(t, row, "webhook-types", "全部类型")
		if !strings.Contains(testidElement(row, "webhook-last"), deliveredAt.UTC().Format("2006-01-02 15:04:05")) {
			t.Errorf("last delivered = %q, want %s", testidElement(row, "webhook-last"), deliveredAt.UTC())
		}

		// A subscriber that keeps failing is shown failing, and red once
		// the worker pauses it.
		b.clock.Advance(time.Hour)
		sendOnce(t, b, models.DeliveryResult{Status: http.StatusBadGateway})
		row = hookRowOf(getPage(t, b, "/webhooks", false, http.StatusOK), live.ID)
		requireElement(t, row, "webhook-failing", true)
		b.clock.Advance(models.WebhookPauseAfter + time.Hour)
		sendOnce(t, b, models.DeliveryResult{Status: http.StatusBadGateway})
		row = hookRowOf(getPage(t, b, "/webhooks", true, http.StatusOK), live.ID)
		if tag := testidTag(row, "webhook-paused"); !strings.Contains(tag, `class="bad"`) {
			t.Fatalf("the subscription the worker paused is not red:\n%s", row)
		}
		if why, _ := testidText(row, "webhook-paused-reason"); !strings.Contains(why, "HTTP 502") {
			t.Errorf("the worker's pause says %q", why)
		}
	})
}

var hookSecretRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// An admin makes a subscription: the page that answers shows its secret
// once; the list and the subscription's page never show it again. A
// secret typed in is the one kept.
func TestWebhookCreateShowsSecretOnce(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		rec := postForm(b, "/webhooks", url.Values{"url": {hookURL}, "type": {"order.closed", "hold.released"}}, false)
		body := wantPage(t, rec, "create webhook", http.StatusOK)
		vals := secretValues(body)
		if len(vals) != 1 || !hookSecretRE.MatchString(vals[0]) {
			t.Fatalf("secret values %q, want one of 64 hex digits", vals)
		}
		secret := vals[0]
		if n := strings.Count(body, secret); n != 1 {
			t.Errorf("the secret appears %d times on its page", n)
		}
		checkText(t, body, "secret-for", "属于："+hookURL)
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("the page with the secret has Cache-Control %q", cc)
		}
		subs, err := b.s.Webhooks(b.ctx)
		try(t, "webhooks", err)
		if len(subs) != 1 || subs[0].URL != hookURL || fmt.Sprint(subs[0].Types) != "[order.closed hold.released]" || subs[0].CreatedBy != "root" {
			t.Fatalf("subscriptions %+v", subs)
		}
		checkText(t, hookRowOf(body, subs[0].ID), "webhook-types", "order.closed, hold.released")
		created := oneAudit(t, b, "webhook_create")
		wantAuditBy(t, created, "root", "admin", models.WebhookTarget(subs[0].ID), "ok")
		target := testidElement(auditRowOf(getPage(t, b, "/audit", false, http.StatusOK), created.ID), "audit-target")
		if m := hrefRE.FindStringSubmatch(target); m == nil || m[1] != "/webhooks/"+strconv.FormatInt(subs[0].ID, 10) {
			t.Errorf("the audit log's target does not link the subscription: %s", target)
		}

		page := "/webhooks/" + strconv.FormatInt(subs[0].ID, 10)
		for _, path := range []string{"/webhooks", page} {
			for _, en := range []bool{false, true} {
				again := getPage(t, b, path, en, http.StatusOK)
				if strings.Contains(again, secret) || strings.Contains(again, secret[:16]) {
					t.Fatalf("%s shows the secret (en=%v)", path, en)
				}
				requireElement(t, again, "secret", false)
			}
		}

		const mine = "a-secret-of-the-subscriber"
		body = wantPage(t, postForm(b, "/webhooks", url.Values{"url": {"http://127.0.0.1:9/other"}, "secret": {mine}}, true),
			"create webhook with a secret", http.StatusOK)
		if vals := secretValues(body); len(vals) != 1 || vals[0] != mine {
			t.Fatalf("secret values %q, want the one typed", vals)
		}
		if strings.Contains(getPage(t, b, "/webhooks", false, http.StatusOK), mine) {
			t.Fatal("the list shows the typed secret")
		}
	})
}

// Bad input is refused on the form with the models' words, the URL kept
// for correcting, and nothing is made; the refusal is audited.
func TestWebhookCreateRefusedInline(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		cases := []struct {
			form url.Values
			want string
		}{
			{url.Values{"url": {"ftp://127.0.0.1/hook"}}, `url must be http:// or https://, not "ftp"`},
			{url.Values{"url": {"http://169.254.169.254/latest"}}, "link-local"},
			{url.Values{"url": {"http://[fe80::1]/hook"}}, "link-local"},
			{url.Values{"url": {"http://u:p@127.0.0.1/hook"}}, "must not hold a user or password"},
			{url.Values{"url": {hookURL}, "secret": {"fifteen-bytes.."}}, "secret must be at least 16 bytes (it is 15)"},
			{url.Values{"url": {hookURL}, "type": {"order.eaten"}}, `unknown event type "order.eaten"`},
		}
		for i, c := range cases {
			body := wantPage(t, postForm(b, "/webhooks", c.form, i%2 == 1), fmt.Sprintf("case %d", i), http.StatusUnprocessableEntity)
			msg, ok := testidText(body, "webhook-create-error")
			if !ok || !strings.Contains(msg, c.want) || !strings.Contains(msg, "INVALID_INPUT") && !strings.Contains(msg, "输入无效") {
				t.Errorf("case %d: the form says %q, want %q", i, msg, c.want)
			}
			if tag := testidTag(body, "webhook-create-url"); !strings.Contains(tag, `value="`+c.form.Get("url")+`"`) {
				t.Errorf("case %d: the form lost the URL: %s", i, tag)
			}
			requireElement(t, body, "secret", false)
		}
		if n := countHooks(t, b); n != 0 {
			t.Fatalf("%d subscriptions made from bad input", n)
		}
		if n := countAudit(t, b, "webhook_create"); n != int64(len(cases)) {
			t.Errorf("%d webhook_create audit rows, want %d refusals", n, len(cases))
		}
	})
}

// The pages are an admin's: a viewer and an operator get 403 on each and
// make nothing, and see no link to them.
func TestWebhookPagesAdminOnly(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sub := newHook(t, b, hookURL)
		page := "/webhooks/" + strconv.FormatInt(sub.ID, 10)
		for _, role := range []auth.Role{auth.RoleViewer, auth.RoleOperator} {
			who := b.as(b.mustSignIn("w-"+string(role), role))
			for _, path := range []string{"/webhooks", page} {
				if rec := servePage(who, path, "", ""); rec.Code != http.StatusForbidden {
					t.Errorf("%s: GET %s = %d, want 403", role, path, rec.Code)
				}
			}
			for _, path := range []string{"/webhooks", page + "/pause", page + "/delete"} {
				if rec := postForm(who, path, url.Values{"url": {"http://127.0.0.1:9/x"}, "confirm": {hookURL}}, false); rec.Code != http.StatusForbidden {
					t.Errorf("%s: POST %s = %d, want 403", role, path, rec.Code)
				}
			}
			requireElement(t, getPage(t, who, "/", false, http.StatusOK), "nav-webhooks", false)
		}
		if n := countHooks(t, b); n != 1 {
			t.Errorf("%d subscriptions, want the one", n)
		}
		if got, err := b.s.Webhook(b.ctx, sub.ID); err != nil || got.Paused() {
			t.Errorf("the subscription = %+v, %v; want it as it was", got, err)
		}
		home := getPage(t, b, "/", true, http.StatusOK)
		if got := mustHref(t, home, "nav-webhooks"); got != "/webhooks" {
			t.Errorf("the admin's nav links %q", got)
		}
		checkText(t, home, "nav-webhooks", "Webhooks")
	})
}

// Pause and resume from the subscription's page.
func TestWebhookPauseResume(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sub := newHook(t, b, hookURL)
		page := "/webhooks/" + strconv.FormatInt(sub.ID, 10)
		loc, body := followPost(t, b, postForm(b, page+"/pause", nil, false), false)
		if loc != page {
			t.Fatalf("pause went to %q", loc)
		}
		checkText(t, body, "flash", fmt.Sprintf("#%d 已暂停推送。", sub.ID))
		checkText(t, body, "webhook-paused-reason", "paused by root")
		requireElement(t, body, "webhook-resume", true)
		requireElement(t, body, "webhook-pause", false)

		_, body = followPost(t, b, postForm(b, page+"/resume", nil, true), true)
		checkText(t, body, "flash", fmt.Sprintf("#%d is sending again.", sub.ID))
		checkText(t, body, "webhook-active", "Active")
		requireElement(t, body, "webhook-pause", true)
		if n := countAudit(t, b, "webhook_pause") + countAudit(t, b, "webhook_resume"); n != 2 {
			t.Errorf("%d pause/resume audit rows, want 2", n)
		}
		if rec := postForm(b, "/webhooks/999/pause", nil, false); rec.Code != http.StatusNotFound {
			t.Errorf("pause of no such subscription = %d, want 404", rec.Code)
		}
	})
}

// A FAILED delivery is shown with its answer and a redeliver button; the
// button makes it due again, and the worker claims it. A delivery already
// waiting has no button, and a forged redeliver changes nothing.
func TestWebhookRedeliver(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sub := newHook(t, b, hookURL)
		page := "/webhooks/" + strconv.FormatInt(sub.ID, 10)
		hookEvents(t, b, models.EventOrderClosed, "o-1")
		sent := sendOnce(t, b, models.DeliveryResult{Status: http.StatusGone, Answer: "no such hook"})
		if len(sent) != 1 {
			t.Fatalf("%d sent, want 1", len(sent))
		}
		d := sent[0].Delivery
		b.clock.Advance(time.Minute)
		hookEvents(t, b, models.EventOrderRefunded, "o-2")

		body := getPageBoth(t, b, page, "UTC", http.StatusOK)
		row := deliveryRowOf(body, d.ID)
		if row == "" {
			t.Fatalf("delivery %d not shown:\n%s", d.ID, body)
		}
		checkText(t, row, "delivery-status", "失败")
		if got := mustHref(t, row, "delivery-order-link"); got != "/orders/o-1" {
			t.Errorf("the delivery links %q", got)
		}
		if ans := markupText(testidElement(row, "delivery-answer")); !strings.Contains(ans, "HTTP 410") || !strings.Contains(ans, "no such hook") {
			t.Errorf("last answer %q", ans)
		}
		checkText(t, row, "delivery-event", strconv.FormatInt(d.EventID, 10))
		checkText(t, row, "delivery-tries", "1")
		var waiting int64
		for _, w := range strings.Split(body, `data-testid="delivery-row"`)[1:] {
			if strings.Contains(w, "delivery-redeliver") {
				continue
			}
			waiting++
		}
		if waiting != 1 {
			t.Errorf("%d deliveries without a redeliver button, want the one waiting", waiting)
		}

		redeliver := mustFormAction(t, row, "delivery-redeliver-form")
		loc, after := followPost(t, b, postForm(b, redeliver, nil, false), false)
		if loc != page {
			t.Fatalf("redeliver went to %q", loc)
		}
		checkText(t, after, "flash", fmt.Sprintf("投递 %d（事件 %d）已排队重新发送。", d.ID, d.EventID))
		row = deliveryRowOf(after, d.ID)
		checkText(t, row, "delivery-status", "待处理")
		requireElement(t, row, "delivery-redeliver-form", false)
		wantAuditBy(t, oneAudit(t, b, "webhook_redeliver"), "root", "admin", models.WebhookTarget(sub.ID), "ok")

		again, err := b.s.ClaimDeliveries(b.ctx, "w-test", 10, time.Minute, nil)
		try(t, "claim", err)
		if len(again) != 2 || again[0].Delivery.ID != d.ID && again[1].Delivery.ID != d.ID {
			t.Fatalf("claimed %+v, want the redelivered one among them", again)
		}

		// Waiting (and now being sent): nothing to redeliver.
		_, body = followPost(t, b, postForm(b, redeliver, nil, true), true)
		checkText(t, body, "flash", fmt.Sprintf("Nothing changed: delivery %d is already waiting to be sent or being sent.", d.ID))
		if n := countAudit(t, b, "webhook_redeliver"); n != 1 {
			t.Errorf("%d webhook_redeliver rows, want 1", n)
		}
		// Another subscription's delivery is not found through this one.
		other := newHook(t, b, "http://127.0.0.1:9/other")
		if rec := postForm(b, fmt.Sprintf("/webhooks/%d/deliveries/%d/redeliver", other.ID, d.ID), nil, false); rec.Code != http.StatusNotFound {
			t.Errorf("redeliver through another subscription = %d, want 404", rec.Code)
		}
	})
}

// mustFormAction is the action of the form whose data-testid is id.
func mustFormAction(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`action="([^"]*)"`).FindStringSubmatch(testidTag(body, id))
	if m == nil {
		t.Fatalf("form %q has no action in:\n%s", id, body)
	}
	return m[1]
}

// The deliveries come a page at a time, newest first, and by status.
func TestWebhookDeliveriesPagedAndFiltered(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sub := newHook(t, b, hookURL)
		page := "/webhooks/" + strconv.FormatInt(sub.ID, 10)
		hookEvents(t, b, models.EventTaskManual, "") // unordered: sent first
		sendOnce(t, b, models.DeliveryResult{Status: http.StatusBadRequest})
		nos := make([]string, 50)
		for i := range nos {
			nos[i] = fmt.Sprintf("o-%02d", i)
		}
		hookEvents(t, b, models.EventOrderClosed, nos...)

		body := getPage(t, b, page, false, http.StatusOK)
		if n := strings.Count(body, `data-testid="delivery-row"`); n != 50 {
			t.Fatalf("first page has %d deliveries, want 50", n)
		}
		checkText(t, body, "delivery-order", "o-49") // the newest first
		requireElement(t, body, "deliveries-first", false)
		next := mustHref(t, body, "deliveries-next")
		body = getPage(t, b, next, true, http.StatusOK)
		if n := strings.Count(body, `data-testid="delivery-row"`); n != 1 {
			t.Fatalf("second page (%s) has %d deliveries, want 1", next, n)
		}
		checkText(t, body, "delivery-status", "FAILED")
		requireElement(t, body, "deliveries-next", false)
		if first := mustHref(t, body, "deliveries-first"); first != page {
			t.Errorf("first page link %q", first)
		}

		body = getPage(t, b, page+"?status=FAILED", false, http.StatusOK)
		if n := strings.Count(body, `data-testid="delivery-row"`); n != 1 {
			t.Fatalf("FAILED filter shows %d deliveries, want 1", n)
		}
		checkText(t, body, "delivery-status", "失败")
		requireElement(t, body, "deliveries-next", false)
		body = getPage(t, b, page+"?status=DELIVERED", false, http.StatusOK)
		requireElement(t, body, "deliveries-empty", true)
		for _, bad := range []string{"?status=LOST", "?before=x", "?before=-1"} {
			getPage(t, b, page+bad, false, http.StatusBadRequest)
		}
		getPage(t, b, "/webhooks/999", false, http.StatusNotFound)
	})
}

// Delete asks for the subscription's URL typed again: anything else
// deletes nothing; the URL deletes it with its deliveries.
func TestWebhookDeleteNeedsConfirmation(t *testing.T) {
	t.Parallel()
	eachEngine(t, func(t *testing.T, b bundle) {
		sub := newHook(t, b, hookURL)
		page := "/webhooks/" + strconv.FormatInt(sub.ID, 10)
		hookEvents(t, b, models.EventOrderClosed, "o-1")
		for _, typed := range []string{"", "yes", hookURL + "/"} {
			loc, body := followPost(t, b, postForm(b, page+"/delete", url.Values{"confirm": {typed}}, false), false)
			if loc != page {
				t.Fatalf("refused delete went to %q", loc)
			}
			checkText(t, body, "flash", "没有删除：输入的 URL 与该订阅的不一致。")
			if tag := testidTag(body, "flash"); !strings.Contains(tag, "error") {
				t.Errorf("the refusal is not shown as one: %s", tag)
			}
		}
		if n := countHooks(t, b); n != 1 {
			t.Fatalf("%d subscriptions after unconfirmed deletes, want 1", n)
		}
		if n := countAudit(t, b, "webhook_delete"); n != 0 {
			t.Errorf("%d webhook_delete rows before the confirmed delete", n)
		}

		loc, body := followPost(t, b, postForm(b, page+"/delete", url.Values{"confirm": {" " + hookURL + " "}}, true), true)
		if loc != "/webhooks" {
			t.Fatalf("delete went to %q", loc)
		}
		checkText(t, body, "flash", fmt.Sprintf("#%d was deleted.", sub.ID))
		requireElement(t, body, "webhooks-empty", true)
		var left int64
		try(t, "deliveries", b.s.R.Raw("SELECT COUNT(*) FROM webhook_deliveries").Scan(&left).Error)
		if n := countHooks(t, b); n != 0 || left != 0 {
			t.Fatalf("%d subscriptions and %d deliveries left", n, left)
		}
		wantAuditBy(t, oneAudit(t, b, "webhook_delete"), "root", "admin", models.WebhookTarget(sub.ID), "ok")
		getPage(t, b, page, false, http.StatusNotFound)
	})
}
