package web_test

import (
	"html"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"unhold/models"
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
