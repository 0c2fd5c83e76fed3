package web_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"unhold/models"
	"unhold/models/modelstest"
)

// westViewer is a viewer eight hours behind UTC: for them the Shanghai
// shop's midnight into 2026-11-30 is 08:00 on the 29th.
const westViewer = "Etc/GMT+8"

var couponFlowRE = regexp.MustCompile(`data-testid="coupon-flow-(\d+)"`)

// couponFlowIDs are the coupon ledger rows a page lists, in order.
func couponFlowIDs(body string) []string {
	var ids []string
	for _, m := range couponFlowRE.FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// Every date filter reads its days in the shop's zone: with a Shanghai
// shop, an order, a coupon ledger row and an audit entry a second before
// the shop's midnight and the same a second after (both still the 29th for
// a viewer at UTC−8), every viewer asking for the 29th gets the ones
// before, and for the 30th the ones after. The page names the shop's zone
// by its date fields and the viewer's as the zone its times are in; the
// coupon ledger's "today" is the shop's.
func TestDateFiltersReadShopDays(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, shanghaiShop, func(t *testing.T, b bundle) {
		_, err := b.s.SetStock(b.ctx, "sku-1", 10, 0, "test")
		try(t, "stock", err)
		seed := func(name string) (coupon, audit string) {
			_, _, err := b.s.PlaceOrder(b.ctx, models.PlaceRequest{OrderNo: name, UserID: "u-zone", Items: []models.Item{{SkuID: "sku-1", Qty: 1}}})
			try(t, "place "+name, err)
			_, err = b.s.CreateCoupon(b.ctx, "u-zone", models.CouponPlatform, b.clock.Now().Add(30*24*time.Hour), "test")
			try(t, "coupon "+name, err)
			var flow int64
			try(t, "read flow", b.s.R.Raw(`SELECT MAX(id) FROM coupon_flows`).Scan(&flow).Error)
			try(t, "audit "+name, b.s.RecordAudit(b.ctx, models.AuditEntry{Actor: "zone", Action: "rerun", Target: "order:" + name,
				Outcome: "ok", Role: "operator", RequestID: "req-" + name}))
			var e models.AuditEntry
			try(t, "read audit", b.s.R.Where("request_id = ?", "req-"+name).Take(&e).Error)
			return strconv.FormatInt(flow, 10), strconv.FormatInt(e.ID, 10)
		}
		// The clock starts at 2026-11-29 10:00 UTC; Shanghai's midnight is 16:00 UTC.
		b.clock.Advance(6*time.Hour - time.Second)
		couponBefore, auditBefore := seed("o-before")
		b.clock.Advance(2 * time.Second)
		couponAfter, auditAfter := seed("o-after")

		pages := []struct {
			name, path string
			rows       func(string) []string
			before     string
			after      string
		}{
			{"orders", "/orders?user=u-zone&", ordRows, "o-before", "o-after"},
			{"coupons", "/coupons?user=u-zone&", couponFlowIDs, couponBefore, couponAfter},
			{"audit", "/audit?actor=zone&", func(body string) []string {
				var ids []string
				for _, id := range auditIDs(body) {
					ids = append(ids, strconv.FormatInt(id, 10))
				}
				return ids
			}, auditBefore, auditAfter},
		}
		for _, pg := range pages {
			for _, day := range []struct{ date, want string }{{"2026-11-29", pg.before}, {"2026-11-30", pg.after}} {
				for _, tz := range []string{"", shanghai, westViewer, "UTC"} {
					path := pg.path + "from=" + day.date + "&to=" + day.date
					body := getPageBoth(t, b, path, tz, http.StatusOK)
					if got := pg.rows(body); !slices.Equal(got, []string{day.want}) {
						t.Errorf("%s %s as a viewer in %q lists %v, want %s, the shop's day", pg.name, day.date, tz, got, day.want)
					}
					if got := markupText(testidElement(body, "shop-zone")); got != "按本店时区 Asia/Shanghai" {
						t.Errorf("%s names the shop's zone %q", pg.name, got)
					}
				}
			}
		}
		body := getPageBoth(t, b, "/orders", westViewer, http.StatusOK)
		if got := markupText(testidElement(body, "shown-zone")); got != "本页时间按 Etc/GMT+8 时区显示" {
			t.Errorf("the page names the zone of its times as %q", got)
		}
		// 16:00:01 UTC: the 29th at UTC−8, the 30th in the shop.
		body = getPageBoth(t, b, "/coupons", westViewer, http.StatusOK)
		if got := html.UnescapeString(mustHref(t, body, "coupon-totals-today")); got != "/coupons?from=2026-11-30&to=2026-11-30" {
			t.Errorf("today links to %s, want the shop's day", got)
		}
	})
}

// zoneTaskShop is a Shanghai shop with two PENDING release tasks, one
// created at 18:00 in Shanghai (10:00 UTC) and one at 19:00; it returns
// their ids in that order.
func zoneTaskShop(t *testing.T, d models.Dialect) (bundle, [2]string) {
	t.Helper()
	clock := modelstest.NewClock()
	s := modelstest.Open(t, d, models.Options{Now: clock.Now})
	b := jbBundle(s, clock, nil, jbShanghai(t))
	_, err := b.s.SetStock(b.ctx, "sku-a", 100, 0, "test")
	try(t, "stock", err)
	tkOrder(t, b, "z-1", "sku-a", "")
	b.clock.Advance(time.Hour)
	tkOrder(t, b, "z-2", "sku-a", "")
	return b, [2]string{fmt.Sprint(tkTaskOf(t, b, "z-1", models.ResInventory)), fmt.Sprint(tkTaskOf(t, b, "z-2", models.ResInventory))}
}

// The task list's created window is a date and time on the shop's clock,
// whatever the viewer's zone, and the form shows it back so; the RFC 3339
// times links carry still work and show on the shop's clock; a value of
// neither shape is a 400 that says both; the API keeps to RFC 3339.
func TestTasksWindowShopClock(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, ids := zoneTaskShop(t, d)
			cases := []struct {
				query    string
				want     []string
				from, to string // the form's fields
			}{
				{"from=2026-11-29T18:30", []string{ids[1]}, "2026-11-29T18:30", ""},
				{"to=2026-11-29T18:30", []string{ids[0]}, "", "2026-11-29T18:30"},
				{"from=2026-11-29T18:59:59&to=2026-11-29T19:00:01", []string{ids[1]}, "2026-11-29T18:59:59", "2026-11-29T19:00:01"},
				{"from=2026-11-29T18:00&to=2026-11-29T19:00", []string{ids[0]}, "2026-11-29T18:00", "2026-11-29T19:00"},
				{"from=" + url.QueryEscape("2026-11-29T10:30:00Z"), []string{ids[1]}, "2026-11-29T18:30", ""},
				{"from=" + url.QueryEscape("2026-11-29T02:30:00-08:00"), []string{ids[1]}, "2026-11-29T18:30", ""},
			}
			for _, c := range cases {
				for _, tz := range []string{"", westViewer} {
					rec := servePage(b, "/tasks?"+c.query, "en", tz)
					body := wantPage(t, rec, c.query, http.StatusOK)
					if got := tkRowIDs(body); !slices.Equal(got, c.want) {
						t.Errorf("%s as a viewer in %q lists %v, want %v", c.query, tz, got, c.want)
					}
					for id, want := range map[string]string{"tasks-f-from": c.from, "tasks-f-to": c.to} {
						tag := testidTag(body, id)
						if !strings.Contains(tag, `type="datetime-local"`) || !strings.Contains(tag, `value="`+want+`"`) {
							t.Errorf("%s: field %s = %s, want the value %q", c.query, id, tag, want)
						}
					}
					if got := markupText(testidElement(body, "shop-zone")); got != "shop time, Asia/Shanghai" {
						t.Errorf("the window's fields name the zone %q", got)
					}
				}
			}
			for _, bad := range []string{"from=2026-11-29", "from=" + url.QueryEscape("2026-11-29 18:30"), "to=2026-11-29T25:00", "from=tomorrow"} {
				body := getPage(t, b, "/tasks?"+bad, true, http.StatusBadRequest)
				msg := markupText(testidElement(body, "error-message"))
				for _, want := range []string{"2026-01-02T15:04 (shop time, Asia/Shanghai)", "RFC 3339"} {
					if !strings.Contains(msg, want) {
						t.Errorf("%s: the error %q does not say %q", bad, msg, want)
					}
				}
			}
			wantBad(t, b, "/api/v1/tasks?from=2026-11-29T18:30")
			api := must[readPage[models.ReleaseTask]](t, b, http.StatusOK, http.MethodGet, "/api/v1/tasks?from="+url.QueryEscape("2026-11-29T10:30:00Z"), "")
			if len(api.Items) != 1 || fmt.Sprint(api.Items[0].ID) != ids[1] {
				t.Errorf("the API's RFC 3339 window lists %v, want task %s", api.Items, ids[1])
			}
		})
	}
}

var thRE, tdRE = regexp.MustCompile(`<th[ >]`), regexp.MustCompile(`<td[ >]`)

// tkHeadCells counts the list's header cells; tkRowCells a row's cells.
func tkHeadCells(body string) int {
	return len(thRE.FindAllString(body[strings.Index(body, "<thead>"):strings.Index(body, "</thead>")], -1))
}

func tkRowCells(row string) int { return len(tdRE.FindAllString(row, -1)) }

// A column of the task list that no row on the page fills (class, next
// run, error, lease holder) is left out, header and cells; once a row has
// something there it is shown, and every row keeps the header's count.
func TestTasksEmptyColumnsLeftOut(t *testing.T) {
	t.Parallel()
	for _, d := range modelstest.Engines {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, ids := zoneTaskShop(t, d)
			check := func(what string, want map[string]bool) {
				t.Helper()
				body := getPage(t, b, "/tasks", true, http.StatusOK)
				for col, shown := range want {
					if got := testidTag(body, "tasks-col-"+col) != ""; got != shown {
						t.Errorf("%s: column %s shown %v, want %v", what, col, got, shown)
					}
				}
				n := tkHeadCells(body)
				for _, id := range ids {
					if got := tkRowCells(taskListRow(body, id)); got != n {
						t.Errorf("%s: row %s has %d cells, the header %d", what, id, got, n)
					}
				}
			}
			check("two PENDING tasks", map[string]bool{"class": false, "next": true, "error": false, "lease": false})
			claimed, err := b.s.ClaimTasks(b.ctx, "worker-z", 1, time.Minute)
			try(t, "claim", err)
			if len(claimed) != 1 {
				t.Fatalf("claimed %d tasks, want 1", len(claimed))
			}
			check("a task leased", map[string]bool{"class": false, "next": true, "error": false, "lease": true})
			if body := getPage(t, b, "/tasks", true, http.StatusOK); !strings.Contains(taskListRow(body, fmt.Sprint(claimed[0].ID)), "worker-z") {
				t.Error("the leased task's row does not name its worker")
			}
			try(t, "lease ends", b.s.W.Exec(`UPDATE release_tasks SET lease_owner = '', lease_until = NULL`).Error)
			try(t, "fail", b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'STATE_MISMATCH', last_error = 'state differs'
				WHERE id = ?`, ids[0]).Error)
			check("a MANUAL task", map[string]bool{"class": true, "next": true, "error": true, "lease": false})
		})
	}
}

// A long last error shows whole on hover in the list — in the error cell
// of a RETRY task, and after the reason of a MANUAL one, which quotes it
// cut — and whole, wrapped, on the task's own page.
func TestTaskLongErrorWhole(t *testing.T) {
	t.Parallel()
	eachEngineWith(t, tkBundle, func(t *testing.T, b bundle) {
		tkShop(t, b, 0)
		long := "warehouse answered 409: " + strings.Repeat("the reservation row was changed by another writer; ", 6) + "end"
		manual, retry := tkTaskOf(t, b, "m-1", models.ResInventory), tkTaskOf(t, b, "r-1", models.ResInventory)
		try(t, "manual", b.s.W.Exec(`UPDATE release_tasks SET status = 'MANUAL', error_class = 'STATE_MISMATCH', last_error = ? WHERE id = ?`,
			long, manual).Error)
		try(t, "retry", b.s.W.Exec(`UPDATE release_tasks SET last_error = ? WHERE id = ?`, long, retry).Error)
		body := getPage(t, b, "/tasks", true, http.StatusOK)
		row := taskListRow(body, fmt.Sprint(manual))
		why := testidTag(row, "task-why")
		if !strings.Contains(html.UnescapeString(why), long) {
			t.Errorf("the MANUAL task's reason does not carry the whole error on hover: %s", why)
		}
		if text, _ := testidText(row, "task-why"); strings.Contains(text, long) || !strings.Contains(text, "…") {
			t.Errorf("the reason should quote the error cut: %q", text)
		}
		if row := taskListRow(body, fmt.Sprint(retry)); !strings.Contains(row, `title="`+long+`"`) {
			t.Errorf("the RETRY task's error cell does not carry the whole error on hover:\n%s", row)
		}
		page := getPage(t, b, fmt.Sprintf("/tasks/%d", manual), true, http.StatusOK)
		if text, _ := testidText(page, "task-error"); text != long || !strings.Contains(testidTag(page, "task-error"), "prewrap") {
			t.Errorf("the task's page shows the error as %q (%s), want it whole and wrapped", text, testidTag(page, "task-error"))
		}
	})
}
