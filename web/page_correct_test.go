package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"unhold/auth"
	"unhold/models"
	"unhold/models/modelstest"
	"unhold/web"
)

// fixBundle is a server whose rerun waits for the try, with a local worker
// that the rerun wakes.
func fixBundle(t *testing.T, d models.Dialect) bundle {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	return newBundleDeps(s, clock, auth.Options{}, func(dp *web.Deps) {
		dp.RerunWait = 10 * time.Second
		dp.Wake = func() { go fixDrain(s) }
	})
}

func fixDrain(s *models.Store) {
	tasks, _ := s.ClaimTasks(context.Background(), "w", 10, time.Minute)
	for _, tk := range tasks {
		_, _ = s.ReleaseTask(context.Background(), tk, "w")
	}
}

// fixStopped places order no holding 2 of sku-f and coupon cp, changes the
// data by hand with sideDoor, closes the order and runs its releases.
func fixStopped(t *testing.T, b bundle, no string, cp int64, sideDoor string, args ...any) {
	t.Helper()
	_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: no, UserID: "u1",
		Items: []models.Item{{SkuID: "sku-f", Qty: 2}}, CouponIDs: []int64{cp}})
	try(t, "place "+no, err)
	try(t, "side door", b.s.W.Exec(sideDoor, args...).Error)
	_, err = b.s.CloseOrder(b.ctx, no, models.TriggerUserCancel, "u1")
	try(t, "close "+no, err)
	fixDrain(b.s)
}

var causeRE = regexp.MustCompile(`data-testid="cause" data-cause="([a-z.]+)"`)

// causeOf is the cause a page says a task has now, "" when it says none.
func causeOf(body string) string {
	if m := causeRE.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	return ""
}

// Ops fixes a LOCKED_SHORT task without leaving the dashboard: the task and
// the rerun preview say the cause is still there and link to the SKU's
// correction form; bad input there changes nothing; the correction puts the
// stock back; the cause then reads gone, and the chain's rerun says the
// release is done.
func TestFixStockFromTheDashboard(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		fixStopped(t, b, "f-1", cp.ID, "UPDATE inventory SET locked = locked - 2, available = available + 2 WHERE sku_id = 'sku-f'")
		id := tkTaskOf(t, b, "f-1", models.ResInventory)
		task := getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		preview := getPage(t, b, "/orders/f-1/resources/inventory/rerun", true, http.StatusOK)
		for name, body := range map[string]string{"task": task, "preview": preview} {
			if got := causeOf(body); got != "short.row" {
				t.Errorf("%s page: cause %q, want short.row", name, got)
			}
			back := map[string]string{"task": fmt.Sprintf("/tasks/%d", id), "preview": "/orders/f-1/resources/inventory/rerun"}[name]
			want := "/inventory/sku-f?" + (url.Values{"back": {back}, "for": {"f-1"}}).Encode() + "#fix"
			if href := attrOf(testidTag(body, "cause-fix"), "href"); href != want {
				t.Errorf("%s page: fix link %q, want %q", name, href, want)
			}
		}
		if strings.Contains(testidElement(preview, "rerun-ledger"), "will release") {
			t.Error("the preview says the rerun will release while the cause is still there")
		}
		sku := getPage(t, b, "/inventory/sku-f?for=f-1", true, http.StatusOK)
		if testidTag(sku, "fix-differs") == "" || testidTag(sku, "fix-form") == "" {
			t.Fatalf("the SKU page does not offer the correction:\n%s", testidElement(sku, "fix"))
		}
		// The row as the page showed it: the hand edit gave the 2 back.
		form := url.Values{"available": {"8"}, "reason": {"locked moved by hand"}, "for": {"f-1"}, "back": {"/inventory/sku-f?for=f-1"},
			"seen_available": {"10"}, "seen_locked": {"0"}, "seen_spent": {"0"}}
		if fields := testidElement(sku, "fix-form"); !strings.Contains(fields, `name="seen_available" value="10"`) ||
			!strings.Contains(fields, `name="seen_locked" value="0"`) {
			t.Errorf("the form does not carry the row it shows:\n%s", fields)
		}
		viewer := b.as(b.mustSignIn("vera", auth.RoleViewer))
		if rec := postForm(viewer, "/resources/inventory/sku-f/correct", form, true); rec.Code != http.StatusForbidden {
			t.Errorf("a viewer's correction = %d, want 403", rec.Code)
		}
		before := snapshot(t, b)
		for _, bad := range []struct{ field, value, flash string }{
			{"reason", " ", "Give a reason"},
			{"available", "-1", "whole number"},
			{"available", "8x", "whole number"},
			{"available", "", "whole number"},
			{"seen_available", "9", "changed after you opened the page"},
		} {
			f := url.Values{}
			for k, v := range form {
				f[k] = v
			}
			f.Set(bad.field, bad.value)
			_, body := followPost(t, b, postForm(b, "/resources/inventory/sku-f/correct", f, true), true)
			if flash, _ := testidText(body, "flash"); !strings.Contains(flash, bad.flash) {
				t.Errorf("%s=%q: flash %q, want %q", bad.field, bad.value, flash, bad.flash)
			}
		}
		tampered := url.Values{}
		for k, v := range form {
			tampered[k] = v
		}
		tampered.Set("seen_locked", "x")
		if rec := postForm(b, "/resources/inventory/sku-f/correct", tampered, true); rec.Code != http.StatusBadRequest ||
			!strings.Contains(rec.Body.String(), "not an amount") {
			t.Errorf("a tampered form = %d, want 400 saying so", rec.Code)
		}
		before.sameExcept(t, snapshot(t, b), nil)
		loc, body := followPost(t, b, postForm(b, "/resources/inventory/sku-f/correct", form, true), true)
		if flash, _ := testidText(body, "flash"); loc != "/inventory/sku-f?for=f-1" ||
			!strings.Contains(flash, "Corrected") || !strings.Contains(flash, "Locked 0 → 2") || !strings.Contains(flash, "f-1 can be rerun") {
			t.Errorf("correction: flash %q at %s", flash, loc)
		}
		if testidTag(body, "fix-agrees") == "" {
			t.Error("after the correction the SKU page does not say it agrees with its ledger")
		}
		if got := causeOf(getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)); got != "short.gone" {
			t.Errorf("after the correction the cause reads %q, want short.gone", got)
		}
		_, body = followPost(t, b, postForm(b, "/orders/f-1/resources/inventory/rerun", url.Values{"reason": {"fixed"}}, true), true)
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "released") {
			t.Errorf("the chain's rerun: flash %q, want released", flash)
		}
		if st, err := b.s.GetSKU(b.ctx, "sku-f"); err != nil || st.Available != 10 || st.Locked != 0 {
			t.Errorf("sku-f after the rerun: %+v, %v", st, err)
		}
	})
}

// A coupon given back by hand: the cause links to the coupon's page, where
// it is put back to its ledger's state; the cause then reads gone.
func TestFixCouponFromTheDashboard(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		fixStopped(t, b, "f-2", cp.ID, "UPDATE user_coupons SET status = 'UNUSED', order_no = NULL WHERE id = ?", cp.ID)
		id := tkTaskOf(t, b, "f-2", models.ResCoupon)
		task := getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)
		fix := fmt.Sprintf("/coupons?coupon=%d&back=%%2Ftasks%%2F%d&for=f-2#fix", cp.ID, id)
		if got, href := causeOf(task), attrOf(testidTag(task, "cause-fix"), "href"); got != "coupon.row" || href != fix {
			t.Fatalf("task page: cause %q linking %q, want coupon.row linking %q", got, href, fix)
		}
		page := strings.TrimSuffix(fix, "#fix")
		body := getPage(t, b, page, true, http.StatusOK)
		form := testidElement(body, "fix-form")
		if form == "" || !strings.Contains(form, fmt.Sprintf(`name="back" value="/tasks/%d"`, id)) {
			t.Fatalf("the coupon page does not offer to put it back, returning to the task:\n%s", testidElement(body, "fix"))
		}
		loc, body := followPost(t, b, postForm(b, fmt.Sprintf("/resources/coupon/%d/correct", cp.ID),
			url.Values{"reason": {"given back by hand"}, "for": {"f-2"}, "back": {fmt.Sprintf("/tasks/%d", id)}}, true), true)
		if loc != fmt.Sprintf("/tasks/%d", id) {
			t.Errorf("the correction went back to %s, not the task", loc)
		}
		if flash, _ := testidText(body, "flash"); !strings.Contains(flash, "put back to Locked") && !strings.Contains(flash, "put back to LOCKED") {
			t.Errorf("coupon correction: flash %q", flash)
		}
		if got := causeOf(getPage(t, b, fmt.Sprintf("/tasks/%d", id), true, http.StatusOK)); got != "coupon.gone" {
			t.Errorf("after the correction the cause reads %q, want coupon.gone", got)
		}
	})
}

// /resources/{type}/{key} answers for every registered type: a built-in
// type with a page of its own is sent there (keeping ?for=); one without
// a key page is a 404 that says so, and no page links to it.
func TestResourceKeyRouteEveryType(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		for path, want := range map[string]string{
			"/resources/inventory/sku-f?for=f-1":               "/inventory/sku-f?for=f-1#fix",
			"/resources/inventory/sku-f?for=f-1&back=/tasks/3": "/inventory/sku-f?back=%2Ftasks%2F3&for=f-1#fix",
			"/resources/coupon/7":                              "/coupons?coupon=7",
			"/resources/balance/u1":                            "/balances?asset=BALANCE&user=u1",
			"/resources/points/u1":                             "/balances?asset=POINTS&user=u1",
		} {
			rec := servePage(b, path, "en", "")
			if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != want {
				t.Errorf("GET %s = %d to %q, want 303 to %q", path, rec.Code, rec.Header().Get("Location"), want)
			}
		}
		for _, path := range []string{"/resources/slot/seat-1", "/resources/quota/act-1"} {
			getPage(t, b, path, true, http.StatusNotFound)
		}
		for _, typ := range []models.ResourceType{models.ResSlot, models.ResQuota} {
			if page := b.s.KeyPage(typ, "k"); page != "" {
				t.Errorf("%s keys link to %q, a page that is not there", typ, page)
			}
		}
	})
}

// attrOf is attribute name of a start tag, entities decoded; "" when the
// tag has none.
func attrOf(tag, name string) string {
	m := regexp.MustCompile(` ` + name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// The API makes the same correction, and answers bad input and a second
// correction with a code, changing nothing.
func TestCorrectAPI(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, fixBundle, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-f", 10, 0, "test")
		try(t, "sku-f", err)
		cp, err := b.s.CreateCoupon(b.ctx, "u1", models.CouponPlatform, b.clock.Now().Add(48*time.Hour), "test")
		try(t, "coupon", err)
		try(t, "side door", b.s.W.Exec("UPDATE inventory SET available = 7 WHERE sku_id = 'sku-f'").Error)
		const path = "/api/v1/resources/inventory/sku-f/correct"
		before := snapshot(t, b)
		for _, bad := range []struct {
			path, body, code string
			status           int
		}{
			{path, `{"available": 10}`, "INVALID_INPUT", 400},
			{path, `{"reason": "count"}`, "INVALID_INPUT", 400},
			{path, `{"available": -1, "reason": "count"}`, "INVALID_INPUT", 400},
			{"/api/v1/resources/slot/seat-1/correct", `{"available": 1, "reason": "count"}`, "INVALID_INPUT", 400},
			{fmt.Sprintf("/api/v1/resources/coupon/%d/correct", cp.ID), `{"available": 1, "reason": "count"}`, "INVALID_INPUT", 400},
			{fmt.Sprintf("/api/v1/resources/coupon/%d/correct", cp.ID), `{"reason": "count"}`, "NOTHING_TO_CORRECT", 409},
			{path, `{"available": 7, "reason": "count", "seen": {"available": 10, "locked": 0, "spent": 0}}`, "CHANGED_SINCE", 409},
		} {
			rec := b.call(http.MethodPost, bad.path, bad.body)
			if rec.Code != bad.status || !strings.Contains(rec.Body.String(), `"`+bad.code+`"`) {
				t.Errorf("%s %s = %d %s, want %d %s", bad.path, bad.body, rec.Code, rec.Body, bad.status, bad.code)
			}
		}
		before.sameExcept(t, snapshot(t, b), nil)
		rec := b.call(http.MethodPost, path, `{"available": 7, "reason": "three sold at the counter"}`)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"recorded":-3`) {
			t.Fatalf("correction = %d %s, want 200 recording -3", rec.Code, rec.Body)
		}
		if rec := b.call(http.MethodPost, path, `{"available": 7, "reason": "again"}`); rec.Code != http.StatusConflict {
			t.Errorf("a second correction = %d %s, want 409", rec.Code, rec.Body)
		}
		modelstest.CheckInvariants(t, b.s)
	})
}
